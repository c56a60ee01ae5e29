"""`drainwatch replay --format sacct|swf|jobevents`: job analytics over job-event files.

Reads the files (gzip detected by its magic bytes), turns them into JobEvents
(models.formats.jobsource), sorts them and feeds them, in time-ordered batches cut at day
boundaries, through every job analytic. Writes to --out (times ISO 8601 UTC, days in --tz):

* usage_daily.csv: day,resource,cpu_hours,node_hours,wall_hours,jobs_started,jobs_ended
  (Open XDMoD Jobs-realm semantics, models.jobs.usage);
* shortjobs.csv: ts,holder_kind,holder,n_short,penalty_seconds,adjust (seed 002; one row per
  holder per tick while its ADJUST is above the floor);
* fairshare_adjust.tsv / fairshare_adjust.json: the ADJUST lookup table at the last tick,
  ``kind<TAB>holder<TAB>value`` sorted by kind then holder bytes (what a bsearch hook reads);
* turnover.csv: window_start,window_end,n_gaps,turnover_seconds,unusable_slots (seed 002,
  U = sum w / T) and turnover_hist.csv: w_lo_s,w_hi_s,count;
* runtime_predictions.csv: job,user,name,history_runs,predicted_s,upper_s,actual_s,overran
  (seed 001; empty predicted/upper = unknown, the seed's *1-day);
* capability_daily.csv: day,large_node_hours,small_node_hours,backfill_node_hours,cup40,
  cup40_modified (seed 004);
* fairshare_usage.csv: ts,holder_kind,holder,usage_node_hours,charged_node_hours,
  refunded_node_hours at each day's end for the holders charged or refunded that day, and for
  every holder at the end of the last day (seed 004, continuous half-life decay; in between,
  usage(t) = usage(t0) * 2^(-(t - t0) / half-life));
* summary_jobs.json: events read, rejects by reason, timings, analytics summaries.

Capability section size: --nodes, else the SWF header's MaxNodes, else the number of distinct
nodes in the node lists, else the largest job.
"""

from __future__ import annotations

import argparse
import bisect
import gc
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson

from models.formats.jobsource import iter_job_events, sort_events
from models.formats.swf import parse_header
from models.jobs.capability import (
    DEFAULT_FRACTION,
    CapabilityDay,
    CapabilityUse,
    DayCalendar,
    cup_over,
)
from models.jobs.fairshare import DEFAULT_HALF_LIFE_S, FairShareUsage, UsageRow
from models.jobs.runtime import DEFAULT_HISTORY, PredictionRow, RuntimePredictor, score_predictions
from models.jobs.shortjobs import (
    DEFAULT_INTERVAL_S,
    DEFAULT_LAMBDA,
    DEFAULT_THRESHOLD_S,
    ShortJobPenalty,
    ShortJobRow,
    lookup_table_json,
    lookup_table_text,
)
from models.jobs.turnover import DEFAULT_MAX_GAP_S, DEFAULT_WINDOW_S, SlotTurnover, TurnoverRow
from models.jobs.usage import CSV_HEADER as USAGE_HEADER
from models.jobs.usage import usage_from_events
from models.records.jobevent import JobEvent
from models.records.reject import Reject, count_reasons
from streams.sources.files import open_text, write_csv

BATCH = 8192


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("job analytics (--format sacct|swf|jobevents)")
    g.add_argument(
        "--resource",
        default=None,
        metavar="NAME",
        help="resource name in usage_daily.csv (default: input file stem)",
    )
    g.add_argument(
        "--short-threshold",
        type=float,
        default=DEFAULT_THRESHOLD_S,
        metavar="S",
        help="jobs shorter than this are short (seed 002; default 600 s)",
    )
    g.add_argument(
        "--short-min-runtime",
        type=float,
        default=None,
        metavar="S",
        help="run time short jobs are charged as (default: the threshold)",
    )
    g.add_argument(
        "--short-interval",
        type=float,
        default=DEFAULT_INTERVAL_S,
        metavar="S",
        help="penalty update period (seed 002: 180 s)",
    )
    g.add_argument(
        "--short-lambda",
        type=float,
        default=DEFAULT_LAMBDA,
        metavar="L",
        help="A(t) = L A(t-1) + (1-L) T_s(t) (seed 002: 0.9)",
    )
    g.add_argument(
        "--turnover-window",
        type=float,
        default=DEFAULT_WINDOW_S,
        metavar="S",
        help="window T of U = sum(w)/T (default 3600 s)",
    )
    g.add_argument(
        "--turnover-max-gap",
        type=float,
        default=DEFAULT_MAX_GAP_S,
        metavar="S",
        help="longer gaps are idle time, not turnover (default 3600 s)",
    )
    g.add_argument(
        "--history-runs",
        type=int,
        default=DEFAULT_HISTORY,
        metavar="N",
        help="runs kept per (user, job name) for run-time prediction (default 5)",
    )
    g.add_argument(
        "--half-life",
        type=float,
        default=DEFAULT_HALF_LIFE_S / 86400,
        metavar="DAYS",
        help="fair-share usage half-life (default 7 days)",
    )
    g.add_argument(
        "--refund-states",
        default="NODE_FAIL",
        metavar="STATES",
        help="comma-separated end states refunded in fair share ('' = none)",
    )
    g.add_argument(
        "--capability-fraction",
        type=float,
        default=DEFAULT_FRACTION,
        metavar="F",
        help="large job: >= F of the section (seed 004: 0.40)",
    )
    g.add_argument(
        "--section-nodes",
        type=int,
        default=None,
        metavar="N",
        help="capability section size (default: --nodes, SWF MaxNodes, ...)",
    )


