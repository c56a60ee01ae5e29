"""The `drainwatch` command line: one sub-command per module in streams.commands.

Errors follow streams.errors: a user error is one line on stderr and exit status 2; SIGINT
stops with status 130 and leaves the previous outputs as they were.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from streams.errors import EXIT_INTERRUPTED, EXIT_USAGE, UserError

# Sub-command modules; each defines register(subparsers) which sets `func` on its parser.
COMMANDS = ("replay", "simulate", "worker", "ship")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="drainwatch",
        description="Scheduler-efficiency analytics for HPC centres (drain time and friends).",
    )
    parser.add_argument("--config", help="TOML settings file (else $DRAINWATCH_CONFIG)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"streams.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from streams.config import ConfigError

    try:
        rc = args.func(args)
    except (UserError, ConfigError) as e:
        print(f"drainwatch {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"drainwatch {args.command}: interrupted; no output written", file=sys.stderr)
        return EXIT_INTERRUPTED
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
