"""The contracts of the shell's one flow, sources -> stages -> sinks, and the types they speak.

A leaf: this module imports nothing of ``streams`` (only ``models``, the standard library), so
every part of the shell can import it and none of them needs another part to know the others
(tests/streams/test_imports.py keeps it so). Here:

* **Source**: ``batches(rejects)`` yields batches of one record type and keeps an
  :class:`InputStats` per input; a bad record goes to the :class:`RejectLog` with its reason,
  never raises.
* **Stage**: owns one analytic's state; ``step(batch)`` returns the :data:`Output` that is final
  after that batch, ``finish()`` the rest.
* **Sink**: ``declare``, ``write``, ``document``, then ``commit`` or ``abort``.
* The output vocabulary they share: :class:`Table`, :class:`Column`, :data:`Row` (the tables
  are declared per family in ``streams.tables``; ``streams.format`` formats rows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

from models.formats import llview
from models.records.reject import Reject

# ---------------------------------------------------------------------------------------------
# Output tables

Row = Sequence[Any]

# the column kinds of docs/outputs.md; streams.format.FORMATTERS has a formatter for each
COLUMN_KINDS = frozenset({"text", "int", "number", "seconds_ms", "instant", "instant_ms", "day"})


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str  # one of COLUMN_KINDS (a key of streams.format.FORMATTERS)
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind!r}")


@dataclass(frozen=True, slots=True)
class Table:
    """One output: ``file`` is its name in the output directory (``.csv`` or ``.tsv``). Rows are
    written as text by ``streams.format.format_rows`` through the column kinds."""

    file: str
    columns: tuple[Column, ...]
    doc: str
    when: str = "always"  # when the file is written (e.g. "with --jobs")
    header: bool = True  # the .tsv lookup table a scheduler hook reads has no header
    delimiter: str = ","
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(c.name for c in self.columns))


def cols(*spec: tuple[str, str] | tuple[str, str, str]) -> tuple[Column, ...]:
    """Columns from ``(name, kind[, doc])`` tuples: how the stages declare their tables."""
    return tuple(Column(*s) for s in spec)


# ---------------------------------------------------------------------------------------------
# Instants as the output policy writes them (streams.format re-exports instant_ms): here because
# InputStats reports its first and last event time with it and this module imports nothing above

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def instant_ms(ms: int | None) -> str:
    """Epoch milliseconds -> ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (exact: integer arithmetic; the
    date, hour and minute made once per minute: the live job path writes one per row)."""
    if ms is None:
        return ""
    minute, rest = divmod(int(ms), 60_000)
    return f"{_minute_text(minute)}{rest // 1000:02d}.{rest % 1000:03d}Z"


@lru_cache(maxsize=4096)
def _minute_text(minute: int) -> str:
    """``YYYY-MM-DDTHH:MM:`` of an epoch minute (the date made once per day: event time
    moves on, so most minutes are new ones)."""
    day, m = divmod(minute, 1440)
    return f"{_day_text(day)}T{m // 60:02d}:{m % 60:02d}:"


@lru_cache(maxsize=1024)
def _day_text(day: int) -> str:
    """``YYYY-MM-DD`` of an epoch day."""
    return f"{_EPOCH + timedelta(days=day):%Y-%m-%d}"


# ---------------------------------------------------------------------------------------------
# Sources: input statistics, the reject log, the Source protocol


class RejectWriter(Protocol):
    """Where a reject log also writes its rejects (``streams.sinks.files.RejectFile``)."""

    def add(self, r: Reject) -> None: ...


class RejectLog:
    """Every rejected record of a run, counted by reason, and also given to ``file`` if any
    (the driver's ``RejectLog(path)`` opens a ``--rejects`` file)."""

    def __init__(self, file: RejectWriter | None = None) -> None:
        self.by_reason: Counter[str] = Counter()
        self.file = file

    def add(self, r: Reject) -> None:
        self.by_reason[r.reason] += 1
        if self.file is not None:
            self.file.add(r)

    def extend(self, rs: Sequence[Reject]) -> None:
        for r in rs:
            self.add(r)

    @property
    def total(self) -> int:
        return sum(self.by_reason.values())


@dataclass(slots=True)
class InputStats:
    """What a source read from one input: bytes, records, rejects, first and last event time."""

    path: str
    bytes: int = 0
    lines: int | None = None  # line formats: lines read
    ignored: int = 0  # lines that are no record of the format (e.g. other Moab messages)
    records: int = 0
    rejected: int = 0
    # lines named by a reject, each once (a sacct line is up to three events: its rejects too)
    rejected_lines: int = 0
    first_ms: int | None = None
    last_ms: int | None = None

    def seen(self, lo_ms: int, hi_ms: int) -> None:
        self.first_ms = lo_ms if self.first_ms is None else min(self.first_ms, lo_ms)
        self.last_ms = hi_ms if self.last_ms is None else max(self.last_ms, hi_ms)

    def tally(self, ts_s: Sequence[float], bad: Sequence[Reject], rejects: RejectLog) -> None:
        """One whole input read: its records' times (POSIX s) and its rejects."""
        rejects.extend(bad)
        self.rejected += len(bad)
        self.rejected_lines += len({(r.source, r.lineno) for r in bad})
        self.records += len(ts_s)
        if len(ts_s):
            self.seen(round(float(min(ts_s)) * 1000), round(float(max(ts_s)) * 1000))

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "bytes": self.bytes,
            "lines": self.lines,
            "ignored": self.ignored,
            "records": self.records,
            "rejected": self.rejected,
            "rejected_lines": self.rejected_lines,
            "first": instant_ms(self.first_ms) or None,
            "last": instant_ms(self.last_ms) or None,
        }