# ---- input ------------------------------------------------------------------------------------


def swf_max_nodes(path: str | Path) -> int | None:
    with open_text(path) as f:
        head = []
        for line in f:
            if not line.lstrip().startswith(";"):
                if line.strip():
                    break
                continue
            head.append(line)
    return parse_header(head).max_nodes


def read_events(fmt: str, paths: list[str], rejects: list[Reject]) -> list[JobEvent]:
    evs: list[JobEvent] = []
    for p in paths:
        with open_text(p) as f:
            evs.extend(iter_job_events(fmt, f, source=str(p), rejects=rejects))
    return sort_events(evs)


def section_size(
    fmt: str, paths: list[str], events: list[JobEvent], nodes: int | None
) -> tuple[int, str]:
    if nodes:
        return nodes, "option"
    if fmt == "swf":
        sizes = [m for m in (swf_max_nodes(p) for p in paths) if m]
        if sizes:
            return max(sizes), "swf MaxNodes"
    names = {n for e in events if e.type == "start" for n in e.node_list}
    if names:
        return len(names), "distinct nodes in node lists"
    big = max((e.nodes or 1 for e in events if e.type == "start"), default=1)
    return big, "largest job"


# ---- the analytics ----------------------------------------------------------------------------


@dataclass(slots=True)
class JobAnalytics:
    """Every job analytic of issue 4 (except usage totals, which are batch), fed together."""

    short: ShortJobPenalty
    turnover: SlotTurnover
    runtime: RuntimePredictor
    capability: CapabilityUse
    fairshare: FairShareUsage
    cal: DayCalendar
    short_rows: list[ShortJobRow] = field(default_factory=list)
    turnover_rows: list[TurnoverRow] = field(default_factory=list)
    predictions: list[PredictionRow] = field(default_factory=list)
    capability_days: list[CapabilityDay] = field(default_factory=list)
    fairshare_rows: list[UsageRow] = field(default_factory=list)
    events: int = 0

    def feed(self, batch: list[JobEvent]) -> None:
        self.events += len(batch)
        batch = [e for e in batch if e.type != "submit"]  # no analytic here uses submits
        if not batch:
            return
        self.short_rows += self.short.update(batch)
        self.short_rows += self.short.advance(batch[-1].ts)
        self.turnover_rows += self.turnover.update(batch)
        self.predictions += self.runtime.update(batch)
        self.capability.update(batch)
        self.fairshare.update(batch)

    def day_end(self, ts: float, final: bool = False) -> None:
        """A day boundary passed in event time: fair-share rows of the holders charged that day
        (every holder at the final one), complete capability days."""
        self.fairshare_rows += self.fairshare.snapshot(ts, changed_only=not final)
        self.capability_days += self.capability.flush(ts)

    def finish(self, last_ts: float, until: float) -> None:
        """End of the input: the ADJUST table is left as of the last tick <= last_ts (what a
        scheduler would hold when the log ends); other windows are closed through until."""
        self.short_rows += self.short.flush(last_ts)
        self.turnover_rows += self.turnover.flush(until)
        self.capability_days += self.capability.flush(until, final=True)

    def run(self, events: list[JobEvent]) -> None:
        """Feed sorted events in batches cut at day boundaries; snapshot at each boundary.
        The cyclic garbage collector is paused meanwhile: the analytics create no reference
        cycles, and with millions of live events and rows its full passes cost ~1/3 of the
        time (bench/bench_jobs.py: 111k -> 163k events/s per CPU-second)."""
        was = gc.isenabled()
        gc.disable()
        try:
            self._run(events)
        finally:
            if was:
                gc.enable()

    def _run(self, events: list[JobEvent]) -> None:
        n = len(events)
        if not n:
            return
        key = attrgetter("ts")
        i = 0
        _d, _lo, hi = self.cal.span(events[0].ts)
        while i < n:
            j = bisect.bisect_left(events, hi, lo=i, hi=min(n, i + BATCH), key=key)
            if j > i:
                self.feed(events[i:j])
                i = j
            if i < n and events[i].ts >= hi:
                self.day_end(hi)
                _d, _lo, hi = self.cal.span(events[i].ts)
        last = events[-1].ts
        _d, _lo, hi = self.cal.span(last)
        self.day_end(hi, final=True)
        self.finish(last, hi)


