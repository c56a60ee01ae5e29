"""Benchmark: job events/s through all job analytics (issue 4), and the run-time prediction table.

    .venv/bin/python bench/bench_jobs.py [--jobs 1000000] [--batch 8192]
    .venv/bin/python bench/bench_jobs.py --mae

The stream is built from the SWF traces in ../shared/data/swf (KTH SP2 and NASA iPSC): copy c of
a trace is shifted by c hours and gets its own job ids, users and groups ("c<c>:"), and the
copies are merged in time order, until the stream holds --jobs jobs (3 events each: submit,
start, end). Reported: events/s through all analytics together (one core), each analytic alone,
fast vs the slow references of tests/reference_jobs.py on a small prefix, and peak memory
(ru_maxrss) before and after the analytics.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from models.formats.jobsource import iter_job_events, sort_events  # noqa: E402
from models.jobs.runtime import RuntimePredictor, score_predictions  # noqa: E402
from models.records.jobevent import JobEvent  # noqa: E402
from streams import driver  # noqa: E402
from streams.sinks.memory import MemorySink  # noqa: E402
from streams.sources.jobevents import BATCH, JobEventFiles  # noqa: E402
from streams.stages.jobs import job_stages  # noqa: E402

DATA = ROOT / ".." / "shared" / "data"
TRACES = ["swf/KTH-SP2-1996-2.1-cln.swf.gz", "swf/NASA-iPSC-1993-3.1-cln.swf.gz"]


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def load(path: Path, fmt: str = "swf") -> list[JobEvent]:
    """Events of a trace (NASA iPSC's jobs start at submit: its header says submit times are
    start times, and the SWF adapter reads that)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:  # type: ignore[operator]
        return sort_events(iter_job_events(fmt, f))


def build_stream(n_jobs: int) -> list[JobEvent]:
    bases = []
    for t in TRACES:
        evs = load(DATA / t)
        t0 = min(e.ts for e in evs)
        bases.append([(e, e.ts - t0) for e in evs])  # both traces start at 0
    out: list[JobEvent] = []
    jobs = 0
    c = 0
    while jobs < n_jobs:
        for base in bases:
            if jobs >= n_jobs:
                break
            p = f"c{c}:"
            shift = 820_454_400.0 + c * 3600.0  # 1996-01-01 + c hours
            names: dict[str, tuple[str, str | None, str | None]] = {}
            for e, rel in base:
                ids = names.get(e.job)
                if ids is None:
                    if jobs >= n_jobs:
                        continue  # the stream is full: no new jobs, finish the started ones
                    ids = names[e.job] = (p + e.job, e.user and p + e.user, e.group and p + e.group)
                    jobs += 1
                out.append(
                    JobEvent(
                        e.type,
                        rel + shift,
                        ids[0],
                        ids[1],
                        ids[2],
                        ids[2],
                        e.partition,
                        e.name,
                        e.nodes,
                        e.cores,
                        e.req_walltime,
                        e.node_list,
                        e.state,
                        e.exit_code,
                        e.backfill,
                    )
                )
            c += 1
    return sort_events(out)


def run_all(events: list[JobEvent], batch: int) -> tuple[float, MemorySink]:
    """Every job stage over the events through the replay driver, into a memory sink."""
    stages = job_stages(228)
    source = JobEventFiles(events, [], "UTC", batch=batch)
    sink = MemorySink()
    t = time.perf_counter()
    c = time.process_time()
    driver.run(
        driver.Run("jobs", "bench", "UTC", [driver.Feed(source, stages)]),
        [sink],
        driver.RejectLog(),
    )
    run_all.cpu = time.process_time() - c  # type: ignore[attr-defined]
    return time.perf_counter() - t, sink


def each_alone(events: list[JobEvent], batch: int) -> dict[str, float]:
    """Each analytic's model alone, with the cyclic GC paused as the driver pauses it (its
    passes over the millions of live events made these figures swing by +-30 %)."""
    models = {st.name: st.m for st in job_stages(228) if hasattr(st, "m")}
    rates = {}
    gc.disable()
    try:
        for name, m in models.items():
            t = time.process_time()
            for i in range(0, len(events), batch):
                m.update(events[i : i + batch])
            rates[name] = len(events) / (time.process_time() - t)
    finally:
        gc.enable()
    return rates


