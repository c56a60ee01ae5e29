"""What the job stages share: a batch without its submits, and day edges of the configured zone
passed in event time (capability and fair share close their rows at them; turnover flushes at
the last one)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from models.jobs.capability import DayCalendar
from models.records.jobevent import JobEvent
from models.statetree import dict_in, opt_float_in
from streams.contracts import Output


def ended(batch: list[JobEvent]) -> list[JobEvent]:
    """The batch without its submits (the analytics fed this way use starts and ends only)."""
    return [e for e in batch if e.type != "submit"]


class DayEdges:
    """Day edges of the configured zone passed in event time: the first batch at or after the
    current day's end closes that day (days without events close no row of their own)."""

    def __init__(self, tz: str) -> None:
        self.cal = DayCalendar(tz)
        self.hi: float | None = None
        self.last_ts: float | None = None

    def passed(self, batch: list[JobEvent]) -> float | None:
        if not batch:
            return None
        first = batch[0].ts
        self.last_ts = batch[-1].ts
        if self.hi is None:
            self.hi = self.cal.span(first)[2]
            return None
        if first >= self.hi:
            edge, self.hi = self.hi, self.cal.span(first)[2]
            return edge
        return None

    def final_edge(self) -> float | None:
        return None if self.last_ts is None else self.cal.span(self.last_ts)[2]

    def snapshot(self) -> dict[str, Any]:
        """The edge to pass and the last event time (the zone is configuration)."""
        return {"hi": self.hi, "last_ts": self.last_ts}

    def restore(self, tree: dict[str, Any]) -> None:
        self.hi = opt_float_in(tree["hi"])
        self.last_ts = opt_float_in(tree["last_ts"])


class DailyStage:
    """A stage whose model is fed ended jobs and closes its rows at the day edges it passes:
    ``_close(edge, final)`` returns the model's rows up to ``edge`` as outputs."""

    m: Any

    def __init__(self, tz: str) -> None:
        self.days = DayEdges(tz)

    def _close(self, edge: float, final: bool) -> list[Output]:
        raise NotImplementedError

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        edge = self.days.passed(batch)
        out = self._close(edge, False) if edge is not None else []
        b = ended(batch)
        if b:
            self.m.update(b)
        return out

    def finish(self) -> Iterable[Output]:
        until = self.days.final_edge()
        return [] if until is None else self._close(until, True)

    def snapshot(self) -> dict[str, Any]:
        """The day edges' state, under ``"days"``; a subclass adds its model's and its own."""
        return {"days": self.days.snapshot()}

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage's day edges from :meth:`snapshot`'s ``"days"``; a subclass
        restores the rest."""
        self.days.restore(dict_in(tree["days"]))
