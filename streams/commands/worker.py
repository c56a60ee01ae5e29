"""`drainwatch worker`: the live drain pipeline's Faust worker, until SIGINT/SIGTERM.

Settings come from ``--config`` (or ``$DRAINWATCH_CONFIG``) and ``DRAINWATCH_*`` variables;
see streams/config/. The effective settings are logged at start with secrets masked. Before
the worker starts, Kafka and InfluxDB must answer: each is retried with backoff, one line per
attempt, and after ``connect_timeout`` the command fails with one line (exit 75). Missing topics
are created (streams/kafka.py). ``--no-influx`` runs without InfluxDB (metric topics only).

Exit codes, for a supervisor (deploy/systemd: ``RestartPreventExitStatus=2``):

====  ========================================================================================
0     stopped by SIGINT/SIGTERM
1     unexpected error (a bug, or InfluxDB refusing points): a restart resumes from the last
      saved state and committed offsets
2     configuration error (a bad setting, InfluxDB refusing the token or naming no such
      bucket): one line on stderr; a restart cannot cure it, so it is not restarted
75    a dependency is away (EX_TEMPFAIL): Kafka or InfluxDB unreachable for ``connect_timeout``
      at start, or a Kafka error that stopped the running worker; a restart cures it
====  ========================================================================================
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from streams.config import ConfigError, Settings, load_settings, setup_logging
from streams.errors import EXIT_FAILED, EXIT_TEMPFAIL, EXIT_USAGE
from streams.logs import mask

EXIT_STOPPED = 0  # SIGINT/SIGTERM
EXIT_CRASHED = EXIT_FAILED  # unexpected: restarted from the saved state
EXIT_CONFIG = EXIT_USAGE  # bad configuration: never restarted

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

    token = settings.influx.token.reveal() if settings.influx.token is not None else ""
    backoff = Backoff(
        log_prefix, f"InfluxDB at {settings.influx.url}", settings.worker.connect_timeout
    )
    while True:
        with InfluxDBClient(url=settings.influx.url, token=token, timeout=5000) as c:
            if c.ping():
                break
        time.sleep(backoff.failed("no answer to ping"))
    check_influx_access(settings, token)
    return InfluxSink(
        settings.influx.url,
        token,
        settings.influx.org,
        settings.influx.bucket,
        settings.accounting.cluster,
    )


def check_influx_access(settings: Settings, token: str) -> None:
    """An empty write: InfluxDB refusing the token (401, 403) or knowing no such bucket (404)
    is a configuration error (a ping does not check either); any other answer passes."""
    import urllib.error
    import urllib.parse
    import urllib.request

    q = urllib.parse.urlencode({"org": settings.influx.org, "bucket": settings.influx.bucket})
    url = f"{settings.influx.url.rstrip('/')}/api/v2/write?{q}"
    req = urllib.request.Request(url, b"", {"Authorization": f"Token {token}"}, method="POST")
    try:
        urllib.request.urlopen(req, timeout=10).close()
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            raise ConfigError("influx_token", f"InfluxDB refused it (HTTP {e.code})") from None
        if e.code == 404:
            raise ConfigError(
                "influx_bucket", f"InfluxDB has no bucket {settings.influx.bucket!r} (HTTP 404)"
            ) from None
    except OSError:  # gone again since its ping: the writes retry until it is back
        pass
    except ValueError:  # http.client.InvalidURL; its text may hold part of a password
        raise ConfigError(
            "influx_url",
            f"{mask(settings.influx.url)} is not a URL (percent-encode its '/', "
            "'?', '#' and '@' in a user name or password, or leave them out: the token "
            "authenticates)",
        ) from None


def exit_code_of(reason: BaseException | None) -> int:
    """The exit status of a worker Faust stopped with ``reason`` (its crash reason, None for a
    clean stop): a dependency's error is EX_TEMPFAIL, anything else unexpected."""
    if reason is None:
        return EXIT_STOPPED
    from aiokafka import errors as kafka

    from streams.kafka import Unreachable

    away = (
        Unreachable,
        kafka.KafkaConnectionError,
        kafka.KafkaTimeoutError,
        kafka.NodeNotReadyError,
        kafka.RequestTimedOutError,
        ConnectionError,
        TimeoutError,
    )
    return EXIT_TEMPFAIL if isinstance(reason, away) else EXIT_CRASHED


def run(args: argparse.Namespace) -> int:
    import asyncio

    try:
        settings = load_settings(getattr(args, "config", None))
    except ConfigError as e:
        print(f"drainwatch worker: configuration error: {mask(str(e))}", file=sys.stderr)
        return EXIT_CONFIG
    if args.print_settings:  # describe() masks every value (streams.logs.mask)
        for k, v in settings.describe().items():
            print(f"{k} = {v}")
        return 0

    from streams import logs
    from streams.app import APP_ID, create_app
    from streams.kafka import Unreachable, ensure_topics, wait_for_kafka
    from streams.topics import topic_names
    from streams.tuning import pin_mmap_threshold, tune_gc

    if logs.handler() is None:  # run() called directly, not through streams.cli.main
        setup_logging(args)
    log = logs.get("worker")
    log.info("settings (secrets masked): %s", settings.describe())

    async def prepare() -> tuple[int | None, int | None]:
        await wait_for_kafka(settings, "drainwatch worker")
        parts = await ensure_topics(settings)
        names = topic_names(settings.kafka.topic_prefix)
        return parts.get(names.job_events), parts.get(names.node_samples)

    try:
        job_partitions, sample_partitions = asyncio.run(prepare())
        sink = None if args.no_influx else influx_sink(settings, "drainwatch worker")
    except Unreachable as e:
        print(f"drainwatch worker: {mask(str(e))}", file=sys.stderr)
        return EXIT_TEMPFAIL
    except ConfigError as e:
        print(f"drainwatch worker: configuration error: {mask(str(e))}", file=sys.stderr)
        return EXIT_CONFIG
    if settings.worker.mmap_threshold:  # large arrays go back to the system when freed
        pin_mmap_threshold(settings.worker.mmap_threshold * 1024)
    from streams.live import attach

    app = create_app(settings, app_id=args.group or APP_ID)
    attach(app, settings, sink, job_partitions, sample_partitions)
    Path(app.conf.datadir).parent.mkdir(parents=True, exist_ok=True)
    worker = logs.faust_worker(app)  # Faust's lines through drainwatch's handler
    tune_gc()
    try:
        worker.execute_from_commandline()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code == 0:
            return EXIT_STOPPED
        # Faust exits 1 whatever the crash (mode.worker.exiting): the reason tells which
        reason = worker.crash_reason or app.crash_reason
        return exit_code_of(reason) if reason is not None else code
    return EXIT_STOPPED
