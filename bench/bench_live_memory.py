"""Worker memory with many nodes and many jobs (issue: the live drain pipeline): one worker
owning every partition of 100,000 nodes that ran 1,000,000 distinct jobs, plus the combiner
holding their totals. Synthetic iterations (numpy, no broker): peak RSS after each stage.

Each iteration starts jobs of 20 nodes (nodes / (jobs / iterations)). ``--layout contiguous``
(default) places a job on neighbouring nodes, as schedulers do, so it touches one or two
partitions; ``strided`` spreads every job over the whole machine (nodes i, i + 5000, ...), so
it touches every partition: the worst case, each job held once per partition.

    .venv/bin/python bench/bench_live_memory.py [--nodes 100000] [--jobs 1000000]
        [--layout contiguous|strided]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.drain.live import DrainCombiner, PartitionDrain  # noqa: E402
from models.records.nodestatus import IDLE, NO_JOB, RUNNING, NodeStatusBatch  # noqa: E402
from streams.codecs.nodestatus import partition_of  # noqa: E402
from streams.tuning import pin_mmap_threshold  # noqa: E402

PARTS = 8


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--layout", choices=("contiguous", "strided"), default="contiguous")
    ap.add_argument("--no-pin", action="store_true", help="leave glibc's mmap threshold dynamic")
    a = ap.parse_args()
    pinned = False if a.no_pin else pin_mmap_threshold()  # as the worker does by default
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"start: peak RSS {rss_mb():.0f} MB; mmap threshold pinned: {pinned}")
    names = [f"n{i:06d}" for i in range(a.nodes)]
    owner = partition_of(names, PARTS)
    parts = {p: PartitionDrain(p) for p in range(PARTS)}
    local = {}  # node index -> (partition, local code)
    for i, n in enumerate(names):
        st = parts[int(owner[i])]
        local[i] = st.book.nodes.code(n)
    st_idle = {p: parts[p].book.states.code("Idle") for p in parts}
    assert all(v == IDLE for v in st_idle.values())
    comb = DrainCombiner("UTC")
    per_iter = a.jobs // a.iterations
    node_idx = np.arange(a.nodes)
    t0 = time.perf_counter()
    for it in range(a.iterations):
        ts = 1_700_000_000_000 + it * 60_000
        # each node runs one of this iteration's jobs; a tenth idles for a reservation
        if a.layout == "strided":
            job_of_node = it * per_iter + node_idx % per_iter
        else:
            job_of_node = it * per_iter + node_idx * per_iter // a.nodes
        for p, st in parts.items():
            rows = np.flatnonzero(owner == p)
            book = st.book
            n = rows.size
            jcodes = np.array([book.jobs.code(str(j)) for j in np.unique(job_of_node[rows])])
            jmap = dict(zip(np.unique(job_of_node[rows]).tolist(), jcodes.tolist(), strict=True))
            jobs = np.array([jmap[j] for j in job_of_node[rows].tolist()], dtype=np.int64)
            idle = (rows % 10) == 0
            state = np.where(idle, IDLE, RUNNING).astype(np.int64)
            rsv = np.where(idle, jobs, NO_JOB)
            run = np.flatnonzero(~idle)
            b = NodeStatusBatch(
                np.full(n, ts, dtype=np.int64),
                np.array([local[i] for i in rows.tolist()], dtype=np.int64),
                state,
                rsv,
                ~idle,
                run.astype(np.int64),
                jobs[run],
            )
            st.add(b)
            comb.add(st.partial())
        comb.take()
    t = time.perf_counter() - t0
    njobs = sum(len(st.book.jobs) for st in parts.values())
    print(
        f"{a.layout}: {a.iterations} iterations of {a.nodes:,} nodes, {njobs:,} job ids "
        f"interned over the partitions, {len(comb.jobs):,} jobs in the combiner: {t:.1f} s; "
        f"peak RSS {rss_mb():.0f} MB"
    )
    snap = sum(len(st.dumps()) for st in parts.values())
    print(f"snapshots: {snap / 1e6:.1f} MB over {PARTS} partitions; peak RSS {rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
