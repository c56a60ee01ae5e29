"""Short-job penalties (seed 002): ``shortjobs.csv`` per 3-minute tick and the fair-share
adjustment table ``fairshare_adjust.tsv`` / ``.json`` (models.jobs.shortjobs)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any

from models.jobs.shortjobs import ShortJobPenalty, adjust_table_tsv, lookup_table_json
from models.records.jobevent import JobEvent
from models.statetree import dict_in, int_in, opt_float_in
from streams.contracts import Output, Table
from streams.stages.daily import ended
from streams.tables.jobs import FAIRSHARE_ADJUST_JSON, FAIRSHARE_ADJUST_TSV, SHORTJOBS


class ShortJobsStage:
    """``on_tick`` (``--adjust-out``: streams.sinks.adjust): called with the model each time
    event time closes one or more 3-minute ticks (once, for the latest: the table of a tick
    with no event after it would be replaced at once), and at the end, so its last call sees
    the table of ``fairshare_adjust.tsv``."""

    name = "shortjobs"

    def __init__(
        self, model: ShortJobPenalty, on_tick: Callable[[ShortJobPenalty], None] | None = None
    ) -> None:
        self.m = model
        self.on_tick = on_tick
        self.last_ts: float | None = None
        self._holders = 0
        self._tick_ts: float | None = None  # last tick on_tick was called for

    def tables(self) -> Sequence[Table]:
        return (SHORTJOBS,)

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        if batch:
            self.last_ts = batch[-1].ts
        b = ended(batch)
        if not b:
            return ()
        if self.on_tick is None:
            rows = self.m.update(b) + self.m.advance(b[-1].ts)
        else:
            rows = self._step_ticks(b, self.on_tick)
        return [(SHORTJOBS, [_short_row(r) for r in rows])] if rows else ()

    def _step_ticks(
        self, b: list[JobEvent], on_tick: Callable[[ShortJobPenalty], None]
    ) -> list[Any]:
        """The batch one tick at a time, ``on_tick`` after each tick event time closes."""
        m, interval, rows = self.m, self.m.interval, []
        i, n = 0, len(b)
        while i < n:
            hi = math.ceil(b[i].ts / interval) * interval  # the tick b[i] falls in: (hi - I, hi]
            j = bisect.bisect_right(b, hi, lo=i, key=_TS)
            rows += m.update(b[i:j])
            rows += m.advance(b[j - 1].ts)
            t = m.last_tick_ts
            if t is not None and t != self._tick_ts:
                self._tick_ts = t
                on_tick(m)
            i = j
        return rows

    def finish(self) -> Iterable[Output]:
        if self.last_ts is not None:
            # the trace's last tick is emitted although it is still open
            yield SHORTJOBS, [_short_row(r) for r in self.m.close(self.last_ts)]
        tables = self.m.tables()
        self._holders = sum(map(len, tables.values()))
        yield FAIRSHARE_ADJUST_TSV, adjust_table_tsv(tables).encode()
        yield FAIRSHARE_ADJUST_JSON, lookup_table_json(tables, self.m.last_tick_ts)
        if self.on_tick is not None:
            self.on_tick(self.m)  # the file ends as fairshare_adjust.tsv

    def summary(self) -> dict[str, Any]:
        m = self.m
        return {
            "short_jobs": m.short_jobs,
            "threshold_s": m.threshold,
            "min_runtime_s": m.min_runtime,
            "interval_s": m.interval,
            "lambda": m.lam,
            "holders_in_table": self._holders,
        }

    def snapshot(self) -> dict[str, Any]:
        """The model's state, the last event time, the holders the finish counted and the
        last tick ``on_tick`` was called for (``on_tick`` itself is configuration)."""
        return {
            "model": self.m.snapshot(),
            "last_ts": self.last_ts,
            "holders": self._holders,
            "tick_ts": self._tick_ts,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage with :meth:`snapshot`'s state."""
        self.m.restore(dict_in(tree["model"]))
        self.last_ts = opt_float_in(tree["last_ts"])
        self._holders = int_in(tree["holders"])
        self._tick_ts = opt_float_in(tree["tick_ts"])


_TS = attrgetter("ts")


def _short_row(r: Any) -> tuple[Any, ...]:
    return (r.ts, r.holder_kind, r.holder, r.n_short, r.penalty_s, r.adjust)
