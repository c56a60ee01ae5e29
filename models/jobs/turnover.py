"""Slot turnover (seed 002, Dal Pra, slides "Short jobs and Unusable cputime" and "Estimating w").

w is the turnover time between consecutive jobs on a computing slot: "during this time the slot
is unusable". Over a window T the average number of unusable slots is U = (1/T) * sum_n w_n. The
seed measures "time to fill latest slot": 0 < w < 60 s, E[w] ~ 22 s, sigma_w ~ 25 s on 16-slot
worker nodes, on a farm whose queue is never empty.

A slot is unusable only while work waits for it: a job pending that could use the slot. The
gaps a starting job ends (release r of each slot it refills, up to its start t) are split at
ready = max(the job's submit time, the latest release among its slots): w = t - ready is
turnover (the job was queued and had all its slots, the seed's "time to fill latest slot"),
ready - r is idle (an empty queue, or a wider job waiting for its other slots, which is drain
in seed 000's sense, not turnover). turnover + idle = the gaps, per window and in total. When
the job's submit time is unknown (a source without submit events) only the latest-slot rule
applies (counted in ``refills_without_submit``).

Slots are tracked per node when the job's node list is known (``cores / len(node_list)`` slots per
node when cores are known, else one slot per node), and in one machine-wide pool ("*") when it is
not (SWF traces): the machine then acts as one node with all its slots. Freed slots are refilled
latest-first (the seed's "latest slot"). A gap longer than ``max_gap`` is not split: the slot is
forgotten (a hole in the data or a long idle stretch) and the gap is counted in ``idle_gaps`` and
its slot-seconds in ``idle_long_s``, not in the windows, U or the histogram. Each gap's two parts
are clipped into the windows they span.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from models.jobs.merge import events_in, events_out
from models.records.jobevent import JobEvent
from models.statetree import (
    by_key,
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
    ragged_in,
    ragged_out,
    strs_out,
)

DEFAULT_WINDOW_S = 3600.0
DEFAULT_MAX_GAP_S = 3600.0
DEFAULT_MAX_STACK = 64  # freed-slot runs remembered per node (oldest forgotten first)
# Histogram edges of w in seconds (last bin open-ended up to max_gap).
HIST_EDGES: tuple[float, ...] = (
    0.0,
    1.0,
    2.0,
    5.0,
    10.0,
    15.0,
    20.0,
    25.0,
    30.0,
    45.0,
    60.0,
    90.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
)
MACHINE_POOL = "*"
_MACHINE = (MACHINE_POOL,)


@dataclass(slots=True)
class TurnoverRow:
    """One window [start, end): gaps that ended (slot refilled) in it, turnover and idle
    slot-seconds clipped to it, U = sum_w / (end - start) and idle slots = idle / (end - start)."""

    start: float
    end: float
    n_gaps: int
    sum_w: float
    unusable_slots: float
    idle_s: float = 0.0
    idle_slots: float = 0.0


class SlotTurnover:
    __slots__ = (
        "window",
        "max_gap",
        "max_stack",
        "edges",
        "counts",
        "_alloc",
        "_free",
        "_win",
        "_next_win",
        "n",
        "sum_w",
        "sum_w2",
        "idle_gaps",
        "idle_s",
        "idle_long_s",
        "refills_without_submit",
        "unmatched_ends",
        "_submit",
        "_defer",
        "_cur",
    )

    def __init__(
        self,
        window: float = DEFAULT_WINDOW_S,
        max_gap: float = DEFAULT_MAX_GAP_S,
        max_stack: int = DEFAULT_MAX_STACK,
        edges: tuple[float, ...] = HIST_EDGES,
    ) -> None:
        if window <= 0 or max_gap < 0:
            raise ValueError("window must be > 0 and max_gap >= 0")
        self.window = float(window)
        self.max_gap = float(max_gap)
        self.max_stack = int(max_stack)
        self.edges = tuple(float(x) for x in edges)
        self.counts = [0] * len(self.edges)  # bin i: edges[i] <= w < edges[i+1] (last: >=)
        self._alloc: dict[str, tuple[tuple[str, ...], int]] = {}  # job -> (pools, slots/pool)
        self._free: dict[str, list[list[float]]] = {}  # pool -> stack of [release_ts, count]
        self._win: dict[int, list[float]] = {}  # window index -> [n_gaps, sum_w, idle_s]
        self._next_win: int | None = None  # first window not yet emitted
        self.n = 0
        self.sum_w = 0.0
        self.sum_w2 = 0.0
        self.idle_gaps = 0
        self.idle_s = 0.0  # idle slot-seconds of the gaps up to max_gap (empty queue)
        self.idle_long_s = 0.0  # slot-seconds of the gaps longer than max_gap
        self.refills_without_submit = 0
        self.unmatched_ends = 0
        self._submit: dict[str, float] = {}  # queued job -> submit time
        self._defer: dict[str, JobEvent] = {}  # starts at the current instant, applied last
        self._cur: float | None = None

    @staticmethod
    def _pools(e: JobEvent) -> tuple[tuple[str, ...], int]:
        """(pools, slots per pool) a job holds: its nodes, else the machine pool."""
        nl = e.node_list
        if nl:
            per = (e.cores // len(nl)) if e.cores else 1
            return nl, per if per > 0 else 1
        c = e.cores or e.nodes or 1
        return _MACHINE, c

    def _clip(self, release: float, ts: float, count: int, col: int = 1) -> None:
        """Add the seconds of [release, ts) to column col (1 turnover, 2 idle) of each window
        they span."""
        win, W = self._win, self.window
        k, k_end = int(release // W), int(ts // W)
        while k <= k_end:
            lo = max(release, k * W)
            hi = min(ts, (k + 1) * W)
            if hi > lo:
                s = win.get(k)
                if s is None:
                    s = win[k] = [0, 0.0, 0.0]
                s[col] += (hi - lo) * count
            k += 1

    def _start_jobs(self, starts: Iterable[JobEvent]) -> None:
        """Allocate starting jobs, refilling freed slots latest-first. A job's refills are
        gaps [release, start); the job could use its slots from ready = max(its submit, the
        latest of their releases) (the seed's "latest slot"): w = start - ready is turnover,
        counted in the totals, the histogram and the window the gap ends in, and
        ready - release is idle (their seconds clipped into the windows they span)."""
        alloc, free, max_gap, pools_of = self._alloc, self._free, self.max_gap, self._pools
        edges, counts, win, W = self.edges, self.counts, self._win, self.window
        submits = self._submit
        for e in starts:
            ts = e.ts
            sub = submits.pop(e.job, None)
            pools, per = alloc[e.job] = pools_of(e)
            taken: list[tuple[float, int]] = []  # (release, slots) refilled by this job
            ready = -math.inf  # the latest release refilled
            count = 0  # slots refilled
            for p in pools:
                stack = free.get(p)
                if not stack:
                    continue
                need: float = per  # the stacks hold [release_ts, count] as list[float]
                while need and stack:
                    run = stack[-1]
                    release = run[0]
                    if ts - release > max_gap:
                        # latest-first: everything below is older still
                        self.idle_gaps += int(sum(r[1] for r in stack))
                        self.idle_long_s += sum((ts - r[0]) * r[1] for r in stack)
                        stack.clear()
                        break
                    take = run[1] if run[1] < need else need
                    taken.append((release, int(take)))
                    count += int(take)
                    if release > ready:
                        ready = release
                    need -= take
                    run[1] -= take
                    if run[1] <= 0:
                        stack.pop()
            if not taken:
                continue
            if sub is None:
                self.refills_without_submit += count
            elif sub > ready:
                ready = sub if sub < ts else ts
            w = ts - ready
            k_end = int(ts // W)
            slot = win.get(k_end)
            if slot is None:
                slot = win[k_end] = [0, 0.0, 0.0]
            self.n += count
            self.sum_w += w * count
            self.sum_w2 += w * w * count
            i = bisect_right(edges, w) - 1
            counts[i if i > 0 else 0] += count
            slot[0] += count
            if int(ready // W) == k_end:
                slot[1] += w * count
            else:
                self._clip(ready, ts, count, 1)
            for release, c in taken:
                idle = ready - release
                if idle > 0.0:
                    self.idle_s += idle * c
                    if int(release // W) == int(ready // W):
                        s = win.get(int(ready // W))
                        if s is None:
                            s = win[int(ready // W)] = [0, 0.0, 0.0]
                        s[2] += idle * c
                    else:
                        self._clip(release, ready, c, 2)

    def _run_deferred(self) -> None:
        d = self._defer
        if d:
            self._start_jobs(d.values())
            d.clear()

    def update(self, events: Iterable[JobEvent]) -> list[TurnoverRow]:
        """Starts at one instant are applied after the ends at that instant (events sort
        start < end at equal times), so a slot freed and refilled at once has w = 0. Submit
        events give the time from which a job waits for a slot."""
        alloc, free, max_stack, defer = self._alloc, self._free, self.max_stack, self._defer
        n, sum_w, sum_w2 = self.n, self.sum_w, self.sum_w2
        cur = self._cur
        last_ts = None
        for e in events:
            typ = e.type
            if typ != "start" and typ != "end":
                if typ == "submit":
                    self._submit.setdefault(e.job, e.ts)
                continue
            ts = e.ts
            if ts != cur and defer:
                # a new instant: apply the starts of the previous one (after its ends)
                self.n, self.sum_w, self.sum_w2 = n, sum_w, sum_w2
                self._start_jobs(defer.values())
                n, sum_w, sum_w2 = self.n, self.sum_w, self.sum_w2
                defer.clear()
            cur = ts
            last_ts = ts
            if typ == "start":
                defer[e.job] = e
                continue
            a = alloc.pop(e.job, None)
            if a is None:
                d = defer.pop(e.job, None)
                if d is None:
                    self.unmatched_ends += 1
                    self._submit.pop(e.job, None)  # ended (cancelled) without a start
                    continue
                self.n, self.sum_w, self.sum_w2 = n, sum_w, sum_w2
                self._start_jobs((d,))  # started and ended at this instant
                n, sum_w, sum_w2 = self.n, self.sum_w, self.sum_w2
                a = alloc.pop(e.job)
            pools, per = a
            for p in pools:
                stack = free.get(p)
                if stack is None:
                    free[p] = [[ts, per]]
                    continue
                if stack and stack[-1][0] == ts:
                    stack[-1][1] += per
                else:
                    stack.append([ts, per])
                    if len(stack) > max_stack:
                        del stack[0]
        self.n, self.sum_w, self.sum_w2 = n, sum_w, sum_w2
        self._cur = cur
        if last_ts is None:
            return []
        # a window can still receive clipped seconds from gaps up to max_gap long
        return self._emit(last_ts - self.max_gap)

    def _emit(self, until_ts: float) -> list[TurnoverRow]:
        """Emit complete windows with end <= until_ts, contiguously from the first one."""
        win = self._win
        if not win and self._next_win is None:
            return []
        W = self.window
        last = math.floor(until_ts / W) - 1  # last window whose end <= until_ts
        if self._next_win is None:
            # fixed only once something is emitted: a later gap may still reach further back
            if min(win) > last:
                return []
            self._next_win = min(win)
        out: list[TurnoverRow] = []
        k = self._next_win
        while k <= last:
            s = win.pop(k, None)
            if s is None:
                out.append(TurnoverRow(k * W, (k + 1) * W, 0, 0.0, 0.0, 0.0, 0.0))
            else:
                out.append(
                    TurnoverRow(k * W, (k + 1) * W, int(s[0]), s[1], s[1] / W, s[2], s[2] / W)
                )
            k += 1
        self._next_win = k
        return out

    def flush(self, until_ts: float) -> list[TurnoverRow]:
        """Emit every window ending at or before until_ts (call at the end of a replay)."""
        self._run_deferred()
        return self._emit(until_ts)

    @property
    def mean_w(self) -> float | None:
        return self.sum_w / self.n if self.n else None

    @property
    def std_w(self) -> float | None:
        if self.n < 2:
            return None
        var = (self.sum_w2 - self.sum_w * self.sum_w / self.n) / (self.n - 1)
        return math.sqrt(var) if var > 0 else 0.0

    # ---- durable state (models.state) --------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """What the model holds, as columns, a tree for :func:`models.state.pack`; its
        settings (window, max gap, stack depth, histogram edges) come from the constructor of
        the model restored."""
        alloc, free, win = self._alloc, self._free, self._win
        pools = [a[0] for a in alloc.values()]
        stacks = list(free.values())
        runs = [r for st in stacks for r in st]
        w = list(win.values())
        return {
            "counts": list(self.counts),
            "alloc": {
                "job": strs_out(list(alloc)),
                "per": ints_out(a[1] for a in alloc.values()),
                "pools": ragged_out(pools),
                "pool": strs_out([p for ps in pools for p in ps]),
            },
            "free": {
                "pool": strs_out(list(free)),
                "runs": ragged_out(stacks),
                "release": floats_out(r[0] for r in runs),
                "slots": ints_out(int(r[1]) for r in runs),  # whole slots, typed as floats
            },
            "windows": {
                "window": ints_out(win),
                "n_gaps": ints_out(int(x[0]) for x in w),
                "turnover_s": floats_out(x[1] for x in w),
                "idle_s": floats_out(x[2] for x in w),
            },
            "next_window": self._next_win,
            "n": self.n,
            "sum_w": self.sum_w,
            "sum_w2": self.sum_w2,
            "idle_gaps": self.idle_gaps,
            "idle_s": self.idle_s,
            "idle_long_s": self.idle_long_s,
            "refills_without_submit": self.refills_without_submit,
            "unmatched_ends": self.unmatched_ends,
            "submit": {
                "job": strs_out(list(self._submit)),
                "ts": floats_out(self._submit.values()),
            },
            "deferred": events_out(list(self._defer.values())),
            "cur": self._cur,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) model with :meth:`snapshot`'s state."""
        self.counts = [int_in(c) for c in list_in(tree["counts"], len(self.edges))]
        t = dict_in(tree["alloc"])
        jobs = keys_in(t["job"])
        n = len(jobs)
        pools = ragged_in(t["pools"], tuple(keys_in(t["pool"])), n)
        held = zip(pools, ints_in(t["per"], n), strict=True)
        self._alloc = by_key(jobs, held, "turnover state")
        t = dict_in(tree["free"])
        names = keys_in(t["pool"])
        n = len(names)
        release = floats_in(t["release"])
        runs = list(map(list, zip(release, ints_in(t["slots"], len(release)), strict=True)))
        self._free = by_key(names, ragged_in(t["runs"], runs, n), "turnover state")
        t = dict_in(tree["windows"])
        k = ints_in(t["window"])
        n = len(k)
        cols = (ints_in(t["n_gaps"], n), floats_in(t["turnover_s"], n), floats_in(t["idle_s"], n))
        self._win = by_key(k, map(list, zip(*cols, strict=True)), "turnover state")
        self._next_win = opt_int_in(tree["next_window"])
        self.n = int_in(tree["n"])
        self.sum_w = float_in(tree["sum_w"])
        self.sum_w2 = float_in(tree["sum_w2"])
        self.idle_gaps = int_in(tree["idle_gaps"])
        self.idle_s = float_in(tree["idle_s"])
        self.idle_long_s = float_in(tree["idle_long_s"])
        self.refills_without_submit = int_in(tree["refills_without_submit"])
        self.unmatched_ends = int_in(tree["unmatched_ends"])
        t = dict_in(tree["submit"])
        jobs = keys_in(t["job"])
        self._submit = by_key(jobs, floats_in(t["ts"], len(jobs)), "turnover state")
        deferred = events_in(tree["deferred"])
        self._defer = by_key([e.job for e in deferred], deferred, "turnover state")
        self._cur = opt_float_in(tree["cur"])

    def histogram(self) -> list[tuple[float, float, int]]:
        """(lo, hi, count) per bin below max_gap; the last bin runs to max_gap."""
        e = self.edges
        out = []
        for i, lo in enumerate(e):
            if lo >= self.max_gap and i > 0:
                break
            hi = e[i + 1] if i + 1 < len(e) else math.inf
            out.append((lo, min(hi, self.max_gap) if self.max_gap > lo else hi, self.counts[i]))
        return out
