"""Benchmark: node samples per second through the analytics (seed 003 utilisation + DFS load).

Run: .venv/bin/python bench/bench_samples.py [N_SAMPLES]
Generates a synthetic cluster trace as columns (jobs on 1-4 nodes, one process per node, a
sample per process per minute, cumulative write/read counters with occasional resets), then
times, in one process (one core): measures_from_samples + job_utilization + io_from_samples +
dfs_minutely + hot_zones. Target: >= 500k samples/s per core. Also times the slow reference
(tests/reference_samples.py) on a subset for the fast/reference ratio, and the JSON-lines parse.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.formats.sampletrace import dumps, parse_trace  # noqa: E402
from models.records.nodesample import NodeSample, SampleArrays, to_arrays  # noqa: E402
from models.samples.dfs import dfs_minutely, hot_zones, io_from_samples  # noqa: E402
from models.samples.utilization import job_utilization, measures_from_samples  # noqa: E402
from tests.reference_samples import ref_dfs_minutely, ref_job_utilization  # noqa: E402


def synth(n_target: int, seed: int = 1) -> SampleArrays:
    rng = np.random.default_rng(seed)
    n_jobs = max(10, n_target // 2000)
    nodes_per_job = rng.integers(1, 5, n_jobs)
    n_proc = int(nodes_per_job.sum())
    sweeps = max(2, n_target // n_proc)
    proc_job = np.repeat(np.arange(n_jobs), nodes_per_job)
    proc_node = rng.integers(0, 500, n_proc)
    proc_pid = rng.integers(1000, 4_000_000, n_proc)
    proc_start = 1.7e9 - rng.integers(0, 3600, n_proc)
    t0 = 1.7e9
    ts = (t0 + 60.0 * np.arange(sweeps))[None, :] + rng.uniform(0, 5, (n_proc, sweeps))
    inc = rng.exponential(2e6, (n_proc, sweeps)) * (rng.random((n_proc, sweeps)) < 0.3)
    wb = np.cumsum(inc, axis=1)
    reset = rng.random((n_proc, sweeps)) < 0.001
    wb = np.where(reset, inc, wb)  # a counter that restarted
    rb = np.cumsum(rng.exponential(1e6, (n_proc, sweeps)), axis=1)
    n = n_proc * sweeps

    def rep(a: np.ndarray) -> np.ndarray:
        return np.repeat(a, sweeps)

    return SampleArrays(
        ts=ts.ravel(),
        job=rep(proc_job),
        node=rep(proc_node),
        pid=rep(proc_pid),
        start=rep(proc_start),
        vm_rss_kb=rng.uniform(1e5, 6e6, n),
        vm_swap_kb=np.where(rng.random(n) < 0.01, 1000.0, 0.0),
        read_bytes=rb.ravel(),
        write_bytes=wb.ravel(),
        core=rng.uniform(0, 100, n),
        cores=np.full(n, 4.0),
        job_class=rep(proc_job % 2),
        jobs=[str(i) for i in range(n_jobs)],
        nodes=[f"n{i}" for i in range(500)],
        classes=["normal", "besteffort"],
    )


def analytics(arr: SampleArrays) -> int:
    m = measures_from_samples(arr, 60.0)
    job_utilization(m, 6 * 1024 * 1024, 4)
    io = io_from_samples(arr, 60.0)
    dm = dfs_minutely(io)
    return len(hot_zones(dm, io, float(np.percentile(dm.write, 99))))


def to_samples(arr: SampleArrays, k: int) -> list[NodeSample]:
    return [
        NodeSample(
            ts=float(arr.ts[i]),
            job=arr.jobs[arr.job[i]],
            pid=int(arr.pid[i]),
            node=arr.nodes[arr.node[i]],
            command="app",
            vm_peak_kb=int(arr.vm_rss_kb[i]),
            vm_size_kb=int(arr.vm_rss_kb[i]),
            vm_rss_kb=int(arr.vm_rss_kb[i]),
            vm_swap_kb=int(arr.vm_swap_kb[i]),
            syscr=0,
            syscw=0,
            read_bytes=int(arr.read_bytes[i]),
            write_bytes=int(arr.write_bytes[i]),
            core=float(arr.core[i]),
            receive=0,
            transmit=0,
            start=float(arr.start[i]),
            cores=int(arr.cores[i]),
            job_class=arr.classes[arr.job_class[i]],
        )
        for i in range(k)
    ]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    print(
        f"machine: {platform.machine()} python {platform.python_version()} "
        f"numpy {np.__version__}; 2-core VM, one process"
    )
    arr = synth(n)
    print(f"synthetic trace: {len(arr):,} samples, {len(arr.jobs):,} jobs")
    analytics(synth(20_000, 2))  # warm-up
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        zones = analytics(arr)
        best = min(best, time.perf_counter() - t)
    print(
        f"analytics (utilisation + DFS + hot zones): {best:.3f} s, "
        f"{len(arr) / best:,.0f} samples/s ({zones} hot-zone episodes at the p99 load)"
    )

    small = synth(20_000, 3)
    samples = to_samples(small, len(small))
    t = time.perf_counter()
    ref_job_utilization(samples, 60.0, 6 * 1024 * 1024, 4)
    ref_dfs_minutely(samples, 60.0)
    t_ref = time.perf_counter() - t
    t = time.perf_counter()
    arr2 = to_arrays(samples)
    m = measures_from_samples(arr2, 60.0)
    job_utilization(m, 6 * 1024 * 1024, 4)
    dfs_minutely(io_from_samples(arr2, 60.0))
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(10):
        m = measures_from_samples(arr2, 60.0)
        job_utilization(m, 6 * 1024 * 1024, 4)
        dfs_minutely(io_from_samples(arr2, 60.0))
    t_cols = (time.perf_counter() - t) / 10
    print(
        f"reference vs fast on {len(samples):,} samples (same work): reference "
        f"{len(samples) / t_ref:,.0f} samples/s; fast incl. records->columns "
        f"{len(samples) / t_fast:,.0f} samples/s (x{t_ref / t_fast:.1f}); fast on columns "
        f"{len(samples) / t_cols:,.0f} samples/s (x{t_ref / t_cols:.1f})"
    )

    lines = [dumps(s) for s in samples]
    t = time.perf_counter()
    k = sum(1 for _ in parse_trace(lines))
    dt = time.perf_counter() - t
    print(f"JSON-lines trace parse: {k / dt:,.0f} samples/s")


if __name__ == "__main__":
    main()
