"""Benchmark: one `ship slurm` iteration on large machines, without Slurm's own command time.

Run: .venv/bin/python bench/bench_slurmnodes.py [--nodes 10000 100000]
Builds `scontrol show node -o` and `squeue -o '%i|%T|%S|%Y|%N'` text for N nodes in the layout of
the outputs captured from Slurm 22.05 (tests/models/formats/slurm/22.05/): 80 % of the nodes
running 8-node jobs, 10 % IDLE+PLANNED for 200-node pending jobs, 5 % drained, 5 % idle. Times
the parse, the mapping (models/formats/slurmnodes.py) and the wire encoding the shipper sends
(NodeStatusBatch + streams.codecs.nodestatus.encode per partition), best of 3.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.formats.hostlist import compress_hostlist  # noqa: E402
from models.formats.slurmnodes import (  # noqa: E402
    parse_scontrol_nodes,
    parse_squeue_text,
    slurm_iteration,
)
from models.records.nodestatus import Codebook, NodeStatusBatch  # noqa: E402
from streams.codecs.nodestatus import encode, partition_of  # noqa: E402

CAPTURED = ROOT / "tests" / "models" / "formats" / "slurm" / "22.05"


def machine(n: int) -> tuple[str, str]:
    line = (CAPTURED / "scontrol_show_node_oneliner.txt").read_text().splitlines()[0]
    names = [f"nid{i:06d}" for i in range(n)]
    run_n, plan_n, drain_n = int(n * 0.8), int(n * 0.1), int(n * 0.05)
    states = (
        ["ALLOCATED"] * run_n
        + ["IDLE+PLANNED"] * plan_n
        + ["IDLE+DRAIN"] * drain_n
        + ["IDLE"] * (n - run_n - plan_n - drain_n)
    )
    nodes = "\n".join(
        line.replace("NodeName=n1 ", f"NodeName={nm} ").replace("State=ALLOCATED", f"State={st}")
        for nm, st in zip(names, states, strict=True)
    )
    q = ["JOBID|STATE|START_TIME|SCHEDNODES|NODELIST"]
    for j, lo in enumerate(range(0, run_n, 8)):
        q.append(
            f"{1000 + j}|RUNNING|2026-11-23T08:00:00|(null)|"
            f"{compress_hostlist(names[lo : min(lo + 8, run_n)])}"
        )
    for j, lo in enumerate(range(run_n, run_n + plan_n, 20)):
        sched = names[lo : lo + 20] + names[j * 180 % run_n :][:180]
        q.append(f"{900000 + j}|PENDING|2026-11-23T12:{j % 60:02d}:00|{compress_hostlist(sched)}|")
    return nodes + "\n", "\n".join(q) + "\n"


def best(f, k: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(k):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[10_000, 100_000])
    a = ap.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}")
    for n in a.nodes:
        node_text, q_text = machine(n)
        nodes = parse_scontrol_nodes(node_text)
        jobs = parse_squeue_text(q_text)
        it = slurm_iteration(0, nodes, jobs)
        drained = sum(1 for r in it.records if r.state == "Idle" and r.rsvlist)
        assert len(it.records) == n and drained == int(n * 0.1), drained

        def ship(it=it) -> None:  # type: ignore[no-untyped-def]
            book = Codebook()
            b = NodeStatusBatch.from_records(it.records, book)
            owners = partition_of(book.nodes.names, 8)[b.node]
            for p in range(8):
                encode(b.take(np.flatnonzero(owners == p)), book, "slurm")

        t_nodes = best(lambda t=node_text: parse_scontrol_nodes(t))
        t_jobs = best(lambda t=q_text: parse_squeue_text(t))
        t_map = best(lambda ns=nodes, js=jobs: slurm_iteration(0, ns, js))
        t_ship = best(ship)
        total = t_nodes + t_jobs + t_map + t_ship
        print(
            f"{n:>8,d} nodes ({len(node_text) / 1e6:5.1f} MB scontrol, {len(jobs):,} jobs): "
            f"scontrol parse {t_nodes:6.3f} s, squeue parse {t_jobs:6.3f} s, mapping "
            f"{t_map:6.3f} s, encode {t_ship:6.3f} s; total {total:6.3f} s "
            f"({total / 60 * 100:.1f} % of a 60 s period)"
        )


if __name__ == "__main__":
    main()
