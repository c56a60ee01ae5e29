"""Fair-share usage with continuous half-life decay (seed 004, Ang et al., "PBS Fair Share
Algorithm" and "Concluding comments").

Node-hours are accumulated per user (userID) and per institution (account). Instead of halving all
totals once per half-life (PBS's "crude" way), usage decays continuously: a node-hour used at time
tau weighs 2^(-(t - tau) / h) at time t (the seed's "more frequent and accurate half-life decay").
A job is charged when it ends with the exact decayed integral of its run:

    nodes / 3600 * (h / ln 2) * (1 - 2^(-(end - start) / h))   node-hours, valued at its end,

which tends to nodes x hours for runs much shorter than h. Jobs that failed on node faults
(state NODE_FAIL by default) are refunded: not charged, but counted ("Correct the fair share
calculation to refund usage tracked by jobs that actually failed due to node hangs").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from models.records.jobevent import JobEvent
from models.statetree import (
    by_key,
    dict_in,
    floats_in,
    floats_out,
    int_in,
    ints_in,
    ints_out,
    keys_in,
    strs_out,
)

DEFAULT_HALF_LIFE_S = 7 * 86400.0
DEFAULT_REFUND_STATES = frozenset({"NODE_FAIL"})
LN2 = math.log(2.0)


def decayed_charge(nodes: float, start: float, end: float, half_life: float) -> float:
    """Node-hours of a run [start, end] on `nodes` nodes, decayed continuously to `end`."""
    d = end - start
    if d <= 0:
        return 0.0
    if math.isinf(half_life):
        return nodes * d / 3600.0
    return nodes / 3600.0 * (half_life / LN2) * -math.expm1(-LN2 * d / half_life)


@dataclass(slots=True)
class UsageRow:
    ts: float
    holder_kind: str  # "user" | "account"
    holder: str
    usage_node_hours: float  # decayed to ts
    charged_node_hours: float  # undecayed node-hours charged since the previous report
    refunded_node_hours: float  # undecayed node-hours refunded since the previous report


HOLDER_KINDS = ("account", "user")  # sorted: rows come out by kind, then holder
_REFUND_CACHE_MAX = 4096


class FairShareUsage:
    __slots__ = (
        "half_life",
        "refund_states",
        "_k",
        "_start",
        "_usage",
        "_period",
        "_refund_of",
        "unmatched_ends",
        "refunded_jobs",
    )

    def __init__(
        self,
        half_life: float = DEFAULT_HALF_LIFE_S,
        refund_states: Iterable[str] | None = DEFAULT_REFUND_STATES,
    ) -> None:
        if half_life <= 0:
            raise ValueError("half_life must be > 0")
        self.half_life = float(half_life)
        self._k = LN2 / self.half_life
        self.refund_states = frozenset(s.upper() for s in (refund_states or ()))
        self._start: dict[str, tuple[float, int]] = {}
        # kind -> holder -> [value, ref_ts]
        self._usage: dict[str, dict[str, list[float]]] = {k: {} for k in HOLDER_KINDS}
        # kind -> holder -> [charged, refunded] since the last report
        self._period: dict[str, dict[str, list[float]]] = {k: {} for k in HOLDER_KINDS}
        self._refund_of: dict[str, bool] = {}  # end state -> refunded (memo)
        self.unmatched_ends = 0
        self.refunded_jobs = 0

    def _refund(self, state: str | None) -> bool:
        if not state or not self.refund_states:
            return False
        return state.split()[0].upper() in self.refund_states

    def update(self, events: Iterable[JobEvent]) -> None:
        start, k, h = self._start, self._k, self.half_life
        u_user, u_account = self._usage["user"], self._usage["account"]
        p_user, p_account = self._period["user"], self._period["account"]
        refund_of, refunding = self._refund_of, bool(self.refund_states)
        exp = math.exp
        # decayed_charge, inlined: nodes / 3600 * h_ln2 * -expm1(neg_ln2 * d / h)
        expm1, h_ln2, neg_ln2, finite = math.expm1, h / LN2, -LN2, not math.isinf(h)
        for e in events:
            typ = e.type
            if typ == "start":
                start[e.job] = (e.ts, e.nodes or 1)
            elif typ == "end":
                s = start.pop(e.job, None)
                if s is None:
                    self.unmatched_ends += 1
                    continue
                t0, nodes = s
                ts = e.ts
                d = ts - t0
                raw = nodes * d / 3600.0 if d > 0.0 else 0.0
                state = e.state
                refund: bool | None = False
                if refunding and state:
                    refund = refund_of.get(state)
                    if refund is None:
                        if len(refund_of) >= _REFUND_CACHE_MAX:
                            refund_of.clear()
                        refund = refund_of[state] = self._refund(state)
                if refund:
                    self.refunded_jobs += 1
                    for holder, period in ((e.user, p_user), (e.account, p_account)):
                        if holder is None:
                            continue
                        pr = period.get(holder)
                        if pr is None:
                            pr = period[holder] = [0.0, 0.0]
                        pr[1] += raw
                    continue
                if d <= 0:
                    charge = 0.0
                elif finite:
                    charge = nodes / 3600.0 * h_ln2 * -expm1(neg_ln2 * d / h)
                else:
                    charge = nodes * d / 3600.0
                for holder, period, usage in (
                    (e.user, p_user, u_user),
                    (e.account, p_account, u_account),
                ):
                    if holder is None:
                        continue
                    pr = period.get(holder)
                    if pr is None:
                        pr = period[holder] = [0.0, 0.0]
                    pr[0] += raw
                    u = usage.get(holder)
                    if u is None:
                        usage[holder] = [charge, ts]
                    else:
                        dt = ts - u[1]
                        if dt > 0:
                            u[0] = u[0] * exp(-k * dt) + charge
                            u[1] = ts
                        else:
                            u[0] = u[0] + charge

    def value(self, kind: str, holder: str, ts: float) -> float:
        """Decayed usage of one holder at ts (node-hours); 0 when unknown."""
        u = self._usage.get(kind, {}).get(holder)
        if u is None:
            return 0.0
        return u[0] * math.exp(-self._k * (ts - u[1])) if ts > u[1] else u[0]

    def report(
        self, ts: float, min_node_hours: float = 0.005, changed_only: bool = False
    ) -> list[UsageRow]:
        """Usage rows at ts (e.g. a day end): every holder's decayed usage (sorted); holders
        whose usage decayed below min_node_hours and with nothing charged since the last report
        are dropped. With changed_only, only holders charged or refunded since the last report
        (cost per job, not per holder per report)."""
        out = []
        k = self._k
        exp = math.exp
        for kind in HOLDER_KINDS:
            usage, period = self._usage[kind], self._period[kind]
            keys = sorted(period) if changed_only else sorted(usage.keys() | period.keys())
            for holder in keys:
                u = usage.get(holder)
                if u is None:
                    v = 0.0
                else:
                    v = u[0] * exp(-k * (ts - u[1])) if ts > u[1] else u[0]
                pr = period.get(holder, (0.0, 0.0))
                if v < min_node_hours and u is not None:
                    del usage[holder]
                    if pr[0] == 0.0 and pr[1] == 0.0:
                        continue
                out.append(UsageRow(ts, kind, holder, v, pr[0], pr[1]))
            period.clear()
        return out

    # ---- durable state (models.state) --------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """What the model holds, as columns, a tree for :func:`models.state.pack`; its
        settings (half-life, refund states) come from the constructor of the model restored."""
        start = self._start
        usage, period = {}, {}
        for kind in HOLDER_KINDS:
            u, p = self._usage[kind], self._period[kind]
            usage[kind] = {
                "holder": strs_out(list(u)),
                "usage": floats_out(x[0] for x in u.values()),
                "ts": floats_out(x[1] for x in u.values()),
            }
            period[kind] = {
                "holder": strs_out(list(p)),
                "charged": floats_out(x[0] for x in p.values()),
                "refunded": floats_out(x[1] for x in p.values()),
            }
        return {
            "start": {
                "job": strs_out(list(start)),
                "ts": floats_out(x[0] for x in start.values()),
                "nodes": ints_out(x[1] for x in start.values()),
            },
            "usage": usage,
            "period": period,
            "unmatched_ends": self.unmatched_ends,
            "refunded_jobs": self.refunded_jobs,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) model with :meth:`snapshot`'s state."""
        t = dict_in(tree["start"])
        jobs = keys_in(t["job"])
        n = len(jobs)
        self._start = by_key(
            jobs,
            zip(floats_in(t["ts"], n), ints_in(t["nodes"], n), strict=True),
            "fair-share state",
        )
        usage, period = dict_in(tree["usage"]), dict_in(tree["period"])
        for kind in HOLDER_KINDS:
            t = dict_in(usage[kind])
            holders = keys_in(t["holder"])
            n = len(holders)
            cols = zip(floats_in(t["usage"], n), floats_in(t["ts"], n), strict=True)
            self._usage[kind] = by_key(holders, map(list, cols), "fair-share state")
            t = dict_in(period[kind])
            holders = keys_in(t["holder"])
            n = len(holders)
            cols = zip(floats_in(t["charged"], n), floats_in(t["refunded"], n), strict=True)
            self._period[kind] = by_key(holders, map(list, cols), "fair-share state")
        self.unmatched_ends = int_in(tree["unmatched_ends"])
        self.refunded_jobs = int_in(tree["refunded_jobs"])
