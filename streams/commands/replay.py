"""`drainwatch replay`: offline analytics over log files through the same stages as the worker.

One flow for every format (streams.driver): a file source, the stages of the format's engine,
a directory sink written atomically, one summary per engine (``summary_drain.json``,
``summary_jobs.json``, ``summary_samples.json``), rejects to ``--rejects``.

=================  ========  ===================================================================
format             engine    stages
=================  ========  ===================================================================
moab               drain     DrainStage (+ JobTimesStage with ``--jobs``)
sacct, swf,        jobs      Usage, ShortJobs, Turnover, Runtime, Capability, FairShare
jobevents, jobcomp
samples, llview    samples   SampleTraceStage / LlviewStage
=================  ========  ===================================================================
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.drain.basis import QUALITY_MIN
from models.drain.jobs import FAILURE_TO_LAUNCH_S, SIZE_GROUP_MODES
from models.formats.jobsource import FORMATS as JOB_FORMATS
from models.jobs.capability import DEFAULT_FRACTION
from models.jobs.fairshare import DEFAULT_HALF_LIFE_S
from models.jobs.runtime import DEFAULT_HISTORY
from models.jobs.shortjobs import DEFAULT_INTERVAL_S, DEFAULT_LAMBDA, DEFAULT_THRESHOLD_S
from models.jobs.turnover import DEFAULT_MAX_GAP_S, DEFAULT_WINDOW_S
from streams.errors import (
    UnusableInput,
    UserError,
    check_inputs,
    check_output_dir,
    check_output_file,
    check_tz,
    fraction,
    instant_ms_arg,
    non_negative_float,
    non_negative_int,
    option_type,
    positive_float,
    positive_int,
)

if TYPE_CHECKING:  # the run's modules (polars, numpy) are imported when a run starts, so
    # that `drainwatch replay --help` and a mistyped option answer at once
    from collections.abc import Iterable

    from models.records.plausible import TimeBounds
    from streams import driver
    from streams.contracts import Row, Sink, Table
    from streams.sinks.influx import InfluxSink
    from streams.stages import samples as sample_stages

SUMMARY_MAX_BYTES = 64 << 20  # a summary larger than this is no summary of ours

ENGINES: dict[str, str] = {
    "moab": "drain",
    "sacct": "jobs",
    "swf": "jobs",
    "jobevents": "jobs",
    "jobcomp": "jobs",
    "samples": "samples",
    "llview": "samples",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="offline analytics over scheduler logs, job events or node samples",
        description="Replay log files through drainwatch's stages and write CSV/JSON reports.",
    )
    p.add_argument("--format", required=True, choices=list(ENGINES), help="input format")
    p.add_argument("paths", nargs="+", metavar="PATH", help="input files (gzip is detected)")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument(
        "--tz",
        default=None,
        help="IANA time zone of day/hour windows (default: settings, else UTC)",
    )
    p.add_argument(
        "--nodes",
        type=positive_int,
        default=None,
        help="static basis: schedulable nodes (default: settings, else nodes seen)",
    )
    p.add_argument("--rejects", default=None, help="write rejected records with reasons here")
    p.add_argument(
        "--influx",
        action="store_true",
        help="moab: also write the drain rows to InfluxDB (the settings' influx_*), the "
        "measurements the live worker writes (docs/influxdb.md)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    p.add_argument(
        "--report",
        action="store_true",
        help="also write report.html (drainwatch report) beside the outputs, with every "
        "replay the --out directory holds",
    )
    p.add_argument(
        "--max-reject-share",
        type=fraction,
        default=0.5,
        metavar="F",
        help="exit 3 when more than F of the records are rejected or out of time order "
        "(default 0.5)",
    )
    p.add_argument(
        "--not-before",
        type=instant_ms_arg,
        default=None,
        metavar="TIME",
        help="records earlier than this are implausible and rejected (default: settings, "
        "else 1970-01-01, UTC)",
    )
    p.add_argument(
        "--not-after",
        type=instant_ms_arg,
        default=None,
        metavar="TIME",
        help="records at or after this are implausible and rejected (default: settings, "
        "else 2100-01-01, UTC)",
    )
    p.add_argument(
        "--max-jump",
        type=non_negative_float,
        default=None,
        metavar="S",
        help="reject as time_jump a few records more than S seconds from the rest of their "
        "source (0: off; default: settings, else 30 days)",
    )
    _drain_arguments(p)
    _job_arguments(p)
    _sample_arguments(p)
    p.set_defaults(func=run)


def _drain_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("moab (drain accounting, seed 000)")
    g.add_argument(
        "--max-gap",
        type=positive_float,
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
        type=non_negative_float,
        default=FAILURE_TO_LAUNCH_S,
        metavar="S",
        help="failure to launch: drained, then ran less than S seconds (default 30)",
    )
    g.add_argument(
        "--size-groups",
        choices=SIZE_GROUP_MODES,
        default="auto",
        help="size groups of size_groups.csv: the seed's absolute sizes (Blue Waters), the same "
        "boundaries relative to the machine (fractions of 26,846 nodes; machine = --nodes, else "
        "the nodes seen), or auto: relative below 5,000 nodes (default)",
    )
    g.add_argument(
        "--quality-min",
        type=fraction,
        default=QUALITY_MIN,
        metavar="F",
        help="flag a window 'short' below F x its length per node (default 0.95)",
    )
    g.add_argument(
        "--chunk-mb",
        type=option_type(int, 0, False, 1024),
        default=8,
        help="read size per parse batch, 1..1024 MB (8); lowered, with a note, so that the "
        "chunks in flight (one accounted, one being cut, up to 64 MB more waiting; about twice "
        "their size each in memory) take at most a quarter of the memory available "
        "(MemAvailable, or the cgroup's limit)",
    )
    g.add_argument(
        "--reorder-window",
        type=option_type(float, 0.0, True, 3600.0),
        default=None,
        metavar="S",
        help="put records up to S seconds out of time order back in order; later ones count "
        "as out of order (0: off; default: settings, else 5)",
    )
    g.add_argument(
        "--allow-overlap",
        action="store_true",
        help="accept log files that overlap in time (their overlapping records count as out "
        "of order and accrue nothing); files are always read in the order of their first record",
    )


def _job_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("job analytics (--format sacct|swf|jobevents|jobcomp)")
    a = g.add_argument
    a(
        "--resource",
        default=None,
        metavar="NAME",
        help="resource name in usage_daily.csv (default: input file stem)",
    )
    a(
        "--short-threshold",
        type=positive_float,
        default=DEFAULT_THRESHOLD_S,
        metavar="S",
        help="jobs shorter than this are short (seed 002; default 600 s)",
    )
    a(
        "--short-min-runtime",
        type=positive_float,
        default=None,
        metavar="S",
        help="run time short jobs are charged as (default: the threshold)",
    )
    a(
        "--short-interval",
        type=positive_float,
        default=DEFAULT_INTERVAL_S,
        metavar="S",
        help="penalty update period (seed 002: 180 s)",
    )
    a(
        "--short-lambda",
        type=fraction,
        default=DEFAULT_LAMBDA,
        metavar="L",
        help="A(t) = L A(t-1) + (1-L) T_s(t) (seed 002: 0.9)",
    )
    a(
        "--adjust-out",
        default=None,
        metavar="FILE",
        help="also write seed 002's ADJUST table (fairshare_adjust.tsv) here, replaced in the "
        "run's one commit with the other outputs (its mode kept)",
    )
    a(
        "--turnover-window",
        type=positive_float,
        default=DEFAULT_WINDOW_S,
        metavar="S",
        help="window T of U = sum(w)/T (default 3600 s)",
    )
    a(
        "--turnover-max-gap",
        type=positive_float,
        default=DEFAULT_MAX_GAP_S,
        metavar="S",
        help="longer gaps are idle time, not turnover (default 3600 s)",
    )
    a(
        "--history",
        "--history-runs",
        dest="history_runs",
        type=positive_int,
        default=DEFAULT_HISTORY,
        metavar="N",
        help="predict run times from the last N runs of each (user, job name) only (default: "
        "every run, as seed 001)",
    )
    a(
        "--half-life",
        type=positive_float,
        default=DEFAULT_HALF_LIFE_S / 86400,
        metavar="DAYS",
        help="fair-share usage half-life (default 7 days)",
    )
    a(
        "--refund-states",
        default="NODE_FAIL",
        metavar="STATES",
        help="comma-separated end states refunded in fair share ('' = none)",
    )
    a(
        "--capability-fraction",
        type=fraction,
        default=DEFAULT_FRACTION,
        metavar="F",
        help="large job: >= F of the section (seed 004: 0.40)",
    )
    a(
        "--section-nodes",
        type=positive_int,
        default=None,
        metavar="N",
        help="capability section size (default: --nodes, SWF MaxNodes, ...)",
    )
    a(
        "--red-partitions",
        default=None,
        metavar="P,...",
        help="partitions of seed 004's Red section, every other one is Black (default: the "
        "Red/Black columns of capability_daily.csv stay empty)",
    )


def _check_adjust_out(args: argparse.Namespace) -> None:
    if ENGINES[args.format] != "jobs":
        raise UserError(
            "--adjust-out writes seed 002's ADJUST table: it needs --format "
            "sacct|swf|jobevents|jobcomp"
        )
    check_output_file("--adjust-out", args.adjust_out, inputs=args.paths)
    # one file as --adjust-out and --rejects (by any path or link): _check_paths


def _sample_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("samples / llview (seed 003: utilisation and DFS hot zones)")
    a = g.add_argument
    a(
        "--mem-per-core",
        type=positive_float,
        default=None,
        metavar="GB",
        help="theoretical memory per core, GiB (node memory / cores; seed: 6). "
        "Without it the memory ratios are left empty",
    )
    a(
        "--hot-zone",
        default=None,
        metavar="RATE",
        help="DFS hot-zone threshold with its unit, e.g. 93MB/s or 1.2GiB/s (converted exactly "
        "to the source's unit: samples MB/s, llview MiB/s); a plain number is in the source's "
        "unit. Default 93MB/s, only the seed's example (Gofree NFS: IOR 98 +- 5 MB/s): measure "
        "yours with `drainwatch calibrate dfs`",
    )
    a(
        "--hot-zone-bw",
        default=None,
        metavar="MEAN,STD",
        help="threshold from a bandwidth test: MEAN - STD, one unit (e.g. 98MB/s,5MB/s -> 93 MB/s)",
    )
    a(
        "--hot-zone-fs",
        action="append",
        default=[],
        metavar="FS=RATE",
        help="hot-zone threshold of one file system, e.g. scratch=1.2GiB/s (repeatable; the "
        "others use --hot-zone)",
    )
    a(
        "--hot-zone-gap",
        type=non_negative_int,
        default=0,
        metavar="MIN",
        help="hot minutes at most this many minutes apart form one episode (0)",
    )
    a(
        "--hot-zone-top",
        type=positive_int,
        default=3,
        metavar="N",
        help="jobs named per hot-zone episode (3)",
    )
    a(
        "--cores-per-node",
        type=positive_float,
        default=None,
        help="allocated cores per node when the data does not say (samples without "
        "'cores'; llview without PCOREusage)",
    )
    a(
        "--sample-period",
        type=positive_float,
        default=60.0,
        metavar="S",
        help="sampling period of node-sample traces, seconds (60)",
    )
    a(
        "--util-below",
        type=fraction,
        default=0.25,
        help="SA ratio reported for jobs under this core utilisation (0.25)",
    )


def with_settings(args: argparse.Namespace) -> argparse.Namespace:
    """Options not given on the command line come from the settings (TOML file, DRAINWATCH_*);
    ``whatif`` reads its job files with the same."""
    from streams.config import load_settings

    settings = load_settings(getattr(args, "config", None))
    for name in ("tz", "nodes", "max_gap", "not_before", "not_after", "max_jump"):
        if getattr(args, name, None) is None:
            setattr(args, name, settings.value(name))
    if getattr(args, "reorder_window", None) is None:
        args.reorder_window = settings.bounds.reorder_window
    args.max_line_bytes = settings.bounds.max_line_bytes
    args.max_hosts = settings.bounds.max_hosts
    return args


def time_bounds(args: argparse.Namespace) -> TimeBounds:
    """The plausible event times of a run (:func:`with_settings`' not_before, not_after and
    max_jump); not_before must be earlier than not_after (a user error)."""
    from models.records.plausible import TimeBounds

    if args.not_before >= args.not_after:
        raise UserError("--not-before must be earlier than --not-after")
    return TimeBounds(args.not_before, args.not_after, round(args.max_jump * 1000))


def run(args: argparse.Namespace) -> int:
    """Check everything a run needs before reading a line; run; report; exit 3 when the input
    was not usable (the outputs are written so the summary and rejects show why)."""
    args = with_settings(args)
    check_tz(args.tz)
    check_inputs(args.paths, directories=args.format == "llview")
    check_inputs(args.jobs)
    check_output_dir(args.out)
    if args.rejects is not None:
        check_output_file("--rejects", args.rejects, inputs=[*args.paths, *args.jobs])
    if args.adjust_out is not None:
        _check_adjust_out(args)
    args.bounds = time_bounds(args)
    _check_paths(args)
    args.early = None
    if args.format == "moab":  # chunk sizes bounded by memory, not only by --chunk-mb's maximum
        from streams.sources import prefetch

        args.chunk_mb, note = prefetch.chunk_mb_for_memory(args.chunk_mb)
        if note is not None:
            print(f"replay moab: {note}", file=sys.stderr)
    if args.format == "moab" and len(args.paths) == 1:  # cut while the run loads the rest
        args.early = prefetch.start(args.paths[0], args.chunk_mb << 20, args.max_line_bytes)
    try:
        return _run(args)
    finally:
        if args.early is not None:
            args.early.close()


def _check_paths(args: argparse.Namespace) -> None:
    """No path the run writes (or removes) is one it reads (streams/overlap.py)."""
    from streams.overlap import check_disjoint, run_writes

    reads = [("the input", p) for p in args.paths] + [("--jobs", p) for p in args.jobs]
    settings_file = getattr(args, "config", None) or os.environ.get("DRAINWATCH_CONFIG")
    if settings_file:
        reads.append(("the settings file", settings_file))
    _, owned = _engine_run(ENGINES[args.format])
    names = sorted({*owned, *(["report.html"] if args.report else [])})
    writes = run_writes(args.out, names)
    writes += [
        (o, v)
        for o, v in (("--rejects", args.rejects), ("--adjust-out", args.adjust_out))
        if v is not None
    ]
    check_disjoint(reads, writes)


def previous_outputs(out: str | Path, engine: str, owned: Iterable[str]) -> list[str]:
    """The files the previous run of ``engine`` in ``out`` listed in its summary as its
    outputs, among those the engine writes: the only files a rerun may remove."""
    import orjson

    from streams.errors import read_small

    path = Path(out) / f"summary_{engine}.json"
    if not path.exists():
        return []
    try:
        listed = orjson.loads(read_small(path, SUMMARY_MAX_BYTES)).get("outputs", {})
    except (OSError, UserError, ValueError, AttributeError):
        return []  # no summary of ours: nothing is removed
    if not isinstance(listed, dict):
        return []
    return sorted(set(owned) & {str(k) for k in listed})


def _run(args: argparse.Namespace) -> int:
    influx = _influx_sink(args) if args.influx else None
    try:
        return _replay(args, influx)
    finally:
        if influx is not None:
            influx.close()


def _influx_sink(args: argparse.Namespace) -> InfluxSink:
    """``--influx``: the settings' InfluxDB, once it answers (the driver writes the drain
    stage's live rows to it, :data:`streams.tables.drain.LIVE_TABLES`)."""
    if args.format != "moab":
        raise UserError("--influx writes the drain measurements: it needs --format moab")
    from zoneinfo import ZoneInfo

    from streams.commands.worker import influx_sink
    from streams.config import load_settings
    from streams.kafka import Unreachable

    try:
        sink = influx_sink(load_settings(getattr(args, "config", None)), "replay")
    except Unreachable as e:
        raise UserError(f"--influx: {e}") from None
    sink.zone = ZoneInfo(args.tz)
    return sink


