"""Node samples of simulated jobs: what the /proc sampler (seed 003 §3.1, Tables 1-2) would
record for the jobs the simulator ran, one process per job and node, one sample a minute.

Each job draws its behaviour once: mean core utilisation (one job in five below 25 %, as the
seed's Foehn normal jobs, the others 60-100 %), memory as a fraction of the theoretical memory,
and a background write speed (exponential, mean ``job_mb_s`` for the whole job, at most
``job_mb_s_max``, spread over its nodes, varying from minute to minute); the cumulative
counters grow accordingly. One *burst*
(the job with the most nodes running at ``burst_at`` of the window) writes ``burst_mb_s`` MB/s
summed over its nodes for ``burst_minutes`` minutes, so the DFS load crosses a hot-zone
threshold below that speed. Pure: times come from the job events.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from models.records.jobevent import JobEvent
from models.records.nodesample import NodeSample

MB = 1_000_000


@dataclass(slots=True, frozen=True)
class SampleModel:
    cores_per_node: int = 32
    mem_per_core_kb: int = 6 * 1024 * 1024  # 6 GiB, the seed's nodes
    period: float = 60.0
    job_mb_s: float = 2.5  # mean write speed of a job (all its nodes), MB/s
    job_mb_s_max: float = 12.0
    burst_at: float = 0.6
    burst_minutes: int = 12
    burst_mb_s: float = 160.0


@dataclass(slots=True)
class _Job:
    job: str
    nodes: tuple[str, ...]
    start: float
    end: float
    util: float
    mem: float
    write: float  # MB/s per node
    read: float
    noise: np.ndarray  # per minute of the window: a factor on the write and read speeds


def running_jobs(
    events: Iterable[JobEvent], t0: float, t1: float
) -> list[tuple[str, tuple[str, ...], float, float]]:
    """(job, nodes, start, end) of the jobs running at some time in [t0, t1) (end = t1 while
    still running), in start order."""
    started: dict[str, tuple[tuple[str, ...], float]] = {}
    ended: dict[str, float] = {}
    for e in events:
        if e.type == "start" and e.node_list:
            started[e.job] = (e.node_list, e.ts)
        elif e.type == "end":
            ended[e.job] = e.ts
    out = []
    for job, (nodes, start) in started.items():
        end = min(ended.get(job, t1), t1)
        if start < t1 and end > t0:
            out.append((job, nodes, start, end))
    out.sort(key=lambda j: (j[2], j[0]))
    return out


def node_samples(
    events: Iterable[JobEvent], t0: float, t1: float, seed: int, m: SampleModel = SampleModel()
) -> Iterator[NodeSample]:
    """Samples every ``m.period`` seconds in [t0, t1) of every job running then, in time order."""
    rng = np.random.default_rng([seed, 0x5A3B])
    jobs: list[_Job] = []
    n_steps = int((t1 - t0) // m.period) + 2
    for job, nodes, start, end in running_jobs(events, t0, t1):
        low = rng.random() < 0.2
        util = float(rng.uniform(0.03, 0.25) if low else rng.uniform(0.6, 1.0))
        jobs.append(
            _Job(
                job,
                nodes,
                start,
                end,
                util,
                float(rng.uniform(0.1, 0.9)),
                min(float(rng.exponential(m.job_mb_s)), m.job_mb_s_max) / len(nodes),
                min(float(rng.exponential(m.job_mb_s / 2)), m.job_mb_s_max) / len(nodes),
                rng.lognormal(-0.045, 0.3, n_steps),
            )
        )
    mid = t0 + m.burst_at * (t1 - t0)
    burst_lo = mid - mid % m.period
    burst_hi = burst_lo + m.burst_minutes * 60.0
    at_mid = [j for j in jobs if j.start <= mid < j.end and j.end >= burst_hi]
    burst = max(at_mid, key=lambda j: (len(j.nodes), j.job)) if at_mid else None
    cores = m.cores_per_node
    mem_kb = cores * m.mem_per_core_kb
    written: dict[tuple[str, str], list[float]] = {}  # (job, node) -> [write, read, calls]
    t = t0 - t0 % m.period + (m.period if t0 % m.period else 0.0)
    step = 0
    while t < t1:
        for j in jobs:
            if not j.start <= t < j.end:
                continue
            f = float(j.noise[step])
            per_node = j.write * f
            read = j.read * f
            if j is burst and burst_lo <= t < burst_hi:
                per_node += m.burst_mb_s / len(j.nodes)
            for k, node in enumerate(j.nodes):
                c = written.setdefault((j.job, node), [0.0, 0.0, 0.0])
                if t - m.period >= j.start:  # a full period ran since the last sample
                    c[0] += per_node * m.period * MB
                    c[1] += read * m.period * MB
                    c[2] += per_node * m.period * 4  # ~256 KB per write call
                wobble = 0.9 + 0.2 * ((k * 7 + int(t // m.period)) % 5) / 4
                util = min(1.0, j.util * wobble)
                rss = int(mem_kb * j.mem * wobble)
                yield NodeSample(
                    ts=t + (k % 7) * 0.5,
                    job=j.job,
                    pid=10_000 + k,
                    node=node,
                    command="app",
                    vm_peak_kb=mem_kb,
                    vm_size_kb=mem_kb,
                    vm_rss_kb=min(rss, mem_kb),
                    vm_swap_kb=0,
                    syscr=int(c[1] // (256 * 1024)),
                    syscw=int(c[2]),
                    read_bytes=int(c[1]),
                    write_bytes=int(c[0]),
                    core=round(100.0 * cores * util, 2),
                    receive=0,
                    transmit=0,
                    start=j.start,
                    cores=cores,
                )
        t += m.period
        step += 1
