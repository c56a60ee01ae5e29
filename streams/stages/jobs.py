"""Job stages (seeds 001, 002, 004 and Open XDMoD usage): time-sorted JobEvent batches in, one
stage per analytic.

Every stage takes the same batches (sorted by time, never straddling a day edge of the
configured zone: streams.sources.jobevents) and closes its days itself, in event time:

* :class:`UsageStage` -> ``usage_daily.csv`` (Open XDMoD Jobs-realm rule, models.jobs.usage);
* :class:`ShortJobsStage` -> ``shortjobs.csv``, ``fairshare_adjust.tsv`` / ``.json`` (seed 002);
* :class:`TurnoverStage` -> ``turnover.csv``, ``turnover_hist.csv`` (seed 002);
* :class:`RuntimeStage` -> ``runtime_predictions.csv`` (seed 001 §11.2);
* :class:`CapabilityStage` -> ``capability_daily.csv`` (seed 004, CUP40);
* :class:`FairShareStage` -> ``fairshare_usage.csv`` (seed 004, half-life decay).
* :class:`ReleaseForecastStage` -> ``release_forecast.csv`` (seed 001, Figure 9).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any

from models.drain.release import (
    Holder,
    ReleaseForecast,
    RunningReleases,
    forecast_in_order,
    forecast_release,
    held_restore,
    held_snapshot,
    pending_restore,
    pending_snapshot,
)
from models.jobs.capability import (
    DEFAULT_FRACTION,
    CapabilityUse,
    DayCalendar,
    cup_over,
    days_restore,
    days_snapshot,
    p_cup_factor,
    share,
)
from models.jobs.fairshare import DEFAULT_HALF_LIFE_S, FairShareUsage
from models.jobs.runtime import (
    DEFAULT_HISTORY,
    RuntimePredictor,
    predictions_restore,
    predictions_snapshot,
    score_predictions,
)
from models.jobs.shortjobs import (
    DEFAULT_INTERVAL_S,
    DEFAULT_LAMBDA,
    DEFAULT_THRESHOLD_S,
    ShortJobPenalty,
    adjust_table_tsv,
    lookup_table_json,
)
from models.jobs.turnover import DEFAULT_MAX_GAP_S, DEFAULT_WINDOW_S, SlotTurnover
from models.jobs.usage import UsageAccumulator, add_exact
from models.records.jobevent import JobEvent
from models.state import StateFormatError
from models.statetree import dict_in, float_in, int_in, list_in, opt_float_in, str_in
from streams.contracts import Table, cols
from streams.stages.base import Output

USAGE_DAILY = Table(
    "usage_daily.csv",
    cols(
        ("day", "day", "calendar day in the configured zone"),
        ("resource", "text", "--resource, else the first input's file stem"),
        ("cpu_hours", "number", "core-hours of jobs clipped to the day (XDMoD rule)"),
        ("node_hours", "number", "node-hours clipped to the day"),
        ("wall_hours", "number", "wall-clock hours clipped to the day"),
        ("jobs_started", "int", "jobs that started that day"),
        ("jobs_ended", "int", "jobs that ended that day"),
    ),
    "Usage per day with Open XDMoD Jobs-realm semantics (jobs that ended, with nodes).",
)
SHORTJOBS = Table(
    "shortjobs.csv",
    cols(
        ("ts", "instant", "the 3-minute tick"),
        ("holder_kind", "text", "`user` or `group`"),
        ("holder", "text", "user or group name"),
        ("n_short", "int", "N_s: short jobs ended in the tick"),
        ("penalty_seconds", "number", "T_s: missing run time x slots"),
        ("adjust", "number", "A(t) = 0.9 A(t-1) + 0.1 T_s(t)"),
    ),
    "Short-job penalties per holder and tick while A(t) is at or above the floor (1 "
    "slot-second: below it the holder leaves the lookup table, its row shows 0.0 and the hook "
    "returns 0.0), the trace's last, partly filled tick included (seed 002).",
)
TURNOVER = Table(
    "turnover.csv",
    cols(
        ("window_start", "instant", "window start"),
        ("window_end", "instant", "window end"),
        ("n_gaps", "int", "slot refills in the window"),
        (
            "turnover_seconds",
            "number",
            "sum of w: slot-seconds freed slots waited while the job that refilled them was "
            "queued and had all its slots (the seed's latest slot)",
        ),
        ("unusable_slots", "number", "U = sum(w) / T"),
        (
            "idle_seconds",
            "number",
            "slot-seconds of the same gaps before that: an empty queue, or the job waiting for "
            "its other slots",
        ),
        ("idle_slots", "number", "idle_seconds / T"),
    ),
    "Slot turnover per window (seed 002): each gap between a job's end and the next start on "
    "its slot (up to --turnover-max-gap) is turnover from the time the refilling job was "
    "queued and its latest slot free, idle before; turnover_seconds + idle_seconds = the "
    "gaps' slot-seconds in the window.",
)
TURNOVER_HIST = Table(
    "turnover_hist.csv",
    cols(
        ("w_lo_s", "number", "bin start, seconds"),
        ("w_hi_s", "number", "bin end, seconds"),
        ("count", "int", "refills with turnover w in the bin"),
    ),
    "Histogram of the turnover times w (seed 002, 'Estimating w').",
)
RUNTIME_PREDICTIONS = Table(
    "runtime_predictions.csv",
    cols(
        ("job", "text", "job id"),
        ("user", "text", "user"),
        ("name", "text", "job name"),
        (
            "history_runs",
            "int",
            "runs of (user, name) before this one (all, or the last --history)",
        ),
        (
            "predicted_s",
            "number",
            "Avg: mean of the history without its shortest and longest run "
            "(empty: unknown, *1-day)",
        ),
        ("upper_s", "number", "upper estimate (Estim.95%/Max)"),
        ("actual_s", "number", "the run time"),
        ("overran", "int", "1 if it ran past upper + 60 s"),
        ("min_s", "number", "Min: shortest run of the history"),
        ("max_s", "number", "Max: longest run of the history"),
        ("band_min_s", "number", "predicted_s - 3 % (the seed's expected range)"),
        ("band_max_s", "number", "predicted_s + 3 %"),
        ("std_s", "number", "Std. Dev of the kept runs"),
        ("spread_s", "number", "Spread: longest - shortest kept run"),
        ("partition", "text", "the job's partition (empty: the source records none)"),
    ),
    "Run-time prediction of every ended job from its (user, job name) history, with Figure 4's "
    "columns (seed 001); the Figure 4 columns are empty while the run time is unknown.",
)
CAPABILITY_DAILY = Table(
    "capability_daily.csv",
    cols(
        ("day", "day", "calendar day in the configured zone"),
        ("large_node_hours", "number", "node-hours of jobs on >= 40 % of the section"),
        ("small_node_hours", "number", "node-hours of the other jobs"),
        ("backfill_node_hours", "number", "node-hours of small backfilled jobs (empty: unknown)"),
        ("cup40", "number", "large / (large + small)"),
        ("cup40_modified", "number", "large / (large + small - backfill) (empty: unknown)"),
        (
            "red_node_hours",
            "number",
            "node-hours of jobs in the Red section's partitions (--red-partitions; empty: unknown)",
        ),
        (
            "black_node_hours",
            "number",
            "node-hours of jobs in the other partitions (empty: unknown)",
        ),
        ("red_share", "number", "measured f_R = red / (red + black) (empty: unknown)"),
        (
            "p_cup_factor",
            "number",
            "0.80 - cup40 while cup40 < 0.80: P_CUP = this x (job nodes / (0.40 x section))^p x "
            "the fair-share factor (empty: goal met, the standard factor applies)",
        ),
    ),
    "Capability use per day (seed 004: CUP40, the modified CUP, P_CUP's day term and the "
    "Red/Black section node-hours). Large = at least ceil(0.40 x section) nodes. Backfill "
    "node-hours and the modified CUP are empty when the source records no backfill flag (SWF, "
    "sacct without Flags); the Red/Black columns when it records no partition or no "
    "--red-partitions is given (the summary says why).",
)
FAIRSHARE_USAGE = Table(
    "fairshare_usage.csv",
    cols(
        ("ts", "instant", "day end (in the configured zone) the usage is valued at"),
        ("holder_kind", "text", "`user` or `account`"),
        ("holder", "text", "user or account"),
        ("usage_node_hours", "number", "decayed usage at ts"),
        ("charged_node_hours", "number", "node-hours charged, undecayed"),
        ("refunded_node_hours", "number", "node-hours refunded (NODE_FAIL)"),
    ),
    "Fair-share usage with half-life decay at each day end, for the holders charged or "
    "refunded that day, and for every holder at the last one (seed 004).",
)
RELEASE_FORECAST = Table(
    "release_forecast.csv",
    cols(
        ("ts", "instant", "when the job was submitted (the forecast is made then)"),
        ("job", "text", "the submitted job that needs the nodes"),
        ("need", "int", "its nodes"),
        ("free", "int", "section nodes not held by a running job at ts"),
        ("missing", "int", "need - free (Figure 9's first Need)"),
        ("step", "int", "1, 2, ...: the running jobs in order of expected end (0: none needed)"),
        ("holder_job", "text", "the running job releasing nodes at this step"),
        ("holder_name", "text", "its job name"),
        ("holder_nodes", "int", "its nodes"),
        ("release_at", "instant", "its expected end: start + requested walltime"),
        ("free_after", "int", "nodes free once it has ended (Free)"),
        ("need_after", "int", "nodes still missing once it has ended (Need)"),
        ("ready_at", "instant", "when `need` nodes are free (empty: the running jobs cannot)"),
        (
            "late_by_s",
            "number",
            "ready_at - reserved_start (else - ts): how late the nodes are (empty: never)",
        ),
        (
            "actual_late_s",
            "number",
            "the job's start - reserved_start (else - ts) (empty: not started in the trace)",
        ),
        (
            "reserved_start",
            "instant",
            "the job's reservation start, from its submit or start event (empty: none)",
        ),
    ),
    "Node-release forecast for every submitted job with nodes (seed 001, Figure 9's Free / "
    "Need per job end): at its submit, the running jobs with a requested walltime release "
    "their nodes one after another in order of start + walltime (overrunning jobs any moment); "
    "one row per release needed, until the job's nodes are free. The job is wanted at its "
    "reservation's start when its submit or start event carries one (`reserved_start`), "
    "else at its submit; "
    "the jobs queued ahead of it are not counted; running jobs without a requested walltime are "
    "left out (the summary counts them).",
)
FAIRSHARE_ADJUST_TSV = "fairshare_adjust.tsv"
FAIRSHARE_ADJUST_JSON = "fairshare_adjust.json"
TABLES = (
    USAGE_DAILY,
    SHORTJOBS,
    TURNOVER,
    TURNOVER_HIST,
    RUNTIME_PREDICTIONS,
    CAPABILITY_DAILY,
    FAIRSHARE_USAGE,
    RELEASE_FORECAST,
)
FILES = sorted(
    {t.file for t in TABLES} | {FAIRSHARE_ADJUST_TSV, FAIRSHARE_ADJUST_JSON, "summary_jobs.json"}
)


def _ended(batch: list[JobEvent]) -> list[JobEvent]:
    return [e for e in batch if e.type != "submit"]  # no analytic here uses submits


class _DayEdges:
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


class _DailyStage:
    """A stage whose model is fed ended jobs and closes its rows at the day edges it passes:
    ``_close(edge, final)`` returns the model's rows up to ``edge`` as outputs."""

    m: Any

    def __init__(self, tz: str) -> None:
        self.days = _DayEdges(tz)

    def _close(self, edge: float, final: bool) -> list[Output]:
        raise NotImplementedError

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        edge = self.days.passed(batch)
        out = self._close(edge, False) if edge is not None else []
        b = _ended(batch)
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
        b = _ended(batch)
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


