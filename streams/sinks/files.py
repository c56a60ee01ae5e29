"""Sinks to a directory of files, committed with everything else the run writes.

:class:`DirectorySink` writes every table and document into a staging directory inside the
output directory; the run's :class:`~streams.atomic.OutputSet` renames them into place at its
one commit (a reader sees the old file or the new one, never half of one), the summary last.
Files the previous run of the engine listed in its summary as its outputs that this run does not
write (e.g. ``failure_to_launch.csv`` of a run with ``--jobs``) are removed in the same commit,
so nothing stale looks current; no other file in the directory is ever removed.
:class:`RejectFile` writes rejected records (``source, line, reason, text`` TSV) the same way.
Either sink given no output set makes its own and commits it alone.
"""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from models.records.reject import Reject
from streams.atomic import OutputSet
from streams.contracts import Row, Table
from streams.format import format_rows

SUMMARY_PREFIX = "summary"


class DirectorySink:
    """Tables and documents into ``out``. ``stale``: the files the previous run listed as its
    outputs (and this engine may write); those this run does not write are removed."""

    def __init__(
        self, out: str | Path, stale: Iterable[str] = (), outputs: OutputSet | None = None
    ) -> None:
        self.out = Path(out)
        self._own = outputs is None  # commit/abort the set here, else its owner does
        self.outputs = outputs if outputs is not None else OutputSet()
        self._files: dict[str, IO[str]] = {}
        self._writers: dict[str, object] = {}
        self._order: list[str] = []
        self.rows: dict[str, int] = {}
        self._stale = set(stale)

    def staged(self, name: str) -> Path:
        """Where the new content of ``name`` is (or is being) written."""
        return self.outputs.staged(self.out / name)

    def declare(self, table: Table) -> None:
        if table.file in self._files:
            return
        f = open(self.staged(table.file), "w", newline="", encoding="utf-8")  # noqa: SIM115
        w = csv.writer(f, delimiter=table.delimiter, lineterminator="\n")
        if table.header:
            w.writerow(table.names)
        self._files[table.file] = f
        self._writers[table.file] = w
        self._order.append(table.file)
        self.rows[table.file] = 0

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        self.declare(table)
        w = self._writers[table.file]
        n = 0
        for r in format_rows(table, rows):
            w.writerow(r)  # type: ignore[attr-defined]
            n += 1
        self.rows[table.file] += n
        return n

    def document(self, name: str, data: bytes) -> None:
        path = self.staged(name)
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if name not in self._order:
            self._order.append(name)

    def commit(self) -> None:
        """Every staged file made durable and the stale ones marked; the set is committed here
        only if this sink made it."""
        for f in self._files.values():
            f.flush()
            os.fsync(f.fileno())
            f.close()
        for stale in sorted(self._stale - set(self._order)):
            if "/" not in stale and stale not in (".", ".."):
                self.outputs.remove(self.out / stale)
        if self._own:
            self.outputs.commit(last=[n for n in self._order if n.startswith(SUMMARY_PREFIX)])

    def abort(self) -> None:
        for f in self._files.values():
            with contextlib.suppress(OSError):  # closing flushes: a full disk fails here too
                f.close()
        if self._own:
            self.outputs.abort()


class RejectFile:
    """``--rejects FILE``: rejected records as TSV, staged beside the file and replaced in the
    run's commit. The staged file (and the directories the path needs) are made by the first
    reject or the commit; abort removes what was made."""

    def __init__(self, path: str | Path, outputs: OutputSet | None = None) -> None:
        self.path = Path(path)
        self._own = outputs is None
        self.outputs = outputs if outputs is not None else OutputSet()
        self._f: IO[str] | None = None

    def _file(self) -> IO[str]:
        if self._f is None:
            self._f = open(  # noqa: SIM115 (closed by commit or abort)
                self.outputs.staged(self.path), "w", encoding="utf-8", newline=""
            )
        return self._f

    def add(self, r: Reject) -> None:
        self._file().write(r.tsv())

    def commit(self) -> None:
        f = self._file()
        f.flush()
        os.fsync(f.fileno())
        f.close()
        if self._own:
            self.outputs.commit()

    def abort(self) -> None:
        if self._f is not None:
            with contextlib.suppress(OSError):  # closing flushes: a full disk fails here too
                self._f.close()
        if self._own:
            self.outputs.abort()
