"""`drainwatch replay --format moab`: drain accounting over Moab node-status logs (seed 000).

Streams each file in whole-line chunks through models.formats.moab (parse) and
models.drain.accountant (account), so memory stays flat in the number of lines, then writes
the report files (the CSV columns are a contract: dashboards and other tools read them).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson

from models.drain.accountant import DrainAccountant, WindowRow
from models.drain.jobs import (
    FAILURE_TO_LAUNCH_S,
    JobDrain,
    JobTimes,
    by_size_group,
    failure_to_launch,
    job_times,
    sliding_jobs,
)
from models.formats.jobsource import FORMATS as JOB_FORMATS
from models.formats.jobsource import iter_job_events
from models.formats.moab import parse_moab_chunk
from models.records.nodestatus import KNOWN_STATES, Codebook
from models.records.reject import Reject
from streams.sources.files import (
    Progress,
    line_chunks,
    open_binary,
    open_text,
    raw_position,
    write_csv,
)

QUALITY_MIN = 0.95  # a window whose mean seconds per node is below 95 % of its length is short


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("moab (drain accounting, seed 000)")
    g.add_argument(
        "--max-gap",
        type=float,
        default=None,
        metavar="S",
        help="longest interval accrued to a state; longer is unaccounted "
        "(default: settings, else 600)",
    )
    g.add_argument(
        "--jobs",
        action="append",
        default=[],
        metavar="FILE",
        help="job events for job-aware analytics (repeatable)",
    )
    g.add_argument(
        "--jobs-format",
        choices=JOB_FORMATS,
        default="jobevents",
        help="format of --jobs files (default jobevents: the simulator's JSON lines)",
    )
    g.add_argument(
        "--ftl-threshold",
        type=float,
        default=FAILURE_TO_LAUNCH_S,
        metavar="S",
        help="failure to launch: drained, then ran less than S seconds (default 30)",
    )
    g.add_argument(
        "--quality-min",
        type=float,
        default=QUALITY_MIN,
        metavar="F",
        help="flag a window 'short' below F x its length per node (default 0.95)",
    )
    g.add_argument("--chunk-mb", type=int, default=32, help="read size per parse batch")


def ms_s(ms: int) -> str:
    """Exact decimal seconds of integer milliseconds."""
    sign = "-" if ms < 0 else ""
    ms = abs(int(ms))
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


def iso_ms(ms: int) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, tz=UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def fmt(x: float | None, nd: int = 6) -> str:
    if x is None:
        return ""
    return f"{x:.{nd}f}"


def _window_rows(rows: list[WindowRow], label, basis_nodes: int, quality_min: float):
    for w in rows:
        length_s = w.length_ms / 1000
        static = w.drain_ms / (basis_nodes * w.length_ms) * 100 if basis_nodes else None
        avail = w.accounted_ms - w.down_ms
        dynamic = w.drain_ms / avail * 100 if avail > 0 else None
        per_node = w.accounted_ms / 1000 / w.nodes if w.nodes else 0.0
        quality = "ok" if per_node >= quality_min * length_s else "short"
        yield [
            label(w.start_ms),
            ms_s(w.accounted_ms),
            ms_s(w.drain_ms),
            ms_s(w.idle_unallocated_ms),
            ms_s(w.down_ms),
            ms_s(w.unaccounted_ms),
            fmt(static),
            fmt(dynamic),
            f"{per_node:.3f}",
            quality,
        ]


WINDOW_COLS = [
    "accounted_node_seconds",
    "drain_node_seconds",
    "unallocated_idle_node_seconds",
    "down_node_seconds",
    "unaccounted_node_seconds",
    "drain_pct_static",
    "drain_pct_dynamic",
    "basis_seconds_per_node",
    "data_quality",
]


def _load_jobs(paths: list[str], fmt_: str, rejects: list[Reject]) -> dict[str, JobTimes]:
    def events():
        for p in paths:
            with open_text(p) as f:
                yield from iter_job_events(fmt_, f, source=p, rejects=rejects)

    return job_times(events())


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    book = Codebook()
    acc = DrainAccountant(book, tz=args.tz, max_gap_ms=round(args.max_gap * 1000))
    rejects_file = open(args.rejects, "w") if args.rejects else None  # noqa: SIM115
    reasons: Counter[str] = Counter()
    lines = ignored = 0
    t_parse = t_acc = 0.0
    total = sum(os.path.getsize(p) for p in args.paths)
    progress = Progress(total, enabled=not args.no_progress)
    done_before = 0
    try:
        for path in args.paths:
            with open_binary(path) as f:
                lineno = 1
                for chunk in line_chunks(f, args.chunk_mb << 20):
                    t0 = time.perf_counter()
                    parsed = parse_moab_chunk(chunk, book, source=path, first_lineno=lineno)
                    t1 = time.perf_counter()
                    acc.add(parsed.batch)
                    t_acc += time.perf_counter() - t1
                    t_parse += t1 - t0
                    lineno += parsed.lines
                    lines += parsed.lines
                    ignored += parsed.ignored
                    for r in parsed.rejects:
                        reasons[r.reason] += 1
                        if rejects_file:
                            rejects_file.write(r.tsv())
                    progress.update(done_before + raw_position(f), lines)
            done_before += os.path.getsize(path)
        progress.update(done_before, lines, force=True)
        progress.close()

        job_rejects: list[Reject] = []
        jobs_info = _load_jobs(args.jobs, args.jobs_format, job_rejects) if args.jobs else {}
        if rejects_file:
            for r in job_rejects:
                rejects_file.write(r.tsv())
    finally:
        if rejects_file:
            rejects_file.close()

    files = _write_reports(out, acc, book, args, jobs_info)
    nodes_seen = len(book.nodes)
    summary = {
        "format": "moab",
        "inputs": list(args.paths),
        "lines_read": lines,
        "records": acc.counts.records,
        "ignored_other_lines": ignored,
        "rejected": sum(reasons.values()),
        "rejected_by_reason": dict(sorted(reasons.items())),
        "duplicates": acc.counts.duplicates,
        "out_of_order": acc.counts.out_of_order,
        "intervals": acc.counts.intervals,
        "gaps_over_max_gap": acc.counts.gaps,
        "nodes": nodes_seen,
        "basis_nodes": args.nodes or nodes_seen,
        "jobs_and_reservations": len(book.jobs),
        "jobs_charged_drain": int(acc.jobs_charged().size),
        "records_by_state": {
            name: int(n)
            for name, n in zip(book.states.names, acc.state_records.tolist(), strict=False)
        },
        "unknown_states": {
            name: int(n)
            for name, n in zip(
                book.states.names[len(KNOWN_STATES) :],
                acc.state_records[len(KNOWN_STATES) :].tolist(),
                strict=False,
            )
        },
        "window": {
            "first": iso_ms(acc.first_ms) if acc.first_ms is not None else None,
            "last": iso_ms(acc.last_ms) if acc.last_ms is not None else None,
            "tz": args.tz,
        },
        "max_gap_seconds": args.max_gap,
        "job_events": {
            "files": list(args.jobs),
            "jobs": len(jobs_info),
            "rejected": len(job_rejects),
        },
        "timings_seconds": {
            "parse": round(t_parse, 3),
            "account": round(t_acc, 3),
            "total": round(time.perf_counter() - t_start, 3),
        },
        "lines_per_second": round(lines / max(t_parse + t_acc, 1e-9)),
        "files": files,
    }
    (out / "summary.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    return 0


def _job_records(acc: DrainAccountant, book: Codebook, info: dict[str, JobTimes]) -> list[JobDrain]:
    charged = acc.nodes_charged()
    running = acc.nodes_running()
    seen = acc.seen_running()
    out = []
    for j in acc.jobs_charged().tolist():
        name = book.jobs.names[j]
        jt = info.get(name)
        size = jt.nodes if jt and jt.nodes else (int(running[j]) or None)
        out.append(
            JobDrain(
                name,
                int(acc.job_drain_ms[j]) / 1000,
                int(charged[j]),
                int(acc.job_first_ms[j]),
                int(acc.job_last_ms[j]),
                size,
                jt.runtime if jt else None,
                bool(seen[j]) or bool(jt and jt.start is not None),
            )
        )
    return out


def _write_reports(
    out: Path,
    acc: DrainAccountant,
    book: Codebook,
    args: argparse.Namespace,
    info: dict[str, JobTimes],
) -> list[str]:
    written = []
    basis_nodes = args.nodes or len(book.nodes)
    header = ["day", *WINDOW_COLS]
    write_csv(
        out / "drain_daily.csv",
        header,
        _window_rows(acc.daily(), acc.days.local_label, basis_nodes, args.quality_min),
    )
    write_csv(
        out / "drain_hourly.csv",
        ["hour", *WINDOW_COLS],
        _window_rows(acc.hourly(), acc.hours.label, basis_nodes, args.quality_min),
    )
    written += ["drain_daily.csv", "drain_hourly.csv"]

    ns = acc.node_state_ms()
    rows = (
        [book.nodes.names[n], book.states.names[s], int(c >> 1), int(c & 1), ms_s(ns[n, s, c])]
        for n, s, c in zip(*ns.nonzero(), strict=True)
    )
    write_csv(out / "node_states.csv", ["node", "state", "has_rsv", "has_job", "seconds"], rows)
    written.append("node_states.csv")

    jobs = _job_records(acc, book, info)
    with_events = bool(args.jobs)
    cols = ["job", "drain_node_seconds", "nodes_charged", "first_charged", "last_charged"]
    if with_events:
        cols += ["size", "runtime", "drain_per_node", "drain_runtime_ratio"]

    def job_row(j: JobDrain) -> list[str]:
        r = [
            j.job,
            f"{j.drain_s:.3f}",
            str(j.nodes_charged),
            iso_ms(j.first_charged_ms),
            iso_ms(j.last_charged_ms),
        ]
        if with_events:
            r += [
                str(j.size or ""),
                fmt(j.runtime_s, 3),
                fmt(j.drain_per_node, 3),
                fmt(j.drain_runtime_ratio),
            ]
        return r

    ranked = sorted(jobs, key=lambda j: (-j.drain_s, j.job))
    write_csv(out / "drain_jobs.csv", cols, (job_row(j) for j in ranked))
    written.append("drain_jobs.csv")

    groups = by_size_group(jobs)
    if groups:
        write_csv(
            out / "size_groups.csv",
            [
                "group",
                "jobs",
                "drain_node_seconds",
                "mean_drain_node_seconds",
                "mean_drain_per_node",
            ],
            (
                [
                    g.group,
                    g.jobs,
                    f"{g.drain_s:.3f}",
                    f"{g.mean_drain_s:.3f}",
                    f"{g.mean_drain_per_node:.3f}",
                ]
                for g in groups
            ),
        )
        written.append("size_groups.csv")
    sliding = sliding_jobs(jobs)
    if sliding:
        write_csv(
            out / "sliding_jobs.csv",
            [
                "rank",
                "job",
                "drain_node_seconds",
                "size",
                "drain_per_node",
                "nodes_charged",
                "first_charged",
                "last_charged",
            ],
            (
                [
                    i + 1,
                    j.job,
                    f"{j.drain_s:.3f}",
                    j.size or "",
                    f"{j.drain_s / (j.size or max(j.nodes_charged, 1)):.3f}",
                    j.nodes_charged,
                    iso_ms(j.first_charged_ms),
                    iso_ms(j.last_charged_ms),
                ]
                for i, j in enumerate(sliding)
            ),
        )
        written.append("sliding_jobs.csv")
    if with_events:
        ftl = failure_to_launch(jobs, args.ftl_threshold)
        write_csv(
            out / "failure_to_launch.csv",
            ["job", "drain_node_seconds", "size", "runtime", "drain_runtime_ratio"],
            (
                [
                    j.job,
                    f"{j.drain_s:.3f}",
                    j.size or "",
                    fmt(j.runtime_s, 3),
                    fmt(j.drain_runtime_ratio),
                ]
                for j in ftl
            ),
        )
        written.append("failure_to_launch.csv")
    return written
