"""Node-status records: one node's state at one scheduler iteration (seed 000 §III-A).

A Moab node-status line, or its Slurm equivalent, becomes a ``NodeStatus``; a run of them becomes
a ``NodeStatusBatch`` of numpy columns, with node names, states and job/reservation ids interned
into small integer codes by a ``Codebook`` that the caller owns (no globals).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from models.records.idbook import IdBook

# The six Moab states of seed 000 §III-B.1, in the paper's order; codes 0..5.
KNOWN_STATES: tuple[str, ...] = ("Down", "Idle", "Busy", "Running", "Drained", "Draining")
DOWN, IDLE, BUSY, RUNNING, DRAINED, DRAINING = range(6)
NO_JOB = -1  # code of the literal 'none' (or an empty list)


@dataclass(slots=True, frozen=True)
class NodeStatus:
    """One node at one scheduler iteration. ``ts_ms``: POSIX milliseconds (UTC)."""

    ts_ms: int
    node: str
    state: str
    rsvlist: tuple[str, ...] = ()
    joblist: tuple[str, ...] = ()


class Interner:
    """Strings <-> dense int codes, in order of first sight."""

    __slots__ = ("names", "_index")

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.names)

    def code(self, name: str) -> int:
        c = self._index.get(name)
        if c is None:
            c = len(self.names)
            self._index[name] = c
            self.names.append(name)
        return c

    def codes(self, names: Sequence[str]) -> np.ndarray:
        return np.array([self.code(n) for n in names], dtype=np.int64)

    def name(self, code: int) -> str:
        return self.names[code]

    def names_of(self, codes: Iterable[int]) -> list[str]:
        names = self.names
        return [names[c] for c in codes]

    def all_names(self) -> list[str]:
        return list(self.names)

    def truncate(self, n: int) -> None:
        """Forget every name coded at or after ``n`` (undo a batch that was taken back)."""
        for name in self.names[n:]:
            del self._index[name]
        del self.names[n:]

    def compact(self, keep: np.ndarray) -> None:
        """Keep the names where ``keep`` (bool per code) is true, renumbered densely in their
        old order: the new code of a kept name is ``np.cumsum(keep)[old] - 1``."""
        self.names = [n for n, k in zip(self.names, keep.tolist(), strict=True) if k]
        self._index = {n: i for i, n in enumerate(self.names)}


class StateBook:
    """State names, matched case-insensitively. Known states keep codes 0..5; an unknown state
    becomes a state of its own (code >= 6), named as first seen, and is reported as unknown."""

    __slots__ = ("names", "_index")

    def __init__(self) -> None:
        self.names: list[str] = list(KNOWN_STATES)
        self._index: dict[str, int] = {s.casefold(): i for i, s in enumerate(KNOWN_STATES)}

    def __len__(self) -> int:
        return len(self.names)

    def code(self, raw: str) -> int:
        key = raw.strip().casefold()
        c = self._index.get(key)
        if c is None:
            c = len(self.names)
            self._index[key] = c
            self.names.append(raw.strip())
        return c

    def truncate(self, n: int) -> None:
        """Forget every state coded at or after ``n`` (never the known ones)."""
        n = max(n, len(KNOWN_STATES))
        for name in self.names[n:]:
            del self._index[name.casefold()]
        del self.names[n:]


class Codebook:
    """The interners one replay or one worker shares across all its batches."""

    __slots__ = ("nodes", "states", "jobs")

    def __init__(self, jobs: Interner | IdBook | None = None) -> None:
        """``jobs``: an ``IdBook`` for a long-lived worker holding millions of job ids."""
        self.nodes = Interner()
        self.states = StateBook()
        self.jobs: Interner | IdBook = Interner() if jobs is None else jobs

    def mark(self) -> tuple[int, int, int]:
        """Sizes to :meth:`rollback` to."""
        return len(self.nodes), len(self.states), len(self.jobs)

    def rollback(self, mark: tuple[int, int, int]) -> None:
        """Forget the names interned since ``mark`` (a parsed chunk that is parsed again)."""
        self.nodes.truncate(mark[0])
        self.states.truncate(mark[1])
        self.jobs.truncate(mark[2])


def split_idlist(text: str | None) -> tuple[str, ...]:
    """'a,b' -> ('a', 'b'); 'none' (any case), '' or None -> (). Order is kept (upcoming first)."""
    if text is None:
        return ()
    t = text.strip()
    if not t or t.casefold() == "none":
        return ()
    return tuple(x.strip() for x in t.split(",") if x.strip())


@dataclass(slots=True)
class NodeStatusBatch:
    """Columns of node-status records in arrival order.

    ``rsv`` is the code of the FIRST reservation/job in rsvlist (the one a drain is charged to,
    seed 000 §IV-A) or NO_JOB; ``has_job`` says joblist is non-empty; every job in every joblist
    is listed as (run_row, run_job) pairs for "seen running" tracking, ``run_row`` ascending
    (every constructor keeps it so; a wire message that breaks it is refused).
    """

    ts_ms: np.ndarray  # int64
    node: np.ndarray  # int64 codes
    state: np.ndarray  # int64 codes
    rsv: np.ndarray  # int64 codes, NO_JOB for none
    has_job: np.ndarray  # bool
    run_row: np.ndarray  # int64 row index into this batch
    run_job: np.ndarray  # int64 job codes

    def __len__(self) -> int:
        return int(self.ts_ms.size)

    @classmethod
    def empty(cls) -> NodeStatusBatch:
        z = np.empty(0, dtype=np.int64)
        return cls(z, z, z, z, np.empty(0, dtype=bool), z, z)

    @classmethod
    def from_records(cls, records: Sequence[NodeStatus], book: Codebook) -> NodeStatusBatch:
        """Slow path used by shippers of already-parsed records and by tests."""
        n = len(records)
        ts = np.fromiter((r.ts_ms for r in records), dtype=np.int64, count=n)
        node = np.fromiter((book.nodes.code(r.node) for r in records), dtype=np.int64, count=n)
        state = np.fromiter((book.states.code(r.state) for r in records), dtype=np.int64, count=n)
        rsv = np.fromiter(
            (book.jobs.code(r.rsvlist[0]) if r.rsvlist else NO_JOB for r in records),
            dtype=np.int64,
            count=n,
        )
        has_job = np.fromiter((bool(r.joblist) for r in records), dtype=bool, count=n)
        rows: list[int] = []
        jobs: list[int] = []
        for i, r in enumerate(records):
            for j in r.joblist:
                rows.append(i)
                jobs.append(book.jobs.code(j))
        return cls(
            ts,
            node,
            state,
            rsv,
            has_job,
            np.asarray(rows, dtype=np.int64),
            np.asarray(jobs, dtype=np.int64),
        )

    def take(self, rows: np.ndarray) -> NodeStatusBatch:
        """The records at ``rows`` (distinct row indices), in that order, with their jobs."""
        pos = np.full(len(self), -1, dtype=np.int64)
        pos[rows] = np.arange(rows.size, dtype=np.int64)
        run_row = pos[self.run_row]
        keep = run_row >= 0
        run_row, run_job = run_row[keep], self.run_job[keep]
        o = np.argsort(run_row, kind="stable")
        return NodeStatusBatch(
            self.ts_ms[rows],
            self.node[rows],
            self.state[rows],
            self.rsv[rows],
            self.has_job[rows],
            run_row[o],
            run_job[o],
        )

    def slice(self, lo: int, hi: int) -> NodeStatusBatch:
        """The records lo..hi-1 (as ``take(np.arange(lo, hi))``, without copying the columns;
        ``run_row`` is ascending)."""
        a, z = np.searchsorted(self.run_row, (lo, hi), side="left").tolist()
        return NodeStatusBatch(
            self.ts_ms[lo:hi],
            self.node[lo:hi],
            self.state[lo:hi],
            self.rsv[lo:hi],
            self.has_job[lo:hi],
            self.run_row[a:z] - lo,
            self.run_job[a:z],
        )

    @classmethod
    def concat(cls, a: NodeStatusBatch, b: NodeStatusBatch) -> NodeStatusBatch:
        """``a`` followed by ``b`` (codes from the same codebook)."""
        if not len(a):
            return b
        if not len(b):
            return a
        return cls(
            np.concatenate([a.ts_ms, b.ts_ms]),
            np.concatenate([a.node, b.node]),
            np.concatenate([a.state, b.state]),
            np.concatenate([a.rsv, b.rsv]),
            np.concatenate([a.has_job, b.has_job]),
            np.concatenate([a.run_row, b.run_row + len(a)]),
            np.concatenate([a.run_job, b.run_job]),
        )
