"""Capability use (seed 004, Ang et al., "Red Storm Capability Computing Queuing Policy", CUG 2005).

- CUP40 = node-hours of large jobs / (node-hours of large jobs + node-hours of small jobs), a
  large job using 40 % or more of the section ("ASC Policy Directive": "jobs that run on 40% or
  more of the system"; "Large" queue: "at least 40% of the section's nodes"). The minimum large
  size is the ceiling of 0.40 x section: 1,076 of 2,688 and 4,148 of 10,368, where the seed's
  "40% Goal Nodes" column prints 1,075 and 4,147 (0.4 x N truncated: 1,075 nodes are 39.99 % of
  2,688, not "40 % or more"), and 3,072 of 7,680 as in the column. On 46 nodes that is 19
  (41.3 %), not 18 (39.1 %).
- Modified CUP ("Suggest a modified CUP40 Metric"): the node-hours of backfilled jobs are taken
  out of the denominator. Only small backfilled jobs are taken out (the seed's premise is that
  backfill jobs are small); a large backfilled job stays in both terms, so the ratio stays <= 1.
  It needs a source that records which jobs were backfilled ("This would require additional
  accounting capabilities to track node-hours used by backfill jobs"): without one (SWF, sacct
  without ``Flags``) the backfill node-hours and the modified CUP are unknown (None), never 0.
  When the source has the flag, a job without it counts as not backfilled.
- P_CUP ("Concluding comments"): if CUP40 < goal,
  P_CUP = (goal - CUP40) * (JobSize / (0.40 * SectionSize))^p * standard fair-share factor.
  Per day, :func:`p_cup_factor` is its day term (0.80 - CUP40 while CUP40 < 0.80; the
  standard factor applies when the goal is met).
- Red/Black allocation shares ("Red Storm Resource Allocation Parameters"): f_R and the
  per-institution fractions of each section (:func:`section_shares`, the targets); per day, the
  node-hours the Red and the Black section delivered and the Red share, the measured f_R, when
  the source records partitions and the site says which of them are the Red section (every
  other partition is Black; a job without a partition counts in neither).

Node-hours of a job are split over the days it spans and counted when the job ends (a day's
figures are final once no job that ran in it is still running).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

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
    opt_floats_in,
    opt_floats_out,
    strs_in,
    strs_out,
)

DEFAULT_FRACTION = 0.40
DEFAULT_GOAL = 0.80


def min_large_nodes(section_nodes: int, fraction: float = DEFAULT_FRACTION) -> int:
    """Smallest node count of a large job, one using ``fraction`` or more of the section: the
    ceiling of fraction x section (0.4 x 46 = 18.4 -> 19). The product is rounded to 9 decimals
    first so that a binary float just above an integer (0.4 x 7680) does not add a node."""
    return max(1, math.ceil(round(fraction * section_nodes, 9)))


def cup(large_nh: float, small_nh: float) -> float | None:
    tot = large_nh + small_nh
    return large_nh / tot if tot > 0 else None


def cup_modified(large_nh: float, small_nh: float, backfill_nh: float | None) -> float | None:
    """None when the backfill node-hours are unknown (the source has no backfill flag)."""
    if backfill_nh is None:
        return None
    tot = large_nh + small_nh - backfill_nh
    return large_nh / tot if tot > 0 else None


def p_cup(
    cup40: float,
    job_nodes: int,
    section_nodes: int,
    fairshare_factor: float,
    p: float = 1.0,
    goal: float = DEFAULT_GOAL,
    fraction: float = DEFAULT_FRACTION,
) -> float:
    """Capability-weighted fair-share priority; the standard factor when CUP40 >= goal."""
    if cup40 >= goal:
        return fairshare_factor
    # float ** float is typed Any (a negative base gives a complex); the ratio is >= 0 here
    scale = cast(float, (job_nodes / (fraction * section_nodes)) ** p)
    return (goal - cup40) * scale * fairshare_factor


def p_cup_factor(cup40: float | None, goal: float = DEFAULT_GOAL) -> float | None:
    """The day term of P_CUP, goal - CUP40, while CUP40 < goal: P_CUP = p_cup_factor x
    (JobSize / (0.40 x SectionSize))^p x the standard fair-share factor (:func:`p_cup`). None
    when the goal is met (the standard factor applies) or CUP40 is unknown."""
    if cup40 is None or cup40 >= goal:
        return None
    return goal - cup40


def share(part: float | None, other: float | None) -> float | None:
    """part / (part + other); None when either is unknown or both are 0."""
    if part is None or other is None or part + other <= 0:
        return None
    return part / (part + other)


@dataclass(slots=True, frozen=True)
class SectionShares:
    f_red: float
    f_black: float
    red: dict[str, float]  # institution -> fraction of the Red section's node-hours
    black: dict[str, float]


def section_shares(shares: Mapping[str, float], red_fraction: Mapping[str, float]) -> SectionShares:
    """f_R = sum_i R_i * sh_i; f_{i,R} = R_i sh_i / f_R; f_{i,B} = (1 - R_i) sh_i / (1 - f_R)."""
    f_r = math.fsum(red_fraction.get(k, 0.0) * v for k, v in shares.items())
    f_b = 1.0 - f_r
    red = {k: red_fraction.get(k, 0.0) * v / f_r for k, v in shares.items()} if f_r > 0 else {}
    black = (
        {k: (1.0 - red_fraction.get(k, 0.0)) * v / f_b for k, v in shares.items()}
        if f_b > 0
        else {}
    )
    return SectionShares(f_r, f_b, red, black)


class DayCalendar:
    """Calendar days of a time zone: ``span(ts) -> (day, start_ts, end_ts)``, cached."""

    __slots__ = ("tz", "_utc", "_lo", "_hi", "_day")

    def __init__(self, tz: str = "UTC") -> None:
        self.tz = ZoneInfo(tz)
        self._utc = tz in ("UTC", "Etc/UTC")
        self._lo = 1.0
        self._hi = 0.0
        self._day = date(1970, 1, 1)  # not used before span() sets [lo, hi) (empty until then)

    def span(self, ts: float) -> tuple[date, float, float]:
        if self._lo <= ts < self._hi:
            return self._day, self._lo, self._hi
        if self._utc:
            k = math.floor(ts / 86400.0)
            lo, hi = k * 86400.0, (k + 1) * 86400.0
            d = date(1970, 1, 1) + timedelta(days=k)
        else:
            d = datetime.fromtimestamp(ts, self.tz).date()
            lo = datetime(d.year, d.month, d.day, tzinfo=self.tz).timestamp()
            n = d + timedelta(days=1)
            hi = datetime(n.year, n.month, n.day, tzinfo=self.tz).timestamp()
        self._lo, self._hi, self._day = lo, hi, d
        return d, lo, hi

    def split(self, start: float, end: float) -> list[tuple[date, float]]:
        """(day, seconds) pieces of [start, end)."""
        out = []
        t = start
        while t < end:
            d, _lo, hi = self.span(t)
            e = hi if hi < end else end
            out.append((d, e - t))
            t = e
        return out


@dataclass(slots=True, frozen=True)
class CapabilityDay:
    day: date
    large_node_hours: float
    small_node_hours: float
    backfill_node_hours: float | None  # None: the source does not say which jobs backfilled
    # None: Red/Black sections unknown (no partitions in the source, or no Red partitions given)
    red_node_hours: float | None = None
    black_node_hours: float | None = None

    @property
    def cup40(self) -> float | None:
        return cup(self.large_node_hours, self.small_node_hours)

    @property
    def red_share(self) -> float | None:
        """The measured f_R: Red node-hours / (Red + Black) node-hours."""
        return share(self.red_node_hours, self.black_node_hours)

    @property
    def black_share(self) -> float | None:
        return share(self.black_node_hours, self.red_node_hours)

    @property
    def p_cup_factor(self) -> float | None:
        return p_cup_factor(self.cup40)

    @property
    def cup40_modified(self) -> float | None:
        return cup_modified(self.large_node_hours, self.small_node_hours, self.backfill_node_hours)


def cup_over(days: Iterable[CapabilityDay]) -> tuple[float | None, float | None]:
    """CUP40 and modified CUP over any range of days (ratio of sums, not mean of ratios); the
    modified CUP is None when any day's backfill node-hours are unknown."""
    lg = sm = 0.0
    bf: float | None = 0.0
    for d in days:
        lg += d.large_node_hours
        sm += d.small_node_hours
        bf = None if bf is None or d.backfill_node_hours is None else bf + d.backfill_node_hours
    return cup(lg, sm), cup_modified(lg, sm, bf)


