"""Slow, obviously-correct reference implementations of the node-sample analytics.

Plain Python over lists of NodeSample, dicts and loops, written straight from seed 003 §5; they
share no code with models/utilization.py or models/dfs.py (which are vectorised numpy).
"""

from __future__ import annotations

import math
from collections import defaultdict

from models.records.nodesample import NodeSample


def ref_deltas(samples: list[NodeSample], period: float) -> list[tuple[NodeSample, float, float]]:
    """(sample, write delta, read delta) per sample: per process (node, pid, start) in time order,
    difference with the previous sample; a decrease restarts from zero (delta = value); the
    first sample counts the whole value if the process started less than `period` before."""
    series: dict[tuple[str, int, float], list[NodeSample]] = defaultdict(list)
    for s in samples:
        series[(s.node, s.pid, s.start)].append(s)
    out = []
    for ss in series.values():
        ss.sort(key=lambda s: s.ts)
        prev = None
        for s in ss:
            if prev is None:
                new = s.start > 0 and s.start > s.ts - period
                dw = s.write_bytes if new else 0
                dr = s.read_bytes if new else 0
            else:
                dw = s.write_bytes - prev.write_bytes
                dr = s.read_bytes - prev.read_bytes
                if dw < 0:
                    dw = s.write_bytes
                if dr < 0:
                    dr = s.read_bytes
            out.append((s, float(dw), float(dr)))
            prev = s
    return out


def ref_job_utilization(
    samples: list[NodeSample], period: float, mem_per_core_kb: float, cores_per_node: float
) -> dict[str, dict[str, float]]:
    """Seed 003 §5 per job: core_utilization_mean = sum_i core_consumption(t_i) /
    (allocated_cores x n); memory ratios; max swap; SA = cores x run time."""
    # last sample per (job, node, bucket, pid, start)
    last: dict[tuple, NodeSample] = {}
    for s in samples:
        k = (s.job, s.node, math.floor(s.ts / period), s.pid, s.start)
        if k not in last or s.ts >= last[k].ts:
            last[k] = s
    res: dict[str, dict[str, float]] = {}
    by_job: dict[str, list[tuple[tuple, NodeSample]]] = defaultdict(list)
    for k, s in last.items():
        by_job[k[0]].append((k, s))
    for job, items in by_job.items():
        node_cores: dict[str, float] = {}
        for (_, node, _, _, _), s in items:
            node_cores[node] = max(node_cores.get(node, 0), s.cores)
        for node in node_cores:
            if node_cores[node] == 0:
                node_cores[node] = cores_per_node
        cores = sum(node_cores.values())
        buckets = sorted({k[2] for k, _ in items})
        n = len(buckets)
        core_total = sum(s.core / 100 for _, s in items)
        mem_total = sum(s.vm_rss_kb for _, s in items)
        node_mem: dict[tuple, float] = defaultdict(float)
        bucket_swap: dict[int, float] = defaultdict(float)
        bucket_ts: dict[tuple, float] = {}
        for (_, node, b, _, _), s in items:
            node_mem[(node, b)] += s.vm_rss_kb
            bucket_swap[b] += s.vm_swap_kb
            bucket_ts[(node, b)] = max(bucket_ts.get((node, b), -math.inf), s.ts)
        mem_max = max(v / node_cores[node] for (node, _), v in node_mem.items())
        run = max(bucket_ts.values()) - min(bucket_ts.values()) + period
        res[job] = {
            "nodes": len(node_cores),
            "cores": cores,
            "measures": n,
            "core_util_mean": core_total / (cores * n),
            "mem_mean_ratio": mem_total / n / (mem_per_core_kb * cores),
            "mem_max_core_ratio": mem_max / mem_per_core_kb,
            "swap_kb_max": max(bucket_swap.values()),
            "sa": cores * run,
        }
    return res


def ref_dfs_minutely(
    samples: list[NodeSample], period: float, unit: float = 1e6
) -> dict[int, tuple[float, float, int]]:
    """minute -> (write unit/s, read unit/s, jobs with a write delta > 0 in that minute)."""
    w: dict[int, float] = defaultdict(float)
    r: dict[int, float] = defaultdict(float)
    writers: dict[int, set[str]] = defaultdict(set)
    for s, dw, dr in ref_deltas(samples, period):
        m = math.floor(s.ts / 60)
        w[m] += dw / unit / 60
        r[m] += dr / unit / 60
        if dw > 0:
            writers[m].add(s.job)
    return {m: (w[m], r[m], len(writers[m])) for m in set(w) | set(r)}


def ref_hot_zones(
    minutely: dict[int, float], job_minute: dict[tuple[str, int], float], threshold: float, top: int
) -> list[tuple[int, int, float, int, list]]:
    """Episodes of consecutive minutes with load > threshold; top jobs by writes in them."""
    hot = sorted(m for m, v in minutely.items() if v > threshold)
    episodes: list[list[int]] = []
    for m in hot:
        if episodes and m == episodes[-1][-1] + 1:
            episodes[-1].append(m)
        else:
            episodes.append([m])
    out = []
    for ep in episodes:
        per: dict[str, float] = defaultdict(float)
        for (job, m), v in job_minute.items():
            if m in ep:
                per[job] += v
        total = sum(per.values())
        ranked = sorted(per.items(), key=lambda kv: -kv[1])[:top]
        tops = [(j, v / total) for j, v in ranked if v > 0]
        out.append((ep[0], ep[-1], max(minutely[m] for m in ep), len(ep), tops))
    return out


def sample_strategy(max_size: int = 80):  # noqa: ANN201 - hypothesis strategy
    """Random NodeSample lists: 3 jobs, 2 nodes, a few pids with start times (pid reuse when the
    start differs), counters that may go down (resets)."""
    from hypothesis import strategies as st

    row = st.builds(
        lambda job, node, pid, start, ts, w, r, core, rss, swap, cores: NodeSample(
            ts=float(ts),
            job=job,
            pid=pid,
            node=node,
            command="x",
            vm_peak_kb=rss,
            vm_size_kb=rss,
            vm_rss_kb=rss,
            vm_swap_kb=swap,
            syscr=0,
            syscw=0,
            read_bytes=r,
            write_bytes=w,
            core=float(core),
            receive=0,
            transmit=0,
            start=float(start),
            cores=cores,
            job_class="besteffort" if job == "c" else "normal",
        ),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["n1", "n2"]),
        st.integers(1, 4),
        st.sampled_from([0, 100, 700]),
        st.integers(0, 1500),
        st.integers(0, 10**9),
        st.integers(0, 10**8),
        st.integers(0, 400),
        st.integers(0, 10**7),
        st.integers(0, 10**5),
        st.integers(0, 4),
    )
    return st.lists(
        row, min_size=1, max_size=max_size, unique_by=lambda s: (s.node, s.pid, s.start, s.ts)
    )
