"""`drainwatch whatif`: the site's own jobs (sacct, SWF, job events, jobcomp) through the
scheduler simulator under each policy, each schedule's drain accounted as the replay accounts a
log, side by side with the recorded schedule (models.sim.whatif, docs/whatif.md).

Writes ``whatif.csv``, ``whatif_users.csv`` and ``summary_whatif.json`` into ``--out`` as one
set (and ``report.html`` with ``--report``); ``drainwatch report`` shows them beside the
replays of the same directory."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from streams.errors import (
    UnusableInput,
    UserError,
    check_inputs,
    check_output_dir,
    check_output_file,
    check_tz,
    positive_int,
)

FORMATS = ("sacct", "swf", "jobevents", "jobcomp")
# models.sim.policies.POLICIES and models.sim.whatif.PREDICTORS, written out so that building the
# parser loads no numpy (a test keeps them equal)
POLICIES = ("as-run", "easy", "easy-predicted", "easy-perfect", "conservative")
PREDICTORS = ("last-two", "trimmed-upper")
ENGINE = "whatif"
# what the simulator leaves out: written into the summary, the report and docs/whatif.md
LIMITS = (
    "one partition of identical nodes: no topology, no node features, no partitions or QOS "
    "the trace does not name, no per-node memory or GPUs",
    "whole nodes: a job gets its node count to itself, so jobs that shared nodes (per-core "
    "allocation) are given whole nodes",
    "FCFS order by submit time: no priorities, fair share, QOS or job arrays as the site "
    "configured them",
    "no preemption, no advance or maintenance reservations, no node failures or drains unless "
    "the trace shows them (it does not here)",
    "every job runs its recorded run time (its request raised to it where it ran past it); "
    "dependencies and users reacting to the queue are not modelled",
    "as-run has no drain: the recorded schedule shows when jobs ran, not the reservations "
    "that held nodes idle",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "whatif",
        help="the site's own jobs under other scheduling policies: drain, waits, slowdown",
        description="Replay the jobs of sacct, SWF, job-event or jobcomp files through the "
        "scheduler simulator under each policy and account each schedule's drain as the "
        "replay does; write whatif.csv and whatif_users.csv beside the recorded schedule.",
    )
    p.add_argument("--format", required=True, choices=FORMATS, help="input format")
    p.add_argument("paths", nargs="+", metavar="FILE", help="job files (gzip is detected)")
    p.add_argument(
        "--nodes",
        type=positive_int,
        default=None,
        help="nodes in the machine (default: settings' nodes)",
    )
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument(
        "--policy",
        action="append",
        choices=POLICIES,
        default=None,
        help=f"a policy to run, repeatable (default: all of {', '.join(POLICIES)})",
    )
    p.add_argument(
        "--predictor",
        action="append",
        choices=PREDICTORS,
        default=None,
        help="easy-predicted's estimate, repeatable (default: both; last-two is Tsafrir et "
        "al.'s, trimmed-upper seed 001's)",
    )
    p.add_argument(
        "--tz",
        default=None,
        help="IANA zone of the drain accountant's hours (default: settings, else UTC)",
    )
    p.add_argument("--rejects", default=None, help="write rejected records with reasons here")
    p.add_argument("--report", action="store_true", help="also write report.html in --out")
    p.add_argument("--no-progress", action="store_true", help="no summary line on stderr")
    p.set_defaults(func=run)


def _with_settings(args: argparse.Namespace) -> argparse.Namespace:
    """The options not given, from the settings, as ``replay`` takes them; the time bounds."""
    from streams.commands.replay import time_bounds, with_settings

    args = with_settings(args)
    if not args.nodes:
        raise UserError("--nodes is needed (or nodes in the settings): the machine's size")
    args.bounds = time_bounds(args)
    return args


def run(args: argparse.Namespace) -> int:
    from streams.overlap import check_disjoint, run_writes
    from streams.tables.whatif import FILES

    args = _with_settings(args)
    check_tz(args.tz)
    check_inputs(args.paths)
    check_output_dir(args.out)
    if args.rejects is not None:
        check_output_file("--rejects", args.rejects, inputs=args.paths)
    names = [*FILES, *(["report.html"] if args.report else [])]
    writes = run_writes(args.out, names)
    if args.rejects is not None:
        writes.append(("--rejects", args.rejects))
    check_disjoint([("the input", p) for p in args.paths], writes)
    s = write_whatif(args)
    if not args.no_progress:
        best = ", ".join(
            f"{r['policy']}{'/' + r['estimate'] if r['policy'] == 'easy-predicted' else ''} "
            f"wait {float(r['mean_wait_seconds']):,.0f} s"
            for r in s["policies"]
        )
        print(
            f"whatif {args.format}: {s['jobs']:,} jobs on {args.nodes:,} nodes "
            f"({sum(s['left_out'].values()):,} left out, {s['rejected']:,} rejected): {best} "
            f"-> {args.out}/whatif.csv",
            file=sys.stderr,
        )
        if args.report:
            print(f"whatif {args.format}: report {Path(args.out) / 'report.html'}", file=sys.stderr)
    return 0


def _row_of(r: Any) -> list[Any]:
    o, d = r.outcome, r.drain
    return [
        r.policy,
        r.estimate,
        o.jobs,
        o.span[0],
        o.span[1],
        None if d is None else d.drain_ms / 3_600_000,
        None if d is None else d.drain_pct,
        o.utilisation * 100.0,
        o.mean_wait,
        o.p95_wait,
        o.mean_bounded_slowdown,
        o.started_late,
    ]


def write_whatif(args: argparse.Namespace) -> dict[str, Any]:
    """Read, simulate, write the set; the summary (also ``summary_whatif.json``)."""
    import orjson

    from models.sim.whatif import jobs_from_events, run_whatif
    from streams import driver
    from streams.atomic import OutputSet
    from streams.commands.replay import previous_outputs
    from streams.format import format_rows
    from streams.sinks.files import DirectorySink
    from streams.sources.jobevents import read_job_events
    from streams.tables.whatif import FILES, WHATIF, WHATIF_USERS

    t0 = time.perf_counter()
    policies = args.policy or None
    outputs = OutputSet()
    try:
        rejects = driver.RejectLog(args.rejects, outputs)
        events, inputs = read_job_events(
            args.format, list(args.paths), rejects, args.bounds, args.max_line_bytes, args.max_hosts
        )
        t_read = time.perf_counter() - t0
        jobs = jobs_from_events(events, args.nodes)
        if not len(jobs.workload):
            raise UnusableInput(
                f"no job of {', '.join(args.paths)} ran to its end on at most {args.nodes} nodes "
                f"({len(events):,} events, {rejects.total:,} rejected, left out "
                f"{jobs.left_out or 'none'}); nothing written"
            )
        results = run_whatif(
            jobs,
            args.nodes,
            policies or POLICIES,
            args.predictor or PREDICTORS,
            args.tz,
        )
        t_sim = time.perf_counter() - t0 - t_read
        base_wait = jobs.recorded.waits.mean()
        rows = [[*_row_of(r), r.outcome.mean_wait - base_wait] for r in results]
        user_rows = [
            [
                r.policy,
                r.estimate,
                u.user,
                u.jobs,
                u.mean_wait,
                u.baseline_mean_wait,
                u.mean_wait_change,
                u.longer,
                u.shorter,
            ]
            for r in results
            for u in r.users
        ]
        sink = DirectorySink(args.out, previous_outputs(args.out, ENGINE, FILES), outputs)
        sink.write(WHATIF, rows)
        sink.write(WHATIF_USERS, user_rows)
        summary: dict[str, Any] = {
            "engine": ENGINE,
            "format": args.format,
            "tz": args.tz,
            "nodes": args.nodes,
            **driver.input_figures(inputs, rejects),
            "jobs": len(jobs.workload),
            "left_out": dict(sorted(jobs.left_out.items())),
            "filled_in": dict(sorted(jobs.filled_in.items())),
            # as whatif.csv writes them (streams.format)
            "policies": [
                dict(zip(WHATIF.names, r, strict=True)) for r in format_rows(WHATIF, rows)
            ],
            "limits": list(LIMITS),
            "outputs": {WHATIF.file: len(rows), WHATIF_USERS.file: len(user_rows)},
            "timings_s": {
                "read": round(t_read, 3),
                "simulate": round(t_sim, 3),
                "total": round(time.perf_counter() - t0, 3),
            },
        }
        data = orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
        sink.document(f"summary_{ENGINE}.json", data + b"\n")
        sink.commit()
        if args.report:
            from streams.report import write_report

            write_report(
                [args.out],
                outputs.staged(Path(args.out) / "report.html"),
                staged=(Path(args.out), outputs.stage_dir(args.out)),
            )
        with driver.signals_held():
            if rejects.file is not None:
                rejects.file.commit()
            outputs.commit(last=[f"summary_{ENGINE}.json"])
    except BaseException:
        with driver.signals_held():
            if rejects.file is not None:
                rejects.file.abort()
            outputs.abort()
        raise
    return summary