class CapabilityUse:
    """Daily large / small / backfill node-hours of ended jobs.

    ``backfill_flags``: whether the source records which jobs were backfilled (sacct ``Flags``,
    the simulator's events). False: every day's backfill node-hours and modified CUP are None.
    ``flagged_jobs`` / ``unflagged_jobs`` count the ended jobs with and without a flag.
    ``red_partitions``: the partitions of the Red section (every other partition is Black);
    None: Red/Black unknown, every day's Red and Black node-hours are None.
    ``jobs_without_partition`` counts the ended jobs that count in neither section."""

    __slots__ = (
        "section_nodes",
        "fraction",
        "min_large",
        "backfill_flags",
        "cal",
        "_start",
        "_days",
        "unmatched_ends",
        "flagged_jobs",
        "unflagged_jobs",
        "red_partitions",
        "jobs_without_partition",
    )

    def __init__(
        self,
        section_nodes: int,
        fraction: float = DEFAULT_FRACTION,
        tz: str = "UTC",
        backfill_flags: bool = True,
        red_partitions: Iterable[str] | None = None,
    ) -> None:
        if section_nodes <= 0:
            raise ValueError("section_nodes must be > 0")
        self.section_nodes = section_nodes
        self.fraction = fraction
        self.min_large = min_large_nodes(section_nodes, fraction)
        self.backfill_flags = backfill_flags
        self.cal = DayCalendar(tz)
        self.red_partitions = None if red_partitions is None else frozenset(red_partitions)
        # job -> (start, nodes, backfill flag or None, partition or None)
        self._start: dict[str, tuple[float, int, bool | None, str | None]] = {}
        # day -> [large_s, small_s, backfill_s, red_s, black_s] (node-seconds)
        self._days: dict[date, list[float]] = {}
        self.unmatched_ends = 0
        self.flagged_jobs = 0
        self.unflagged_jobs = 0
        self.jobs_without_partition = 0

    def update(self, events: Iterable[JobEvent]) -> None:
        start, days, cal, min_large = self._start, self._days, self.cal, self.min_large
        red = self.red_partitions
        for e in events:
            typ = e.type
            if typ == "start":
                start[e.job] = (e.ts, e.nodes or 1, e.backfill, e.partition)
            elif typ == "end":
                s = start.pop(e.job, None)
                if s is None:
                    self.unmatched_ends += 1
                    continue
                t0, nodes, bf, part = s
                if e.backfill is not None:
                    bf = e.backfill
                if bf is None:
                    self.unflagged_jobs += 1
                else:
                    self.flagged_jobs += 1
                part = e.partition or part
                section = -1  # index of the job's section in the day's sums; -1: neither
                if red is not None:
                    if part:
                        section = 3 if part in red else 4
                    else:
                        self.jobs_without_partition += 1
                large = nodes >= min_large
                for d, sec in cal.split(t0, e.ts):
                    acc = days.get(d)
                    if acc is None:
                        acc = days[d] = [0.0, 0.0, 0.0, 0.0, 0.0]
                    ns = nodes * sec
                    if large:
                        acc[0] += ns
                    else:
                        acc[1] += ns
                        if bf:
                            acc[2] += ns
                    if section >= 0:
                        acc[section] += ns

    # ---- durable state (the live worker's snapshot) ----------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The running jobs, the open days' node-second sums and the counters as a state tree
        of columns (models.state); the section, fraction, zone and partitions are the
        constructor's. A day is its proleptic ordinal, with its 5 sums (``sums``: 5 a day); a
        backfill flag -1 (unknown), 0 or 1."""
        st = list(self._start.values())
        return {
            "start": {
                "job": strs_out(list(self._start)),
                "ts": floats_out(s[0] for s in st),
                "nodes": ints_out(s[1] for s in st),
                "backfill": ints_out(-1 if s[2] is None else int(s[2]) for s in st),
                "partition": strs_out([s[3] for s in st]),
            },
            "days": ints_out(d.toordinal() for d in self._days),
            "sums": floats_out(x for acc in self._days.values() for x in acc),
            "unmatched_ends": self.unmatched_ends,
            "flagged_jobs": self.flagged_jobs,
            "unflagged_jobs": self.unflagged_jobs,
            "jobs_without_partition": self.jobs_without_partition,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) model, made with the snapshot's settings, from :meth:`snapshot`'s
        tree; a tree of another shape raises :class:`~models.state.StateFormatError`."""
        s = dict_in(tree["start"])
        jobs = keys_in(s["job"])
        n = len(jobs)
        flags: list[bool | None] = []
        for f in ints_in(s["backfill"], n):
            if f not in (-1, 0, 1):
                raise StateFormatError(f"capability state: backfill flag {f}")
            flags.append(None if f < 0 else f == 1)
        rows = zip(
            floats_in(s["ts"], n),
            ints_in(s["nodes"], n),
            flags,
            strs_in(s["partition"], n, none=True),
            strict=True,
        )
        start = dict(zip(jobs, rows, strict=True))
        ordinals = ints_in(tree["days"])
        sums = floats_in(tree["sums"], 5 * len(ordinals))
        days = {d: sums[5 * i : 5 * i + 5] for i, d in enumerate(_dates(ordinals))}
        if len(start) != n or len(days) != len(ordinals):
            raise StateFormatError("capability state: a job or a day twice")
        unmatched, flagged = int_in(tree["unmatched_ends"]), int_in(tree["flagged_jobs"])
        unflagged = int_in(tree["unflagged_jobs"])
        no_partition = int_in(tree["jobs_without_partition"])
        self._start, self._days = start, days
        self.unmatched_ends, self.flagged_jobs = unmatched, flagged
        self.unflagged_jobs, self.jobs_without_partition = unflagged, no_partition

    def flush(self, until_ts: float, final: bool = False) -> list[CapabilityDay]:
        """Days that are complete: ended by until_ts and with no job that started before their
        end still running (all days when final)."""
        if final:
            limit = math.inf
        else:
            limit = until_ts
            if self._start:
                limit = min(limit, min(s[0] for s in self._start.values()))
        out = []
        for d in sorted(self._days):
            _d, _lo, hi = self.cal.span(self._day_ts(d))
            if hi > limit:
                break
            acc = self._days.pop(d)
            bf_nh = acc[2] / 3600.0 if self.backfill_flags else None
            known = self.red_partitions is not None
            red_nh = acc[3] / 3600.0 if known else None
            black_nh = acc[4] / 3600.0 if known else None
            out.append(CapabilityDay(d, acc[0] / 3600.0, acc[1] / 3600.0, bf_nh, red_nh, black_nh))
        return out

    def _day_ts(self, d: date) -> float:
        return datetime(d.year, d.month, d.day, 12, tzinfo=self.cal.tz).timestamp()