def lost_share(summary: dict[str, Any]) -> float:
    """The share of a run's input records it could not use: rejected or out of time order
    (``--max-reject-share``). Records are counted as the inputs hold them, rejects too: a line
    of a line format is one record (its lines less the ignored ones), lost once however many
    rejects name it (a sacct line gives up to three events, a Moab line one status); an input
    read whole (an LLview series) counts its records and rejects. 1.0 when nothing was read."""
    held = lost = 0
    for i in summary["inputs"]:
        if i["lines"] is None:
            held += i["records"] + i["rejected"]
            lost += i["rejected"]
        else:
            held += i["lines"] - i["ignored"]
            lost += i["rejected_lines"]
    lost += summary["out_of_order"]
    return min(lost / held, 1.0) if held > 0 else 1.0


# the reject log a source is given: a RejectLog or the subclass its runner makes
R_contra = TypeVar("R_contra", bound=RejectLog, contravariant=True)


class Source(Protocol[R_contra]):
    """Batches of one record type, an InputStats per input; rejects go to ``rejects``."""

    inputs: list[InputStats]

    def batches(self, rejects: R_contra) -> Iterator[Any]: ...


@dataclass(slots=True)
class LlviewJob:
    """The batch an LLview source yields: one job directory's parsed series (the other batch
    types are records of ``models.records``)."""

    directory: Path
    loadmem: llview.LlviewSeries
    cores_per_node: float
    job_class: str
    fs_all: llview.LlviewSeries | None
    fs_by_name: dict[str, llview.LlviewSeries]


# ---------------------------------------------------------------------------------------------
# Stages

B_contra = TypeVar("B_contra", contravariant=True)

# what a stage returns: rows of a declared table, or a whole document (file name, bytes)
Output = tuple[Table, Sequence[Row]] | tuple[str, bytes]


class Stage(Protocol[B_contra]):
    """State + ``step(batch) -> outputs``: the only place models are driven from."""

    name: str

    def tables(self) -> Sequence[Table]:
        """The tables this stage writes in this run (their headers even when empty)."""

    def step(self, batch: B_contra) -> Iterable[Output]: ...

    def finish(self) -> Iterable[Output]: ...

    def summary(self) -> dict[str, Any]:
        """Stage-specific figures for the run's summary."""


# ---------------------------------------------------------------------------------------------
# Sinks


class Sink(Protocol):
    """Table rows and documents, invisible until ``commit``; ``abort`` leaves what was there."""

    def declare(self, table: Table) -> None:
        """This run writes ``table`` (its header even if no row follows)."""

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        """Append rows to a declared table; return how many."""

    def document(self, name: str, data: bytes) -> None:
        """A whole file (a JSON summary, a lookup table)."""

    def commit(self) -> None:
        """Make everything written visible."""

    def abort(self) -> None:
        """Throw away everything written; leave the previous outputs as they were."""
