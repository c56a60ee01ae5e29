"""Sinks to a directory of files, written atomically.

:class:`DirectorySink` writes every table and document into a staging directory inside the
output directory and, at commit, renames each file into place (``os.replace``: a reader sees the
old file or the new one, never half of one), the summary last. Files of the same engine from an
earlier run that this run does not write (e.g. ``failure_to_launch.csv`` of a run with
``--jobs``) are removed at commit, so nothing stale looks current. :class:`RejectFile` writes
rejected records (``source, line, reason, text`` TSV) the same way.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from models.records.reject import Reject
from streams.atomic import make_dirs, remove_dirs
from streams.contracts import Row, Table
from streams.format import format_rows


class DirectorySink:
    def __init__(self, out: str | Path, owned: Iterable[str] = ()) -> None:
        self.out = Path(out)
        self._created: list[Path] = []  # directories this sink made (abort removes them)
        self._staging: Path | None = None  # made by the first declare/document, not here
        self._files: dict[str, IO[str]] = {}
        self._writers: dict[str, object] = {}
        self._order: list[str] = []
        self.rows: dict[str, int] = {}
        self._owned = set(owned)  # file names this engine may have written before

    @property
    def _stage(self) -> Path:
        """The staging directory, made on first use: that is inside the driver's run, whose
        abort removes it (and ``--out`` if this sink created it) on any error or Ctrl-C."""
        if self._staging is None:
            self._created = make_dirs(self.out)
            self._staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.out))
        return self._staging

    def declare(self, table: Table) -> None:
        if table.file in self._files:
            return
        f = open(self._stage / table.file, "w", newline="", encoding="utf-8")  # noqa: SIM115
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
        (self._stage / name).write_bytes(data)
        if name not in self._order:
            self._order.append(name)

    def commit(self) -> None:
        for f in self._files.values():
            f.flush()
            os.fsync(f.fileno())
            f.close()
        # summaries last: a reader that sees the new summary sees the new reports
        order = sorted(self._order, key=lambda n: n.startswith("summary"))
        for name in order:
            os.replace(self._stage / name, self.out / name)
        for stale in sorted(self._owned - set(order)):
            try:
                (self.out / stale).unlink()
            except FileNotFoundError:
                pass
        shutil.rmtree(self._stage, ignore_errors=True)

    def abort(self) -> None:
        for f in self._files.values():
            with contextlib.suppress(OSError):  # closing flushes: a full disk fails here too
                f.close()
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
        remove_dirs(self._created)  # directories this run made and wrote nothing into go too


class RejectFile:
    """``--rejects FILE``: rejected records as TSV, replaced atomically at commit. The
    temporary file (and the directories the path needs) are made by the first reject or the
    commit; abort removes what was made."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._f: IO[str] | None = None
        self._tmp: Path | None = None
        self._created: list[Path] = []

    def _file(self) -> IO[str]:
        if self._f is None:
            self._created = make_dirs(self.path.parent)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            self._tmp = Path(tmp)
            self._f = os.fdopen(fd, "w", encoding="utf-8", newline="")
        return self._f

    def add(self, r: Reject) -> None:
        self._file().write(r.tsv())

    def commit(self) -> None:
        f = self._file()
        f.flush()
        os.fsync(f.fileno())
        f.close()
        assert self._tmp is not None
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        if self._f is not None:
            with contextlib.suppress(OSError):  # closing flushes: a full disk fails here too
                self._f.close()
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
        remove_dirs(self._created)
