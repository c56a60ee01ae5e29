"""``drainwatch report``: replay output directories -> one self-contained HTML page.

data.py finds the replays and reads their tables, sections.py turns them into what each section
shows, plots.py draws (matplotlib -> inline SVG), page.py writes the HTML.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from streams.errors import UserError
from streams.report import data, page, sections
from streams.sinks.files import atomic_file


def build_html(dirs: list[str], title: str = "drainwatch report", note: str | None = None) -> str:
    outputs = data.load(dirs)
    try:
        built = sections.build(outputs)
    except (csv.Error, KeyError, ValueError, UnicodeDecodeError) as e:
        # a table edited by hand or cut short: say which kind of problem, in one line
        raise UserError(f"a replay table is not readable ({type(e).__name__}: {e})") from None
    return page.render(outputs, built, title=title, note=note)


def write_report(
    dirs: list[str], out: str | Path, title: str = "drainwatch report", note: str | None = None
) -> Path:
    """Write the report of ``dirs`` to ``out`` atomically; return its path."""
    text = build_html(dirs, title, note)
    path = Path(out)
    with atomic_file(path) as f:
        f.write(text.encode("utf-8"))
        umask = os.umask(0o022)
        os.umask(umask)
        os.fchmod(f.fileno(), 0o666 & ~umask)  # a page to share, not a private temporary file
    return path
