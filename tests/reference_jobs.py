"""Slow, obviously-correct reference implementations of the job analytics (for hypothesis tests).

They work on whole job lists (pairs of start/end events), recompute everything from scratch and use
no incremental state, so they share no logic with the streaming models in models/.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from models.records.jobevent import JobEvent


@dataclass
class Job:
    job: str
    start: float
    end: float
    user: str | None
    group: str | None
    account: str | None
    name: str | None
    nodes: int | None
    cores: int | None
    node_list: tuple[str, ...]
    req: float | None
    backfill: bool | None
    state: str | None


def pair_jobs(events: list[JobEvent]) -> list[Job]:
    """Jobs with both a start and an end, in end order (ties by event order)."""
    starts: dict[str, JobEvent] = {}
    out = []
    for e in events:
        if e.type == "start":
            starts[e.job] = e
        elif e.type == "end" and e.job in starts:
            s = starts.pop(e.job)
            out.append(
                Job(
                    e.job,
                    s.ts,
                    e.ts,
                    s.user,
                    s.group,
                    s.account,
                    s.name,
                    s.nodes,
                    s.cores,
                    s.node_list,
                    s.req_walltime,
                    e.backfill if e.backfill is not None else s.backfill,
                    e.state,
                )
            )
    return out


# ---- 002 short jobs --------------------------------------------------------------------------


def shortjobs_ref(
    events: list[JobEvent],
    threshold: float,
    min_runtime: float,
    interval: float,
    lam: float,
    floor: float,
    until: float,
) -> list[tuple[float, str, str, int, float, float]]:
    jobs = pair_jobs(events)
    if not jobs:
        return []
    first = math.ceil(min(j.end for j in jobs) / interval)
    last = math.floor(until / interval)
    table: dict[tuple[str, str], float] = {}
    rows = []
    for k in range(first, last + 1):
        t = k * interval
        per: dict[tuple[str, str], list[float]] = {}
        for j in jobs:
            if t - interval < j.end <= t and j.end - j.start < threshold:
                slots = j.cores or j.nodes or 1
                pen = (min_runtime - max(0.0, j.end - j.start)) * slots
                for key in (("user", j.user), ("group", j.group)):
                    if key[1] is None:
                        continue
                    acc = per.setdefault(key, [0, 0.0])  # type: ignore[arg-type]
                    acc[0] += 1
                    acc[1] += pen
        for key in sorted(set(table) | set(per)):
            n, pen = per.get(key, (0, 0.0))
            a = lam * table.get(key, 0.0) + (1 - lam) * pen
            if a >= floor:
                table[key] = a
            else:
                table.pop(key, None)
                if n == 0:
                    a = 0.0
            rows.append((t, key[0], key[1], int(n), pen, a))
    return rows


# ---- 002 turnover ----------------------------------------------------------------------------


def turnover_ref(events: list[JobEvent], max_gap: float) -> list[tuple[float, float, float, int]]:
    """Gaps (release, ready, refill, slots) by unit-slot simulation: one list entry per freed
    slot, refilled latest-first; starts at an instant see the ends at that instant. A starting
    job's slots were usable from ready = max(its submit, the latest release among them), capped
    at its start: [release, ready) is idle, [ready, refill) turnover."""
    free: dict[str, list[float]] = {}
    alloc: dict[str, tuple[tuple[str, ...], int]] = {}
    submit: dict[str, float] = {}
    gaps: list[tuple[float, float, float, int]] = []
    # group by instant: ends first, then starts
    by_ts: dict[float, list[JobEvent]] = {}
    for e in events:
        by_ts.setdefault(e.ts, []).append(e)
        if e.type == "submit":
            submit.setdefault(e.job, e.ts)
    for ts in sorted(by_ts):
        evs = by_ts[ts]
        starts = [e for e in evs if e.type == "start"]
        start_ids = {e.job for e in starts}
        done = set()
        for e in evs:
            if e.type != "end":
                continue
            if e.job not in alloc and e.job in start_ids:
                s = next(x for x in starts if x.job == e.job)
                _take(s, alloc, free, gaps, max_gap, submit.get(s.job))
                done.add(e.job)
            if e.job not in alloc:
                continue
            pools, per = alloc.pop(e.job)
            for p in pools:
                free.setdefault(p, []).extend([ts] * per)
        for s in starts:
            if s.job not in done:
                _take(s, alloc, free, gaps, max_gap, submit.get(s.job))
    return gaps


def _take(
    s: JobEvent, alloc: dict, free: dict, gaps: list, max_gap: float, sub: float | None
) -> None:
    if s.node_list:
        pools = s.node_list
        per = max(1, (s.cores // len(s.node_list)) if s.cores else 1)
    else:
        pools = ("*",)
        per = s.cores or s.nodes or 1
    alloc[s.job] = (pools, per)
    releases = []
    for p in pools:
        lst = free.get(p, [])
        for _ in range(per):
            if not lst:
                break
            r = lst[-1]
            if s.ts - r > max_gap:
                lst.clear()
                break
            lst.pop()
            releases.append(r)
    if releases:
        ready = max(releases)
        if sub is not None:
            ready = min(max(ready, sub), s.ts)
        gaps += [(r, ready, s.ts, 1) for r in releases]


def window_sums(
    gaps: list[tuple[float, float, float, int]], window: float
) -> dict[int, list[float]]:
    """window index -> [refills ending in it, turnover seconds, idle seconds] in it."""
    out: dict[int, list[float]] = {}

    def clip(lo0: float, hi0: float, c: int, col: int) -> None:
        k = math.floor(lo0 / window)
        while k * window < hi0:
            lo, hi = max(lo0, k * window), min(hi0, (k + 1) * window)
            if hi > lo:
                out.setdefault(k, [0, 0.0, 0.0])[col] += (hi - lo) * c
            k += 1

    for r, q, t, c in gaps:
        out.setdefault(math.floor(t / window), [0, 0.0, 0.0])[0] += c
        clip(q, t, c, 1)
        clip(r, q, c, 2)
    return out


# ---- 001 run-time prediction -----------------------------------------------------------------


def runtime_ref(events: list[JobEvent], history: int | None, z: float, cap: bool) -> list[tuple]:
    """(job, runs, predicted, upper, actual, std, shortest, longest, spread) per finished job,
    predicted from every earlier-ended run of the same (user, name) (the last `history` of
    them; None: all), as seen at the job's start; a missing name is replaced by the requested
    wall time. std and spread are of the kept runs, shortest/longest of all of them."""

    def ident(j: Job) -> tuple:
        return (j.user, j.name if j.name is not None else (f"req={j.req:g}" if j.req else None))

    order = {id(e): i for i, e in enumerate(events)}
    jobs = pair_jobs(events)
    end_pos: dict[str, int] = {}
    start_pos: dict[str, int] = {}
    for e in events:
        if e.type == "end":
            end_pos.setdefault(e.job, order[id(e)])
        elif e.type == "start":
            start_pos[e.job] = order[id(e)]
    out = []
    for j in jobs:
        prev = sorted(
            (x for x in jobs if ident(x) == ident(j) and end_pos[x.job] < start_pos[j.job]),
            key=lambda x: end_pos[x.job],
        )
        runs = [max(0.0, x.end - x.start) for x in prev]
        if history is not None:
            runs = runs[-history:]
        n = len(runs)
        sd = lo = hi = spread = None
        if n < 2:
            pred = up = None
        else:
            lo, hi = min(runs), max(runs)
            xs = sorted(runs)
            if n >= 3:
                xs = xs[1:-1]
            pred = statistics.fmean(xs)
            sd = statistics.stdev(xs) if len(xs) >= 2 else 0.0
            up = max(pred + z * sd, max(xs))
            spread = max(xs) - min(xs)
            if cap and j.req:
                pred, up = min(pred, j.req), min(up, j.req)
        out.append((j.job, n, pred, up, max(0.0, j.end - j.start), sd, lo, hi, spread))
    return out


# ---- 004 capability and fair share -----------------------------------------------------------


def capability_ref(events: list[JobEvent], min_large: int) -> dict[str, list[float]]:
    """day (ISO, UTC) -> [large, small, backfill-small] node-hours, by stepping through days."""
    out: dict[str, list[float]] = {}
    for j in pair_jobs(events):
        nodes = j.nodes or 1
        t = j.start
        while t < j.end:
            day_start = math.floor(t / 86400) * 86400
            e = min(j.end, day_start + 86400)
            d = datetime.fromtimestamp(day_start, UTC).date().isoformat()
            acc = out.setdefault(d, [0.0, 0.0, 0.0])
            nh = nodes * (e - t) / 3600
            if nodes >= min_large:
                acc[0] += nh
            else:
                acc[1] += nh
                if j.backfill:
                    acc[2] += nh
            t = e
    return out


def fairshare_ref(
    events: list[JobEvent], half_life: float, at: float, refund: set[str]
) -> dict[tuple[str, str], float]:
    """Decayed usage at `at` of every holder: the integral of nodes * 2^(-(at - tau)/h) over
    each charged job's run, by the trapezoid rule on a fine grid."""
    out: dict[tuple[str, str], float] = {}
    for j in pair_jobs(events):
        if j.end > at or (j.state and j.state.split()[0] in refund):
            continue
        n = 400
        dt = (j.end - j.start) / n
        tot = 0.0
        for i in range(n + 1):
            tau = j.start + i * dt
            w = 0.5 if i in (0, n) else 1.0
            tot += w * 2.0 ** (-(at - tau) / half_life)
        val = (j.nodes or 1) * tot * dt / 3600
        for key in (("user", j.user), ("account", j.account)):
            if key[1] is not None:
                out[key] = out.get(key, 0.0) + val  # type: ignore[index]
    return out