class _Without:
    """A sink given everything but the rows of ``skip``'s tables: ``replay --influx`` keeps
    the rows only InfluxDB takes out of --out."""

    def __init__(self, sink: Sink, skip: Iterable[Table]) -> None:
        self.sink = sink
        self.skip = frozenset(skip)

    def declare(self, table: Table) -> None:
        if table not in self.skip:
            self.sink.declare(table)

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        return 0 if table in self.skip else self.sink.write(table, rows)

    def document(self, name: str, data: bytes) -> None:
        self.sink.document(name, data)

    def commit(self) -> None:
        self.sink.commit()

    def abort(self) -> None:
        self.sink.abort()


def _replay(args: argparse.Namespace, influx: InfluxSink | None) -> int:
    """The run through the driver into one output set (tables, summary, rejects, the ADJUST
    table, the report), committed as one: a failure or a stop at any step leaves the whole old
    set; the directory sink, and InfluxDB with ``--influx``."""
    from streams import driver
    from streams.atomic import OutputSet
    from streams.sinks.files import DirectorySink

    engine = ENGINES[args.format]
    build, owned = _engine_run(engine)
    outputs = OutputSet()
    try:
        rejects = driver.RejectLog(args.rejects, outputs)
        args.outputs = outputs
        r = build(args, rejects)
        sinks: list[Sink] = [
            DirectorySink(args.out, previous_outputs(args.out, engine, owned), outputs)
        ]
        if influx is not None:
            from streams.tables.drain import LIVE_JOBS, LIVE_TABLES, LIVE_WINDOWS

            sinks = [_Without(sinks[0], LIVE_TABLES), influx]
        summary = driver.run(r, sinks, rejects)
        unusable = _unusable(args, engine, summary)
        if args.report and unusable is None:
            from streams.report import write_report

            stage = outputs.stage_dir(args.out)
            write_report(
                [args.out],
                outputs.staged(Path(args.out) / "report.html"),
                staged=(Path(args.out), stage),
            )
        with driver.signals_held():
            outputs.commit(last=[f"summary_{engine}.json"])
    except BaseException:
        with driver.signals_held():
            outputs.abort()
        raise
    if not args.no_progress or summary["rejected"]:
        print(report_line(f"replay {args.format}", summary, args.out), file=sys.stderr)
    if influx is not None and not args.no_progress:
        windows, jobs = (summary["outputs"].get(t.file, 0) for t in (LIVE_WINDOWS, LIVE_JOBS))
        print(
            f"replay moab: {windows:,} window rows and {jobs:,} job rows written to InfluxDB "
            f"{influx.bucket}",
            file=sys.stderr,
        )
    if unusable is not None:
        raise UnusableInput(unusable)
    if args.report and not args.no_progress:
        print(f"replay {args.format}: report {Path(args.out) / 'report.html'}", file=sys.stderr)
    return 0


