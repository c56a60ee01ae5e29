"""`drainwatch ship`: collectors and shippers.

``ship moab``: Moab scheduler logs -> ``<prefix>node-status`` (streams/ship/moab.py); whole
files, or ``--follow`` one live log with a checkpoint.
``ship slurm``: Slurm node snapshots -> ``<prefix>node-status`` (streams/ship/slurm.py).
``ship jobs``: job event files (sacct, jobcomp, SWF, job-event JSON lines) -> ``<prefix>job-events``
(streams/ship/job_files.py), or sacct polled (streams/ship/sacct.py), or Slurm's jobcomp/kafka
topic relayed (streams/ship/jobcomp.py).
``ship sample-files``: node-sample traces -> ``<prefix>node-samples``
(streams/ship/sample_files.py).
``ship samples``: the per-node /proc + cgroup sampler (seed 003 §3.1, streams/ship/sampler.py)
writing JSON-lines node samples (see models.formats.sampletrace) to a file or stdout, or each
sweep to ``<prefix>node-samples`` (``--kafka``, streams/ship/samples.py).

This module reads the arguments and wires each shipper through the contract of
streams/ship/base.py (:func:`_drive`): built, run, its last marker round, closed, its summary.
Retries, warnings and the summary at the end are log lines (streams/logs.py, component
``ship.<what>``), the summary whatever the log level (it is the command's result); a shipper
that cannot do its work ends with one error line (``drainwatch ship <what>: ...``, exit 1).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.formats.jobsource import FORMATS as JOB_FORMATS
from models.formats.procfs import RESOLVERS
from streams import logs
from streams.errors import UserError, option_type, positive_int

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable, Coroutine

    from models.records.plausible import TimeBounds
    from streams.config import Settings
    from streams.ship.base import Shipper
    from streams.ship.sampler import Sampler
    from streams.sinks.jsonlines import JsonLinesSink


def summary(what: str, line: str) -> None:
    """A shipper's summary at its end: its result, written whatever the log level."""
    logs.result(f"ship.{what}", line)


def _stop_on_signals() -> asyncio.Event:
    """An event SIGINT and SIGTERM set (the running loop's handlers): a shipper ends its step,
    reports and exits."""
    import asyncio
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def _producer(settings: Settings, what: str, **kw: Any) -> tuple[Any, dict[str, int]]:
    """Kafka waited for, the topics made (their partitions), and a started producer that waits
    for every replica's acknowledgement."""
    from aiokafka import AIOKafkaProducer

    from streams.kafka import ensure_topics, wait_for_kafka

    await wait_for_kafka(settings, f"drainwatch ship {what}")
    parts = await ensure_topics(settings)
    producer = AIOKafkaProducer(**settings.aiokafka_kwargs(), acks="all", linger_ms=20, **kw)
    await producer.start()
    return producer, parts


def _dry_run_producer(settings: Settings) -> Any:
    """The stand-in producer ``--dry-run`` prints through."""
    from streams.ship.dry_run import DryRunProducer

    return DryRunProducer(settings.kafka.topic_partitions)


async def _nothing() -> None:
    """Nothing to close (--dry-run without a producer)."""


async def _last_markers(mark: Coroutine[Any, Any, None], what: str) -> None:
    """A shipper's last marker round when it stops: best effort (Kafka may be why it stops),
    10 s at most."""
    import asyncio

    try:
        await asyncio.wait_for(mark, 10)
    except Exception as e:  # noqa: BLE001
        logs.get(f"ship.{what}").warning("last markers not sent: %r", e)


async def _drive(
    build: Callable[[], Awaitable[Shipper]],
    what: str,
    stop: asyncio.Event | None,
    close: Callable[[], Awaitable[object]],
) -> Shipper:
    """A shipper built, run to the end of its input or ``stop``, its last marker round (best
    effort), ``close`` (what it sends through, whatever happened), then its summary logged;
    the shipper, for the caller's exit code."""
    try:
        shipper = await build()
        try:
            await shipper.run(stop)
        finally:
            await _last_markers(shipper.last_markers(), what)
    finally:
        await close()
    summary(what, shipper.summary())
    return shipper


