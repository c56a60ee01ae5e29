"""Benchmark: the node-release forecast (streams.stages.release.ReleaseForecastStage) on its worst
case, jobs that never end: events/s through the stage alone and through every job stage.

    .venv/bin/python bench/bench_release.py [--events 329000] [--open 0.5] [--section 228]
        [--root DIR] [--skip-all]

The stream is generated (no data files): one job a 10 s, submitted, started 5 s later with a
requested walltime of one hour and 1-4 nodes; a share ``--open`` of the jobs never ends (no end
event), the others end within their walltime. The open jobs soon hold more nodes than the
section has, so every submit walks the running jobs, and once their walltime has passed they
are all "past their end" at every later submit: the case where the cost must grow with the
forecast's steps, not with the jobs still open.

``--root``: the source tree to import the stage from (default: this checkout), e.g. one
exported from another commit with ``git archive <commit> | tar -x -C DIR``, to compare.
Reported: the machine, events/s through the stage alone (one core, GC paused as the driver
pauses it) and through every job stage via the replay driver, and the rows written.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def worst_case(n_events: int, open_share: float = 0.5, seed: int = 1) -> list[Any]:
    """``n_events`` job events in time order, a share ``open_share`` of the jobs never ending
    (see the module docstring)."""
    from models.records.jobevent import JobEvent

    rnd = random.Random(seed)
    t0 = 1_700_000_000.0
    evs: list[tuple[float, int, JobEvent]] = []
    n = 0
    i = 0
    while n < n_events:
        job = f"{i}"
        sub = t0 + 10.0 * i
        nodes = rnd.randint(1, 4)
        evs.append((sub, 0, JobEvent("submit", sub, job, "u", nodes=nodes, req_walltime=3600.0)))
        evs.append(
            (sub + 5, 1, JobEvent("start", sub + 5, job, "u", nodes=nodes, req_walltime=3600.0))
        )
        n += 2
        if rnd.random() >= open_share:
            end = sub + 5 + rnd.uniform(60.0, 3500.0)
            evs.append((end, 2, JobEvent("end", end, job, "u", nodes=nodes, state="COMPLETED")))
            n += 1
        i += 1
    evs.sort(key=lambda x: (x[0], x[1]))
    return [e for _, _, e in evs[:n_events]]


def stage_alone(events: list[Any], section: int, batch: int) -> tuple[float, int]:
    """CPU seconds of the forecast stage over the events (its finish included), rows made."""
    from streams.stages.release import ReleaseForecastStage

    st = ReleaseForecastStage(section)
    rows = 0
    gc.disable()
    try:
        t = time.process_time()
        for i in range(0, len(events), batch):
            for _, r in st.step(events[i : i + batch]):
                rows += len(r)
        for _, r in st.finish():
            rows += len(r)
        dt = time.process_time() - t
    finally:
        gc.enable()
    return dt, rows


def all_stages(events: list[Any], section: int, batch: int) -> float:
    """CPU seconds of every job stage over the events through the replay driver."""
    from streams import driver
    from streams.sinks.memory import MemorySink
    from streams.sources.jobevents import JobEventFiles
    from streams.stages.jobs import job_stages

    source = JobEventFiles(events, [], "UTC", batch=batch)
    t = time.process_time()
    driver.run(
        driver.Run("jobs", "bench", "UTC", [driver.Feed(source, job_stages(section))]),
        [MemorySink()],
        driver.RejectLog(),
    )
    return time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=329_000)
    ap.add_argument("--open", type=float, default=0.5, help="share of jobs that never end")
    ap.add_argument("--section", type=int, default=228, help="section size (nodes)")
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--root", type=Path, default=ROOT, help="source tree to import from")
    ap.add_argument("--skip-all", action="store_true", help="the stage alone only")
    args = ap.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}; source tree {args.root}"
    )
    events = worst_case(args.events, args.open)
    n_jobs = sum(e.type == "submit" for e in events)
    n_open = n_jobs - sum(e.type == "end" for e in events)
    print(f"stream: {len(events):,} events, {n_jobs:,} jobs, {n_open:,} never end")
    dt, rows = stage_alone(events, args.section, args.batch)
    print(f"release stage alone: {dt:.2f} s CPU = {len(events) / dt:,.0f} events/s; {rows:,} rows")
    if not args.skip_all:
        dt = all_stages(events, args.section, args.batch)
        print(f"every job stage: {dt:.2f} s CPU = {len(events) / dt:,.0f} events/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