def make_analytics(
    section_nodes: int,
    tz: str = "UTC",
    short_threshold: float = DEFAULT_THRESHOLD_S,
    short_min_runtime: float | None = None,
    short_interval: float = DEFAULT_INTERVAL_S,
    short_lambda: float = DEFAULT_LAMBDA,
    turnover_window: float = DEFAULT_WINDOW_S,
    turnover_max_gap: float = DEFAULT_MAX_GAP_S,
    history_runs: int = DEFAULT_HISTORY,
    half_life_s: float = DEFAULT_HALF_LIFE_S,
    refund_states: tuple[str, ...] = ("NODE_FAIL",),
    capability_fraction: float = DEFAULT_FRACTION,
) -> JobAnalytics:
    return JobAnalytics(
        short=ShortJobPenalty(short_threshold, short_min_runtime, short_interval, short_lambda),
        turnover=SlotTurnover(turnover_window, turnover_max_gap),
        runtime=RuntimePredictor(history=history_runs),
        capability=CapabilityUse(section_nodes, capability_fraction, tz),
        fairshare=FairShareUsage(half_life_s, refund_states),
        cal=DayCalendar(tz),
    )


# ---- output -----------------------------------------------------------------------------------


def iso(ts: float) -> str:
    dt = datetime.fromtimestamp(ts, UTC)
    s = dt.isoformat(timespec="milliseconds" if ts != math.floor(ts) else "seconds")
    return s.replace("+00:00", "Z")


def num(x: float | None, nd: int = 6) -> str:
    if x is None:
        return ""
    r = round(x, nd)
    return str(int(r)) if r == int(r) else repr(r)