# ---- generated streams -----------------------------------------------------------------------


def build_events(specs: list[tuple], base: float = 1_700_000_000.0) -> list[JobEvent]:
    """specs: (start_offset, duration, user, group, name, nodes, cores, node_idx, backfill,
    state, req) -> time-sorted submit/start/end events (via models.jobsource.sort_events)."""
    from models.formats.jobsource import sort_events

    evs = []
    for i, (st, dur, user, group, name, nodes, cores, node_idx, bf, state, req) in enumerate(specs):
        nl = tuple(f"n{k:02d}" for k in node_idx)
        common = dict(
            job=f"j{i}",
            user=user,
            group=group,
            account=f"acct-{group}",
            name=name,
            nodes=len(nl) if nl else nodes,
            cores=cores,
            req_walltime=req,
            node_list=nl,
            backfill=bf,
        )
        t0 = base + st
        evs.append(JobEvent(type="submit", ts=t0 - 5, **common))
        evs.append(JobEvent(type="start", ts=t0, **common))
        evs.append(JobEvent(type="end", ts=t0 + dur, state=state, **common))
    return sort_events(evs)


def job_specs():
    """Hypothesis strategy for lists of job specs (small sets of users, names and nodes so that
    histories, holders and slots collide)."""
    from hypothesis import strategies as st

    spec = st.tuples(
        st.integers(0, 3 * 86400).map(float),  # start offset
        st.one_of(st.integers(0, 1200), st.integers(0, 2 * 86400)).map(float),  # duration
        st.sampled_from(["alice", "bob", "carol"]),
        st.sampled_from(["g1", "g2"]),
        st.sampled_from(["a", "b", None]),
        st.integers(1, 8),  # nodes
        st.one_of(st.none(), st.integers(1, 64)),  # cores
        st.one_of(
            st.just(()), st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True).map(tuple)
        ),
        st.one_of(st.none(), st.booleans()),
        st.sampled_from(["COMPLETED", "FAILED", "NODE_FAIL", None]),
        st.one_of(st.none(), st.integers(60, 3 * 86400).map(float)),
    )
    return st.lists(spec, min_size=0, max_size=40)