class TurnoverStage:
    name = "turnover"

    def __init__(self, model: SlotTurnover, tz: str) -> None:
        self.m = model
        self.days = _DayEdges(tz)

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
        b = _ended(batch)
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


class CapabilityStage(_DailyStage):
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
        """The day edges' state (:class:`_DailyStage`), the model's, and the closed days kept
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


class FairShareStage(_DailyStage):
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


class ReleaseForecastStage:
    """Seed 001's node-release forecast (models.drain.release) at every submit: the job's nodes
    are needed at its submit time; the nodes not held by running jobs are free (the section's
    size minus the running jobs' nodes); the running jobs release theirs at start + requested
    walltime. A submit's ``reserved_start`` (the job's reservation) is when the nodes are
    needed, else the start event's (a reservation made after the submit, as the simulator
    writes it: the forecast made at the submit is then taken against it), else the submit time.
    Rows are written at the job's start (with how late it actually started), at its end when
    it never started (cancelled while pending), or at the end of the input. ``provisional``
    (the live worker): also once after the submit, without the actual start, by
    :meth:`provisional_rows` for the jobs still pending then; the later rows have the same
    (ts, job, step), so they overwrite them. Summary sums are exact and O(1) in memory."""

    name = "release"

    def __init__(self, section_nodes: int, provisional: bool = False) -> None:
        self.section_nodes = section_nodes
        self.provisional = provisional
        self.running: dict[str, tuple[int, float | None, str | None]] = {}  # nodes, end, name
        self._running_sums: tuple[int, int] = (0, 0)  # their nodes, those without end
        self._order = RunningReleases()  # those with an end and nodes, in release order
        self.pending: dict[str, tuple[float, ReleaseForecast, float | None]] = {}
        self.fresh: dict[str, None] = {}  # provisional: pending jobs forecast since last taken
        self.forecasts = 0
        self.late = 0
        self.never = 0
        self.late_sum: list[float] = []  # exact partial sums (add_exact) of the late_by values
        self.late_n = 0
        self.late_max: float | None = None
        self.wait_sum: list[float] = []  # of start - reservation (or submit)
        self.wait_n = 0
        self.too_large = 0
        self.holders_without_walltime = 0

    def tables(self) -> Sequence[Table]:
        return (RELEASE_FORECAST,)

    def _run(self, job: str, held: tuple[int, float | None, str | None] | None) -> None:
        """``job`` holds ``held`` (nodes, end, name) from now on; None: it ended."""
        busy, no_end = self._running_sums
        old = self.running.pop(job, None)
        if old is not None:
            busy, no_end = busy - old[0], no_end - (old[1] is None)
        if held is not None:
            self.running[job] = held
            busy, no_end = busy + held[0], no_end + (held[1] is None)
            self._order.put(job, held[0], held[1], held[2])
        elif old is not None:
            self._order.drop(job)
        self._running_sums = (busy, no_end)

    def _forecast(self, e: JobEvent) -> ReleaseForecast | None:
        nodes = e.nodes or 0
        if nodes <= 0:
            return None
        if nodes > self.section_nodes:
            self.too_large += 1
            return None
        busy, no_end = self._running_sums
        self.holders_without_walltime += no_end
        free = max(0, self.section_nodes - busy)
        now = e.ts
        at = now if e.reserved_start is None else e.reserved_start
        # the running jobs' releases matter only when nodes are missing (RunningReleases:
        # O(log n) a start or an end, O(k log k) a walk that takes k releases)
        releases = self._order.releases(now) if nodes > free else ()
        f = forecast_in_order(nodes, at, free, releases, now)
        self.forecasts += 1
        self.pending[e.job] = (e.ts, f, e.reserved_start)
        return f

    def _count(self, f: ReleaseForecast) -> None:
        if f.late_by is None:
            self.never += 1
        else:
            add_exact(self.late_sum, f.late_by)
            self.late_n += 1
            self.late_max = f.late_by if self.late_max is None else max(self.late_max, f.late_by)
            self.late += f.late_by > 0

    @staticmethod
    def _against(f: ReleaseForecast, at: float, submitted: float) -> ReleaseForecast:
        """The forecast made at ``submitted``, taken against a reservation at ``at`` instead:
        the same releases (its steps are the running jobs it needed, in order), so the
        forecast is recomputed from them."""
        holders = [Holder(s.job, s.nodes, s.release_at, s.name) for s in f.steps]
        return forecast_release(f.need, at, f.held, holders, now=submitted)

    def _rows(
        self, job: str, ts: float, f: ReleaseForecast, rsv: float | None, started: float | None
    ) -> list[Any]:
        late = None if started is None else started - f.at
        head = (ts, job, f.need, f.held, f.missing)
        tail = (f.ready_at, f.late_by, late, rsv)
        if not f.steps:
            return [(*head, 0, None, None, None, None, None, None, *tail)]
        return [
            (*head, i, s.job, s.name, s.nodes, s.release_at, s.free_after, s.need_after, *tail)
            for i, s in enumerate(f.steps, 1)
        ]

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        rows: list[Any] = []
        fresh = self.fresh
        for e in batch:
            if e.type == "submit":
                f = self._forecast(e)
                if f is not None and self.provisional:
                    fresh[e.job] = None
            elif e.type == "start":
                end = None if e.req_walltime is None else e.ts + e.req_walltime
                self._run(e.job, (e.nodes or 0, end, e.name))
                p = self.pending.pop(e.job, None)
                if p is not None:
                    fresh.pop(e.job, None)
                    ts, f, rsv = p
                    if rsv is None and e.reserved_start is not None:
                        rsv = e.reserved_start
                        f = self._against(f, rsv, ts)
                    self._count(f)
                    add_exact(self.wait_sum, e.ts - f.at)
                    self.wait_n += 1
                    rows += self._rows(e.job, ts, f, rsv, e.ts)
            else:
                self._run(e.job, None)
                p = self.pending.pop(e.job, None)  # ended without a start: cancelled
                if p is not None:
                    fresh.pop(e.job, None)
                    self._count(p[1])
                    rows += self._rows(e.job, *p, None)
        return [(RELEASE_FORECAST, rows)] if rows else ()

    def provisional_rows(self) -> list[Any]:
        """The rows of the jobs forecast since the last call and still pending (without the
        actual start), once each: a job that started or ended meanwhile has its final rows
        from :meth:`step` instead, and those never made here cost nothing (a worker behind
        its input sees most jobs start within the same flush)."""
        fresh, pending = self.fresh, self.pending
        rows: list[Any] = []
        for job in fresh:
            ts, f, rsv = pending[job]
            rows += self._rows(job, ts, f, rsv, None)
        fresh.clear()
        return rows

    def finish(self) -> Iterable[Output]:
        rows: list[Any] = []
        for job, (ts, f, rsv) in sorted(self.pending.items(), key=lambda x: (x[1][0], x[0])):
            self._count(f)
            rows += self._rows(job, ts, f, rsv, None)
        self.pending.clear()
        self.fresh.clear()
        return [(RELEASE_FORECAST, rows)] if rows else ()

    def snapshot(self) -> dict[str, Any]:
        """The running jobs, the pending ones with their forecasts, the pending jobs whose
        provisional rows are still to be written (in order), and the summary's counters and
        exact partial sums. The running jobs' node sums and release order are not saved: they
        are made again from the running jobs."""
        return {
            "running": held_snapshot(self.running),
            "pending": pending_snapshot(self.pending),
            "fresh": list(self.fresh),
            "forecasts": self.forecasts,
            "late": self.late,
            "never": self.never,
            "late_sum": self.late_sum,
            "late_n": self.late_n,
            "late_max": self.late_max,
            "wait_sum": self.wait_sum,
            "wait_n": self.wait_n,
            "too_large": self.too_large,
            "holders_without_walltime": self.holders_without_walltime,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) stage from :meth:`snapshot`'s tree."""
        running = held_restore(tree["running"])
        pending = pending_restore(tree["pending"])
        fresh = dict.fromkeys(str_in(j) for j in list_in(tree["fresh"]))
        if not fresh.keys() <= pending.keys():
            raise StateFormatError("release state: a fresh forecast of a job not pending")
        counts = [int_in(tree[k]) for k in _RELEASE_COUNTS]
        late_sum = [float_in(x) for x in list_in(tree["late_sum"])]
        wait_sum = [float_in(x) for x in list_in(tree["wait_sum"])]
        late_max = opt_float_in(tree["late_max"])
        vals = running.values()
        self.running, self.pending, self.fresh = running, pending, fresh
        self._running_sums = (sum(v[0] for v in vals), sum(v[1] is None for v in vals))
        self._order = RunningReleases()
        for job, v in running.items():
            self._order.put(job, *v)
        for k, n in zip(_RELEASE_COUNTS, counts, strict=True):
            setattr(self, k, n)
        self.late_sum, self.wait_sum, self.late_max = late_sum, wait_sum, late_max

    def summary(self) -> dict[str, Any]:
        n = self.late_n
        return {
            "forecasts": self.forecasts,
            "forecasts_late": self.late,
            "forecasts_never_ready": self.never,
            "mean_late_by_s": math.fsum(self.late_sum) / n if n else None,
            "max_late_by_s": self.late_max,
            "mean_actual_late_s": math.fsum(self.wait_sum) / self.wait_n if self.wait_n else None,
            "jobs_larger_than_section": self.too_large,
            "holders_without_walltime": self.holders_without_walltime,
        }


