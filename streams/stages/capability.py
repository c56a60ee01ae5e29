"""Capability use per day (seed 004, CUP40): ``capability_daily.csv`` with the modified CUP,
P_CUP's day term and the Red/Black section node-hours (models.jobs.capability)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from models.jobs.capability import (
    CapabilityUse,
    cup_over,
    days_restore,
    days_snapshot,
    p_cup_factor,
    share,
)
from models.statetree import dict_in
from streams.contracts import Output, Table
from streams.stages.daily import DailyStage
from streams.tables.jobs import CAPABILITY_DAILY


class CapabilityStage(DailyStage):
    name = "capability"

    def __init__(
        self,
        model: CapabilityUse,
        tz: str,
        section_from: str,
        sections_reason: str | None = None,
    ) -> None:
        super().__init__(tz)
        self.m = model
        self.section_from = section_from
        self.sections_reason = sections_reason  # why the Red/Black columns are empty
        self.rows: list[Any] = []

    def tables(self) -> Sequence[Table]:
        return (CAPABILITY_DAILY,)

    def _close(self, edge: float, final: bool) -> list[Output]:
        days = self.m.flush(edge)
        if final:
            days += self.m.flush(edge, final=True)
        self.rows += days
        rows = [
            (
                d.day,
                d.large_node_hours,
                d.small_node_hours,
                d.backfill_node_hours,
                d.cup40,
                d.cup40_modified,
                d.red_node_hours,
                d.black_node_hours,
                d.red_share,
                d.p_cup_factor,
            )
            for d in days
        ]
        return [(CAPABILITY_DAILY, rows)] if rows else []

    def snapshot(self) -> dict[str, Any]:
        """The day edges' state (:class:`DailyStage`), the model's, and the closed days kept
        for the summary."""
        tree = super().snapshot()
        tree["model"] = self.m.snapshot()
        tree["rows"] = days_snapshot(self.rows)
        return tree

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage from :meth:`snapshot`'s tree."""
        rows = days_restore(tree["rows"])
        super().restore(tree)
        self.m.restore(dict_in(tree["model"]))
        self.rows = rows

    def summary(self) -> dict[str, Any]:
        m = self.m
        cup, cupm = cup_over(self.rows)
        reason = None
        if not m.backfill_flags:
            reason = (
                "the source records no backfill flag (SWF, sacct without Flags): backfill "
                "node-hours are unknown, so the modified CUP is not computed"
            )
        known = m.red_partitions is not None
        red = math.fsum(d.red_node_hours or 0.0 for d in self.rows) if known else None
        black = math.fsum(d.black_node_hours or 0.0 for d in self.rows) if known else None
        return {
            "section_nodes": m.section_nodes,
            "section_nodes_from": self.section_from,
            "min_large_nodes": m.min_large,
            "large_rule": f">= ceil({m.fraction:g} x section_nodes) nodes",
            "cup40": cup,
            "cup40_modified": cupm,
            "cup40_modified_missing_reason": reason,
            "jobs_with_backfill_flag": m.flagged_jobs,
            "jobs_without_backfill_flag": m.unflagged_jobs,
            "p_cup_factor": p_cup_factor(cup),
            "red_partitions": sorted(m.red_partitions) if known else None,
            "red_node_hours": red,
            "black_node_hours": black,
            "red_share": share(red, black),
            "red_black_missing_reason": None if known else self.sections_reason,
            "jobs_without_partition": m.jobs_without_partition,
        }
