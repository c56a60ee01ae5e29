"""Usage totals by day with Open XDMoD Jobs-realm semantics: CPU / node / wall hours, jobs
started, jobs ended.

XDMoD rule (ubccr/xdmod: ``classes/OpenXdmod/Shredder/Slurm.php``,
``configuration/etl/etl_action_defs.d/jobs/hpc-aggregation-day.json`` and the macro
``configuration/etl/etl_macros.d/statistic_ratio_case.sql``):

- jobs counted: job allocations that ended (sacct End not ``Unknown``), that were given nodes
  (NodeList not ``None assigned``) and whose state is an ended state; job steps are skipped;
- wall time of a job = end - start (XDMoD recomputes wallduration from the timestamps);
- a day is ``[day_start, day_start + 86399]`` in whole seconds and a job's share of a day is
  wall × overlap / (end − start), where a job running past the day gets ``day_end + 1 − start``
  and a job spanning the day gets 86400: i.e. exactly the half-open overlap
  ``|[start, end) ∩ [midnight, next midnight)|``. Shares over consecutive days add up to
  end − start exactly, with no second lost or counted twice at a midnight;
- CPU hours = processors × share / 3600, node hours = nodes × share / 3600,
  wall hours = share / 3600; jobs started / ended = jobs whose start / end falls in the day.

This reproduces Open XDMoD's own expected values for phillips.log (2016-12-22 … 2017-01-01
UTC: 11767.9883 CPU h, 1344.8686 node h, 438.8203 wall h). Days are local days of an IANA time
zone (``tz``); with DST a day is 23 or 25 hours long and the split follows the real midnights.

Batch core: :func:`usage_by_day` takes numpy arrays (start, end, nodes, cpus) and splits them at
day edges with vectorised bin counts (no per-job Python loop).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from numpy.typing import ArrayLike, NDArray

from models.records.jobevent import JobEvent
from models.state import StateFormatError
from models.statetree import (
    dict_in,
    floats_in,
    floats_out,
    int_in,
    ints_in,
    ints_out,
    keys_in,
    list_in,
    opt_ints_in,
    opt_ints_out,
    ragged_in,
    ragged_out,
    strs_out,
)


def _zone(tz: str | ZoneInfo | None) -> ZoneInfo:
    if tz is None:
        return ZoneInfo("UTC")
    return tz if isinstance(tz, ZoneInfo) else ZoneInfo(tz)


def local_day(ts: float, tz: str | ZoneInfo | None = "UTC") -> date:
    """The local calendar day of POSIX time ``ts``."""
    return datetime.fromtimestamp(ts, _zone(tz)).date()


def day_edges(first: date, last: date, tz: str | ZoneInfo | None = "UTC") -> NDArray[np.float64]:
    """POSIX seconds of the local midnights starting each day first … last, plus the midnight
    after ``last`` (len = days + 1)."""
    z = _zone(tz)
    n = (last - first).days + 1
    return np.array(
        [
            datetime.combine(first + timedelta(days=i), datetime.min.time(), z).timestamp()
            for i in range(n + 1)
        ],
        dtype=np.float64,
    )


@dataclass(slots=True)
class UsageDaily:
    """Per-day totals; arrays are aligned with ``days``."""

    days: list[date]
    cpu_hours: NDArray[np.float64]
    node_hours: NDArray[np.float64]
    wall_hours: NDArray[np.float64]
    jobs_started: NDArray[np.int64]
    jobs_ended: NDArray[np.int64]

    def totals(self) -> tuple[float, float, float, int, int]:
        return (
            float(self.cpu_hours.sum()),
            float(self.node_hours.sum()),
            float(self.wall_hours.sum()),
            int(self.jobs_started.sum()),
            int(self.jobs_ended.sum()),
        )

    def rows(self, resource: str = "") -> Iterator[tuple[str, str, float, float, float, int, int]]:
        """``(day, resource, cpu_hours, node_hours, wall_hours, jobs_started, jobs_ended)``."""
        for i, d in enumerate(self.days):
            yield (
                d.isoformat(),
                resource,
                float(self.cpu_hours[i]),
                float(self.node_hours[i]),
                float(self.wall_hours[i]),
                int(self.jobs_started[i]),
                int(self.jobs_ended[i]),
            )


def _empty() -> UsageDaily:
    z = np.zeros(0)
    return UsageDaily([], z, z.copy(), z.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64))


def usage_by_day(
    start: ArrayLike,
    end: ArrayLike,
    nodes: ArrayLike,
    cpus: ArrayLike,
    tz: str | ZoneInfo | None = "UTC",
    clip: tuple[float, float] | None = None,
) -> UsageDaily:
    """Split jobs ``[start, end)`` (POSIX s) at local midnights and sum per day.

    ``clip`` = ``(lo, hi)`` clips to ``[lo, hi)`` (a report range; XDMoD's "… 23:59:59"
    inclusive end is ``hi = 23:59:59 + 1``): usage outside it is dropped and only starts / ends
    inside it are counted; days run from the range's first to last day. Without it, days run from
    the first start to the last end. Jobs with end < start are ignored; nodes / cpus NaN count as 0.
    """
    s = np.asarray(start, dtype=np.float64).ravel()
    e = np.asarray(end, dtype=np.float64).ravel()
    nn = np.nan_to_num(np.asarray(nodes, dtype=np.float64).ravel())
    nc = np.nan_to_num(np.asarray(cpus, dtype=np.float64).ravel())
    if not (len(s) == len(e) == len(nn) == len(nc)):
        raise ValueError("start, end, nodes and cpus must have the same length")
    ok = np.isfinite(s) & np.isfinite(e) & (e >= s)
    s, e, nn, nc = s[ok], e[ok], nn[ok], nc[ok]
    z = _zone(tz)
    if clip is not None:
        lo, hi = float(clip[0]), float(clip[1])
        if hi <= lo:
            return _empty()
        first, last = local_day(lo, z), local_day(hi, z)
        if day_edges(last, last, z)[0] >= hi and last > first:
            last -= timedelta(days=1)  # hi is exactly a midnight: that day is outside
    else:
        if len(s) == 0:
            return _empty()
        lo, hi = float(s.min()), float(e.max())
        first, last = local_day(lo, z), local_day(hi, z)
    edges = day_edges(first, last, z)
    ndays = len(edges) - 1

    # Event counts: the day containing the instant (within the clip range).
    def count(t: NDArray[np.float64]) -> NDArray[np.int64]:
        t = t[(t >= lo) & (t < hi)] if clip is not None else t
        idx = np.searchsorted(edges, t, side="right") - 1
        idx = idx[(idx >= 0) & (idx < ndays)]
        return np.bincount(idx, minlength=ndays).astype(np.int64)

    started = count(s)
    ended = count(e)

    # Clip to the range, then split at midnights (half-open intervals).
    cs = np.maximum(s, edges[0] if clip is None else lo)
    ce = np.minimum(e, edges[-1] if clip is None else hi)
    keep = ce > cs
    cs, ce, kn, kc = cs[keep], ce[keep], nn[keep], nc[keep]
    i0 = np.searchsorted(edges, cs, side="right") - 1
    i1 = np.searchsorted(edges, ce, side="left") - 1  # day holding the last instant before ce
    same = i0 == i1
    length = np.diff(edges)

    def split(w: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.zeros(ndays)
        out += np.bincount(i0[same], weights=(w * (ce - cs))[same], minlength=ndays)
        m = ~same
        if m.any():
            a, b, wm = i0[m], i1[m], w[m]
            out += np.bincount(a, weights=wm * (edges[a + 1] - cs[m]), minlength=ndays)
            out += np.bincount(b, weights=wm * (ce[m] - edges[b]), minlength=ndays)
            cover = np.bincount(a + 1, weights=wm, minlength=ndays + 1)
            cover -= np.bincount(b, weights=wm, minlength=ndays + 1)
            out += np.cumsum(cover)[:ndays] * length
        return out / 3600.0

    ones = np.ones_like(cs)
    return UsageDaily(
        days=[first + timedelta(days=i) for i in range(ndays)],
        cpu_hours=split(kc),
        node_hours=split(kn),
        wall_hours=split(ones),
        jobs_started=started,
        jobs_ended=ended,
    )


@dataclass(slots=True)
class JobIntervals:
    """Completed job runs as parallel arrays (the input of :func:`usage_by_day`)."""

    job: list[str]
    start: NDArray[np.float64]
    end: NDArray[np.float64]
    nodes: NDArray[np.float64]
    cpus: NDArray[np.float64]


def intervals_from_events(events: Iterable[JobEvent]) -> JobIntervals:
    """Pair each job's start with the next end of the same job id (as every adapter emits them,
    and as :func:`models.jobsource.sort_events` orders them). Ends without a start (never ran)
    and starts without an end (still running, XDMoD skips them) are left out.
    Memory: only jobs currently started are held."""
    open_: dict[str, JobEvent] = {}
    jobs: list[str] = []
    st: list[float] = []
    en: list[float] = []
    nd: list[float] = []
    cp: list[float] = []
    for ev in events:
        if ev.type == "start":
            open_[ev.job] = ev
        elif ev.type == "end":
            sv = open_.pop(ev.job, None)
            if sv is not None and ev.ts >= sv.ts:
                _append(jobs, st, en, nd, cp, sv, ev)
    return JobIntervals(
        jobs,
        np.array(st, np.float64),
        np.array(en, np.float64),
        np.array(nd, np.float64),
        np.array(cp, np.float64),
    )


def _append(
    jobs: list[str],
    st: list[float],
    en: list[float],
    nd: list[float],
    cp: list[float],
    s: JobEvent,
    e: JobEvent,
) -> None:
    jobs.append(s.job)
    st.append(s.ts)
    en.append(e.ts)
    n = s.nodes if s.nodes is not None else e.nodes
    c = s.cores if s.cores is not None else e.cores
    nd.append(float("nan") if n is None else float(n))
    cp.append(float("nan") if c is None else float(c))


def usage_from_events(
    events: Iterable[JobEvent],
    tz: str | ZoneInfo | None = "UTC",
    clip: tuple[float, float] | None = None,
) -> UsageDaily:
    """Per-day usage of the job runs found in ``events`` (see :func:`intervals_from_events`)."""
    iv = intervals_from_events(events)
    return usage_by_day(iv.start, iv.end, iv.nodes, iv.cpus, tz=tz, clip=clip)


def add_exact(partials: list[float], x: float) -> None:
    """Add ``x`` to ``partials`` without rounding: the partials stay non-overlapping floats
    whose exact sum is the sum of everything added (Shewchuk's algorithm, the one behind
    ``math.fsum``); ``math.fsum(partials)`` is that sum rounded once. Sums built this way do
    not depend on the order of the additions."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            partials[i] = lo
            i += 1
        x = hi
    partials[i:] = [x]


