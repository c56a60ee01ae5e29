"""No run writes to a path it reads: every path a run reads and writes, resolved to its real
file before anything is read.

A run's reads are its inputs (files, and every member of an input directory), ``--jobs`` and the
settings file; its writes are every file its output set may replace or remove (the engine's
files in ``--out``, ``--rejects``, ``--adjust-out``, the report). A write that resolves (through
symbolic links) to a read file, is a hard link of one, lies inside an input directory, or is
another write of the same run is a user error: exit 2, nothing touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from streams.errors import UserError

# members of an input directory looked at, at most (an LLview directory holds a few dozen)
MAX_MEMBERS = 100_000


@dataclass(slots=True)
class _Reads:
    files: dict[str, str] = field(default_factory=dict)  # real path -> as given
    ids: dict[tuple[int, int], str] = field(default_factory=dict)  # (dev, inode) -> as given
    dirs: dict[str, str] = field(default_factory=dict)  # real path -> as given

    def add_file(self, real: str, given: str) -> None:
        self.files.setdefault(real, given)
        try:
            st = os.stat(real)
        except OSError:
            return
        self.ids.setdefault((st.st_dev, st.st_ino), given)


def _members(directory: str) -> Iterator[str]:
    """Every file under ``directory`` (symbolic links followed to their targets' real paths,
    not descended), at most :data:`MAX_MEMBERS`."""
    n = 0
    for root, _dirs, names in os.walk(directory):
        for name in names:
            n += 1
            if n > MAX_MEMBERS:
                return
            yield os.path.join(root, name)


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def check_disjoint(reads: Iterable[tuple[str, str]], writes: Iterable[tuple[str, str]]) -> None:
    """``reads`` and ``writes`` are ``(what, path)`` pairs: ``("the input", "a.log")``,
    ``("--rejects", "r.tsv")``; raise :class:`UserError` naming the first write that would touch
    a read or another write."""
    seen = _Reads()
    for what, given in reads:
        real = os.path.realpath(given)
        label = f"{what} {given}"
        if os.path.isdir(real):
            seen.dirs.setdefault(real, label)
            for member in _members(real):
                seen.add_file(os.path.realpath(member), f"{member} (in {label})")
        else:
            seen.add_file(real, label)
    written: dict[str, str] = {}
    for what, given in writes:
        real = os.path.realpath(given)
        label = f"{what} {given}"
        read = seen.files.get(real)
        if read is None:
            try:
                st = os.stat(real)
            except OSError:
                st = None
            if st is not None:
                read = seen.ids.get((st.st_dev, st.st_ino))
        if read is not None:
            raise UserError(f"{read} is also {label}: the run would replace it; give another path")
        for d, dlabel in seen.dirs.items():
            if _within(real, d):
                raise UserError(
                    f"{label} is inside {dlabel}: the run would write into what it reads"
                )
        if real in written:
            raise UserError(f"{label} and {written[real]} are one file: give each output once")
        written[real] = label


def run_writes(out: str, names: Iterable[str]) -> list[tuple[str, str]]:
    """The files ``names`` in ``--out`` as writes (``"the output"``)."""
    return [("the output", str(Path(out) / n)) for n in names]
