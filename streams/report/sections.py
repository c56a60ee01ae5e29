"""The report's sections: each reads the replay tables it needs and returns what the page shows
(numbers in tables with units, plots as SVG, a few headline figures), or says which input is
missing. Numbers are the CSV's, only scaled to the unit a column names (node-seconds shown as
node-hours); tables are ordered by what matters (most drain, most penalty, largest overrun).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from streams.report import plots
from streams.report.data import ReplayOutputs, parse_instant

TOP = 15  # rows of a ranked table
TOP_HOLDERS = 5  # lines of a per-holder plot
# the live alerts' defaults (streams/config/sections.py), drawn as reference lines
FLOOD_LEVEL = 3600.0  # alerts.shortjob_flood, slot-seconds of A(t)
CUP40_GOAL = 0.80  # seed 004's goal, alerts.cup40_target


@dataclass(slots=True)
class TableView:
    """A table as shown: column labels carry their units; cells are str, int, float or None."""

    columns: list[str]
    rows: list[list[Any]]
    title: str = ""
    more: int = 0  # rows left out after the first len(rows)


@dataclass(slots=True)
class Section:
    key: str
    title: str
    caption: str
    figures: list[str] = field(default_factory=list)
    tables: list[TableView] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # one-line findings shown under the caption
    headline: dict[str, str] = field(default_factory=dict)  # key figures for the page's top


@dataclass(slots=True)
class Missing:
    key: str
    title: str
    needs: str


def _nh(seconds: Any) -> Any:
    """Node-seconds (or seconds) as hours (a number or an array)."""
    return seconds / 3600.0


def _f(v: str) -> float | None:
    return float(v) if v != "" else None


def _n(v: str) -> int | None:
    return int(v) if v != "" else None


MAX_DAYS = 31  # a per-day table up to a month; beyond it, the TOP days that matter most


def by_day_or_worst(
    rows: list[list[Any]], key: Callable[[list[Any]], float], worst: str
) -> tuple[list[list[Any]], str, int]:
    """Per-day rows in day order for up to a month; else the TOP rows by ``key`` (titled by
    ``worst``), with how many were left out."""
    if len(rows) <= MAX_DAYS:
        return rows, "per day", 0
    ranked = sorted(rows, key=lambda r: (key(r), r[0]))
    return ranked[:TOP], f"the {TOP} days with {worst}, of {len(rows)}", len(rows) - TOP


# -------------------------------------------------------------------------- seed 000: drain


def drain_over_time(o: ReplayOutputs) -> Section | None:
    hourly, daily = o.table("drain_hourly.csv"), o.table("drain_daily.csv")
    if hourly is None or daily is None:
        return None
    s = Section(
        "drain",
        "Drain over time",
        "Idle node-time held by a reservation for an upcoming job, per hour, as % of the "
        "configured nodes (static basis) and of the accounted non-Down node-time (dynamic); "
        "seed 000 §III–IV (Fullop, drain time at scale).",
    )
    hours = [parse_instant(h) for h in hourly.col("hour")]
    short = np.array([q == "short" for q in hourly.col("data_quality")])
    if len(hourly):
        s.figures.append(
            plots.drain_pct(
                hours, hourly.num("drain_pct_static"), hourly.num("drain_pct_dynamic"), short
            )
        )
    rows = []
    for r in daily.dicts():
        rows.append(
            [
                r["day"],
                _nh(float(r["drain_node_seconds"])),
                _f(r["drain_pct_static"]),
                _f(r["drain_pct_dynamic"]),
                _f(r["basis_seconds_per_node"]),
                r["data_quality"],
            ]
        )
    rows, title, more = by_day_or_worst(rows, lambda r: -(r[2] or 0.0), "the most drain")
    cols = [
        "day",
        "drain (node-h)",
        "drain % static",
        "drain % dynamic",
        "basis (s per node)",
        "basis quality",
    ]
    s.tables.append(TableView(cols, rows, title, more))
    drain_s = float(np.nansum(daily.num("drain_node_seconds")))
    basis_nh = o.summaries["drain"].get("drain", {}).get("static_basis_node_hours")
    if basis_nh:
        pct = 100.0 * _nh(drain_s) / float(basis_nh)
        s.headline["drain % (static basis)"] = f"{pct:.2f} %"
        s.facts.append(
            f"{_nh(drain_s):,.1f} node-hours drained: {pct:.2f} % of "
            f"{float(basis_nh):,.0f} node-hours of the static basis."
        )
    n_short = int(sum(q == "short" for q in daily.col("data_quality")))
    if n_short:
        s.facts.append(f"{n_short} day(s) with a short basis: their percentages undercount.")
    return s


_STATE_GROUPS = {"Busy": "Busy", "Running": "Busy", "Down": "Down"}


def state_category(state: str, has_rsv: bool) -> str:
    """A node_states.csv combination as the report groups it."""
    if state == "Idle":
        return "Drain" if has_rsv else "Idle (unallocated)"
    if state in ("Drained", "Draining"):
        return "Admin drain"
    return _STATE_GROUPS.get(state, state)


def node_states(o: ReplayOutputs) -> Section | None:
    states, daily = o.table("node_states.csv"), o.table("drain_daily.csv")
    if states is None:
        return None
    s = Section(
        "node-states",
        "Node-state breakdown",
        "Where the node-time went: the per-node accumulators of seed 000 §III-B.1 (state × "
        "reservation × job), drain being Idle with a reservation.",
    )
    total: dict[str, float] = defaultdict(float)
    for st, rsv, sec in zip(
        states.col("state"), states.col("has_rsv"), states.num("seconds"), strict=True
    ):
        total[state_category(st, rsv == "1")] += float(sec)
    accounted = sum(total.values())
    rows = [
        [k, _nh(v), 100.0 * v / accounted if accounted else None]
        for k, v in sorted(total.items(), key=lambda kv: -kv[1])
    ]
    s.tables.append(TableView(["state", "node-hours", "% of accounted"], rows))
    if daily is not None and len(daily):
        acc = daily.num("accounted_node_seconds")
        drain = daily.num("drain_node_seconds")
        idle = daily.num("unallocated_idle_node_seconds")
        down = daily.num("down_node_seconds")
        parts = {
            "Drain": drain,
            "Idle (unallocated)": idle,
            "Down": down,
            "other (busy, admin drain)": acc - drain - idle - down,
        }
        s.figures.append(
            plots.stacked_bar(
                daily.col("day"), {k: _nh(v) for k, v in parts.items()}, "node-hours per day"
            )
        )
    return s


def top_drain_jobs(o: ReplayOutputs) -> Section | None:
    jobs = o.table("drain_jobs.csv")
    if jobs is None:
        return None
    s = Section(
        "drain-jobs",
        "Top drain jobs",
        "The jobs idle nodes were held for, most drain first: each idle reserved node-second "
        "charged to the first reservation of the node (seed 000 §V-A).",
    )
    with_jobs = "size" in jobs.header
    rows = []
    for i, r in enumerate(jobs.dicts()[:TOP], 1):
        row = [i, r["job"], _nh(float(r["drain_node_seconds"])), _n(r["nodes_charged"])]
        if with_jobs:
            rt, per_node = _f(r["runtime"]), _f(r["drain_per_node"])
            row += [
                _n(r["size"]),
                None if rt is None else _nh(rt),
                None if per_node is None else _nh(per_node),
            ]
        rows.append(row)
    cols = ["#", "job", "drain (node-h)", "nodes charged"]
    if with_jobs:
        cols += ["size (nodes)", "run time (h)", "drain per node (h)"]
    s.tables.append(TableView(cols, rows, more=max(0, len(jobs) - TOP)))
    if len(jobs):
        top = jobs.dicts()[0]
        s.headline["top drain job"] = (
            f"{top['job']}: {_nh(float(top['drain_node_seconds'])):,.1f} node-h"
        )
        total = float(np.nansum(jobs.num("drain_node_seconds")))
        k = min(5, len(jobs))
        share = float(np.nansum(jobs.num("drain_node_seconds")[:k])) / total if total else 0.0
        s.facts.append(
            f"{len(jobs):,} jobs were charged drain; the top {k} hold {100 * share:.1f} % of it."
        )
    return s


def sliding_jobs(o: ReplayOutputs) -> Section | None:
    t = o.table("sliding_jobs.csv")
    if t is None:
        return None
    s = Section(
        "sliding",
        "Perpetually sliding jobs",
        "Jobs nodes were drained for that were never seen running, ranked by drain per node "
        "(seed 000 §V-B): a reservation that keeps sliding wastes node-time and never pays off.",
    )
    rows = [
        [
            _n(r["rank"]),
            r["job"],
            _nh(float(r["drain_node_seconds"])),
            _n(r["size"]),
            _nh(float(r["drain_per_node"])),
            _n(r["nodes_charged"]),
            r["first_charged"],
            r["last_charged"],
        ]
        for r in t.dicts()[:TOP]
    ]
    s.tables.append(
        TableView(
            [
                "rank",
                "job",
                "drain (node-h)",
                "size (nodes)",
                "drain per node (h)",
                "nodes charged",
                "first charged (UTC)",
                "last charged (UTC)",
            ],
            rows,
            more=max(0, len(t) - TOP),
        )
    )
    s.headline["sliding jobs"] = f"{len(t):,}"
    if not len(t):
        s.facts.append("No job was charged drain without being seen running.")
    return s


def failure_to_launch(o: ReplayOutputs) -> Section | None:
    t = o.table("failure_to_launch.csv")
    if t is None:
        return None
    s = Section(
        "ftl",
        "Failure to launch",
        "Jobs the machine drained for that then ran only seconds (seed 000 §V-C); "
        "drain/runtime = drain node-seconds / (size × run time).",
    )
    d = sorted(t.dicts(), key=lambda r: -float(r["drain_node_seconds"]))
    rows = [
        [
            r["job"],
            _nh(float(r["drain_node_seconds"])),
            _n(r["size"]),
            _f(r["runtime"]),
            _f(r["drain_runtime_ratio"]),
        ]
        for r in d[:TOP]
    ]
    s.tables.append(
        TableView(
            ["job", "drain (node-h)", "size (nodes)", "run time (s)", "drain / runtime"],
            rows,
            more=max(0, len(t) - TOP),
        )
    )
    s.headline["failures to launch"] = f"{len(t):,}"
    if not len(t):
        s.facts.append("No drained-for job ended within the threshold.")
    return s


def size_groups(o: ReplayOutputs) -> Section | None:
    t = o.table("size_groups.csv")
    if t is None:
        return None
    scale = t.col("scale")[0] if len(t) else "absolute"
    s = Section(
        "size-groups",
        "Drain by job size group",
        "Drain per size group of seed 000 §V-D (Tiny … 16k+)"
        + (", the boundaries scaled to this machine" if scale == "relative" else "")
        + ": which job sizes the machine drains for.",
    )
    labels = t.col("group")
    s.figures.append(plots.bars(labels, _nh(t.num("drain_node_seconds")), "drain, node-hours"))
    d = sorted(t.dicts(), key=lambda r: -float(r["drain_node_seconds"]))
    rows = [
        [
            r["group"],
            f"{r['nodes_lo']}–{r['nodes_hi'] or '∞'}",
            _n(r["jobs"]),
            _nh(float(r["drain_node_seconds"])),
            _nh(float(r["mean_drain_node_seconds"])),
            _nh(float(r["mean_drain_per_node"])),
        ]
        for r in d
    ]
    s.tables.append(
        TableView(
            [
                "group",
                "nodes",
                "jobs",
                "drain (node-h)",
                "mean per job (node-h)",
                "mean per node (h)",
            ],
            rows,
        )
    )
    return s


def drain_runtime(o: ReplayOutputs) -> Section | None:
    jobs = o.table("drain_jobs.csv")
    if jobs is None or "drain_runtime_ratio" not in jobs.header:
        return None
    s = Section(
        "drain-runtime",
        "Drain against run time",
        "Idle node-time held for each job against the node-time it then used (size × run "
        "time); above the diagonal the wait cost more than the run (seed 000 §V-C's "
        "drain/runtime ratio).",
    )
    used = _nh(jobs.num("size") * jobs.num("runtime"))
    drain = _nh(jobs.num("drain_node_seconds"))
    ftl = o.table("failure_to_launch.csv")
    ftl_ids = set(ftl.col("job")) if ftl is not None else set()
    hi = np.array([j in ftl_ids for j in jobs.col("job")], bool)
    s.figures.append(
        plots.scatter_loglog(
            used,
            drain,
            "node-hours used (size × run time)",
            "drain, node-hours",
            hi,
            "failure to launch",
            diagonal="drain = node-hours used",
        )
    )
    ratio = jobs.num("drain_runtime_ratio")
    order = [i for i in np.argsort(-np.nan_to_num(ratio, nan=-1.0)) if np.isfinite(ratio[i])]
    d = jobs.dicts()
    rows = [
        [
            d[i]["job"],
            float(ratio[i]),
            _nh(float(d[i]["drain_node_seconds"])),
            _n(d[i]["size"]),
            _f(d[i]["runtime"]),
        ]
        for i in order[:10]
    ]
    s.tables.append(
        TableView(
            ["job", "drain / runtime", "drain (node-h)", "size (nodes)", "run time (s)"],
            rows,
            "highest ratio",
            more=max(0, len(order) - 10),
        )
    )
    return s


_VERDICTS = {
    "backlog_fits": "idle nodes while a queued job fit in them",
    "backlog_too_large": "idle nodes, every queued job larger",
    "no_backlog": "idle nodes, nothing queued",
    "no_idle": "no idle node",
}


def backfill(o: ReplayOutputs) -> Section | None:
    t, backlog = o.table("backfill_daily.csv"), o.table("backlog_hourly.csv")
    if t is None:
        return None
    s = Section(
        "backfill",
        "Backfill recovery and idle time",
        "How much of the node-time held for upcoming jobs backfilled jobs gave back, "
        "backfill / (backfill + drain) per day (seed 000 §VI-A), and the hours of unallocated "
        "idle nodes by what was queued then (seed 000 §VI-B).",
    )
    bf, dr = _nh(t.num("backfill_node_seconds")), _nh(t.num("drain_node_seconds"))
    if len(t) and np.isfinite(bf).any():
        s.figures.append(
            plots.grouped_bars(t.col("day"), {"backfill": bf, "drain": dr}, "node-hours")
        )
    rows = [
        [
            r["day"],
            _nh(float(r["backfill_node_seconds"])) if r["backfill_node_seconds"] else None,
            _nh(float(r["drain_node_seconds"])),
            _f(r["backfill_efficiency"]),
        ]
        for r in t.dicts()
    ]
    rows, title, more = by_day_or_worst(
        rows, lambda r: r[3] if r[3] is not None else 2.0, "the lowest backfill efficiency"
    )
    s.tables.append(
        TableView(
            ["day", "backfill (node-h)", "drain (node-h)", "backfill efficiency"], rows, title, more
        )
    )
    total_bf, total_dr = float(np.nansum(bf)), float(np.nansum(dr))
    if np.isfinite(bf).any() and total_bf + total_dr > 0:
        s.facts.append(
            f"Backfill gave back {total_bf:,.1f} node-hours against {total_dr:,.1f} "
            f"node-hours of drain: efficiency "
            f"{total_bf / (total_bf + total_dr):.3f}."
        )
    if backlog is not None and len(backlog):
        hours: dict[str, int] = defaultdict(int)
        idle: dict[str, float] = defaultdict(float)
        for v, sec in zip(
            backlog.col("verdict"), backlog.num("idle_unallocated_node_seconds"), strict=True
        ):
            hours[v] += 1
            idle[v] += float(sec)
        order = sorted(hours, key=lambda v: (-idle[v], v))
        vrows = [[_VERDICTS.get(v, v), v, hours[v], _nh(idle[v])] for v in order]
        s.tables.append(
            TableView(
                ["hours with", "verdict", "hours", "idle (node-h)"],
                vrows,
                "unallocated idle time by what was queued",
            )
        )
    return s


# ------------------------------------------------------------ seed 002: short jobs, turnover


def short_jobs(o: ReplayOutputs) -> Section | None:
    t = o.table("shortjobs.csv")
    if t is None:
        return None
    s = Section(
        "short-jobs",
        "Short-job penalties and turnover",
        "Per holder every 3 minutes, T_s = missing run time × slots of jobs under 600 s and "
        "A(t) = 0.9 A(t−1) + 0.1 T_s(t), top holders by peak A; below, unusable slots "
        "U = Σw / T from slot turnover (seed 002, Dal Pra).",
    )
    peak: dict[tuple[str, str], tuple[float, str, int, float]] = {}
    series: dict[tuple[str, str], tuple[list[datetime], list[float]]] = defaultdict(
        lambda: ([], [])
    )
    for r in t.dicts():
        key = (r["holder_kind"], r["holder"])
        a = float(r["adjust"])
        best, at, n, pen = peak.get(key, (-1.0, "", 0, 0.0))
        n += int(r["n_short"])
        pen += float(r["penalty_seconds"])
        peak[key] = (a, r["ts"], n, pen) if a > best else (best, at, n, pen)
        series[key][0].append(parse_instant(r["ts"]))
        series[key][1].append(a)
    ranked = sorted(peak.items(), key=lambda kv: (-kv[1][0], kv[0]))
    users = [k for k, _ in ranked if k[0] == "user"][:TOP_HOLDERS]
    lines = {k[1]: _with_zeros(series[k][0], series[k][1]) for k in users}
    turnover = o.table("turnover.csv")
    second = None
    if turnover is not None and len(turnover):
        second = (
            "unusable slots U",
            [parse_instant(x) for x in turnover.col("window_start")],
            turnover.num("unusable_slots"),
            "U (slots)",
        )
    s.figures.append(
        plots.time_lines(
            lines,
            "A(t), slot-seconds",
            FLOOD_LEVEL,
            f"flood alert level ({FLOOD_LEVEL:g})",
            second,
            steps=True,
        )
    )
    rows = [[k[0], k[1], v[2], _nh(v[3]), v[0], v[1]] for k, v in ranked[:TOP]]
    s.tables.append(
        TableView(
            [
                "holder kind",
                "holder",
                "short jobs",
                "penalty T_s (slot-h)",
                "peak A(t) (slot-s)",
                "peak at (UTC)",
            ],
            rows,
            more=max(0, len(ranked) - TOP),
        )
    )
    floods = [k for k, v in ranked if v[0] > FLOOD_LEVEL]
    s.headline["short-job floods"] = (
        f"{len(floods)} holder(s) above A = {FLOOD_LEVEL:g}" if floods else "none"
    )
    if floods:
        k, v = floods[0], peak[floods[0]]
        s.facts.append(
            f"{k[0]} {k[1]} peaked at A = {v[0]:,.0f} slot-seconds at {v[1]} "
            f"({v[2]:,} short job(s) in all)."
        )
    if ranked:
        k, v = max(ranked, key=lambda kv: (kv[1][2], kv[1][0]))
        if k != (floods[0] if floods else None):
            s.facts.append(
                f"Most short jobs: {k[0]} {k[1]}, {v[2]:,}, peak A = {v[0]:,.0f} "
                f"slot-seconds at {v[1]}."
            )
    if turnover is not None and len(turnover):
        u = turnover.num("unusable_slots")
        s.facts.append(
            f"Unusable slots from turnover: mean U = {np.nanmean(u):.3g}, "
            f"highest {np.nanmax(u):.3g} slots per window."
        )
    return s


def _with_zeros(ts: list[datetime], a: list[float]) -> tuple[list[datetime], np.ndarray]:
    """A holder's A(t) rows with the ticks between them filled: shortjobs.csv leaves out the
    ticks where A(t) is below its floor (1 slot-second), shown as 0."""
    if not ts:
        return ts, np.array(a)
    step = min(
        (b - x for x, b in zip(ts, ts[1:], strict=False) if b > x), default=timedelta(minutes=3)
    )
    t2: list[datetime] = [ts[0] - step]
    a2: list[float] = [0.0]
    for i, (t, v) in enumerate(zip(ts, a, strict=True)):
        if t - t2[-1] > step:
            t2.append(t - step)
            a2.append(0.0)
        t2.append(t)
        a2.append(v)
        if i + 1 == len(ts) or ts[i + 1] - t > step:
            t2.append(t + step)
            a2.append(0.0)
    return t2, np.array(a2)


# ---------------------------------------------------------------- seed 001: run-time prediction


def runtime_prediction(o: ReplayOutputs) -> Section | None:
    t = o.table("runtime_predictions.csv")
    if t is None:
        return None
    s = Section(
        "runtime",
        "Run-time prediction accuracy",
        "Each job's predicted run time (trimmed mean of its user and job name's past runs) "
        "against its actual one; an overrun ran past the upper estimate + 60 s (seed 001, Holt).",
    )
    pred, act, up = t.num("predicted_s"), t.num("actual_s"), t.num("upper_s")
    over = t.num("overran") == 1
    has = np.isfinite(pred) & np.isfinite(act)
    if has.any():
        s.figures.append(
            plots.scatter_loglog(
                pred[has] / 60,
                act[has] / 60,
                "predicted run time, minutes",
                "actual run time, minutes",
                over[has],
                "overrun",
                diagonal="actual = predicted",
            )
        )
        err = np.abs(act[has] - pred[has]) / pred[has]
        within = float(np.mean(err <= 0.03))
        s.facts.append(
            f"{int(has.sum()):,} of {len(t):,} jobs had a history to predict from; "
            f"{100 * within:.1f} % ended within ±3 % of the prediction, median "
            f"error {100 * float(np.median(err)):.1f} %."
        )
    d = t.dicts()
    idx = sorted(np.flatnonzero(over).tolist(), key=lambda i: -(act[i] - up[i]))
    rows = [
        [
            d[i]["job"],
            d[i]["user"],
            d[i]["name"],
            _n(d[i]["history_runs"]),
            pred[i] / 60,
            up[i] / 60,
            act[i] / 60,
            (act[i] - up[i]) / 60,
        ]
        for i in idx[:TOP]
    ]
    s.tables.append(
        TableView(
            [
                "job",
                "user",
                "name",
                "past runs",
                "predicted (min)",
                "upper (min)",
                "actual (min)",
                "over upper by (min)",
            ],
            rows,
            "overruns, largest first",
            more=max(0, len(idx) - TOP),
        )
    )
    s.headline["overruns"] = f"{len(idx):,}"
    return s


# ------------------------------------------------------------ seed 004: capability, fair share


def capability(o: ReplayOutputs) -> Section | None:
    t = o.table("capability_daily.csv")
    if t is None:
        return None
    s = Section(
        "capability",
        "Capability use",
        "CUP40 = node-hours of jobs on ≥ 40 % of the section / all node-hours, per day, and "
        "the modified CUP without backfill node-hours, against the 0.80 goal (seed 004, Red "
        "Storm).",
    )
    cup, mod = t.num("cup40"), t.num("cup40_modified")
    groups = {"CUP40": cup}
    if np.isfinite(mod).any():
        groups["modified CUP"] = mod
    if len(t):
        s.figures.append(
            plots.grouped_bars(
                t.col("day"), groups, "share of node-hours", CUP40_GOAL, f"goal {CUP40_GOAL:g}"
            )
        )
    rows = [
        [
            r["day"],
            _f(r["large_node_hours"]),
            _f(r["small_node_hours"]),
            _f(r["backfill_node_hours"]),
            _f(r["cup40"]),
            _f(r["cup40_modified"]),
            _f(r["p_cup_factor"]),
        ]
        for r in t.dicts()
    ]
    rows, title, more = by_day_or_worst(
        rows, lambda r: r[4] if r[4] is not None else 2.0, "the lowest CUP40"
    )
    cols = [
        "day",
        "large (node-h)",
        "small (node-h)",
        "backfill (node-h)",
        "CUP40",
        "modified CUP",
        "P_CUP day term",
    ]
    s.tables.append(TableView(cols, rows, title, more))
    large, small = np.nansum(t.num("large_node_hours")), np.nansum(t.num("small_node_hours"))
    if large + small > 0:
        overall = large / (large + small)
        s.headline["CUP40 (whole period)"] = f"{overall:.3f}"
        below = int(np.sum(cup < CUP40_GOAL))
        s.facts.append(
            f"CUP40 over the period {overall:.3f}; {below} of {len(t)} day(s) below "
            f"the {CUP40_GOAL:g} goal."
        )
    return s


def fair_share(o: ReplayOutputs) -> Section | None:
    t = o.table("fairshare_usage.csv")
    if t is None:
        return None
    s = Section(
        "fairshare",
        "Fair share",
        "Node-hours per user and account with half-life decay, valued at the last day end, "
        "jobs that died on a node failure refunded (seed 004).",
    )
    last = max(t.col("ts")) if len(t) else ""
    charged: dict[tuple[str, str], float] = defaultdict(float)
    refunded: dict[tuple[str, str], float] = defaultdict(float)
    usage: dict[tuple[str, str], float] = {}
    for r in t.dicts():
        key = (r["holder_kind"], r["holder"])
        charged[key] += float(r["charged_node_hours"])
        refunded[key] += float(r["refunded_node_hours"])
        if r["ts"] == last:
            usage[key] = float(r["usage_node_hours"])
    ranked = sorted(usage.items(), key=lambda kv: (-kv[1], kv[0]))
    users = [(k, v) for k, v in ranked if k[0] == "user"][:10]
    if users:
        s.figures.append(
            plots.bars(
                [k[1] for k, _ in users],
                np.array([v for _, v in users]),
                "decayed usage, node-hours",
                plots.GREEN,
            )
        )
    rows = [[k[0], k[1], v, charged[k], refunded[k]] for k, v in ranked[:TOP]]
    cols = ["kind", "holder", f"usage at {last} (node-h)", "charged (node-h)", "refunded (node-h)"]
    s.tables.append(TableView(cols, rows, more=max(0, len(ranked) - TOP)))
    total = sum(v for k, v in usage.items() if k[0] == "user")
    if users and total > 0:
        s.facts.append(
            f"The top user holds {100 * users[0][1] / total:.1f} % of the decayed user usage."
        )
    return s


# ------------------------------------------------------------------ seed 003: DFS, utilisation


def dfs_load(o: ReplayOutputs) -> Section | None:
    t, zones = o.table("dfs_minutely.csv"), o.table("hot_zones.csv")
    if t is None or zones is None:
        return None
    summ = o.summaries["samples"].get("samples", {})
    thr = summ.get("hot_zone_threshold")
    unit = str(summ.get("rate_unit") or "MB/s")
    s = Section(
        "dfs",
        "DFS write load and hot zones",
        "Write speed summed over jobs per minute against the hot-zone threshold (a bandwidth "
        "test's mean − σ), the episodes above it shaded (seed 003 §5.2, Emeras et al.).",
    )
    eps = [
        (parse_instant(a), parse_instant(b))
        for a, b in zip(zones.col("start"), zones.col("end"), strict=True)
    ]
    if len(t):
        minutes = [parse_instant(m) for m in t.col("minute")]
        level = None if thr is None else float(thr)
        s.figures.append(
            plots.dfs_load(minutes, t.num("write_mb_s"), t.num("read_mb_s"), level, unit, eps)
        )
    d = sorted(zones.dicts(), key=lambda r: (-float(r["peak_mb_s"]), r["start"]))
    rows = [
        [r["start"], r["end"], _n(r["minutes"]), _f(r["peak_mb_s"]), top_jobs(r["top_jobs"])]
        for r in d[:TOP]
    ]
    s.tables.append(
        TableView(
            [
                "start (UTC)",
                "end (UTC)",
                "minutes",
                f"peak ({unit})",
                "top jobs (share of data written)",
            ],
            rows,
            "hot-zone episodes, highest peak first",
            more=max(0, len(zones) - TOP),
        )
    )
    s.headline["hot-zone episodes"] = f"{len(zones):,}"
    if thr is not None and len(t):
        w = t.num("write_mb_s")
        s.facts.append(
            f"Threshold {float(thr):.4g} {unit}; peak write {np.nanmax(w):,.1f} {unit}; "
            f"{int(np.sum(w > float(thr)))} minute(s) above it."
        )
    per_fs = o.table("hot_zones_fs.csv")
    systems = summ.get("file_systems") or {}
    if per_fs is not None and systems:
        episodes: dict[str, list[dict[str, str]]] = defaultdict(list)
        for r in per_fs.dicts():
            episodes[r["fs"]].append(r)
        fs_rows = []
        for fs, info in systems.items():
            e = episodes.get(fs, [])
            fs_rows.append(
                [
                    fs,
                    info.get("threshold"),
                    len(e),
                    sum(int(r["minutes"]) for r in e),
                    max((float(r["peak_mb_s"]) for r in e), default=None),
                ]
            )
        fs_rows.sort(key=lambda r: (-r[3], r[0]))
        s.tables.append(
            TableView(
                ["file system", f"threshold ({unit})", "episodes", "hot minutes", f"peak ({unit})"],
                fs_rows,
                "per file system, most hot minutes first",
            )
        )
    return s


def top_jobs(cell: str) -> str:
    """``job:share;...`` of hot_zones.csv as ``job (share %), ...``."""
    out = []
    for item in filter(None, cell.split(";")):
        job, _, share = item.rpartition(":")
        out.append(f"{job} ({100 * float(share):.1f} %)" if job else item)
    return ", ".join(out)


def utilisation(o: ReplayOutputs) -> Section | None:
    t = o.table("job_utilization.csv")
    if t is None:
        return None
    s = Section(
        "utilisation",
        "Job utilisation",
        "Per job: mean core utilisation (cores used / allocated) and mean memory against the "
        "theoretical memory per core; wasted = squashed area × (1 − utilisation) (seed 003 §4).",
    )
    core, mem = t.num("core_util_mean"), t.num("mem_mean_ratio")
    panels: list[tuple[np.ndarray, str, float | None]] = [
        (core, "mean core utilisation (1 = every allocated core busy)", 0.25)
    ]
    if np.isfinite(mem).any():
        panels.append((mem, "mean memory / theoretical", 1.0))
    if len(t):
        s.figures.append(plots.histograms(panels))
    sa = t.num("sa_core_seconds")
    wasted = sa * (1.0 - core)
    order = [i for i in np.argsort(-np.nan_to_num(wasted, nan=-1.0)) if np.isfinite(wasted[i])]
    d = t.dicts()
    rows = [
        [
            d[i]["job"],
            _n(d[i]["nodes"]),
            _f(d[i]["cores"]),
            float(core[i]),
            None if not np.isfinite(mem[i]) else float(mem[i]),
            _nh(float(sa[i])),
            _nh(float(wasted[i])),
        ]
        for i in order[:TOP]
    ]
    cols = [
        "job",
        "nodes",
        "cores",
        "core utilisation",
        "memory ratio",
        "squashed area (core-h)",
        "wasted (core-h)",
    ]
    s.tables.append(
        TableView(cols, rows, "most wasted core-hours first", more=max(0, len(order) - TOP))
    )
    ok = np.isfinite(core)
    if ok.any():
        low = (
            float(np.nansum(sa[ok & (core < 0.25)]) / np.nansum(sa[ok]))
            if np.nansum(sa[ok])
            else 0.0
        )
        s.facts.append(
            f"{len(t):,} jobs measured; median core utilisation "
            f"{float(np.median(core[ok])):.2f}; jobs under 25 % hold "
            f"{100 * low:.1f} % of the squashed area (SA ratio)."
        )
    return s


# ------------------------------------------------------------ drainwatch whatif


def _policy_label(policy: str, estimate: str, sep: str = " ") -> str:
    return f"{policy}{sep}({estimate})" if policy == "easy-predicted" else policy


def _policy_short(policy: str, estimate: str) -> str:
    """A column label: easy-predicted's rows by their estimate."""
    return estimate if policy == "easy-predicted" else policy


