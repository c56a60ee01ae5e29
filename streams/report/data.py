"""What a report is made of: the replay output directories, found by their summaries, and their
CSV tables read as text columns with numeric views.

A directory holds the outputs of one or more replay engines (``summary_drain.json``,
``summary_jobs.json``, ``summary_samples.json``; docs/outputs.md); the report takes each engine
from the one directory that has it, and each table from the directory of its engine.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from streams.errors import UserError, open_regular, read_small
from streams.tables import drain as drain_tables
from streams.tables import jobs as job_tables
from streams.tables import samples as sample_tables
from streams.tables import whatif as whatif_tables

ENGINES = ("drain", "jobs", "samples", "whatif")
SUMMARY_CAP = 64 << 20  # a summary larger than this is none of ours
# the files each engine can write: a table is looked up in its engine's directory only
_ENGINE_FILES = {
    "drain": set(drain_tables.FILES),
    "jobs": set(job_tables.FILES),
    "samples": set(sample_tables.FILES),
    "whatif": set(whatif_tables.FILES),
}


@dataclass(slots=True)
class Table:
    """One CSV file: its header and its rows as text (empty = unknown, docs/outputs.md)."""

    path: Path
    header: list[str]
    rows: list[list[str]]

    def __len__(self) -> int:
        return len(self.rows)

    def col(self, name: str) -> list[str]:
        i = self.header.index(name)
        return [r[i] for r in self.rows]

    def num(self, name: str) -> np.ndarray:
        """A column as float64, NaN where the cell is empty."""
        return np.array([float(v) if v != "" else np.nan for v in self.col(name)], np.float64)

    def dicts(self) -> list[dict[str, str]]:
        return [dict(zip(self.header, r, strict=True)) for r in self.rows]


def read_table(path: Path) -> Table:
    """A replay table; a FIFO or a device in its place is refused (streams.errors)."""
    with io.TextIOWrapper(open_regular(path), encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        rows = [r for r in reader if r]
    return Table(path, header, rows)


def parse_instant(text: str) -> datetime:
    """An instant of the output policy (``2015-03-08T02:00:00.668Z``) as an aware datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


@dataclass(slots=True)
class ReplayOutputs:
    """The replay outputs a report is made from: per engine its directory and summary."""

    dirs: dict[str, Path] = field(default_factory=dict)
    read_from: dict[str, Path] = field(default_factory=dict)  # engine -> a run's staged files
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    _tables: dict[str, Table | None] = field(default_factory=dict)

    def has(self, engine: str) -> bool:
        return engine in self.summaries

    def table(self, name: str) -> Table | None:
        """``name`` (e.g. ``drain_daily.csv``) from its engine's directory; None when absent."""
        if name not in self._tables:
            t = None
            for engine, shown in self.dirs.items():
                d = self.read_from.get(engine, shown)
                if name in _ENGINE_FILES[engine] and (d / name).is_file():
                    t = read_table(d / name)
                    break
            self._tables[name] = t
        return self._tables[name]

    def tz(self) -> str:
        zones = {s.get("tz") for s in self.summaries.values()}
        return ", ".join(sorted(str(z) for z in zones if z)) or "UTC"

    def period(self) -> tuple[str, str] | None:
        """The earliest first and latest last event time over the engines (instants)."""
        firsts = [s["first"] for s in self.summaries.values() if s.get("first")]
        lasts = [s["last"] for s in self.summaries.values() if s.get("last")]
        if not firsts or not lasts:
            return None
        return min(firsts), max(lasts)


def load(paths: list[str], staged: tuple[Path, Path] | None = None) -> ReplayOutputs:
    """The replay outputs in ``paths``; a path that is no directory, holds no summary, or holds
    an engine another path holds too is a user error. ``staged`` = (a directory of ``paths``,
    the staging directory of a run writing into it): that run's engines are read from its
    staged files (a replay's report drawn before its commit)."""
    out = ReplayOutputs()
    if not paths:
        raise UserError("give at least one replay output directory")
    for p in paths:
        d = Path(p)
        if not d.exists():
            raise UserError(f"no such directory: {p}")
        if not d.is_dir():
            raise UserError(f"{p} is not a directory: give a replay --out directory")
        stage = staged[1] if staged is not None and d.resolve() == staged[0].resolve() else None
        fresh = {e for e in ENGINES if stage and (stage / f"summary_{e}.json").is_file()}
        found = [e for e in ENGINES if e in fresh or (d / f"summary_{e}.json").is_file()]
        if not found:
            raise UserError(
                f"{p} holds no replay output (no summary_drain.json, summary_jobs.json, "
                "summary_samples.json or summary_whatif.json)"
            )
        for engine in found:
            if engine in out.dirs:
                raise UserError(
                    f"{p} and {out.dirs[engine]} both hold summary_{engine}.json: give one "
                    "replay of each kind"
                )
            src = stage if stage is not None and engine in fresh else d
            try:
                summary = json.loads(read_small(src / f"summary_{engine}.json", SUMMARY_CAP))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                raise UserError(f"{d / f'summary_{engine}.json'} is not readable: {e}") from None
            if not isinstance(summary, dict):
                raise UserError(f"{d / f'summary_{engine}.json'} is not a replay summary")
            out.dirs[engine] = d
            if src is not d:
                out.read_from[engine] = src
            out.summaries[engine] = summary
    return out