_RELEASE_COUNTS = (
    "forecasts",
    "late",
    "never",
    "late_n",
    "wait_n",
    "too_large",
    "holders_without_walltime",
)


def red_black_sections(
    red_option: str | None, events: Iterable[JobEvent]
) -> tuple[frozenset[str] | None, str | None]:
    """The Red section's partitions from ``--red-partitions`` (comma-separated), or None with
    the reason the Red/Black columns stay empty: the source records no partition, or the
    option is not given (which partitions are Red is site knowledge, never guessed from a
    name)."""
    seen = sorted({e.partition for e in events if e.partition})
    if not seen:
        return None, "the source records no partition (SWF, or no partition field)"
    if red_option is None:
        return None, (
            "no --red-partitions: which partitions form the Red section is not guessed; "
            f"partitions seen: {', '.join(seen)}"
        )
    return frozenset(p.strip() for p in red_option.split(",") if p.strip()), None


def job_stages(
    section_nodes: int | None,
    tz: str = "UTC",
    resource: str = "",
    section_from: str = "option",
    short_threshold: float = DEFAULT_THRESHOLD_S,
    short_min_runtime: float | None = None,
    short_interval: float = DEFAULT_INTERVAL_S,
    short_lambda: float = DEFAULT_LAMBDA,
    turnover_window: float = DEFAULT_WINDOW_S,
    turnover_max_gap: float = DEFAULT_MAX_GAP_S,
    history_runs: int | None = DEFAULT_HISTORY,
    half_life_s: float = DEFAULT_HALF_LIFE_S,
    refund_states: tuple[str, ...] = ("NODE_FAIL",),
    capability_fraction: float = DEFAULT_FRACTION,
    backfill_flags: bool = True,
    on_adjust_tick: Callable[[ShortJobPenalty], None] | None = None,
    red_partitions: Iterable[str] | None = None,
    sections_reason: str | None = None,
    overrun_margin: float | None = None,
    live: bool = False,
) -> list[Any]:
    """Every job stage, in output order, with the seeds' defaults: the replay's and the live
    worker's (:func:`live_job_stages`). ``section_nodes``: the capability section's size
    (None: unknown, and no capability or release-forecast stage). ``backfill_flags``: whether
    the source records backfilled jobs (else no modified CUP). ``on_adjust_tick``: called at
    each 3-minute tick with the short-job model (``--adjust-out``: streams.sinks.adjust).
    ``red_partitions``: the Red section's partitions (None: Red/Black unknown, for the reason
    ``sections_reason``). ``overrun_margin``: the run-time model's margin before a running job
    counts as overrun (None: the model's default). ``live``: the worker's stages: the run-time
    stage keeps no prediction for the summary's scores (its rows leave memory with the sinks),
    and the forecast also writes its rows at the submit (provisional)."""
    runtime = (
        RuntimePredictor(history=history_runs)
        if overrun_margin is None
        else RuntimePredictor(history=history_runs, overrun_margin=overrun_margin)
    )
    stages: list[Any] = [
        UsageStage(tz, resource),
        ShortJobsStage(
            ShortJobPenalty(short_threshold, short_min_runtime, short_interval, short_lambda),
            on_adjust_tick,
        ),
        TurnoverStage(SlotTurnover(turnover_window, turnover_max_gap), tz),
        RuntimeStage(runtime, keep=not live),
    ]
    if section_nodes:
        use = CapabilityUse(section_nodes, capability_fraction, tz, backfill_flags, red_partitions)
        stages.append(CapabilityStage(use, tz, section_from, sections_reason))
    stages.append(FairShareStage(FairShareUsage(half_life_s, refund_states), tz))
    if section_nodes:
        stages.append(ReleaseForecastStage(section_nodes, provisional=live))
    return stages


def live_job_stages(
    tz: str,
    cluster: str,
    section_nodes: int | None,
    backfill_flags: bool,
    overrun_margin: float,
) -> dict[str, Any]:
    """The live worker's job stages by name (:func:`job_stages` with ``live=True``): the
    seeds' defaults, usage under the cluster's name, the overrun margin of its alerts; the
    capability section from its settings (``jobs.section_nodes``, else ``accounting.nodes``;
    None: no capability or forecast), without Red/Black partitions."""
    stages = job_stages(
        section_nodes,
        tz,
        cluster,
        "setting",
        backfill_flags=backfill_flags,
        sections_reason="live: no Red/Black partitions",
        overrun_margin=overrun_margin,
        live=True,
    )
    return {s.name: s for s in stages}