def whatif(o: ReplayOutputs) -> Section | None:
    t = o.table("whatif.csv")
    if t is None or not o.has("whatif"):
        return None
    summ = o.summaries["whatif"]
    s = Section(
        "whatif",
        "What if: other scheduling policies",
        f"The site's own {summ.get('jobs', 0):,} jobs on {summ.get('nodes', 0):,} nodes under "
        "each policy, side by side with the recorded schedule (as-run): drain accounted as the "
        "replay accounts a log (seed 000), waits, bounded slowdown (10 s) and jobs started "
        "later than recorded; drain % over the static basis (nodes x span), bsld = bounded "
        "slowdown.",
    )
    rows = t.dicts()
    labels = [_policy_label(r["policy"], r["estimate"]) for r in rows]
    two_lines = [_policy_label(r["policy"], r["estimate"], "\n") for r in rows]
    s.figures.append(plots.bars(two_lines, t.num("mean_wait_seconds") / 3600.0, "mean wait (h)"))
    s.tables.append(
        TableView(
            [
                "policy",
                "drain (node-h)",
                "drain %",
                "util. %",
                "mean wait (h)",
                "p95 wait (h)",
                "mean bsld",
                "late (jobs)",
                "wait change (h)",
            ],
            [
                [
                    label,
                    _f(r["drain_node_hours"]),
                    _f(r["drain_pct_static"]),
                    _f(r["utilisation_pct"]),
                    _nh(float(r["mean_wait_seconds"])),
                    _nh(float(r["p95_wait_seconds"])),
                    _f(r["mean_bounded_slowdown"]),
                    _n(r["started_late"]),
                    _nh(float(r["mean_wait_change_seconds"])),
                ]
                for label, r in zip(labels, rows, strict=True)
            ],
        )
    )
    users = o.table("whatif_users.csv")
    if users is not None and len(users):
        per: dict[str, dict[str, float]] = defaultdict(dict)
        jobs: dict[str, int] = {}
        base: dict[str, float] = {}
        cols = []
        for r in users.dicts():
            label = _policy_short(r["policy"], r["estimate"])
            if r["policy"] == "as-run":
                continue
            if label not in cols:
                cols.append(label)
            per[r["user"]][label] = float(r["mean_wait_change_seconds"])
            jobs[r["user"]] = int(r["jobs"])
            base[r["user"]] = float(r["as_run_mean_wait_seconds"])
        order = sorted(jobs, key=lambda u: (-jobs[u], u))
        urows = [
            [u, jobs[u], _nh(base[u]), *(_nh(per[u][c]) if c in per[u] else None for c in cols)]
            for u in order[:TOP]
        ]
        s.tables.append(
            TableView(
                ["user", "jobs", "wait as run (h)", *(f"{c} (h)" for c in cols)],
                urows,
                "per user (most jobs first), the change in mean wait under each policy against "
                "as-run, in hours (< 0 waits less); easy-predicted by its estimate",
                max(0, len(order) - TOP),
            )
        )
    left = summ.get("left_out") or {}
    filled = summ.get("filled_in") or {}
    if left:
        s.facts.append(
            "Left out: " + ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in left.items()) + "."
        )
    if filled:
        s.facts.append(
            "Filled in: "
            + ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in filled.items())
            + "."
        )
    for limit in summ.get("limits") or []:
        s.facts.append(f"Not modelled: {limit}.")
    return s


