"""Plausible event times: a record whose time lies outside ``[not_before, not_after)`` is
rejected with the reason ``implausible_time``; one whose time jumps far beyond the rest of its
source (a lone record more than ``max_jump`` away from all others) with ``time_jump``.

One stray value must not rule a run: a single Moab line dated 2400 would otherwise stretch every
window grid over four centuries (millions of hourly rows, gigabytes), and one job event at
ts = -1e6 would charge node-hours for eleven days that never were. The defaults are wide:
1970-01-01 (SWF traces without a UnixStartTime count from 0) to 2100-01-01 UTC.

The jump rule catches a stray year inside the absolute bounds (a clock set to 2090): the times of
one source (a file, or one read chunk of a log) are cut into clusters wherever two consecutive
times lie more than ``max_jump`` apart; a cluster that holds at most ``JUMP_SHARE`` of the
source's records (at least one record), and is not the largest, is rejected. A scheduler that
was really off for longer than ``max_jump`` leaves two large clusters, both kept.

Physical ranges (issue 31, class 4: a value that parses but is absurd is a reject with its
reason, never an exception, and never skews a run). Every numeric field a job or sample format
reads has one; the parsers check them, each with its field's reason (``bad_<field>``):

======================================  ==================================  ====================
what                                    range                               constant
======================================  ==================================  ====================
event times (ts, submit, start, end)    the run's TimeBounds                ``implausible_time``
a job event's ``reserved_start``        the run's TimeBounds (no jump rule) :data:`RESERVED_REASON`
durations, wall times, time limits      0 .. ten years (315,360,000 s)      :data:`MAX_DURATION_S`
node, core, CPU, processor counts       0 .. 2**31 - 1                      :data:`MAX_COUNT`
a machine's MaxNodes / MaxProcs (SWF)   1 .. 2**31 - 1 (else ignored)       :data:`MAX_COUNT`
memory (SWF KiB, sacct ReqMem MiB)      0 .. 2**42 KiB (4 PiB)              :data:`MAX_MEMORY_KIB`
exit status ``rc:signal`` (sacct,       0 .. 255 each                       :data:`MAX_EXIT`
jobcomp)
a job event's integer ``exit_code``     a C int (-2**31 .. 2**31 - 1)       :data:`EXIT_CODE_MIN`
uid, gid (sacct)                        0 .. 2**32 - 1 (uid_t)              :data:`MAX_UID`
numeric ids (job numbers, SWF user,     0 .. 2**63 - 1                      :data:`MAX_ID`
group, application, queue ...)
node lists                              at most ``max_hosts`` hosts         ``hostlist_too_large``
node samples                            models.records.nodesample           ``implausible_value``
======================================  ==================================  ====================

NaN and infinities are never in range. The memory bound is 4 PiB, not the node samples' 1 PiB:
Slurm's 32-bit ReqMem once carried its per-CPU flag into the value (``2147486648Mn`` in Open
XDMoD's phillips log is 0x80000000 + 4024 MB), and such a record is otherwise good.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from models.records.ranges import (  # the physical ranges, re-exported beside the time bounds
    EXIT_CODE_MAX,
    EXIT_CODE_MIN,
    MAX_COUNT,
    MAX_DURATION_S,
    MAX_EXIT,
    MAX_ID,
    MAX_MEMORY_KIB,
    MAX_UID,
    count_ok,
    duration_ok,
)
from models.records.reject import Reject

__all__ = [
    "EXIT_CODE_MAX",
    "EXIT_CODE_MIN",
    "MAX_COUNT",
    "MAX_DURATION_S",
    "MAX_EXIT",
    "MAX_ID",
    "MAX_MEMORY_KIB",
    "MAX_UID",
    "TimeBounds",
    "count_ok",
    "duration_ok",
    "keep_plausible",
    "keep_within",
]

DEFAULT_NOT_BEFORE_MS = 0  # 1970-01-01T00:00:00Z
DEFAULT_NOT_AFTER_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z
DEFAULT_MAX_JUMP_MS = 30 * 86_400_000  # 30 days
JUMP_SHARE = 0.001
REASON = "implausible_time"
JUMP_REASON = "time_jump"
RESERVED_REASON = "implausible_reserved_start"


@dataclass(frozen=True, slots=True)
class TimeBounds:
    not_before_ms: int = DEFAULT_NOT_BEFORE_MS
    not_after_ms: int = DEFAULT_NOT_AFTER_MS
    max_jump_ms: int = DEFAULT_MAX_JUMP_MS  # 0: no jump rule

    def __post_init__(self) -> None:
        if self.not_before_ms >= self.not_after_ms:
            raise ValueError("not_before must be earlier than not_after")
        if self.max_jump_ms < 0:
            raise ValueError("max_jump must be >= 0")

    def contains_s(self, ts: float) -> bool:
        """Epoch seconds (NaN is never plausible)."""
        return self.not_before_ms <= ts * 1000 < self.not_after_ms

    def all_within(self, ts_ms: npt.NDArray[np.int64]) -> bool:
        return ts_ms.size == 0 or bool(
            ts_ms.min() >= self.not_before_ms and ts_ms.max() < self.not_after_ms
        )

    def all_plausible(self, ts_ms: npt.NDArray[np.int64]) -> bool:
        """Every time inside the bounds and no jump (cheap: min and max only when so)."""
        if ts_ms.size == 0:
            return True
        lo, hi = int(ts_ms.min()), int(ts_ms.max())
        if lo < self.not_before_ms or hi >= self.not_after_ms:
            return False
        return self.max_jump_ms == 0 or hi - lo <= self.max_jump_ms

    def reasons(self, ts_ms: npt.NDArray[np.int64]) -> list[str | None]:
        """Per record: None (plausible), ``implausible_time`` or ``time_jump``."""
        out: list[str | None] = [None] * int(ts_ms.size)
        if self.all_plausible(ts_ms):
            return out
        inside = (ts_ms >= self.not_before_ms) & (ts_ms < self.not_after_ms)
        for i in np.flatnonzero(~inside).tolist():
            out[i] = REASON
        rows = np.flatnonzero(inside)
        for i in rows[self._jumps(ts_ms[rows])].tolist():
            out[i] = JUMP_REASON
        return out

    def _jumps(self, ts: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        n = int(ts.size)
        stray = np.zeros(n, dtype=bool)
        if self.max_jump_ms == 0 or n < 2 or int(ts.max() - ts.min()) <= self.max_jump_ms:
            return stray
        order = np.argsort(ts, kind="stable")
        breaks = np.flatnonzero(np.diff(ts[order]) > self.max_jump_ms) + 1
        starts = np.r_[0, breaks]
        sizes = np.diff(np.r_[starts, n])
        small = sizes <= max(1, int(JUMP_SHARE * n))
        small[int(np.argmax(sizes))] = False
        label = np.repeat(np.arange(sizes.size), sizes)
        stray[order] = small[label]
        return stray


class _Timed(Protocol):
    @property
    def ts(self) -> float: ...


T = TypeVar("T", bound=_Timed)


def keep_plausible(
    records: Iterable[T],
    bounds: TimeBounds,
    source: str,
    text: Callable[[T], str],
    rejects: list[Reject],
    lines: list[int] | None = None,
) -> list[T]:
    """The plausible records (``ts`` in epoch seconds, see :meth:`TimeBounds.reasons`); each
    other one is appended to ``rejects`` with its reason, ``text(record)`` and its line.
    ``lines``: each record's source line (the side array of ``records``); on return it holds
    the kept records' lines, for the next step that may reject one. Every reject names its
    line: without ``lines`` (records that are not lines of a file) the line is 0."""
    rs = list(records)
    ts = np.fromiter((r.ts for r in rs), dtype=np.float64, count=len(rs))
    # floored, not truncated toward zero by astype: -0.0005 s is -1 ms, before 0 ms, so that
    # floor(ms) >= not_before and floor(ms) < not_after hold exactly when ms does (as in
    # contains_s); clipped to about +-2**62 ms (int64, beyond any bound) before the product
    # overflows; NaN and inf are made the lowest time, implausible_time
    lim_s = 2.0**62 / 1000
    ts_s = np.clip(np.where(np.isfinite(ts), ts, -lim_s), -lim_s, lim_s)
    why = bounds.reasons(np.floor(ts_s * 1000).astype(np.int64))
    return _sift(rs, list(why), source, text, rejects, lines)


def _sift(
    rs: list[T],
    why: Sequence[str | None],
    source: str,
    text: Callable[[T], str],
    rejects: list[Reject],
    lines: list[int] | None,
) -> list[T]:
    """The records whose reason is None; each other one rejected with its reason and line;
    ``lines`` (the records' side array) left holding the kept records' lines."""
    at = [0] * len(rs) if lines is None else lines
    kept: list[T] = []
    kept_at: list[int] = []
    for r, n, reason in zip(rs, at, why, strict=True):
        if reason is None:
            kept.append(r)
            kept_at.append(n)
        else:
            rejects.append(Reject(reason, source, n, text(r)))
    if lines is not None:
        lines[:] = kept_at
    return kept


def keep_within(
    records: Iterable[T],
    bounds: TimeBounds,
    when: Callable[[T], float | None],
    reason: str,
    source: str,
    text: Callable[[T], str],
    rejects: list[Reject],
    lines: list[int] | None = None,
) -> list[T]:
    """The records whose second time ``when(record)`` (epoch seconds; None: none) lies inside
    ``bounds`` (absolute bounds only: a reservation is no record of its source's time line, so
    the jump rule does not apply); each other one is appended to ``rejects`` with ``reason``
    (e.g. :data:`RESERVED_REASON`: a job event's ``reserved_start`` of 1e300 or -1e15 would
    otherwise end the run in an overflow or charge forecasts against a time that never was).
    ``lines``: each record's source line, as in :func:`keep_plausible`."""
    rs = list(records)
    why = [None if (t := when(r)) is None or bounds.contains_s(t) else reason for r in rs]
    return _sift(rs, why, source, text, rejects, lines)
