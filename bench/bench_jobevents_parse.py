"""Benchmark: job-event adapters (lines -> JobEvents) and the per-day usage split.

Run: .venv/bin/python bench/bench_jobevents_parse.py
Prints events/s per adapter on the real traces in ../shared/data, and the numpy day split
against the per-job, per-day reference loop from tests/models/test_usage.py (same run, same data).
"""

from __future__ import annotations

import gzip
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "models"))

from models.formats.jobsource import iter_job_events  # noqa: E402
from models.jobs.usage import usage_by_day  # noqa: E402
from models.records.jobevent import JobEvent  # noqa: E402

DATA = ROOT / ".." / "shared" / "data"


def rate(name: str, fmt: str, lines: list[str], repeat: int = 1) -> None:
    t = time.perf_counter()
    n = 0
    for _ in range(repeat):
        for _ev in iter_job_events(fmt, lines):
            n += 1
    dt = time.perf_counter() - t
    print(
        f"{name:34s} {n:>9,d} events {dt:7.3f} s {n / dt:>11,.0f} events/s "
        f"({repeat * len(lines) / dt:,.0f} lines/s)"
    )


def main() -> None:
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} python "
        f"{platform.python_version()} numpy {np.__version__}"
    )
    phillips = DATA / "sacct" / "phillips.log"
    kth = DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
    if phillips.exists():
        rate("sacct phillips.log x5", "sacct", phillips.read_text().splitlines(), 5)
    if kth.exists():
        with gzip.open(kth, "rt") as f:
            kl = f.read().splitlines()
        rate("swf KTH", "swf", kl)
        ev = list(iter_job_events("swf", kl))
        jl = [e.to_json().decode() for e in ev]
        rate("jobevents (KTH as JSON lines)", "jobevents", jl)

    rng = np.random.default_rng(1)
    import orjson

    recs = []
    for i in range(50_000):
        s = 1_700_000_000 + int(rng.integers(0, 10**7))
        recs.append(
            orjson.dumps(
                {
                    "jobid": i,
                    "username": "u",
                    "groupname": "g",
                    "@submit": s - 60,
                    "@start": s,
                    "@end": s + int(rng.integers(1, 86400)),
                    "nodes": "c[001-004]",
                    "total_cpus": 64,
                    "total_nodes": 4,
                    "state": "COMPLETED",
                    "derived_ec": "0:0",
                }
            ).decode()
        )
    rate("jobcomp synthetic 50k", "jobcomp", recs)

    # usage split: numpy vs the reference loop
    from test_usage import reference_usage

    n = 2_000
    s = 1_700_000_000 + rng.integers(0, 30 * 86400, n)
    e = s + rng.integers(0, 3 * 86400, n)
    nodes = rng.integers(1, 64, n)
    cpus = nodes * 32
    t = time.perf_counter()
    u = usage_by_day(s, e, nodes, cpus, tz="Europe/Berlin")
    t_np = time.perf_counter() - t
    jobs = list(zip(s.tolist(), e.tolist(), nodes.tolist(), cpus.tolist(), strict=True))
    t = time.perf_counter()
    reference_usage(jobs, "Europe/Berlin", u.days[0], u.days[-1])
    t_ref = time.perf_counter() - t
    print(
        f"usage split {n:,} jobs / {len(u.days)} days: numpy {t_np * 1e3:.2f} ms, "
        f"reference {t_ref * 1e3:.0f} ms, ratio {t_ref / t_np:,.0f}x"
    )
    big = 1_000_000
    s = 1_700_000_000 + rng.integers(0, 365 * 86400, big)
    e = s + rng.integers(0, 3 * 86400, big)
    nodes = rng.integers(1, 64, big)
    t = time.perf_counter()
    usage_by_day(s, e, nodes, nodes * 32, tz="UTC")
    dt = time.perf_counter() - t
    print(f"usage split {big:,} jobs / 1 year: numpy {dt:.3f} s = {big / dt:,.0f} jobs/s")
    _ = JobEvent


if __name__ == "__main__":
    main()