def _unusable(args: argparse.Namespace, engine: str, summary: dict[str, Any]) -> str | None:
    """Why the input is not usable (exit 3), or None."""
    records, rejected = summary["records"], summary["rejected"]
    if records == 0:
        return (
            f"no usable record in {len(args.paths)} input(s) ({rejected} rejected); see "
            f"{args.out}/summary_{engine}.json" + (f" and {args.rejects}" if args.rejects else "")
        )
    job_inputs = {os.path.abspath(j) for j in args.jobs}
    job_records = [
        i["records"] for i in summary["inputs"] if os.path.abspath(i["path"]) in job_inputs
    ]
    if args.jobs and not any(job_records):
        return (
            f"no usable record in the --jobs input(s) {', '.join(args.jobs)}; see "
            f"{args.out}/summary_{engine}.json"
        )
    # in records as the inputs hold them (a line once, however many events or rejects it
    # gave); records out of order accrue nothing: as lost as rejected ones (a reversed file)
    from streams.contracts import lost_share

    share = lost_share(summary)
    if share > args.max_reject_share:
        return (
            f"{share:.0%} of the records were rejected or out of time order (more than "
            f"--max-reject-share {args.max_reject_share:g}); see {args.out}/summary_{engine}.json"
        )
    return None


def report_line(what: str, s: dict[str, Any], out: str) -> str:
    """What a run read and what it could not use, on one line."""
    parts = [f"{s['records']:,} records"]
    if s["rejected"]:
        reasons = ", ".join(f"{k} {v:,}" for k, v in s["rejected_by_reason"].items())
        parts.append(f"{s['rejected']:,} rejected ({reasons})")
    for key, label in (
        ("ignored", "lines without a record ignored (other messages, blanks, comments, headers)"),
        ("duplicates", "duplicates"),
        ("out_of_order", "out of order"),
        ("reordered", "put back in time order"),
    ):
        if s[key]:
            parts.append(f"{s[key]:,} {label}")
    return f"{what}: {', '.join(parts)} -> {out}"


