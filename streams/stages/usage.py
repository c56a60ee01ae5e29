"""Usage per day with Open XDMoD's Jobs-realm rule (models.jobs.usage): ``usage_daily.csv``,
and the events counted by type for the summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from models.jobs.usage import UsageAccumulator
from models.records.jobevent import JobEvent
from models.statetree import dict_in, float_in, int_in, list_in, str_in
from streams.contracts import Output, Table
from streams.tables.jobs import USAGE_DAILY


class UsageStage:
    """``usage_daily.csv`` at the end of a replay; live, :meth:`changed` gives the re-written
    days (a day's row changes whenever a job that ran on it ends)."""

    name = "usage"

    def __init__(self, tz: str, resource: str) -> None:
        self.tz = tz
        self.resource = resource
        self.m = UsageAccumulator(tz)
        self.by_type: Counter[str] = Counter()
        self._totals: tuple[float, float, float, int, int] = (0.0, 0.0, 0.0, 0, 0)

    def tables(self) -> Sequence[Table]:
        return (USAGE_DAILY,)

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        self.by_type.update(e.type for e in batch)
        self.m.update(batch)
        return ()

    def changed(self) -> Iterable[Output]:
        rows = self.m.changed(self.resource)
        return [(USAGE_DAILY, rows)] if rows else ()

    def finish(self) -> Iterable[Output]:
        self._totals = self.m.totals()
        yield USAGE_DAILY, self.m.rows(self.resource)

    def summary(self) -> dict[str, Any]:
        cpu, node, wall, started, ended = self._totals
        return {
            "resource": self.resource,
            "events_by_type": dict(sorted(self.by_type.items())),
            "cpu_hours": cpu,
            "node_hours": node,
            "wall_hours": wall,
            "jobs_started": started,
            "jobs_ended": ended,
        }

    def snapshot(self) -> dict[str, Any]:
        """The accumulator's state, the events counted by type and the finish's totals (the
        zone and the resource are configuration)."""
        return {
            "model": self.m.snapshot(),
            "by_type": [[k, n] for k, n in self.by_type.items()],
            "totals": list(self._totals),
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage with :meth:`snapshot`'s state."""
        self.m.restore(dict_in(tree["model"]))
        pairs = [list_in(x, 2) for x in list_in(tree["by_type"])]
        self.by_type = Counter({str_in(k): int_in(n) for k, n in pairs})
        cpu, node, wall, started, ended = list_in(tree["totals"], 5)
        sums = (float_in(cpu), float_in(node), float_in(wall))
        self._totals = (*sums, int_in(started), int_in(ended))
