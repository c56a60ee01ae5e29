"""Slot turnover (seed 002): ``turnover.csv`` per window and the histogram of the turnover
times, ``turnover_hist.csv`` (models.jobs.turnover)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from models.jobs.turnover import SlotTurnover
from models.records.jobevent import JobEvent
from models.statetree import dict_in
from streams.contracts import Output, Table
from streams.stages.daily import DayEdges
from streams.tables.jobs import TURNOVER, TURNOVER_HIST


class TurnoverStage:
    name = "turnover"

    def __init__(self, model: SlotTurnover, tz: str) -> None:
        self.m = model
        self.days = DayEdges(tz)

    def tables(self) -> Sequence[Table]:
        return (TURNOVER, TURNOVER_HIST)

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        self.days.passed(batch)
        rows = self.m.update(batch) if batch else []  # submits too: when a job starts waiting
        return [(TURNOVER, [_turnover_row(r) for r in rows])] if rows else ()

    def finish(self) -> Iterable[Output]:
        until = self.days.final_edge()
        if until is not None:
            yield TURNOVER, [_turnover_row(r) for r in self.m.flush(until)]
        yield TURNOVER_HIST, list(self.m.histogram())

    def summary(self) -> dict[str, Any]:
        t = self.m
        return {
            "gaps": t.n,
            "mean_w_s": t.mean_w,
            "std_w_s": t.std_w,
            "turnover_s": t.sum_w,
            "idle_s": t.idle_s,
            "idle_gaps": t.idle_gaps,
            "idle_long_gap_s": t.idle_long_s,
            "refills_without_submit": t.refills_without_submit,
            "window_s": t.window,
            "max_gap_s": t.max_gap,
        }

    def snapshot(self) -> dict[str, Any]:
        """The model's state and the day edges' (the zone is configuration)."""
        return {"model": self.m.snapshot(), "days": self.days.snapshot()}

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage with :meth:`snapshot`'s state."""
        self.m.restore(dict_in(tree["model"]))
        self.days.restore(dict_in(tree["days"]))


def _turnover_row(r: Any) -> tuple[Any, ...]:
    return (r.start, r.end, r.n_gaps, r.sum_w, r.unusable_slots, r.idle_s, r.idle_slots)
