"""`drainwatch worker`: the live drain pipeline's Faust worker, until SIGINT/SIGTERM.

Settings come from ``--config`` (or ``$DRAINWATCH_CONFIG``) and ``DRAINWATCH_*`` variables;
see streams/config.py. The effective settings are logged at start with secrets masked. Before
the worker starts, Kafka and InfluxDB must answer: each is retried with backoff, one line per
attempt, and after ``connect_timeout`` the command fails with one line (exit 1). Missing topics
are created (streams/kafka.py). ``--no-influx`` runs without InfluxDB (metric topics only).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from streams.config import ConfigError, Settings, load_settings, setup_logging

if TYPE_CHECKING:
    from streams.sinks.influx import InfluxSink


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "worker",
        help="run the live pipeline's worker (Faust) against Kafka and InfluxDB",
        description="Start the drainwatch Faust worker; stop it with SIGINT or SIGTERM.",
    )
    p.add_argument(
        "--print-settings",
        action="store_true",
        help="print the effective settings (secrets masked) and exit",
    )
    p.add_argument(
        "--no-influx", action="store_true", help="write metric topics only, not InfluxDB"
    )
    p.add_argument("--group", default=None, help="consumer group / app id (default drainwatch)")
    p.set_defaults(func=run)


def influx_sink(settings: Settings, log_prefix: str = "drainwatch") -> InfluxSink:
    """An InfluxSink for the settings, once InfluxDB answers its ping (retried with backoff
    up to ``connect_timeout``; raises Unreachable after)."""
    from influxdb_client import InfluxDBClient

    from streams.kafka import Backoff
    from streams.sinks.influx import InfluxSink

    token = settings.influx_token.reveal() if settings.influx_token is not None else ""
    backoff = Backoff(log_prefix, f"InfluxDB at {settings.influx_url}", settings.connect_timeout)
    while True:
        with InfluxDBClient(url=settings.influx_url, token=token, timeout=5000) as c:
            if c.ping():
                break
        time.sleep(backoff.failed("no answer to ping"))
    return InfluxSink(
        settings.influx_url, token, settings.influx_org, settings.influx_bucket, settings.cluster
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    try:
        settings = load_settings(getattr(args, "config", None))
    except ConfigError as e:
        print(f"drainwatch worker: configuration error: {e}", file=sys.stderr)
        return 2
    if args.print_settings:
        for k, v in settings.describe().items():
            print(f"{k} = {v}")
        return 0

    from streams import logs
    from streams.app import APP_ID, create_app
    from streams.kafka import Unreachable, ensure_topics, wait_for_kafka
    from streams.memory import pin_mmap_threshold, tune_gc
    from streams.topics import topic_names

    if logs.handler() is None:  # run() called directly, not through streams.cli.main
        setup_logging(args)
    log = logs.get("worker")
    log.info("settings (secrets masked): %s", settings.describe())

    async def prepare() -> tuple[int | None, int | None]:
        await wait_for_kafka(settings, "drainwatch worker")
        parts = await ensure_topics(settings)
        names = topic_names(settings.topic_prefix)
        return parts.get(names.job_events), parts.get(names.node_samples)

    try:
        job_partitions, sample_partitions = asyncio.run(prepare())
        sink = None if args.no_influx else influx_sink(settings, "drainwatch worker")
    except Unreachable as e:
        print(f"drainwatch worker: {e}", file=sys.stderr)
        return 1
    if settings.mmap_threshold:  # large arrays go back to the system when freed
        pin_mmap_threshold(settings.mmap_threshold * 1024)
    from streams.live import attach

    app = create_app(settings, app_id=args.group or APP_ID)
    attach(app, settings, sink, job_partitions, sample_partitions)
    Path(app.conf.datadir).parent.mkdir(parents=True, exist_ok=True)
    worker = logs.faust_worker(app)  # Faust's lines through drainwatch's handler
    tune_gc()
    try:
        worker.execute_from_commandline()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0