def _drain_run(args: argparse.Namespace, rejects: driver.RejectLog) -> driver.Run:
    from models.records.nodestatus import Codebook
    from streams import driver
    from streams.sources.moab import MoabFiles
    from streams.stages import drain as drain_stages

    book = Codebook()
    source = MoabFiles(
        args.paths,
        book,
        args.chunk_mb << 20,
        progress=not args.no_progress,
        allow_overlap=args.allow_overlap,
        bounds=args.bounds,
        max_line_bytes=args.max_line_bytes,
        early=args.early,
    )
    jobs = drain_stages.JobTimesStage() if args.jobs else None
    stage = drain_stages.DrainStage(
        book,
        tz=args.tz,
        max_gap_s=args.max_gap,
        basis_nodes=args.nodes,
        quality_min=args.quality_min,
        ftl_threshold=args.ftl_threshold,
        jobs=jobs,
        reorder_window_s=args.reorder_window,
        unit="minute" if args.influx else "hour",
        size_groups=args.size_groups,
        live=args.influx,
    )
    feeds = [driver.Feed(source, [stage])]
    if jobs is not None:
        job_files = _LazyJobFiles(
            args.jobs_format, args.jobs, args.tz, args.bounds, args.max_line_bytes, args.max_hosts
        )
        feeds.append(driver.Feed(job_files, [jobs]))
    settings = {
        "max_gap_seconds": args.max_gap,
        "nodes": args.nodes,
        "reorder_window_seconds": args.reorder_window,
        "size_groups": args.size_groups,
    }
    if args.jobs:
        settings["jobs_format"] = args.jobs_format
    return driver.Run("drain", args.format, args.tz, feeds, settings)