def release_order_ref(
    held: dict[str, tuple[int, float | None, str | None]], now: float
) -> list[tuple[float, str, int, str | None, bool]]:
    """The running jobs' releases at ``now`` as forecast_release orders them, by sorting all of
    them: jobs without an end or nodes release nothing; a job past its end releases at ``now``;
    by release time, then job id. (release time, job, nodes, name, checkpointed)."""
    return sorted(
        (max(end, now), job, nodes, name, False)
        for job, (nodes, end, name) in held.items()
        if end is not None and nodes > 0
    )


def release_stage_ref(section_nodes: int, provisional: bool = False) -> Any:
    """The forecast stage as first written: every submit sums the running jobs and hands them
    all to forecast_release (which sorts them), instead of keeping sums and an order as jobs
    start and end: the stage with a model (models.drain.release.ReleaseForecaster) that
    differs only in :meth:`_forecast`."""
    from models.drain.release import Holder, ReleaseForecaster, forecast_release
    from streams.stages.release import ReleaseForecastStage

    class ReleaseForecasterRef(ReleaseForecaster):
        def _forecast(self, e: JobEvent) -> Any:
            nodes = e.nodes or 0
            if nodes <= 0:
                return None
            if nodes > self.section_nodes:
                self.too_large += 1
                return None
            busy = sum(n for n, _, _ in self.running.values())
            holders = []
            for j, (n, end, name) in self.running.items():
                if end is None:
                    self.holders_without_walltime += 1
                else:
                    holders.append(Holder(j, n, end, name))
            at = e.ts if e.reserved_start is None else e.reserved_start
            free = max(0, self.section_nodes - busy)
            f = forecast_release(nodes, at, free, holders, now=e.ts)
            self.forecasts += 1
            self.pending[e.job] = (e.ts, f, e.reserved_start)
            return f

    stage = ReleaseForecastStage(section_nodes, provisional)
    stage.m = ReleaseForecasterRef(section_nodes)
    return stage
