"""Plausible event times: a record whose time lies outside ``[not_before, not_after)`` is
rejected with the reason ``implausible_time``.

One stray value must not rule a run: a single Moab line dated 2400 would otherwise stretch every
window grid over four centuries (millions of hourly rows, gigabytes), and one job event at
ts = -1e6 would charge node-hours for eleven days that never were. The defaults are wide:
1970-01-01 (SWF traces without a UnixStartTime count from 0) to 2100-01-01 UTC.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from models.records.reject import Reject

DEFAULT_NOT_BEFORE_MS = 0  # 1970-01-01T00:00:00Z
DEFAULT_NOT_AFTER_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z
REASON = "implausible_time"


@dataclass(frozen=True, slots=True)
class TimeBounds:
    not_before_ms: int = DEFAULT_NOT_BEFORE_MS
    not_after_ms: int = DEFAULT_NOT_AFTER_MS

    def __post_init__(self) -> None:
        if self.not_before_ms >= self.not_after_ms:
            raise ValueError("not_before must be earlier than not_after")

    def contains_ms(self, ts_ms: int) -> bool:
        return self.not_before_ms <= ts_ms < self.not_after_ms

    def contains_s(self, ts: float) -> bool:
        """Epoch seconds (NaN is never plausible)."""
        return self.not_before_ms <= ts * 1000 < self.not_after_ms

    def all_within(self, ts_ms: npt.NDArray[np.int64]) -> bool:
        return ts_ms.size == 0 or bool(
            ts_ms.min() >= self.not_before_ms and ts_ms.max() < self.not_after_ms
        )


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
) -> list[T]:
    """The records whose ``ts`` (epoch seconds) lies inside ``bounds``; each other one is
    appended to ``rejects`` as ``implausible_time`` with ``text(record)`` (line 0: the record,
    not its line, is known here)."""
    kept: list[T] = []
    for r in records:
        if bounds.contains_s(r.ts):
            kept.append(r)
        else:
            rejects.append(Reject(REASON, source, 0, text(r)))
    return kept