def _run_main(main: Callable[[], Coroutine[Any, Any, int]], what: str) -> int:
    """A shipper's ``main`` to its end; Kafka that stayed unreachable is one line, exit 1."""
    import asyncio

    from streams.errors import EXIT_TEMPFAIL
    from streams.kafka import Unreachable

    try:
        return asyncio.run(main())
    except Unreachable as e:  # a supervisor's restart cures it (streams/errors.py)
        print(f"drainwatch ship {what}: {e}", file=sys.stderr)
        return EXIT_TEMPFAIL


def _bounds(settings: Settings) -> TimeBounds:
    """The replay's plausibility bounds, from the settings."""
    from models.records.plausible import TimeBounds

    return TimeBounds(
        settings.bounds.not_before,
        settings.bounds.not_after,
        round(settings.bounds.max_jump * 1000),
    )


def _ship_samples_kafka(args: argparse.Namespace) -> int:
    import asyncio

    from streams.config import load_settings
    from streams.kafka import ensure_topics
    from streams.ship.markers import shipper_id
    from streams.ship.sampler import Sampler, resolver_by_name
    from streams.ship.samples import SampleKafkaShipper

    if args.out != "-":
        raise UserError("--kafka sends the samples: give no --out")
    settings = load_settings(getattr(args, "config", None))
    sampler = Sampler(
        resolver_by_name(args.resolver), node=args.node, job_class=args.job_class, io=args.io
    )

    async def connect() -> object:
        from aiokafka import AIOKafkaProducer

        await ensure_topics(settings)
        producer = AIOKafkaProducer(**settings.aiokafka_kwargs(), acks="all", linger_ms=20)
        try:
            await producer.start()
        except BaseException:
            await producer.stop()
            raise
        return producer

    shipper = SampleKafkaShipper(
        connect,
        settings.kafka.topic_prefix + "node-samples",
        args.buffer_max,
        marker_interval=settings.worker.marker_interval,
        source=shipper_id("sampler", sampler.node),
        sampler=sampler,
        period=args.period,
        count=args.count,
    )

    async def built() -> SampleKafkaShipper:
        return shipper

    async def main() -> None:
        await _drive(built, "samples", _stop_on_signals(), shipper.close)

    asyncio.run(main())
    return 0


def _ship_samples(args: argparse.Namespace) -> int:
    from streams.ship.sampler import Sampler, resolver_by_name
    from streams.sinks.jsonlines import JsonLinesSink

    if args.kafka:
        return _ship_samples_kafka(args)
    if args.out != "-":
        out = Path(args.out)
        if not args.out or out.is_dir():
            raise UserError(f"--out {args.out!r} is not a file name (a file to append to, or -)")
        if out.exists() and not out.is_file():
            raise UserError(f"--out {args.out} is not a regular file")
        if not out.parent.is_dir():
            raise UserError(f"--out {args.out}: directory {out.parent} does not exist")
    sampler = Sampler(
        resolver_by_name(args.resolver), node=args.node, job_class=args.job_class, io=args.io
    )
    if args.out == "-":
        sink = JsonLinesSink(sys.stdout.buffer)
        n = _run(sampler, sink, args)
    else:
        with open(args.out, "ab") as f:
            sink = JsonLinesSink(f)
            n = _run(sampler, sink, args)
    stats = ", ".join(f"{k}={v}" for k, v in sorted(sampler.stats.items()))
    summary("samples", f"{n} sweeps, {sink.lines} samples ({stats})")
    return 0


def _run(sampler: Sampler, sink: JsonLinesSink, args: argparse.Namespace) -> int:
    try:
        return sampler.run(sink, period=args.period, count=args.count)
    except KeyboardInterrupt:
        return sampler.stats["sweeps"]