# the page's order, and what each section needs (shown when it is left out)
SECTIONS: list[tuple[str, str, str, Callable[[ReplayOutputs], Section | None]]] = [
    ("drain", "Drain over time", "replay --format moab", drain_over_time),
    ("node-states", "Node-state breakdown", "replay --format moab", node_states),
    ("drain-jobs", "Top drain jobs", "replay --format moab", top_drain_jobs),
    (
        "sliding",
        "Perpetually sliding jobs",
        "replay --format moab with job charges",
        sliding_jobs,
    ),
    ("ftl", "Failure to launch", "replay --format moab --jobs FILE", failure_to_launch),
    (
        "size-groups",
        "Drain by job size group",
        "replay --format moab with job charges",
        size_groups,
    ),
    (
        "drain-runtime",
        "Drain against run time",
        "replay --format moab --jobs FILE",
        drain_runtime,
    ),
    ("backfill", "Backfill recovery and idle time", "replay --format moab --jobs FILE", backfill),
    (
        "short-jobs",
        "Short-job penalties and turnover",
        "replay --format sacct|swf|jobevents|jobcomp",
        short_jobs,
    ),
    (
        "runtime",
        "Run-time prediction accuracy",
        "replay --format sacct|swf|jobevents|jobcomp",
        runtime_prediction,
    ),
    ("capability", "Capability use", "replay --format sacct|swf|jobevents|jobcomp", capability),
    ("fairshare", "Fair share", "replay --format sacct|swf|jobevents|jobcomp", fair_share),
    ("dfs", "DFS write load and hot zones", "replay --format samples|llview", dfs_load),
    ("utilisation", "Job utilisation", "replay --format samples|llview", utilisation),
    (
        "whatif",
        "What if: other scheduling policies",
        "whatif --format sacct|swf|jobevents|jobcomp",
        whatif,
    ),
]


def build(o: ReplayOutputs) -> list[Section | Missing]:
    """Every section in page order: built, or Missing with the replay that would give it."""
    out: list[Section | Missing] = []
    for key, title, needs, fn in SECTIONS:
        sec = fn(o)
        out.append(sec if sec is not None else Missing(key, title, needs))
    return out
