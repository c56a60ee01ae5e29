"""`drainwatch replay`: offline analytics over log files, one engine per input format.

Each format lives in its own module under streams.stages; the module provides
``run(args) -> int`` and, optionally, ``add_arguments(parser)`` for its own options.
"""

from __future__ import annotations

import argparse
import importlib

# format -> module under streams.stages
FORMATS: dict[str, str] = {
    "moab": "drain",
    "sacct": "jobs",
    "swf": "jobs",
    "jobevents": "jobs",
    "jobcomp": "jobs",
    "samples": "samples",
    "llview": "samples",
}


def _modules() -> dict[str, object]:
    mods: dict[str, object] = {}
    for modname in dict.fromkeys(FORMATS.values()):
        try:
            mods[modname] = importlib.import_module(f"streams.stages.{modname}")
        except ModuleNotFoundError as e:
            if e.name != f"streams.stages.{modname}":
                raise
    return mods


def register(sub: argparse._SubParsersAction) -> None:
    mods = _modules()
    p = sub.add_parser(
        "replay",
        help="offline analytics over scheduler logs, job events or node samples",
        description="Replay log files through drainwatch's models and write CSV/JSON reports.",
    )
    fmts = [f for f, m in FORMATS.items() if m in mods]
    p.add_argument("--format", required=True, choices=fmts, help="input format")
    p.add_argument("paths", nargs="+", metavar="PATH", help="input files (gzip is detected)")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument(
        "--tz",
        default=None,
        help="IANA time zone of day/hour windows (default: settings, else UTC)",
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=None,
        help="static basis: schedulable nodes (default: settings, else nodes seen)",
    )
    p.add_argument("--rejects", default=None, help="write rejected records with reasons here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    for m in mods.values():
        add = getattr(m, "add_arguments", None)
        if add is not None:
            add(p)
    p.set_defaults(func=lambda args: mods[FORMATS[args.format]].run(_with_settings(args)))


def _with_settings(args: argparse.Namespace) -> argparse.Namespace:
    """Options not given on the command line come from the settings (TOML file, DRAINWATCH_*)."""
    from streams.config import load_settings

    settings = load_settings(getattr(args, "config", None))
    for name in ("tz", "nodes", "max_gap"):
        if hasattr(args, name) and getattr(args, name) is None:
            setattr(args, name, getattr(settings, name))
    return args