def _ship_moab(args: argparse.Namespace) -> int:
    from streams.config import load_settings
    from streams.errors import check_inputs
    from streams.kafka import MAX_MESSAGE_BYTES
    from streams.ship.markers import shipper_id
    from streams.ship.moab import MoabShipper
    from streams.sources.moab import in_time_order

    settings = load_settings(getattr(args, "config", None))
    if args.follow and len(args.paths) != 1:
        raise UserError("--follow takes exactly one log (the live one)")
    if args.follow and args.dry_run:
        raise UserError("--dry-run reads whole files: give no --follow")
    if not args.follow:
        check_inputs(args.paths)
    bounds = _bounds(settings)
    checkpoint = args.checkpoint or str(
        settings.general.state_dir
        / "ship"
        / (os.path.abspath(args.paths[0]).replace("/", "_") + ".json")
    )

    async def main() -> int:
        if args.dry_run:
            producer = _dry_run_producer(settings)
        else:
            producer, _ = await _producer(
                settings, "moab", max_request_size=MAX_MESSAGE_BYTES + 100_000
            )
        stop = _stop_on_signals()

        async def build() -> MoabShipper:
            topic = settings.kafka.topic_prefix + "node-status"
            parts = len(await producer.partitions_for(topic))
            # --follow: named by its checkpoint, so a restarted shipper is the same one
            sid = shipper_id("moab", os.path.abspath(checkpoint)) if args.follow else None
            return MoabShipper(
                producer,
                topic,
                settings.kafka.topic_prefix + "dead-letter",
                parts,
                bounds,
                settings.bounds.max_line_bytes,
                max_bytes=settings.kafka.message_max_bytes,
                source=sid,
                marker_interval=settings.worker.marker_interval,
                paths=args.paths if args.follow else in_time_order(args.paths),
                checkpoint=checkpoint if args.follow else None,
                poll_s=args.poll,
                progress=not args.no_progress,
            )

        await _drive(build, "moab", stop, producer.stop)
        return 130 if stop.is_set() and not args.follow else 0

    return _run_main(main, "moab")


def _ship_slurm(args: argparse.Namespace) -> int:
    import shutil

    from streams.config import load_settings
    from streams.kafka import MAX_MESSAGE_BYTES
    from streams.ship.markers import shipper_id
    from streams.ship.moab import MoabShipper
    from streams.ship.slurm import SlurmCommands, SlurmShipper

    settings = load_settings(getattr(args, "config", None))
    for opt, path in (("--scontrol", args.scontrol), ("--squeue", args.squeue)):
        if shutil.which(path) is None:
            raise UserError(f"{opt} {path}: no such executable (give the client's path)")
    cmds = SlurmCommands(
        args.scontrol,
        args.squeue,
        args.slurm_format,
        args.timeout,
        not args.no_reservations,
        settings.bounds.max_hosts,
        planned_flag=not args.sched_nodes_hold,
        max_bytes=settings.bounds.max_snapshot_bytes,
    )

    async def main() -> int:
        stop = _stop_on_signals()
        producer = None
        if not args.dry_run:
            producer, _ = await _producer(
                settings, "slurm", max_request_size=MAX_MESSAGE_BYTES + 100_000
            )

        async def build() -> SlurmShipper:
            publisher = None
            if producer is not None:
                topic = settings.kafka.topic_prefix + "node-status"
                parts = len(await producer.partitions_for(topic))
                publisher = MoabShipper(
                    producer,
                    topic,
                    settings.kafka.topic_prefix + "dead-letter",
                    parts,
                    max_bytes=settings.kafka.message_max_bytes,
                    source=shipper_id("slurm"),
                    marker_interval=settings.worker.marker_interval,
                )
            return SlurmShipper(
                cmds,
                publisher,
                sys.stdout.buffer,
                retries=args.retries,
                retry_wait=min(args.period / 4, 5.0),
                period=args.period,
                count=args.count,
            )

        close = _nothing if producer is None else producer.stop
        s = (await _drive(build, "slurm", stop, close)).stats
        if args.count is not None and s.iterations == 0:
            print(
                f"drainwatch ship slurm: no snapshot could be taken ({s.last_error})",
                file=sys.stderr,
            )
            return 1
        return 0

    return _run_main(main, "slurm")


