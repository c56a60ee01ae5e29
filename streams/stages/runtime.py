"""Run-time prediction (seed 001 §11.2): ``runtime_predictions.csv``, a row per ended job from
its (user, job name) history, and the predictions' scores in the summary (models.jobs.runtime)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from models.jobs.runtime import (
    RuntimePredictor,
    predictions_restore,
    predictions_snapshot,
    score_predictions,
)
from models.records.jobevent import JobEvent
from models.statetree import dict_in
from streams.contracts import Output, Table
from streams.stages.daily import ended
from streams.tables.jobs import RUNTIME_PREDICTIONS


class RuntimeStage:
    name = "runtime"

    def __init__(self, model: RuntimePredictor, keep: bool = True) -> None:
        """``keep``: hold every prediction for the summary's scores (a replay; the live
        worker's rows go to its sinks and leave memory)."""
        self.m = model
        self.keep = keep
        self.predictions: list[Any] = []

    def tables(self) -> Sequence[Table]:
        return (RUNTIME_PREDICTIONS,)

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        b = ended(batch)
        rows = self.m.update(b) if b else []
        if self.keep:
            self.predictions += rows
        if not rows:
            return ()
        part = {e.job: e.partition for e in b if e.type == "end"}
        return [
            (
                RUNTIME_PREDICTIONS,
                [
                    (
                        r.job,
                        r.user,
                        r.name,
                        r.history_runs,
                        r.predicted_s,
                        r.upper_s,
                        r.actual_s,
                        r.overran,
                        r.min_s,
                        r.max_s,
                        r.band_min_s,
                        r.band_max_s,
                        r.std_s,
                        r.spread_s,
                        part.get(r.job),
                    )
                    for r in rows
                ],
            )
        ]

    def finish(self) -> Iterable[Output]:
        return ()

    def snapshot(self) -> dict[str, Any]:
        """The predictor's histories and running jobs, and the predictions kept for the
        summary (none live: ``keep`` is configuration)."""
        return {"model": self.m.snapshot(), "predictions": predictions_snapshot(self.predictions)}

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage from :meth:`snapshot`'s tree."""
        predictions = predictions_restore(tree["predictions"])
        self.m.restore(dict_in(tree["model"]))
        self.predictions = predictions

    def summary(self) -> dict[str, Any]:
        s = score_predictions(self.predictions)
        return {
            "history_runs": "all" if self.m.history is None else self.m.history,
            "jobs": s.jobs,
            "covered": s.covered,
            "mae_predicted_s": s.mae_predicted,
            "mae_request_same_jobs_s": s.mae_request_covered,
            "mae_hybrid_s": s.mae_hybrid,
            "mae_request_s": s.mae_request,
            "share_overran_upper": s.overran_upper,
            "share_over_request": s.over_request,
            "ends_without_start": self.m.unmatched_ends,
        }
