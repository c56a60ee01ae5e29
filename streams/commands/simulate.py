"""`drainwatch simulate`: a modelled or replayed workload through EASY backfilling, written as a
Moab node-status log (``moab.log`` or ``moab.log.gz``) and job events (``jobs.jsonl``); with
``--findings`` the jobs of :mod:`models.sim.findings` are added, with ``--samples-hours`` node
samples of the last hours' jobs (:mod:`models.sim.nodesamples`) go to ``samples.jsonl``."""

from __future__ import annotations

import argparse
import gzip
import os
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from zoneinfo import ZoneInfo

from streams.errors import (
    UnusableInput,
    UserError,
    check_inputs,
    check_output_dir,
    check_tz,
    non_negative_float,
    non_negative_int,
    option_type,
    positive_int,
)

# What a simulation can be asked for: beyond these it runs out of memory or never ends
MAX_NODES = 1_000_000  # Fugaku has 158,976
MAX_DAYS = 3660.0  # ten years
MAX_WARMUP_H = 8784.0  # a leap year
MAX_OUTAGES = 1_000_000


def parse_start(text: str, tz: str) -> float:
    """POSIX seconds from an ISO date/time; without an offset it is local time in ``tz``."""
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=ZoneInfo(tz))
    return dt.timestamp()


def check_start(text: str, tz: str, days: float) -> float:
    """``--start`` as POSIX seconds; the log it begins lies inside the times replay accepts
    (1970-01-01 to 2100-01-01 UTC by default)."""
    from models.records.plausible import DEFAULT_NOT_AFTER_MS, DEFAULT_NOT_BEFORE_MS

    try:
        start = parse_start(text, tz)
    except ValueError:
        raise UserError(
            f"--start {text!r} is not an ISO 8601 date or time (e.g. 2015-03-01T00:00:00)"
        ) from None
    end = start + days * 86400.0
    if start * 1000 < DEFAULT_NOT_BEFORE_MS or end * 1000 >= DEFAULT_NOT_AFTER_MS:
        raise UserError(
            f"--start {text!r} and --days {days:g}: the log would not lie within 1970-01-01 "
            "to 2100-01-01, and replay rejects its lines as implausible_time"
        )
    return start


def write_simulation(args: argparse.Namespace) -> dict[str, Any]:
    """Run the simulation described by ``args`` and write its files; return the summary."""
    from models.formats.sampletrace import dumps
    from models.formats.swf import parse_swf
    from models.records.jobevent import JobEvent
    from models.records.reject import Reject, count_reasons
    from models.sim.findings import concat, findings_workload
    from models.sim.lublin import LublinModel
    from models.sim.nodesamples import node_samples
    from models.sim.simulator import (
        SimConfig,
        random_outages,
        simulate,
        workload_from_lublin,
        workload_from_swf,
    )
    from streams.atomic import OutputSet
    from streams.driver import signals_held
    from streams.sources.files import open_text, reading

    out = Path(args.out)
    cfg = SimConfig(
        nodes=args.nodes,
        days=args.days,
        start=parse_start(args.start, args.tz),
        period=args.period,
        tz=args.tz,
        seed=args.seed,
        warmup=args.warmup * 3600.0,
        depth=args.depth,
    )
    skipped: dict[str, int] = {}
    rejects: list[Reject] = []
    if args.swf:
        with reading(args.swf), open_text(Path(args.swf)) as f:
            _, jobs = parse_swf(f, rejects, source=str(args.swf))
            workload, sel = workload_from_swf(jobs, cfg, skip_seconds=args.swf_skip_days * 86400)
        skipped = dict(sel.skipped)
        if not len(workload):  # e.g. not an SWF trace, or --swf-skip-days past its end
            raise UnusableInput(
                f"no job of {args.swf} to simulate ({len(rejects)} lines rejected, skipped "
                f"{skipped or 'none'}); nothing written"
            )
    else:
        model = LublinModel(args.nodes, args.seed, target_load=args.load)
        workload = workload_from_lublin(model, cfg)
    # options added later: a caller's own Namespace (bench/) may not have them
    findings, samples_hours = getattr(args, "findings", False), getattr(args, "samples_hours", 0.0)
    if findings:
        first = cfg.job_base + len(workload) + 1_000
        workload = concat(
            workload, findings_workload(cfg.nodes, cfg.start, cfg.end, cfg.seed, first)
        )
    outages = random_outages(cfg, args.outages, args.drained)
    log_path = out / ("moab.log.gz" if args.gzip else "moab.log")
    jobs_path = out / "jobs.jsonl"
    n_lines = 0
    n_events = 0
    n_samples = 0
    first_ts: float | None = None
    last_ts: float | None = None
    events: list[JobEvent] = []  # kept for the node samples only
    outputs = OutputSet()  # the log, the job events and the samples change as one set
    try:
        with (
            open(outputs.staged(log_path), "wb") as raw,
            open(outputs.staged(jobs_path), "wb") as jf,
        ):
            log: IO[bytes] | gzip.GzipFile = (
                gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0)
                if args.gzip
                else raw
            )
            try:
                for chunk in simulate(workload, cfg, outages):
                    if chunk.n_lines:
                        log.write(chunk.moab.encode())
                        n_lines += chunk.n_lines
                        if first_ts is None:
                            first_ts = chunk.ts
                        last_ts = chunk.ts
                    if chunk.events:
                        jf.write(b"".join(e.to_json() + b"\n" for e in chunk.events))
                        n_events += len(chunk.events)
                        if samples_hours:
                            events.extend(chunk.events)
            finally:
                if log is not raw:
                    log.close()  # writes the gzip trailer; raw is closed by its block
            for done in (raw, jf):
                done.flush()
                os.fsync(done.fileno())
        if samples_hours:
            t1 = cfg.end
            t0 = max(cfg.start, t1 - samples_hours * 3600.0)
            with open(outputs.staged(out / "samples.jsonl"), "wb") as sf:
                buf: list[bytes] = []
                for sample in node_samples(events, t0, t1, cfg.seed):
                    buf.append(dumps(sample))
                    if len(buf) >= 8192:
                        sf.write(b"\n".join(buf) + b"\n")
                        n_samples += len(buf)
                        buf.clear()
                if buf:
                    sf.write(b"\n".join(buf) + b"\n")
                    n_samples += len(buf)
                sf.flush()
                os.fsync(sf.fileno())
        with signals_held():
            outputs.commit()
    except BaseException:
        with signals_held():
            outputs.abort()
        raise
    span = 0.0 if first_ts is None or last_ts is None else last_ts - first_ts + cfg.period
    return {
        "jobs": len(workload),
        "events": n_events,
        "lines": n_lines,
        "nodes": cfg.nodes,
        "span_seconds": span,
        "log": str(log_path),
        "jobs_file": str(jobs_path),
        "skipped_jobs": skipped,
        "rejected_swf_lines": dict(count_reasons(rejects)),
        "outages": args.outages,
        "drained": args.drained,
        "samples": n_samples,
    }