def _ship_files(
    args: argparse.Namespace,
    what: str,
    build: Callable[[Any, Settings, TimeBounds, dict[str, int]], Shipper],
) -> int:
    """The file shippers' frame: settings, inputs checked, Kafka waited for and the topics
    made, one producer (all acks) for the shipper ``build(producer, settings, bounds,
    partitions)`` makes, which is driven to the end of its files."""
    from streams.config import load_settings
    from streams.errors import check_inputs

    settings = load_settings(getattr(args, "config", None))
    check_inputs(args.paths)
    bounds = _bounds(settings)

    async def main() -> int:
        if getattr(args, "dry_run", False):
            producer = _dry_run_producer(settings)
            parts = {
                settings.kafka.topic_prefix + t: settings.kafka.topic_partitions
                for t in ("job-events", "node-samples")
            }
        else:
            producer, parts = await _producer(settings, what)

        async def built() -> Shipper:
            return build(producer, settings, bounds, parts)

        await _drive(built, what, None, producer.stop)
        return 0

    return _run_main(main, what)


def _ship_jobs_sacct(args: argparse.Namespace) -> int:
    import shutil
    import time

    from streams.config import load_settings
    from streams.ship.sacct import SacctPoller, SacctShipper, parse_since

    settings = load_settings(getattr(args, "config", None))
    if args.paths or args.format:
        raise UserError("--sacct polls sacct: give no FILE and no --format")
    if shutil.which(args.sacct) is None:
        raise UserError(f"--sacct {args.sacct}: no such executable (give the client's path)")
    try:
        since = parse_since(args.since, time.time)
    except ValueError:
        raise UserError(f"--since {args.since!r} is not an ISO 8601 time or 'now'") from None
    bounds = _bounds(settings)
    cp = Path(args.checkpoint or settings.general.state_dir / "ship" / "sacct.json")
    poller = SacctPoller(
        args.sacct,
        cp,
        since,
        args.overlap,
        max_window=args.max_window,
        bounds=bounds,
        max_line_bytes=settings.bounds.max_line_bytes,
        max_hosts=settings.bounds.max_hosts,
        completion=args.sacct_completion,
        starts=args.starts,
        max_bytes=settings.bounds.max_snapshot_bytes,
    )

    async def main() -> int:
        stop = _stop_on_signals()
        producer = None
        if not args.dry_run:
            producer, _ = await _producer(settings, "jobs")
        topic = settings.kafka.topic_prefix + "job-events"

        async def build() -> SacctShipper:
            parts = len(await producer.partitions_for(topic)) if producer is not None else 1
            return SacctShipper(
                poller,
                producer,
                topic,
                settings.kafka.topic_prefix + "dead-letter",
                parts,
                args.period,
                args.count,
                settings.worker.marker_interval,
                sys.stdout.buffer,
            )

        close = _nothing if producer is None else producer.stop
        await _drive(build, "jobs", stop, close)
        return 0

    return _run_main(main, "jobs")


