"""Benchmark of the workload simulator, and the maker of large Moab logs for replay benchmarks.

    .venv/bin/python bench/bench_simulate.py                      # measure, write to a temp dir
    .venv/bin/python bench/bench_simulate.py --out /tmp/big --lines 5000000 [--gzip]

``make_log(out_dir, lines=...)`` writes ``moab.log`` (or ``.gz``) and ``jobs.jsonl`` with at least
``lines`` node-status lines (Lublin workload, EASY backfill, a few outages and drains) and returns
the summary with timings. Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.sim.lublin import LublinModel  # noqa: E402
from models.sim.simulator import (  # noqa: E402
    SimConfig,
    random_outages,
    simulate,
    workload_from_lublin,
)
from streams.commands.simulate import parse_start, write_simulation  # noqa: E402


def make_log(
    out_dir: str | Path,
    lines: int = 5_000_000,
    nodes: int = 400,
    period: float = 120.0,
    seed: int = 0,
    gzip: bool = False,
) -> dict[str, object]:
    """Write a simulated log of at least ``lines`` lines to ``out_dir``; return the summary."""
    per_day = nodes * 86400.0 / period
    days = math.ceil(lines / per_day * 1000) / 1000
    args = argparse.Namespace(
        swf=None,
        model="lublin",
        nodes=nodes,
        days=days,
        period=period,
        out=str(out_dir),
        seed=seed,
        tz="America/Chicago",
        start="2014-12-31T00:00:00",
        outages=max(1, nodes // 40),
        drained=max(1, nodes // 100),
        gzip=gzip,
        warmup=24.0,
        depth=1,
        load=0.85,
        swf_skip_days=0.0,
        findings=False,
        samples_hours=0.0,
    )
    t = time.perf_counter()
    c = time.process_time()
    summary = write_simulation(args)
    summary["seconds"] = time.perf_counter() - t
    summary["cpu_seconds"] = time.process_time() - c
    return summary


def bench_generate(
    lines: int, nodes: int, period: float, seed: int
) -> tuple[int, float, float, int]:
    """Generation only (scheduler + formatting, no file I/O): (lines, wall s, CPU s, chars)."""
    days = lines / (nodes * 86400.0 / period)
    cfg = SimConfig(
        nodes=nodes,
        days=days,
        start=parse_start("2014-12-31T00:00:00", "America/Chicago"),
        period=period,
        seed=seed,
    )
    t0 = time.perf_counter()
    c0 = time.process_time()
    w = workload_from_lublin(LublinModel(nodes, seed), cfg)
    n = 0
    size = 0
    for c in simulate(w, cfg, random_outages(cfg, nodes // 40, nodes // 100)):
        n += c.n_lines
        size += len(c.moab)
    return n, time.perf_counter() - t0, time.process_time() - c0, size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the log here (default: a temporary directory)")
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--nodes", type=int, default=400)
    ap.add_argument("--period", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gzip", action="store_true")
    a = ap.parse_args()
    print(f"machine: {platform.machine()} {platform.system()}, python {platform.python_version()}")
    n, dt, cpu, size = bench_generate(a.lines, a.nodes, a.period, a.seed)
    print(
        f"generate only: {n:,} lines ({size / 1e6:.0f} MB) in {dt:.2f} s wall, {cpu:.2f} s CPU"
        f" = {n / dt:,.0f} lines/s wall, {n / cpu:,.0f} lines/s CPU"
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = a.out or tmp
        s = make_log(out, a.lines, a.nodes, a.period, a.seed, a.gzip)
        secs = float(s["seconds"])  # type: ignore[arg-type]
        cpu = float(s["cpu_seconds"])  # type: ignore[arg-type]
        nl = int(s["lines"])  # type: ignore[call-overload]
        print(
            f"generate + write: {nl:,} lines, {s['jobs']:,} jobs in {secs:.2f} s wall, "
            f"{cpu:.2f} s CPU = {nl / secs:,.0f} lines/s wall, {nl / cpu:,.0f} lines/s CPU "
            f"-> {s['log']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
