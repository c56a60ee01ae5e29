"""``drainwatch report``: replay output directories -> one self-contained HTML page.

data.py finds the replays and reads their tables, sections.py turns them into what each section
shows, plots.py draws (matplotlib -> inline SVG), page.py writes the HTML.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from streams.atomic import atomic_file, make_dirs, remove_dirs
from streams.errors import UserError
from streams.report import data, page, sections


@dataclass(slots=True)
class Report:
    html: str
    headline: dict[str, str]  # the key figures shown at the top of the page
    shown: list[str]  # keys of the sections shown
    missing: list[str]  # keys of the sections left out (their inputs are absent)


def build_report(
    dirs: list[str],
    title: str = "drainwatch report",
    note: str | None = None,
    staged: tuple[Path, Path] | None = None,
) -> Report:
    """The report of ``dirs``; ``staged`` (a directory, the staging directory of a run writing
    into it) reads that run's new files in place of the directory's."""
    outputs = data.load(dirs, staged)
    try:
        built = sections.build(outputs)
    except (csv.Error, KeyError, ValueError, IndexError, UnicodeDecodeError) as e:
        # a table edited by hand or cut short: say which kind of problem, in one line
        raise UserError(f"a replay table is not readable ({type(e).__name__}: {e})") from None
    shown = [s for s in built if isinstance(s, sections.Section)]
    headline = {k: v for s in shown for k, v in s.headline.items()}
    return Report(
        page.render(outputs, built, title=title, note=note),
        headline,
        [s.key for s in shown],
        [s.key for s in built if isinstance(s, sections.Missing)],
    )


def write_report(
    dirs: list[str],
    out: str | Path,
    title: str = "drainwatch report",
    note: str | None = None,
    staged: tuple[Path, Path] | None = None,
) -> Report:
    """Write the report of ``dirs`` to ``out`` atomically (a page to share: the umask's mode,
    or the mode the page had)."""
    report = build_report(dirs, title, note, staged)
    created = make_dirs(Path(out).parent)
    try:
        with atomic_file(Path(out)) as f:
            f.write(report.html.encode("utf-8"))
    except BaseException:
        remove_dirs(created)
        raise
    return report