def run(args: argparse.Namespace) -> int:
    check_tz(args.tz)
    check_start(args.start, args.tz, args.days)
    if args.swf:
        check_inputs([args.swf])
    check_output_dir(args.out)
    from streams.overlap import check_disjoint, run_writes

    names = ["moab.log.gz" if args.gzip else "moab.log", "jobs.jsonl", "samples.jsonl"]
    check_disjoint([("--swf", args.swf)] if args.swf else [], run_writes(args.out, names))
    s = write_simulation(args)
    extra = ""
    if s["skipped_jobs"]:
        extra += f", skipped jobs {s['skipped_jobs']}"
    if s["rejected_swf_lines"]:
        extra += f", rejected SWF lines {s['rejected_swf_lines']}"
    print(
        f"simulated {s['jobs']} jobs ({s['events']} events) on {s['nodes']} nodes: "
        f"{s['lines']} Moab lines over {s['span_seconds'] / 86400:.2f} days "
        f"-> {s['log']}, {s['jobs_file']}{extra}"
        + (f"; {s['samples']} node samples -> {args.out}/samples.jsonl" if s["samples"] else "")
    )
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--swf", metavar="TRACE", help="replay a Standard Workload Format trace")
    src.add_argument("--model", choices=["lublin"], help="generate a workload from a model")
    p.add_argument(
        "--nodes",
        type=option_type(int, 0, False, MAX_NODES),
        required=True,
        help="nodes in the machine",
    )
    p.add_argument(
        "--days",
        type=option_type(float, 0.0, False, MAX_DAYS),
        required=True,
        help="days of log to write",
    )
    p.add_argument(
        "--period",
        type=option_type(float, 1.0, True, 86400.0),
        default=120.0,
        help="seconds between scheduler iterations (default 120)",
    )
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--tz",
        default="America/Chicago",
        help="IANA zone of the log timestamps (default America/Chicago)",
    )
    p.add_argument(
        "--start",
        default="2014-12-31T00:00:00",
        help="first iteration, ISO 8601; local to --tz without an offset",
    )
    outages = option_type(int, 0, True, MAX_OUTAGES)
    p.add_argument("--outages", type=outages, default=0, help="node failures (Down) to inject")
    p.add_argument("--drained", type=outages, default=0, help="admin drains (Drained) to inject")
    p.add_argument("--gzip", action="store_true", help="write moab.log.gz")
    p.add_argument(
        "--warmup",
        type=option_type(float, 0.0, True, MAX_WARMUP_H),
        default=24.0,
        help="hours of workload run before the first line (default 24)",
    )
    p.add_argument("--depth", type=positive_int, default=1, help="reservation depth (default 1)")
    p.add_argument(
        "--load",
        type=option_type(float, 0.0, False, 10.0),
        default=0.85,
        help="offered load the Lublin model is scaled to (default 0.85)",
    )
    p.add_argument(
        "--findings",
        action="store_true",
        help="add jobs that make one finding of each kind: a perpetually sliding job, a failure "
        "to launch, an overrun, a short-job flood (users user095-user099)",
    )
    p.add_argument(
        "--samples-hours",
        type=option_type(float, 0.0, True, 24.0 * 31),
        default=0.0,
        metavar="H",
        help="also write samples.jsonl: node samples (one a minute) of the jobs running in the "
        "last H hours, with a DFS write burst (default 0: none)",
    )
    p.add_argument(
        "--swf-skip-days",
        type=non_negative_float,
        default=0.0,
        help="start the replay this many days into the trace",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate a workload under EASY backfilling and write a Moab log + job events",
        description="Run a Lublin-Feitelson workload or an SWF trace through an EASY-backfill "
        "scheduler and write Moab node-status lines and job events.",
    )
    add_arguments(p)
    p.set_defaults(func=run)