def write_outputs(
    out: Path, a: JobAnalytics, events: list[JobEvent], tz: str, resource: str
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    usage = usage_from_events(events, tz=tz)
    counts["usage_daily.csv"] = write_csv(
        out / "usage_daily.csv",
        USAGE_HEADER,
        (
            [d, r, num(c, 4), num(nh, 4), num(w, 4), s, e]
            for d, r, c, nh, w, s, e in usage.rows(resource)
        ),
    )
    counts["shortjobs.csv"] = write_csv(
        out / "shortjobs.csv",
        ["ts", "holder_kind", "holder", "n_short", "penalty_seconds", "adjust"],
        (
            [iso(r.ts), r.holder_kind, r.holder, r.n_short, num(r.penalty_s, 3), num(r.adjust, 3)]
            for r in a.short_rows
        ),
    )
    tables = {k: a.short.table(k) for k in ("user", "group")}
    (out / "fairshare_adjust.tsv").write_text(
        "".join(lookup_table_text(tables[k], k) for k in ("group", "user"))
    )
    (out / "fairshare_adjust.json").write_bytes(lookup_table_json(tables, a.short.last_tick_ts))
    counts["turnover.csv"] = write_csv(
        out / "turnover.csv",
        ["window_start", "window_end", "n_gaps", "turnover_seconds", "unusable_slots"],
        (
            [iso(r.start), iso(r.end), r.n_gaps, num(r.sum_w, 3), num(r.unusable_slots, 6)]
            for r in a.turnover_rows
        ),
    )
    write_csv(
        out / "turnover_hist.csv",
        ["w_lo_s", "w_hi_s", "count"],
        ([num(lo), num(hi), c] for lo, hi, c in a.turnover.histogram()),
    )
    counts["runtime_predictions.csv"] = write_csv(
        out / "runtime_predictions.csv",
        ["job", "user", "name", "history_runs", "predicted_s", "upper_s", "actual_s", "overran"],
        (
            [
                r.job,
                r.user or "",
                r.name or "",
                r.history_runs,
                num(r.predicted_s, 1),
                num(r.upper_s, 1),
                num(r.actual_s, 3),
                int(r.overran),
            ]
            for r in a.predictions
        ),
    )
    counts["capability_daily.csv"] = write_csv(
        out / "capability_daily.csv",
        [
            "day",
            "large_node_hours",
            "small_node_hours",
            "backfill_node_hours",
            "cup40",
            "cup40_modified",
        ],
        (
            [
                d.day.isoformat(),
                num(d.large_node_hours, 4),
                num(d.small_node_hours, 4),
                num(d.backfill_node_hours, 4),
                num(d.cup40, 6),
                num(d.cup40_modified, 6),
            ]
            for d in a.capability_days
        ),
    )
    counts["fairshare_usage.csv"] = write_csv(
        out / "fairshare_usage.csv",
        [
            "ts",
            "holder_kind",
            "holder",
            "usage_node_hours",
            "charged_node_hours",
            "refunded_node_hours",
        ],
        (
            [
                iso(r.ts),
                r.holder_kind,
                r.holder,
                num(r.usage_node_hours, 4),
                num(r.charged_node_hours, 4),
                num(r.refunded_node_hours, 4),
            ]
            for r in a.fairshare_rows
        ),
    )
    cpu, node, wall, started, ended = usage.totals()
    score = score_predictions(a.predictions)
    cup_all, cupm_all = cup_over(a.capability_days)
    t = a.turnover
    return {
        "rows": counts,
        "usage_totals": {
            "cpu_hours": round(cpu, 4),
            "node_hours": round(node, 4),
            "wall_hours": round(wall, 4),
            "jobs_started": started,
            "jobs_ended": ended,
        },
        "shortjobs": {
            "short_jobs": a.short.short_jobs,
            "threshold_s": a.short.threshold,
            "min_runtime_s": a.short.min_runtime,
            "interval_s": a.short.interval,
            "lambda": a.short.lam,
            "holders_in_table": sum(map(len, tables.values())),
        },
        "turnover": {
            "gaps": t.n,
            "mean_w_s": t.mean_w,
            "std_w_s": t.std_w,
            "idle_gaps": t.idle_gaps,
            "window_s": t.window,
            "max_gap_s": t.max_gap,
        },
        "runtime": {
            "jobs": score.jobs,
            "covered": score.covered,
            "mae_predicted_s": score.mae_predicted,
            "mae_request_same_jobs_s": score.mae_request_covered,
            "mae_hybrid_s": score.mae_hybrid,
            "mae_request_s": score.mae_request,
            "share_overran_upper": score.overran_upper,
            "share_over_request": score.over_request,
        },
        "capability": {
            "section_nodes": a.capability.section_nodes,
            "min_large_nodes": a.capability.min_large,
            "cup40": cup_all,
            "cup40_modified": cupm_all,
        },
        "fairshare": {
            "half_life_s": a.fairshare.half_life,
            "refunded_jobs": a.fairshare.refunded_jobs,
        },
        "ends_without_start": a.runtime.unmatched_ends,
    }


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    fmt = args.format
    out = Path(args.out)
    paths = [str(p) for p in args.paths]
    for p in paths:
        if not Path(p).is_file():
            print(f"drainwatch replay: no such file: {p}", file=sys.stderr)
            return 2
    rejects: list[Reject] = []
    events = read_events(fmt, paths, rejects)
    t_read = time.perf_counter()
    section, section_from = section_size(
        fmt, paths, events, getattr(args, "section_nodes", None) or args.nodes
    )
    refund = tuple(s.strip() for s in (args.refund_states or "").split(",") if s.strip())
    a = make_analytics(
        section,
        tz=args.tz,
        short_threshold=args.short_threshold,
        short_min_runtime=args.short_min_runtime,
        short_interval=args.short_interval,
        short_lambda=args.short_lambda,
        turnover_window=args.turnover_window,
        turnover_max_gap=args.turnover_max_gap,
        history_runs=args.history_runs,
        half_life_s=args.half_life * 86400.0,
        refund_states=refund,
        capability_fraction=args.capability_fraction,
    )
    a.run(events)
    t_an = time.perf_counter()
    resource = args.resource or Path(paths[0]).name.split(".")[0]
    summary = write_outputs(out, a, events, args.tz, resource)
    t_out = time.perf_counter()
    if args.rejects:
        with open(args.rejects, "w") as f:
            for r in rejects:
                f.write(r.tsv())
    by_type = Counter(e.type for e in events)
    summary = {
        "format": fmt,
        "inputs": paths,
        "tz": args.tz,
        "events_read": len(events),
        "events_by_type": dict(sorted(by_type.items())),
        "rejected": len(rejects),
        "rejected_by_reason": dict(sorted(count_reasons(rejects).items())),
        "section_nodes_from": section_from,
        **summary,
        "timings_s": {
            "read_parse_sort": round(t_read - t0, 3),
            "analytics": round(t_an - t_read, 3),
            "usage_and_write": round(t_out - t_an, 3),
            "total": round(t_out - t0, 3),
        },
    }
    (out / "summary_jobs.json").write_bytes(
        orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    )
    if not args.no_progress:
        print(
            f"{len(events)} events, {len(rejects)} rejected, analytics "
            f"{t_an - t_read:.2f} s -> {out}",
            file=sys.stderr,
        )
    return 0