class _LazyJobFiles:
    """Job events read when their feed starts (after the node-status feed)."""

    def __init__(
        self,
        fmt: str,
        paths: list[str],
        tz: str,
        bounds: TimeBounds,
        max_line_bytes: int,
        max_hosts: int,
    ) -> None:
        from streams.sources.files import check_format

        for p in paths:  # an archive is refused before the node-status feed runs
            check_format(p)
        self.fmt, self.paths, self.tz, self.bounds = fmt, paths, tz, bounds
        self.max_line_bytes, self.max_hosts = max_line_bytes, max_hosts
        self.inputs: list[driver.InputStats] = []

    def batches(self, rejects: driver.RejectLog) -> Any:
        from streams.sources.jobevents import JobEventFiles, read_job_events

        events, self.inputs = read_job_events(
            self.fmt, self.paths, rejects, self.bounds, self.max_line_bytes, self.max_hosts
        )
        return JobEventFiles(events, self.inputs, self.tz).batches(rejects)


def _jobs_run(args: argparse.Namespace, rejects: driver.RejectLog) -> driver.Run:
    from models.records.reject import shown_path
    from streams import driver
    from streams.sinks.adjust import AdjustTableFile
    from streams.sources.jobevents import JobEventFiles, read_job_events, section_size
    from streams.stages import jobs as job_stages

    paths = [str(p) for p in args.paths]
    # read and sorted before the stages are built: the capability section size may come from
    # the events
    events, inputs = read_job_events(
        args.format, paths, rejects, args.bounds, args.max_line_bytes, args.max_hosts
    )
    source = JobEventFiles(events, inputs, args.tz)
    section, section_from = section_size(
        args.format, paths, events, args.section_nodes or args.nodes
    )
    refund = tuple(s.strip() for s in (args.refund_states or "").split(",") if s.strip())
    resource = args.resource or shown_path(Path(paths[0]).name).split(".")[0]
    tz = args.tz
    red, sections_reason = job_stages.red_black_sections(args.red_partitions, events)
    stages = job_stages.job_stages(
        section,
        tz,
        resource,
        section_from,
        short_threshold=args.short_threshold,
        short_min_runtime=args.short_min_runtime,
        short_interval=args.short_interval,
        short_lambda=args.short_lambda,
        turnover_window=args.turnover_window,
        turnover_max_gap=args.turnover_max_gap,
        history_runs=args.history_runs,
        half_life_s=args.half_life * 86400.0,
        refund_states=refund,
        capability_fraction=args.capability_fraction,
        # seed 004's modified CUP needs a backfill flag: none in SWF or 26-field sacct
        backfill_flags=any(e.backfill is not None for e in events),
        on_adjust_tick=AdjustTableFile(args.outputs.staged(args.adjust_out))
        if args.adjust_out
        else None,
        red_partitions=red,
        sections_reason=sections_reason,
    )
    settings = {"section_nodes": section, "refund_states": list(refund)}
    return driver.Run("jobs", args.format, tz, [driver.Feed(source, stages)], settings)


