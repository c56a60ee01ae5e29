"""Short-job penalties for the fairshare ADJUST term (seed 002, Dal Pra, "Adjusting the fairshare
policy to prevent computing power loss", slides "Customize the fairshare formula" and "algorithm").

Every ``interval`` seconds (the seed's 3 minutes) and for each holder (user and group):

- N_s(t): jobs that ended in (t - interval, t] with a wall-clock time below ``threshold``;
- T_s(t): their penalty, "treat short jobs as if running a minimum fixed time": the missing
  wall-clock (``min_runtime`` - wall) times the job's slots (cores, else nodes, else 1);
- A(t) = lam * A(t-1) + (1 - lam) * T_s(t), lam = 0.9 (the seed's dj_stats.py update).

A(t) is the ADJUST value the scheduler's fairshare hook looks up (bsearch on a table sorted by
holder; "if error or not found, returns 0.0"). A holder whose A(t) decays below ``floor`` is
dropped from the table (the hook then returns 0.0 for it), which keeps state bounded by the
holders that were penalised recently plus the running jobs.

The floor is ours, not the seed's (its table grows with every holder ever penalised). Default
1.0 slot-second: A(t) is an average missing wall-clock per 3-minute tick, so 1 slot-second is
1/180 of one slot held idle, and a single 1-second job (A = 0.1 * 599 = 59.9) stays in the
table for 39 ticks (~2 h) before it decays below it. A tick's row whose A(t) is below the floor
shows the A(t) it computed when the holder had short jobs in that tick, and 0.0 (the value the
hook then returns) at the tick the holder is dropped; ``floor`` is an option for exact decay.

Default threshold (600 s, also the charged minimum): the seed calls a job short when its wall
clock is of the order of the slot turnover w ("mins vs hours") and measures E[w] ~ 22 s,
sigma_w ~ 25 s, 0 < w < 60 s. At 10 minutes a job spends at most ~22/(600+22) = 3.5 % of its slot
time in turnover, while a 1-second job of a flood loses ~96 %; so 10 minutes separates
"minutes" from "hours" with the turnover loss well under 5 %. Both numbers are options.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import orjson

from models.records.jobevent import JobEvent
from models.state import StateFormatError
from models.statetree import (
    array_in,
    bool_in,
    bools_out,
    dict_in,
    float_in,
    floats_in,
    floats_out,
    int_in,
    ints_in,
    ints_out,
    keys_in,
    list_in,
    opt_float_in,
    opt_int_in,
    str_in,
    strs_out,
)

DEFAULT_THRESHOLD_S = 600.0
DEFAULT_INTERVAL_S = 180.0
DEFAULT_LAMBDA = 0.9
DEFAULT_FLOOR = 1.0  # slot-seconds: below this A(t) is dropped from the table (hook returns 0.0)

HOLDER_KINDS = ("user", "group")
_SORTED_KINDS = tuple(sorted(HOLDER_KINDS))  # row order: ts, kind, holder
_ROW_ORDER = attrgetter("ts", "holder_kind", "holder")


@dataclass(slots=True)
class ShortJobRow:
    """One holder at one tick t: N_s(t), T_s(t) and A(t)."""

    ts: float
    holder_kind: str
    holder: str
    n_short: int
    penalty_s: float
    adjust: float


class ShortJobPenalty:
    """Streaming N_s / T_s / A per holder. Feed events in time order with :meth:`update`; rows
    come out as ticks close. :meth:`flush` closes every tick up to a time.

    ``history="changes"`` (default) emits a holder's row only at ticks where it had new short
    jobs, and one row with adjust 0.0 at the tick its A(t) decays below ``floor`` (dropped from
    the table); in between A(t) = A(t0) * lam^((t - t0) / interval) exactly, and :meth:`value` /
    :meth:`table` give it. Cost is per short job, not per holder per tick.
    ``history="ticks"`` emits every holder at every tick while it is in the table (for plots;
    on KTH that is ~17 rows per job)."""

    __slots__ = (
        "threshold",
        "min_runtime",
        "interval",
        "lam",
        "floor",
        "history",
        "_start",
        "_pending",
        "_adjust",
        "_drops",
        "_tick",
        "last_tick_ts",
        "unmatched_ends",
        "short_jobs",
        "_log_lam",
    )

    def __init__(
        self,
        threshold: float = DEFAULT_THRESHOLD_S,
        min_runtime: float | None = None,
        interval: float = DEFAULT_INTERVAL_S,
        lam: float = DEFAULT_LAMBDA,
        floor: float = DEFAULT_FLOOR,
        history: str = "changes",
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be > 0")
        if not 0.0 < lam < 1.0:
            raise ValueError("lambda must be in (0, 1)")
        if history not in ("changes", "ticks"):
            raise ValueError("history must be 'changes' or 'ticks'")
        if floor <= 0:
            raise ValueError("floor must be > 0")
        self.threshold = float(threshold)
        self.min_runtime = float(threshold if min_runtime is None else min_runtime)
        if self.min_runtime < self.threshold:
            raise ValueError("min_runtime must be >= threshold")
        self.interval = float(interval)
        self.lam = float(lam)
        self._log_lam = math.log(self.lam)
        self.floor = float(floor)
        self.history = history
        # running job -> start ts
        self._start: dict[str, float] = {}
        # kind -> holder -> [N_s, T_s] in the open interval
        self._pending: dict[str, dict[str, list[Any]]] = {k: {} for k in _SORTED_KINDS}
        # kind -> holder -> [A, k, ...]: A(t) at tick k (ticks mode: k is always the last tick;
        # changes mode: see _close_changes)
        self._adjust: dict[str, dict[str, list[Any]]] = {k: {} for k in _SORTED_KINDS}
        # changes mode: heap of (tick when A falls below floor, kind, holder)
        self._drops: list[tuple[int, str, str]] = []
        self._tick: int | None = None  # the open interval is ((k-1)I, kI]
        self.last_tick_ts: float | None = None
        self.unmatched_ends = 0
        self.short_jobs = 0

    def _drop_tick(self, a: float, k: int) -> int:
        """First tick j > k with a * lam^(j - k) < floor (a >= floor)."""
        lam, floor = self.lam, self.floor
        m = math.floor(math.log(floor / a) / self._log_lam) + 1  # >= 1: log(floor/a) <= 0
        while m > 1 and a * lam ** (m - 1) < floor:
            m -= 1
        while a * lam**m >= floor:
            m += 1
        return k + m

    def _close_changes(self, k: int, out: list[ShortJobRow]) -> None:
        """Cost per holder with new short jobs (and per holder dropped), not per tick.

        Changes-mode entries are [A, k, j, exact]: j is the tick of the holder's one live entry
        in the drop heap, and j <= the drop tick of (A, k), equal when ``exact``. New short
        jobs only raise A, so its drop tick cannot move earlier: the scheduled j stays valid
        (checked: A still >= floor at tick j - 1) and the exact drop tick is computed when j
        comes up, instead of one log / pow and heap entry per update."""
        tick = self._tick
        assert tick is not None
        lam, one_minus, floor, interval = self.lam, 1.0 - self.lam, self.floor, self.interval
        drops = self._drops
        n_out = len(out)
        append = out.append
        t = tick * interval
        for kind in _SORTED_KINDS:
            pending = self._pending[kind]
            if not pending:
                continue
            adjust = self._adjust[kind]
            for holder in sorted(pending):
                n, pen = pending[holder]
                old = adjust.get(holder)
                if old is None:
                    a = one_minus * pen + 0.0
                    if a >= floor:
                        j = self._drop_tick(a, tick)
                        adjust[holder] = [a, tick, j, True]
                        heapq.heappush(drops, (j, kind, holder))
                else:
                    # lam * A(tick - 1), A decayed from its last update
                    a = old[0] * lam ** (tick - old[1]) + one_minus * pen
                    if a >= floor:
                        j = old[2]
                        if j - tick < 2 or a * lam ** (j - 1 - tick) >= floor:
                            old[0], old[1], old[3] = a, tick, False  # j still <= drop tick
                        else:  # only through rounding: schedule the exact drop tick
                            j = self._drop_tick(a, tick)
                            adjust[holder] = [a, tick, j, True]
                            heapq.heappush(drops, (j, kind, holder))
                    else:
                        del adjust[holder]
                append(ShortJobRow(t, kind, holder, n, pen, a))
            pending.clear()
        last = k - 1
        if drops and drops[0][0] <= last:
            n_pending = len(out) - n_out
            heappop, heappush, adjusts = heapq.heappop, heapq.heappush, self._adjust
            while drops and drops[0][0] <= last:
                j, kind, holder = heappop(drops)
                adjust = adjusts[kind]
                cur = adjust.get(holder)
                if cur is None or cur[2] != j:
                    continue  # stale: the holder was dropped or rescheduled since
                if not cur[3]:
                    j_exact = self._drop_tick(cur[0], cur[1])
                    if j_exact != j:  # later: reschedule (popped in order, maybe now)
                        cur[2], cur[3] = j_exact, True
                        heappush(drops, (j_exact, kind, holder))
                        continue
                del adjust[holder]
                append(ShortJobRow(j * interval, kind, holder, 0, 0.0, 0.0))
            if n_pending and len(out) - n_out > n_pending:
                # both runs are sorted by (ts, kind, holder); merge them
                out[n_out:] = sorted(out[n_out:], key=_ROW_ORDER)
        self._tick = k
        self.last_tick_ts = last * interval

    def _close_ticks(self, k: int, out: list[ShortJobRow]) -> None:
        tick = self._tick
        assert tick is not None
        lam, one_minus, floor, interval = self.lam, 1.0 - self.lam, self.floor, self.interval
        append = out.append
        while tick < k:
            if not any(self._adjust.values()) and not any(self._pending.values()):
                tick = k  # nothing to decay: jump
                break
            t = tick * interval
            for kind in _SORTED_KINDS:
                adjust, pending = self._adjust[kind], self._pending[kind]
                for holder in sorted(adjust.keys() | pending.keys()):
                    p = pending.get(holder)
                    if p is None:
                        a = lam * adjust[holder][0]
                        n, pen = 0, 0.0
                    else:
                        n, pen = int(p[0]), p[1]
                        old = adjust.get(holder)
                        a = lam * (old[0] if old is not None else 0.0) + one_minus * pen
                    if a >= floor:
                        adjust[holder] = [a, tick]
                    else:
                        adjust.pop(holder, None)
                        if n == 0:
                            a = 0.0
                    append(ShortJobRow(t, kind, holder, n, pen, a))
                pending.clear()
            tick += 1
        self._tick = tick
        self.last_tick_ts = (k - 1) * interval

    def _close_before(self, k: int, out: list[ShortJobRow]) -> None:
        """Close every tick from the open one up to k-1 (tick k stays open)."""
        if self._tick is None:
            self._tick = k
            return
        if self.history == "ticks":
            self._close_ticks(k, out)
        else:
            self._close_changes(k, out)

    def update(self, events: Iterable[JobEvent]) -> list[ShortJobRow]:
        out: list[ShortJobRow] = []
        start = self._start
        threshold, min_rt, interval = self.threshold, self.min_runtime, self.interval
        p_user, p_group = self._pending["user"], self._pending["group"]
        ceil = math.ceil
        tick = self._tick
        n_short = 0
        for e in events:
            typ = e.type
            if typ == "start":
                start[e.job] = e.ts
            elif typ == "end":
                s = start.pop(e.job, None)
                if s is None:
                    self.unmatched_ends += 1
                    continue
                ts = e.ts
                wall = ts - s
                if wall >= threshold:
                    continue
                k = ceil(ts / interval)
                if tick is None or k > tick:
                    self._close_before(k, out)
                    tick = self._tick
                n_short += 1
                # T_s: the missing wall clock times the job's slots (cores, else nodes, else 1)
                pen = (min_rt - (wall if wall > 0.0 else 0.0)) * (e.cores or e.nodes or 1)
                h = e.user
                if h is not None:
                    p = p_user.get(h)
                    if p is None:
                        p_user[h] = [1, pen]
                    else:
                        p[0] += 1
                        p[1] += pen
                h = e.group
                if h is not None:
                    p = p_group.get(h)
                    if p is None:
                        p_group[h] = [1, pen]
                    else:
                        p[0] += 1
                        p[1] += pen
        self.short_jobs += n_short
        return out

    def advance(self, ts: float) -> list[ShortJobRow]:
        """Close the ticks strictly before ts (an end at ts may still fall in the tick that
        ends at ts); call after each batch so drop rows come out on time."""
        out: list[ShortJobRow] = []
        k = math.ceil(ts / self.interval)
        if self._tick is not None and k > self._tick:
            self._close_before(k, out)
        return out

    def flush(self, until_ts: float) -> list[ShortJobRow]:
        """Close every tick t <= until_ts (its interval is complete)."""
        out: list[ShortJobRow] = []
        k = math.floor(until_ts / self.interval)
        if self._tick is not None and k >= self._tick:
            self._close_before(k + 1, out)
        return out

    def close(self, last_ts: float) -> list[ShortJobRow]:
        """Close every tick up to and including the one ``last_ts`` falls in (end of a trace):
        its last, partly filled tick ``ceil(last_ts / interval) * interval`` is emitted too, so
        the short jobs that ended after the last complete tick are counted."""
        return self.flush(math.ceil(last_ts / self.interval) * self.interval)

    # ---- durable state ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Everything the model holds with its settings, JSON-able (holders as keys);
        :meth:`from_dict` gives it back exactly."""
        return {
            "threshold": self.threshold,
            "min_runtime": self.min_runtime,
            "interval": self.interval,
            "lam": self.lam,
            "floor": self.floor,
            "history": self.history,
            "start": self._start,
            "pending": self._pending,
            "adjust": self._adjust,
            "drops": [list(d) for d in self._drops],
            "tick": self._tick,
            "last_tick_ts": self.last_tick_ts,
            "unmatched_ends": self.unmatched_ends,
            "short_jobs": self.short_jobs,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ShortJobPenalty:
        self = cls(
            float_in(d["threshold"]),
            float_in(d["min_runtime"]),
            float_in(d["interval"]),
            float_in(d["lam"]),
            float_in(d["floor"]),
            str_in(d["history"]),
        )
        self._start = {str_in(j): float_in(t) for j, t in dict_in(d["start"]).items()}
        pending, adjust = dict_in(d["pending"]), dict_in(d["adjust"])
        for k in _SORTED_KINDS:
            self._pending[k] = {str_in(h): _pending_in(v) for h, v in dict_in(pending[k]).items()}
            self._adjust[k] = {str_in(h): self._entry_in(v) for h, v in dict_in(adjust[k]).items()}
        drops = [list_in(x, 3) for x in list_in(d["drops"])]
        self._drops = [(int_in(t), _kind_in(k), str_in(h)) for t, k, h in drops]
        heapq.heapify(self._drops)  # a no-op on a saved heap: the same order of pops
        self._counters_in(d)
        return self

    def _entry_in(self, v: Any) -> list[Any]:
        """An ``_adjust`` entry: [A, k, j, exact] (changes mode), [A, k] (ticks mode)."""
        if self.history == "changes":
            a, k, j, exact = list_in(v, 4)
            return [float_in(a), int_in(k), int_in(j), bool_in(exact)]
        a, k = list_in(v, 2)
        return [float_in(a), int_in(k)]

    def _counters_in(self, d: dict[str, Any]) -> None:
        self._tick = opt_int_in(d["tick"])
        self.last_tick_ts = opt_float_in(d["last_tick_ts"])
        self.unmatched_ends = int_in(d["unmatched_ends"])
        self.short_jobs = int_in(d["short_jobs"])

    def snapshot(self) -> dict[str, Any]:
        """What the model holds, as columns, a tree for :func:`models.state.pack`; its
        settings (threshold, minimum run time, interval, lambda, floor, history mode) come
        from the constructor of the model restored."""
        changes = self.history == "changes"
        adjust: dict[str, Any] = {}
        pending: dict[str, Any] = {}
        for kind in _SORTED_KINDS:
            entries = self._adjust[kind]
            e = list(entries.values())
            adjust[kind] = {
                "holder": strs_out(list(entries)),
                "adjust": floats_out(x[0] for x in e),
                "tick": ints_out(x[1] for x in e),
            }
            if changes:
                adjust[kind]["drop_tick"] = ints_out(x[2] for x in e)
                adjust[kind]["exact"] = bools_out((x[3] for x in e), len(e))
            p = self._pending[kind]
            pending[kind] = {
                "holder": strs_out(list(p)),
                "n_short": ints_out(x[0] for x in p.values()),
                "penalty": floats_out(x[1] for x in p.values()),
            }
        drops = self._drops
        return {
            "start": {"job": strs_out(list(self._start)), "ts": floats_out(self._start.values())},
            "pending": pending,
            "adjust": adjust,
            "drops": {
                "tick": ints_out(x[0] for x in drops),
                "kind": strs_out([x[1] for x in drops]),
                "holder": strs_out([x[2] for x in drops]),
            },
            "tick": self._tick,
            "last_tick_ts": self.last_tick_ts,
            "unmatched_ends": self.unmatched_ends,
            "short_jobs": self.short_jobs,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) model with :meth:`snapshot`'s state."""
        t = dict_in(tree["start"])
        jobs = keys_in(t["job"])
        self._start = dict(zip(jobs, floats_in(t["ts"], len(jobs)), strict=True))
        if len(self._start) != len(jobs):
            raise StateFormatError("short-job state: a job twice")
        pending, adjust = dict_in(tree["pending"]), dict_in(tree["adjust"])
        for kind in _SORTED_KINDS:
            t = dict_in(pending[kind])
            holders = keys_in(t["holder"])
            n = len(holders)
            cols: list[list[Any]] = [ints_in(t["n_short"], n), floats_in(t["penalty"], n)]
            self._pending[kind] = _by_holder(holders, cols)
            t = dict_in(adjust[kind])
            holders = keys_in(t["holder"])
            n = len(holders)
            cols = [floats_in(t["adjust"], n), ints_in(t["tick"], n)]
            if self.history == "changes":
                cols += [ints_in(t["drop_tick"], n), array_in(t["exact"], "b", n).tolist()]
            self._adjust[kind] = _by_holder(holders, cols)
        t = dict_in(tree["drops"])
        ticks = ints_in(t["tick"])
        n = len(ticks)
        kinds = [_kind_in(k) for k in keys_in(t["kind"], n)]
        self._drops = list(zip(ticks, kinds, keys_in(t["holder"], n), strict=True))
        heapq.heapify(self._drops)  # a no-op on a saved heap: the same order of pops
        self._counters_in(tree)

    def _value(self, entry: list[float]) -> float:
        if self.last_tick_ts is None:
            return 0.0
        last = round(self.last_tick_ts / self.interval)
        a = entry[0] * self.lam ** (last - entry[1]) if last > entry[1] else entry[0]
        return a if a >= self.floor else 0.0

    def table(self, kind: str = "user") -> dict[str, float]:
        """The lookup table holder -> A(t) at the last closed tick, for one holder kind."""
        out = {}
        for h, entry in self._adjust.get(kind, {}).items():
            v = self._value(entry)
            if v > 0.0:
                out[h] = v
        return out

    def tables(self) -> dict[str, dict[str, float]]:
        """The lookup tables of every holder kind at the last closed tick."""
        return {k: self.table(k) for k in HOLDER_KINDS}

    def value(self, kind: str, holder: str) -> float:
        """What the hook returns: A(t) at the last closed tick, 0.0 when not found."""
        entry = self._adjust.get(kind, {}).get(holder)
        return 0.0 if entry is None else self._value(entry)


def _by_holder(holders: list[str], cols: list[list[Any]]) -> dict[str, list[Any]]:
    """holder -> [its value in each column]."""
    out = {h: list(x) for h, x in zip(holders, zip(*cols, strict=True), strict=True)}
    if len(out) != len(holders):
        raise StateFormatError("short-job state: a holder twice")
    return out


def _pending_in(v: Any) -> list[Any]:
    """A ``_pending`` entry: [N_s, T_s]."""
    n, pen = list_in(v, 2)
    return [int_in(n), float_in(pen)]


def _kind_in(k: Any) -> str:
    if k not in _SORTED_KINDS:
        raise StateFormatError(f"short-job state: holder kind {k!r}")
    return str(k)


def _bkey(s: str) -> bytes:
    return s.encode("utf-8")


def lookup_table_text(table: dict[str, float], kind: str | None = None) -> str:
    """The lookup table as text sorted by holder in byte order (what a C bsearch with strcmp
    expects): ``holder<TAB>value`` per line, or ``kind<TAB>holder<TAB>value`` when kind given."""
    lines = []
    for h in sorted(table, key=_bkey):
        v = f"{table[h]:.3f}"
        lines.append(f"{kind}\t{h}\t{v}\n" if kind is not None else f"{h}\t{v}\n")
    return "".join(lines)


def adjust_table_tsv(tables: dict[str, dict[str, float]]) -> str:
    """The scheduler-facing ADJUST table of both holder kinds (``fairshare_adjust.tsv``):
    ``kind<TAB>holder<TAB>value`` lines, the group rows then the user rows, each sorted by
    holder in byte order."""
    return "".join(lookup_table_text(tables.get(k, {}), k) for k in ("group", "user"))


def lookup_table_json(tables: dict[str, dict[str, float]], ts: float | None) -> bytes:
    """{"ts": t, "user": {holder: A, ...}, "group": {...}} with holders sorted."""
    doc: dict[str, object] = {"ts": ts}
    for kind, table in tables.items():
        doc[kind] = {h: round(table[h], 6) for h in sorted(table, key=_bkey)}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)
