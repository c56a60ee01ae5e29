"""Node-release forecast (seed 001, Figure 9): ``release_forecast.csv``, one row per release a
submitted job's nodes need (models.drain.release.ReleaseForecaster makes and resolves the
forecasts)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from models.drain.release import (
    Pending,
    ReleaseForecaster,
    Resolved,
    RunningReleases,
)
from models.records.jobevent import JobEvent
from models.state import StateFormatError
from models.statetree import list_in, str_in
from streams.contracts import Output, Table
from streams.tables.jobs import RELEASE_FORECAST


class ReleaseForecastStage:
    """The section's jobs fed to :class:`~models.drain.release.ReleaseForecaster` (the forecast
    at every submit: its rules), its resolved forecasts as rows: at the job's start (with how
    late it actually started), at its end when it never started (cancelled while pending), or
    at the end of the input. ``provisional`` (the live worker): also once after the submit,
    without the actual start, by :meth:`provisional_rows` for the jobs still pending then; the
    later rows have the same (ts, job, step), so they overwrite them."""

    name = "release"

    def __init__(self, section_nodes: int, provisional: bool = False) -> None:
        self.m = ReleaseForecaster(section_nodes)
        self.provisional = provisional
        self.fresh: dict[str, None] = {}  # provisional: pending jobs forecast since last taken

    @property
    def pending(self) -> Mapping[str, Pending]:
        """The model's pending jobs: job -> (submit time, forecast, reservation start)."""
        return self.m.pending

    @property
    def forecasts(self) -> int:
        """The forecasts made so far."""
        return self.m.forecasts

    @property
    def _order(self) -> RunningReleases:
        """The model's running jobs in release order (the cost tests count its walks)."""
        return self.m.order

    def tables(self) -> Sequence[Table]:
        return (RELEASE_FORECAST,)

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        m, fresh = self.m, self.fresh
        rows: list[Any] = []
        for e in batch:
            if e.type == "submit":
                if m.submit(e) and self.provisional:
                    fresh[e.job] = None
                continue
            done = m.start(e) if e.type == "start" else m.end(e.job)
            if done is not None:
                fresh.pop(e.job, None)
                rows += _rows(e.job, done)
        return [(RELEASE_FORECAST, rows)] if rows else ()

    def provisional_rows(self) -> list[Any]:
        """The rows of the jobs forecast since the last call and still pending (without the
        actual start), once each: a job that started or ended meanwhile has its final rows
        from :meth:`step` instead, and those never made here cost nothing (a worker behind
        its input sees most jobs start within the same flush)."""
        pending = self.m.pending
        rows: list[Any] = []
        for job in self.fresh:
            rows += _rows(job, (*pending[job], None))
        self.fresh.clear()
        return rows

    def finish(self) -> Iterable[Output]:
        rows: list[Any] = []
        for job, done in self.m.unresolved():
            rows += _rows(job, done)
        self.fresh.clear()
        return [(RELEASE_FORECAST, rows)] if rows else ()

    def summary(self) -> dict[str, Any]:
        return self.m.summary()

    def snapshot(self) -> dict[str, Any]:
        """The model's state and, under ``"fresh"``, the pending jobs whose provisional rows
        are still to be written, in order (``provisional`` is configuration)."""
        return {**self.m.snapshot(), "fresh": list(self.fresh)}

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage from :meth:`snapshot`'s tree; a tree of another shape raises
        :class:`~models.state.StateFormatError` and changes nothing."""
        fresh = dict.fromkeys(str_in(j) for j in list_in(tree["fresh"]))
        m = type(self.m)(self.m.section_nodes)
        m.restore(tree)
        if not fresh.keys() <= m.pending.keys():
            raise StateFormatError("release state: a fresh forecast of a job not pending")
        self.m, self.fresh = m, fresh


def _rows(job: str, done: Resolved) -> list[Any]:
    """``release_forecast.csv``'s rows of a job's resolved forecast: one per release step
    (step 0: no release needed)."""
    ts, f, rsv, started = done
    late = None if started is None else started - f.at
    head = (ts, job, f.need, f.held, f.missing)
    tail = (f.ready_at, f.late_by, late, rsv)
    if not f.steps:
        return [(*head, 0, None, None, None, None, None, None, *tail)]
    return [
        (*head, i, s.job, s.name, s.nodes, s.release_at, s.free_after, s.need_after, *tail)
        for i, s in enumerate(f.steps, 1)
    ]
