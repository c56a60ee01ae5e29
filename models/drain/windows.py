"""Calendar windows (minute, hour, day) in an IANA time zone, as sorted UTC edges in ms.

Seed 000 §III-B keeps one log file per day and so loses the seconds around midnight; drainwatch
instead splits every interval exactly at window edges, so windows add up to the whole. A local
day is a union of local hours (midnight is an hour edge), so day sums are exact sums of hours;
days are 23, 24 or 25 h long across DST changes and the window length is taken from the edges.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import numpy as np

_STEP_MS = 15 * 60 * 1000  # every UTC offset in tzdata is a multiple of 15 minutes
_UNIT_MS = {"minute": 60_000, "hour": 3_600_000, "day": 86_400_000}


def _is_edge(local: datetime, unit: str) -> bool:
    if unit == "minute":
        return local.second == 0
    if unit == "hour":
        return local.minute == 0 and local.second == 0
    return local.hour == 0 and local.minute == 0 and local.second == 0


class WindowGrid:
    """Sorted UTC window starts (ms) for ``unit`` in ``tz``; grows to cover the data it is shown."""

    __slots__ = ("tz", "unit", "edges", "_lo", "_hi")

    def __init__(self, tz: str = "UTC", unit: str = "hour") -> None:
        if unit not in _UNIT_MS:
            raise ValueError(f"unknown window unit {unit!r}")
        self.tz = ZoneInfo(tz)
        self.unit = unit
        self.edges = np.empty(0, dtype=np.int64)
        self._lo = 0
        self._hi = 0

    def _scan(self, lo: int, hi: int) -> np.ndarray:
        """Edges in [lo, hi) found by testing every quarter-hour (minute: every minute)."""
        if self.unit == "minute":
            first = -(-lo // 60_000) * 60_000
            return np.arange(first, hi, 60_000, dtype=np.int64)
        out: list[int] = []
        t = -(-lo // _STEP_MS) * _STEP_MS
        tz = self.tz
        while t < hi:
            local = datetime.fromtimestamp(t / 1000, tz=tz)
            if _is_edge(local, self.unit):
                out.append(t)
            t += _STEP_MS
        return np.asarray(out, dtype=np.int64)

    def ensure(self, lo_ms: int, hi_ms: int) -> None:
        """Make sure edges cover [lo_ms, hi_ms]: one edge <= lo_ms and one edge > hi_ms."""
        pad = 2 * _UNIT_MS[self.unit] + 2 * 3_600_000
        if self.edges.size == 0:
            self._lo, self._hi = lo_ms - pad, hi_ms + pad
            self.edges = self._scan(self._lo, self._hi)
            return
        if lo_ms - pad < self._lo:
            new_lo = min(lo_ms - pad, self._lo - 7 * 86_400_000)
            self.edges = np.concatenate([self._scan(new_lo, self._lo), self.edges])
            self._lo = new_lo
        if hi_ms + pad > self._hi:
            new_hi = max(hi_ms + pad, self._hi + 7 * 86_400_000)
            self.edges = np.concatenate([self.edges, self._scan(self._hi, new_hi)])
            self._hi = new_hi

    def locate(self, ts_ms: np.ndarray) -> np.ndarray:
        """Index into ``edges`` of the window holding each instant (edges must cover them)."""
        return np.searchsorted(self.edges, ts_ms, side="right") - 1

    def label(self, start_ms: int) -> str:
        """ISO 8601 UTC of a window start, as the CSV contract asks."""
        return datetime.fromtimestamp(start_ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def local_label(self, start_ms: int) -> str:
        """The window's local name: YYYY-MM-DD for days, YYYY-MM-DDTHH:MM for hours/minutes."""
        local = datetime.fromtimestamp(start_ms / 1000, tz=self.tz)
        return local.strftime("%Y-%m-%d" if self.unit == "day" else "%Y-%m-%dT%H:%M%z")

    def length_ms(self, start_ms: int) -> int:
        """Length of the window starting at ``start_ms`` (23/24/25 h days across DST)."""
        i = int(np.searchsorted(self.edges, start_ms))
        if i + 1 >= self.edges.size or self.edges[i] != start_ms:
            self.ensure(start_ms, start_ms + 2 * _UNIT_MS[self.unit])
            i = int(np.searchsorted(self.edges, start_ms))
        return int(self.edges[i + 1] - self.edges[i])