def days_snapshot(days: Sequence[CapabilityDay]) -> dict[str, Any]:
    """Closed days as a state tree of columns (models.state); a day is its proleptic ordinal."""
    return {
        "day": ints_out(d.day.toordinal() for d in days),
        "large": floats_out(d.large_node_hours for d in days),
        "small": floats_out(d.small_node_hours for d in days),
        "backfill": opt_floats_out([d.backfill_node_hours for d in days]),
        "red": opt_floats_out([d.red_node_hours for d in days]),
        "black": opt_floats_out([d.black_node_hours for d in days]),
    }


def days_restore(tree: Any) -> list[CapabilityDay]:
    """The days of :func:`days_snapshot`'s tree; a tree of another shape raises
    :class:`~models.state.StateFormatError`."""
    t = dict_in(tree)
    ordinals = ints_in(t["day"])
    n = len(ordinals)
    return [
        CapabilityDay(*row)
        for row in zip(
            _dates(ordinals),
            floats_in(t["large"], n),
            floats_in(t["small"], n),
            opt_floats_in(t["backfill"], n),
            opt_floats_in(t["red"], n),
            opt_floats_in(t["black"], n),
            strict=True,
        )
    ]


def _dates(ordinals: list[int]) -> list[date]:
    try:
        return [date.fromordinal(k) for k in ordinals]
    except (ValueError, OverflowError) as e:
        raise StateFormatError(f"capability state: a day out of range ({e})") from None
