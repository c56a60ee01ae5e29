"""`drainwatch worker`: run the Faust worker of the drainwatch app until SIGINT/SIGTERM.

Settings come from ``--config`` (or ``$DRAINWATCH_CONFIG``) and ``DRAINWATCH_*`` variables;
see streams/config.py. The effective settings are logged at start with secrets masked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streams.config import ConfigError, load_settings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "worker",
        help="run the streaming worker (Faust) against Kafka",
        description="Start the drainwatch Faust worker; stop it with SIGINT or SIGTERM.",
    )
    p.add_argument(
        "--print-settings",
        action="store_true",
        help="print the effective settings (secrets masked) and exit",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(getattr(args, "config", None))
    except ConfigError as e:
        print(f"drainwatch worker: configuration error: {e}", file=sys.stderr)
        return 2
    if args.print_settings:
        for k, v in settings.describe().items():
            print(f"{k} = {v}")
        return 0

    import faust

    from streams.app import create_app

    app = create_app(settings)
    Path(app.conf.datadir).parent.mkdir(parents=True, exist_ok=True)
    # before the worker starts (and so before /health/ answers): a log task could lose the race
    print(
        f"drainwatch worker: settings (secrets masked): {settings.describe()}",
        file=sys.stderr,
        flush=True,
    )
    worker = faust.Worker(app, loglevel=settings.log_level.upper(), quiet=True)
    try:
        worker.execute_from_commandline()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0