def _hot_zone_options(args: argparse.Namespace) -> sample_stages.HotZoneOptions:
    """Thresholds keep their units (a plain number = the source's unit/s); the stage converts
    them exactly to the source's unit. Two units in one MEAN,STD, or --hot-zone beside
    --hot-zone-bw, are refused rather than guessed."""
    from models.samples.dfs import Rate, hot_zone_threshold, parse_fs_rates, parse_rate
    from streams.stages import samples as sample_stages

    thr, origin = sample_stages.DEFAULT_HOT_ZONE, sample_stages.DEFAULT_HOT_ZONE_ORIGIN
    if args.hot_zone_bw is not None and args.hot_zone is not None:
        raise UserError("--hot-zone and --hot-zone-bw both set the threshold: give one")
    if args.hot_zone_bw is not None:
        bw = args.hot_zone_bw
        parts = bw.split(",")
        if len(parts) != 2:
            raise UserError(f"--hot-zone-bw {bw!r}: expected MEAN,STD (e.g. 98MB/s,5MB/s)")
        try:
            mean, std = parse_rate(parts[0]), parse_rate(parts[1], zero_ok=True)
        except ValueError as e:
            raise UserError(f"--hot-zone-bw {bw!r}: {e}") from None
        if mean.unit and std.unit and mean.unit != std.unit:
            raise UserError(
                f"--hot-zone-bw {bw!r}: MEAN in {mean.unit}, STD in {std.unit}: "
                "give both in one unit"
            )
        unit = mean.unit or std.unit
        value = hot_zone_threshold(mean.value, std.value)
        if value <= 0:
            raise UserError(f"--hot-zone-bw {bw!r}: MEAN - STD must be above 0")
        thr, origin = Rate(value, unit), f"--hot-zone-bw {bw} (mean - sigma, seed 003)"
    elif args.hot_zone is not None:
        try:
            thr = parse_rate(args.hot_zone)
        except ValueError as e:
            raise UserError(f"--hot-zone: {e}") from None
        origin = f"--hot-zone {args.hot_zone}"
    try:
        per_fs = parse_fs_rates(args.hot_zone_fs)
    except ValueError as e:
        raise UserError(f"--hot-zone-fs {e}") from None
    return sample_stages.HotZoneOptions(
        thr, tuple(per_fs.items()), args.hot_zone_gap, args.hot_zone_top, origin
    )