class UsageAccumulator:
    """Streaming :func:`usage_from_events`: the same rule and days, fed in event order.

    A job counts when its end arrives (XDMoD counts ended jobs only); its wall, node and core
    seconds are split at the zone's midnights and added to each day exactly
    (:func:`add_exact`), so a day's figures are the same however the events were batched and
    whenever they are read. Memory: the running jobs and one small record per day.
    ``changed()`` returns the days whose row changed since the last call (and the empty days
    that came into the range), for a live sink that re-writes them.
    """

    __slots__ = ("cal", "_open", "_days", "_first", "_last", "_changed", "_seen_last")

    def __init__(self, tz: str = "UTC") -> None:
        from models.jobs.capability import DayCalendar  # one calendar, one place

        self.cal = DayCalendar(tz)
        self._open: dict[str, tuple[float, Any, Any]] = {}  # job -> start, nodes, cores
        # day -> [cpu partials, node partials, wall partials, started, ended]
        self._days: dict[date, list[Any]] = {}
        self._first: date | None = None
        self._last: date | None = None
        self._changed: set[date] = set()
        self._seen_last: date | None = None  # range end at the last changed() call

    def _day(self, d: date) -> list[Any]:
        rec = self._days.get(d)
        if rec is None:
            rec = self._days[d] = [[], [], [], 0, 0]
        self._changed.add(d)
        return rec

    def update(self, events: Iterable[JobEvent]) -> None:
        span, day, opened = self.cal.span, self._day, self._open
        for ev in events:
            if ev.type == "start":
                opened[ev.job] = (ev.ts, ev.nodes, ev.cores)
            elif ev.type == "end":
                sv = opened.pop(ev.job, None)
                if sv is None or not ev.ts >= sv[0]:
                    continue
                s, e = sv[0], ev.ts
                nn = _nan0(sv[1] if sv[1] is not None else ev.nodes)
                nc = _nan0(sv[2] if sv[2] is not None else ev.cores)
                d0, _lo, hi = first = span(s)
                rec = day(d0)
                rec[3] += 1
                if e < hi:  # within its first day (most jobs): one day, one piece
                    d1 = d0
                    rec[4] += 1
                else:
                    d1 = span(e)[0]
                    day(d1)[4] += 1
                if self._first is None or d0 < self._first:
                    self._first = d0
                if self._last is None or d1 > self._last:
                    self._last = d1
                t = s
                while t < e:
                    d, _lo, hi = first if t == s else span(t)
                    piece = (hi if hi < e else e) - t
                    if d != d0:
                        rec = day(d)
                    add_exact(rec[0], nc * piece)
                    add_exact(rec[1], nn * piece)
                    add_exact(rec[2], piece)
                    t = hi

    def _row(self, d: date, resource: str) -> tuple[str, str, float, float, float, int, int]:
        rec = self._days.get(d)
        if rec is None:
            return (d.isoformat(), resource, 0.0, 0.0, 0.0, 0, 0)
        cpu, node, wall, started, ended = rec
        f = math.fsum
        return (
            d.isoformat(),
            resource,
            f(cpu) / 3600.0,
            f(node) / 3600.0,
            f(wall) / 3600.0,
            started,
            ended,
        )

    def rows(self, resource: str = "") -> list[tuple[str, str, float, float, float, int, int]]:
        """Every day from the first job start to the last job end (empty days as zeros)."""
        if self._first is None or self._last is None:
            return []
        n = (self._last - self._first).days + 1
        return [self._row(self._first + timedelta(days=i), resource) for i in range(n)]

    def changed(self, resource: str = "") -> list[tuple[str, str, float, float, float, int, int]]:
        """Rows of the days changed since the last call, the empty days new in the range too."""
        days = set(self._changed)
        if self._first is not None and self._last is not None:
            lo = self._first if self._seen_last is None else self._seen_last
            days.update(lo + timedelta(days=i) for i in range((self._last - lo).days + 1))
            self._seen_last = self._last
        self._changed.clear()
        return [self._row(d, resource) for d in sorted(days)]

    def totals(self) -> tuple[float, float, float, int, int]:
        rows = self.rows()
        return (
            math.fsum(r[2] for r in rows),
            math.fsum(r[3] for r in rows),
            math.fsum(r[4] for r in rows),
            sum(r[5] for r in rows),
            sum(r[6] for r in rows),
        )

    # ---- durable state (models.state) --------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The running jobs and the days, as columns (days as ``date.toordinal()``); the zone
        is configuration."""
        opened, days = self._open, self._days
        recs = list(days.values())
        sums = {k: [r[i] for r in recs] for i, k in enumerate(_SUMS)}
        return {
            "open": {
                "job": strs_out(list(opened)),
                "start": floats_out(v[0] for v in opened.values()),
                "nodes": opt_ints_out([v[1] for v in opened.values()]),
                "cores": opt_ints_out([v[2] for v in opened.values()]),
            },
            "days": {
                "day": ints_out(map(date.toordinal, days)),
                # each day's exact partial sums (add_exact), flat, and how many each day has
                **{k: floats_out(x for p in v for x in p) for k, v in sums.items()},
                **{f"{k}_n": ragged_out(v) for k, v in sums.items()},
                "started": ints_out(r[3] for r in recs),
                "ended": ints_out(r[4] for r in recs),
            },
            "first": _ordinal(self._first),
            "last": _ordinal(self._last),
            "changed": sorted(map(date.toordinal, self._changed)),
            "seen_last": _ordinal(self._seen_last),
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) accumulator with :meth:`snapshot`'s state."""
        o = dict_in(tree["open"])
        jobs = keys_in(o["job"])
        n = len(jobs)
        held = zip(
            floats_in(o["start"], n),
            opt_ints_in(o["nodes"], n),
            opt_ints_in(o["cores"], n),
            strict=True,
        )
        self._open = dict(zip(jobs, held, strict=True))
        t = dict_in(tree["days"])
        days = list(map(_day, ints_in(t["day"])))
        n = len(days)
        sums = [ragged_in(t[f"{k}_n"], floats_in(t[k]), n) for k in _SUMS]
        started, ended = ints_in(t["started"], n), ints_in(t["ended"], n)
        self._days = {
            d: [cpu, node, wall, s, e]
            for d, cpu, node, wall, s, e in zip(days, *sums, started, ended, strict=True)
        }
        if len(self._days) != n or len(self._open) != len(jobs):
            raise StateFormatError("usage state: a day or a job twice")
        self._first = _opt_day(tree["first"])
        self._last = _opt_day(tree["last"])
        self._changed = {_day(int_in(x)) for x in list_in(tree["changed"])}
        self._seen_last = _opt_day(tree["seen_last"])


_SUMS = ("cpu", "node", "wall")  # a day record's partials, in its order


def _ordinal(d: date | None) -> int | None:
    return None if d is None else d.toordinal()


def _day(ordinal: int) -> date:
    try:
        return date.fromordinal(ordinal)
    except (ValueError, OverflowError):
        raise StateFormatError(f"day number {ordinal} is not a date") from None


def _opt_day(x: Any) -> date | None:
    return None if x is None else _day(int_in(x))


def _nan0(x: float | int | None) -> float:
    if x is None:
        return 0.0
    x = float(x)
    return 0.0 if x != x else x
