"""`drainwatch report`: one self-contained HTML report from replay output directories."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streams.errors import UserError, check_output_file


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML report (plots and tables) from replay output directories",
        description="Turn the output directories of drain, job and sample replays of the same "
        "period into one HTML file that opens without a network.",
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", help="replay --out directories")
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE.html",
        help="the report (default: DIR/report.html of the first DIR)",
    )
    p.add_argument("--title", default="drainwatch report", help="the page's title")
    p.add_argument(
        "--note",
        default=None,
        metavar="TEXT",
        help="a line shown under the title, e.g. where the data comes from",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streams.report import write_report

    out = args.out or str(Path(args.dirs[0]) / "report.html")
    if not out.endswith((".html", ".htm")):
        raise UserError(f"--out {out}: the report is an HTML file, give it a .html name")
    check_output_file("--out", out)
    write_report(args.dirs, out, title=args.title, note=args.note)
    print(f"report: {out}", file=sys.stderr)
    return 0
