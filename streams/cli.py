"""The `drainwatch` command line: one sub-command per module in streams.commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

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
        try:
            mod = importlib.import_module(f"streams.commands.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"streams.commands.{name}":
                continue  # command not part of this build
            raise
        mod.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    rc = args.func(args)
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
