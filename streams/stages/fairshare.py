"""Fair-share usage with half-life decay (seed 004): ``fairshare_usage.csv`` at each day end
(models.jobs.fairshare)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from models.jobs.fairshare import FairShareUsage
from models.statetree import dict_in
from streams.contracts import Output, Table
from streams.stages.daily import DailyStage
from streams.tables.jobs import FAIRSHARE_USAGE


class FairShareStage(DailyStage):
    name = "fairshare"

    def __init__(self, model: FairShareUsage, tz: str) -> None:
        super().__init__(tz)
        self.m = model

    def tables(self) -> Sequence[Table]:
        return (FAIRSHARE_USAGE,)

    def _close(self, edge: float, final: bool) -> list[Output]:
        """Usage of the holders charged or refunded that day; of every holder at the end."""
        rows = [
            (
                r.ts,
                r.holder_kind,
                r.holder,
                r.usage_node_hours,
                r.charged_node_hours,
                r.refunded_node_hours,
            )
            for r in self.m.report(edge, changed_only=not final)
        ]
        return [(FAIRSHARE_USAGE, rows)] if rows else []

    def summary(self) -> dict[str, Any]:
        return {"half_life_s": self.m.half_life, "refunded_jobs": self.m.refunded_jobs}

    def snapshot(self) -> dict[str, Any]:
        """The day edges' state and the model's (half-life and refund states are
        configuration)."""
        return {**super().snapshot(), "model": self.m.snapshot()}

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage with :meth:`snapshot`'s state."""
        super().restore(tree)
        self.m.restore(dict_in(tree["model"]))