def _ship_jobs_jobcomp(args: argparse.Namespace) -> int:
    from streams.config import load_settings
    from streams.kafka import wait_for_kafka
    from streams.ship.jobcomp import JobcompShipper
    from streams.ship.markers import Markers, shipper_id

    settings = load_settings(getattr(args, "config", None))
    if args.paths or args.format:
        raise UserError("--jobcomp-topic consumes a topic: give no FILE and no --format")
    bounds = _bounds(settings)

    async def main() -> int:
        from aiokafka import AIOKafkaConsumer

        stop = _stop_on_signals()
        await wait_for_kafka(settings, "drainwatch ship jobs")
        dry = args.dry_run
        if dry:  # read without a group: nothing committed, nothing sent
            producer = _dry_run_producer(settings)
        else:
            producer, _ = await _producer(settings, "jobs")
        consumer = AIOKafkaConsumer(
            args.jobcomp_topic,
            **settings.aiokafka_kwargs(),
            group_id=None if dry else args.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()

        async def build() -> JobcompShipper:
            topic = settings.kafka.topic_prefix + "job-events"
            parts = len(await producer.partitions_for(topic))
            markers = None
            if not dry:  # named by its consumer group: the same shipper on a restart
                sid = shipper_id("jobcomp", args.group)
                markers = Markers(producer, topic, parts, sid, settings.worker.marker_interval)
            return JobcompShipper(
                consumer,
                producer,
                topic,
                settings.kafka.topic_prefix + "dead-letter",
                parts,
                bounds,
                args.start_records,
                args.count,
                commit=not dry,
                markers=markers,
            )

        async def close() -> None:
            await consumer.stop()
            await producer.stop()

        await _drive(build, "jobs", stop, close)
        return 0

    return _run_main(main, "jobs")


def _ship_jobs(args: argparse.Namespace) -> int:
    from streams.ship.job_files import JobFilesShipper

    if args.sacct is not None:
        return _ship_jobs_sacct(args)
    if args.jobcomp_topic is not None:
        return _ship_jobs_jobcomp(args)
    if not args.paths or not args.format:
        raise UserError("give --format F and job event FILEs (or --sacct)")

    def build(
        producer: Any, settings: Settings, bounds: TimeBounds, parts: dict[str, int]
    ) -> JobFilesShipper:
        topic = settings.kafka.topic_prefix + "job-events"
        return JobFilesShipper(
            producer,
            topic,
            settings.kafka.topic_prefix + "dead-letter",
            args.format,
            args.paths,
            bounds,
            settings.bounds.max_line_bytes,
            settings.bounds.max_hosts,
            progress=not args.no_progress,
            partitions=parts.get(topic) or 1,
            marker_interval=None if args.no_markers else settings.worker.marker_interval,
            speed=args.speed,
        )

    return _ship_files(args, "jobs", build)


def _ship_sample_files(args: argparse.Namespace) -> int:
    from streams.ship.sample_files import SampleFilesShipper

    def build(
        producer: Any, settings: Settings, bounds: TimeBounds, parts: dict[str, int]
    ) -> SampleFilesShipper:
        topic = settings.kafka.topic_prefix + "node-samples"
        return SampleFilesShipper(
            producer,
            topic,
            settings.kafka.topic_prefix + "dead-letter",
            args.paths,
            bounds,
            settings.bounds.max_line_bytes,
            partitions=parts.get(topic) or 1,
            marker_interval=None if args.no_markers else settings.worker.marker_interval,
        )

    return _ship_files(args, "sample-files", build)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ship", help="ship scheduler logs to Kafka, or run a node collector")
    ssub = p.add_subparsers(dest="what", required=True)
    m = ssub.add_parser(
        "moab",
        help="publish Moab node-status lines to <prefix>node-status",
        description="Parse Moab logs with the replay's parser and publish node-status slices "
        "(one partition's records per message) to Kafka; bad lines go to <prefix>dead-letter.",
    )
    m.add_argument("paths", nargs="+", metavar="LOG", help="Moab log files (any compression)")
    m.add_argument(
        "--follow", action="store_true", help="tail one live log across rotation and truncation"
    )
    m.add_argument(
        "--checkpoint",
        default=None,
        metavar="FILE",
        help="--follow position file (default: under state_dir/ship/)",
    )
    m.add_argument(
        "--poll",
        type=float,
        default=0.5,
        metavar="S",
        help="--follow: seconds between looks at the log (0.5)",
    )
    m.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    m.add_argument(
        "--dry-run",
        action="store_true",
        help="print the records as JSON lines instead of sending them",
    )
    m.set_defaults(func=_ship_moab)
    sl = ssub.add_parser(
        "slurm",
        help="publish Slurm node states (IDLE+PLANNED as drain) to <prefix>node-status",
        description="Every PERIOD seconds read scontrol show node, squeue (SchedNodes) and the "
        "advance reservations (no shell, with a timeout), map them to node-status records "
        "(README: Slurm mapping) and publish one whole iteration as `ship moab` does; a failed "
        "snapshot is retried, then skipped and counted, never sent in part.",
    )
    sl.add_argument(
        "--period",
        type=option_type(float, 0.0, False, 86_400.0),
        default=60.0,
        help="seconds between snapshots (60)",
    )
    sl.add_argument(
        "--count",
        type=positive_int,
        default=None,
        help="stop after N snapshots (default: run until SIGTERM)",
    )
    sl.add_argument(
        "--dry-run",
        action="store_true",
        help="print the records as JSON lines instead of sending them",
    )
    sl.add_argument("--scontrol", default="scontrol", metavar="PATH", help="scontrol client")
    sl.add_argument("--squeue", default="squeue", metavar="PATH", help="squeue client")
    sl.add_argument(
        "--slurm-format",
        choices=("auto", "text", "json"),
        default="auto",
        help="text or JSON outputs (auto: JSON from Slurm 23.02)",
    )
    sl.add_argument(
        "--timeout",
        type=option_type(float, 0.0, False, 3600.0),
        default=30.0,
        help="seconds a command may take (30)",
    )
    sl.add_argument(
        "--retries",
        type=option_type(int, 0, True, 100),
        default=2,
        help="snapshots taken again after a failure before the period is skipped",
    )
    sl.add_argument(
        "--no-reservations",
        action="store_true",
        help="do not read advance reservations (scontrol show reservation)",
    )
    sl.add_argument(
        "--sched-nodes-hold",
        action="store_true",
        help="an idle node in a pending job's SchedNodes is held for it without "
        "the PLANNED flag (Slurm before 21.08 has none)",
    )
    sl.set_defaults(func=_ship_slurm)
    j = ssub.add_parser(
        "jobs",
        help="publish job events to <prefix>job-events",
        description="Read job event files as `replay --format F` reads them and publish them in "
        "time order, a job's events on one partition (crc32 of its id), up to 500 events of a "
        "partition per message (JSON lines); rejected lines and events go to <prefix>dead-letter.",
    )
    j.add_argument("paths", nargs="*", metavar="FILE", help="job event files (any compression)")
    j.add_argument("--format", choices=JOB_FORMATS, help="input format of the FILEs")
    j.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    j.add_argument(
        "--sacct",
        nargs="?",
        const="sacct",
        default=None,
        metavar="PATH",
        help="instead of files: poll sacct (PATH, default sacct) for jobs that ended, "
        "with a persisted high-water mark",
    )
    j.add_argument(
        "--since",
        default="now",
        metavar="TIME",
        help="--sacct: first poll's start when there is no checkpoint (ISO 8601, "
        "UTC without an offset; default now)",
    )
    j.add_argument(
        "--period",
        type=option_type(float, 0.0, False, 86_400.0),
        default=300.0,
        help="--sacct: seconds between polls (300)",
    )
    j.add_argument(
        "--overlap",
        type=option_type(float, 0.0, True, 30 * 86_400.0),
        default=600.0,
        help="--sacct: seconds each poll looks back past the last "
        "one, for records written late (600)",
    )
    j.add_argument(
        "--max-window",
        type=option_type(float, 0.0, False),
        default=86_400.0,
        help="--sacct: longest window of one poll, s (86400)",
    )
    j.add_argument(
        "--count",
        type=positive_int,
        default=None,
        help="stop after N sacct polls or N jobcomp records (default: run)",
    )
    j.add_argument(
        "--checkpoint",
        default=None,
        metavar="FILE",
        help="--sacct: high-water mark file (default under state_dir/ship/)",
    )
    j.add_argument(
        "--dry-run",
        action="store_true",
        help="print the events as JSON lines instead of sending them",
    )
    j.add_argument(
        "--sacct-completion",
        action="store_true",
        help="--sacct: read the jobcomp/filetxt file (sacct -c), for a Slurm without slurmdbd",
    )
    j.add_argument(
        "--starts",
        action="store_true",
        help="--sacct: also poll pending and running jobs (sacct --state PD, R) "
        "to send each submit and start when it happens, not with the job's end",
    )
    j.add_argument(
        "--jobcomp-topic",
        default=None,
        metavar="TOPIC",
        help="instead of files: consume Slurm's jobcomp/kafka TOPIC (same Kafka) and "
        "publish its records as job events",
    )
    j.add_argument(
        "--group",
        default="drainwatch-jobcomp",
        help="--jobcomp-topic: consumer group (drainwatch-jobcomp)",
    )
    j.add_argument(
        "--start-records",
        action="store_true",
        help="--jobcomp-topic: the topic also carries start records (Slurm 25.05+)",
    )
    j.add_argument(
        "--speed",
        type=option_type(float, 0.0, False),
        default=None,
        metavar="X",
        help="FILEs: send the events at X times real time from the first one (a live source's "
        "pace; watermark markers every worker.marker_interval seconds of the wall clock, at "
        "the replay clock); default: as fast as possible",
    )
    j.add_argument(
        "--no-markers",
        action="store_true",
        help="FILEs: send no watermark or end-of-input markers (the worker then releases by "
        "the partitions' events alone, and never the last ones)",
    )
    j.set_defaults(func=_ship_jobs)
    f = ssub.add_parser(
        "sample-files",
        help="publish node-sample traces to <prefix>node-samples",
        description="Read node-sample traces (JSON lines) as `replay --format samples` reads "
        "them and publish them in time order, whole sweeps (a node's samples at one time) "
        "batched per partition (a node's: CRC-32 of its name), up to 2,000 samples a message; "
        "rejected lines go to <prefix>dead-letter.",
    )
    f.add_argument("paths", nargs="+", metavar="FILE", help="sample traces (any compression)")
    f.add_argument(
        "--dry-run",
        action="store_true",
        help="print the samples as JSON lines instead of sending them",
    )
    f.add_argument(
        "--no-markers",
        action="store_true",
        help="send no watermark or end-of-input markers (history in several runs: all but "
        "the last; the worker then releases by the partitions' samples alone)",
    )
    f.set_defaults(func=_ship_sample_files)
    s = ssub.add_parser(
        "samples",
        help="sample /proc for every job process on this node (seed 003 monitor)",
        description="Every PERIOD seconds read /proc/<pid>/{status,io,stat} and the network "
        "counters of every process that belongs to a job (job id from its cgroup path) and "
        "write one JSON line per process.",
    )
    s.add_argument(
        "--period",
        type=option_type(float, 0.0, False, 86_400.0),
        default=60.0,
        help="seconds between sweeps, above 0, at most a day (60)",
    )
    s.add_argument("--out", default="-", help="output file (appended) or - for stdout")
    s.add_argument(
        "--count", type=positive_int, default=None, help="stop after N sweeps (default: run)"
    )
    s.add_argument(
        "--resolver",
        choices=sorted(RESOLVERS),
        default="all",
        help="job id from: slurm (job_<id> in any cgroup path), cpuset (OAR "
        "/oar/<user>_<id> or job_<id> in the cpuset hierarchy), all (slurm then "
        "cpuset), cgroup (the cgroup v2 path itself, for machines without a batch "
        "system)",
    )
    s.add_argument(
        "--io",
        choices=("proc", "cgroup"),
        default="proc",
        help="I/O counters from: proc (/proc/<pid>/io per process; other users' need "
        "CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH), or cgroup (each job's cgroup v2 io.stat: no "
        "capability, block devices only, no network file systems; deploy/systemd/README.md)",
    )
    s.add_argument("--node", default=None, help="node name (default: host name)")
    s.add_argument("--job-class", default="", help="class written with every sample")
    s.add_argument(
        "--kafka",
        action="store_true",
        help="send each sweep to <prefix>node-samples instead of writing lines",
    )
    s.add_argument(
        "--buffer-max",
        type=positive_int,
        default=1440,
        metavar="SWEEPS",
        help="--kafka: sweeps kept while Kafka is unreachable; past it the oldest "
        "are dropped and counted (1440: a day of minutes)",
    )
    s.set_defaults(func=_ship_samples)
