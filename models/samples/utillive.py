"""Per-job utilisation from samples as they come (seed 003 §5): the streaming form of
:func:`models.samples.utilization.measures_from_samples` + :func:`job_utilization`, with the
same rules and numbers.

Samples go into their (job, node, measure) bucket (measure = floor(ts / period)); a process
sampled twice in one bucket counts once, its last sample. :meth:`JobUtilStream.close` makes the
buckets before a time final and adds them to their job: allocated cores per node (the largest
seen), the measures, the core and memory sums (exact: ``add_exact``, so the order they come in
does not matter), the largest memory per node, the largest swap of one measure, the first and
last measure times. A job's row (``job_utilization.csv``'s columns) can be read at any time; it
is final once no sample of the job has come for ``quiet_s`` of event time, and the job then
leaves memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from models.jobs.usage import add_exact
from models.records.nodesample import NodeSample


class _Job:
    __slots__ = ("nodes", "n", "last_b", "core", "mem", "swap_max", "t0", "t1")

    def __init__(self) -> None:
        self.nodes: dict[str, list[float]] = {}  # node -> [largest cores, largest memory KiB]
        self.n = 0  # measures (distinct buckets)
        self.last_b: int | None = None
        self.core: list[float] = []  # exact partials of cores used
        self.mem: list[float] = []
        self.swap_max = -math.inf
        self.t0 = math.inf
        self.t1 = -math.inf


class JobUtilStream:
    __slots__ = ("period", "mem_per_core_kb", "cores_per_node", "quiet_s", "_open", "_jobs")

    def __init__(
        self,
        period: float = 60.0,
        mem_per_core_kb: float | None = None,
        cores_per_node: float | None = None,
        quiet_s: float = 600.0,
    ) -> None:
        if period <= 0:
            raise ValueError("period must be > 0")
        self.period = period
        self.mem_per_core_kb = mem_per_core_kb
        self.cores_per_node = cores_per_node
        self.quiet_s = quiet_s
        # bucket -> (job, node) -> process -> (ts, core %, rss KiB, swap KiB, cores)
        self._open: dict[int, dict[tuple[str, str], dict[tuple[int, float], tuple[float, ...]]]]
        self._open = {}
        self._jobs: dict[str, _Job] = {}

    def update(self, samples: Iterable[NodeSample]) -> None:
        period, buckets = self.period, self._open
        for s in samples:
            b = math.floor(s.ts / period)
            groups = buckets.get(b)
            if groups is None:
                groups = buckets[b] = {}
            procs = groups.get((s.job, s.node))
            if procs is None:
                procs = groups[(s.job, s.node)] = {}
            key = (s.pid, s.start)
            old = procs.get(key)
            if old is None or s.ts >= old[0]:  # the last sample of the process in the bucket
                procs[key] = (s.ts, s.core, float(s.vm_rss_kb), float(s.vm_swap_kb),
                              float(s.cores))  # fmt: skip

    def close(self, until_ts: float) -> tuple[list[str], list[str]]:
        """Buckets ending at or before ``until_ts`` are final. Returns the jobs that changed
        and the jobs that became final (quiet since ``quiet_s`` before ``until_ts``)."""
        changed: set[str] = set()
        for b in sorted(k for k in self._open if (k + 1) * self.period <= until_ts):
            groups = self._open.pop(b)
            swap_b: dict[str, list[float]] = {}
            for (job, node), procs in sorted(groups.items()):
                j = self._jobs.get(job)
                if j is None:
                    j = self._jobs[job] = _Job()
                vals = list(procs.values())
                core_used = math.fsum(v[1] / 100.0 for v in vals)
                mem = math.fsum(v[2] for v in vals)
                swap_b.setdefault(job, []).append(math.fsum(v[3] for v in vals))
                cores = max(v[4] for v in vals)
                ts = max(v[0] for v in vals)
                nd = j.nodes.get(node)
                if nd is None:
                    j.nodes[node] = [cores, mem]
                else:
                    nd[0], nd[1] = max(nd[0], cores), max(nd[1], mem)
                if j.last_b != b:
                    j.n += 1
                    j.last_b = b
                add_exact(j.core, core_used)
                add_exact(j.mem, mem)
                j.t0, j.t1 = min(j.t0, ts), max(j.t1, ts)
                changed.add(job)
            for job, sw in swap_b.items():
                j = self._jobs[job]
                j.swap_max = max(j.swap_max, math.fsum(sw))
        final = sorted(k for k, j in self._jobs.items() if j.t1 < until_ts - self.quiet_s)
        return sorted(changed), final

    def row(self, job: str, io: tuple[float, float]) -> tuple[Any, ...]:
        """``job_utilization.csv``'s row of the job; ``io``: its (fastest write of one node in
        one minute, data written), from :meth:`~models.samples.dfslive.DfsStream.io_of`."""
        j = self._jobs[job]
        cpn = self.cores_per_node
        node_cores = []
        for c, _m in j.nodes.values():
            if c <= 0 and cpn is not None:
                c = float(cpn)
            node_cores.append(c if c > 0 else math.nan)
        cores = sum(node_cores)  # whole numbers (or NaN): exact in any order
        n = j.n
        core_util = math.fsum(j.core) / (cores * n)
        mpc = self.mem_per_core_kb
        if mpc is None:
            mem_mean = mem_max = math.nan
        else:
            mem_mean = math.fsum(j.mem) / n / (mpc * cores)
            mem_max = max(m / c for (_c, m), c in zip(j.nodes.values(), node_cores,
                                                      strict=True)) / mpc  # fmt: skip
        run = j.t1 - j.t0 + self.period
        wmax, wtot = io
        return (job, len(j.nodes), cores, n, core_util, mem_mean, mem_max, j.swap_max,
                cores * run, wmax, wtot)  # fmt: skip

    def first_ts(self, job: str) -> float:
        """The job's first measure time (what identifies its row over time)."""
        return self._jobs[job].t0

    def forget(self, jobs: Iterable[str]) -> None:
        for job in jobs:
            self._jobs.pop(job, None)