def _samples_run(args: argparse.Namespace, rejects: driver.RejectLog) -> driver.Run:
    from streams import driver
    from streams.sources.samples import LlviewDirs, SampleTraceFiles
    from streams.stages import samples as sample_stages

    kw: dict[str, Any] = {
        "mem_per_core_gib": args.mem_per_core,
        "cores_per_node": args.cores_per_node,
        "hot": _hot_zone_options(args),
        "util_below": args.util_below,
    }
    source: Any
    stage: Any
    if args.format == "llview":
        source = LlviewDirs(args.paths, args.cores_per_node)
        stage = sample_stages.LlviewStage(**kw)
    else:
        source = SampleTraceFiles(args.paths, args.bounds, args.max_line_bytes)
        stage = sample_stages.SampleTraceStage(args.sample_period, **kw)
    settings = {"mem_per_core_gib": args.mem_per_core, "sample_period_s": args.sample_period}
    return driver.Run("samples", args.format, args.tz, [driver.Feed(source, [stage])], settings)


def _engine_run(
    engine: str,
) -> tuple[Callable[[argparse.Namespace, driver.RejectLog], driver.Run], list[str]]:
    """How the engine's run is built, and the files its runs write (a rerun removes those it
    no longer writes); only the engine's own tables are imported."""
    if engine == "drain":
        from streams.tables import drain as drain_tables

        return _drain_run, drain_tables.FILES
    if engine == "jobs":
        from streams.tables import jobs as job_tables

        return _jobs_run, job_tables.FILES
    from streams.tables import samples as sample_tables

    return _samples_run, sample_tables.FILES