def vs_reference(n_jobs: int) -> list[tuple[str, float, float]]:
    sys.path.insert(0, str(ROOT))
    from models.jobs.capability import CapabilityUse, min_large_nodes
    from models.jobs.fairshare import FairShareUsage
    from models.jobs.shortjobs import ShortJobPenalty
    from models.jobs.turnover import SlotTurnover
    from tests import reference_jobs as ref

    evs = load(DATA / TRACES[0])
    evs = [e for e in evs if int(e.job) <= n_jobs]
    until = evs[-1].ts + 3600
    cases = [
        (
            "shortjobs",
            lambda: ShortJobPenalty(history="ticks").update(evs),
            lambda: ref.shortjobs_ref(evs, 600, 600, 180, 0.9, 1.0, until),
        ),
        (
            "turnover",
            lambda: SlotTurnover(max_stack=10**9).update(evs),
            lambda: ref.turnover_ref(evs, 3600),
        ),
        (
            "runtime",
            lambda: RuntimePredictor().update(evs),
            lambda: ref.runtime_ref(evs, 5, 1.96, True),
        ),
        (
            "capability",
            lambda: CapabilityUse(100).update(evs),
            lambda: ref.capability_ref(evs, min_large_nodes(100)),
        ),
        (
            "fairshare",
            lambda: FairShareUsage().update(evs),
            lambda: ref.fairshare_ref(evs, 7 * 86400, until, {"NODE_FAIL"}),
        ),
    ]
    out = []
    for name, fast, slow in cases:
        t = time.perf_counter()
        fast()
        tf = time.perf_counter() - t
        t = time.perf_counter()
        slow()
        ts = time.perf_counter() - t
        out.append((name, tf, ts))
    return out


def mae_table() -> None:
    srcs = [
        ("KTH SP2 (swf)", DATA / TRACES[0], "swf"),
        ("NASA iPSC (swf, wait 0)", DATA / TRACES[1], "swf"),
        ("phillips (sacct)", DATA / "sacct" / "phillips.log", "sacct"),
    ]
    variants = [
        ("default: (user, name|request), every past run, trim, cap", {}),
        ("last 5 runs, trim (the former default)", {"history": 5}),
        ("per user only (no request as name)", {"request_as_name": False}),
        ("last 2 runs, no trim (Tsafrir-style)", {"history": 2, "trim_from": 10**9}),
        ("last 20 runs, trim", {"history": 20}),
    ]
    print(
        "| trace | predictor | jobs | covered | MAE pred (covered) | MAE request (same jobs) "
        "| MAE hybrid (all w/ request) | MAE request (all) | overran upper+60 s "
        "| ran past request+60 s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, path, fmt in srcs:
        if not path.exists():
            print(f"| {label} | (absent) |")
            continue
        evs = load(path, fmt)
        for vlabel, kw in variants:
            s = score_predictions(RuntimePredictor(**kw).update(evs))

            def f(x: float | None, pct: bool = False) -> str:
                if x is None:
                    return "-"
                return f"{100 * x:.1f} %" if pct else f"{x:,.0f} s"

            print(
                f"| {label} | {vlabel} | {s.jobs:,} | {s.covered:,} | {f(s.mae_predicted)} | "
                f"{f(s.mae_request_covered)} | {f(s.mae_hybrid)} | {f(s.mae_request)} | "
                f"{f(s.overran_upper, True)} | {f(s.over_request, True)} |"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--mae", action="store_true", help="print the run-time prediction table")
    ap.add_argument(
        "--ref-jobs",
        type=int,
        default=1500,
        help="KTH prefix (jobs) for the fast vs reference ratios",
    )
    args = ap.parse_args()
    if not (DATA / TRACES[0]).exists():
        print(f"needs {DATA / 'swf'}", file=sys.stderr)
        return 2
    if args.mae:
        mae_table()
        return 0
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} python "
        f"{platform.python_version()}"
    )
    t = time.perf_counter()
    events = build_stream(args.jobs)
    n_jobs = sum(1 for e in events if e.type == "submit")
    print(
        f"stream: {len(events):,} events, {n_jobs:,} jobs, built in "
        f"{time.perf_counter() - t:.1f} s; maxrss {maxrss_mib():,.0f} MiB"
    )
    rss0 = maxrss_mib()
    dt, sink = run_all(events, args.batch)
    rss1 = maxrss_mib()
    cpu = run_all.cpu  # type: ignore[attr-defined]
    print(
        f"all analytics: {dt:.2f} s wall = {len(events) / dt:,.0f} events/s "
        f"({n_jobs / dt:,.0f} jobs/s); {cpu:.2f} s CPU = {len(events) / cpu:,.0f} events/s "
        f"per core-second; maxrss {rss0:,.0f} -> {rss1:,.0f} MiB"
    )
    print("  rows: " + ", ".join(f"{f} {len(r):,}" for f, r in sorted(sink.rows.items())))
    del sink
    for name, rate in each_alone(events, args.batch).items():
        print(f"  {name:<11} alone: {rate:,.0f} events/s per CPU-second")
    del events  # the reference timings below run with the GC on: not over 3M live events
    gc.collect()
    print(f"fast vs reference (first {args.ref_jobs} KTH jobs):")
    for name, tf, ts in vs_reference(args.ref_jobs):
        print(
            f"  {name:<11} fast {tf * 1e3:8.1f} ms  reference {ts * 1e3:9.1f} ms  x{ts / tf:,.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
