"""Slow, obviously-correct schedule outcome measures (for hypothesis tests of
models.sim.outcomes).

Plain Python over a list of job rows, one loop per definition, no numpy: the definitions of the
module docstring of models/sim/outcomes.py written out as directly as possible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One job as it ran."""

    job: str
    user: str
    submit: float
    nodes: int
    start: float
    end: float


def utilisation(rows: list[Row], n_nodes: int, span: tuple[float, float] | None = None) -> float:
    if span is None:
        a = min(r.submit for r in rows)
        b = max(r.end for r in rows)
        if b <= a:
            return 0.0
    else:
        a, b = span
    used = 0.0
    for r in rows:
        lo = max(r.start, a)
        hi = min(r.end, b)
        if hi > lo:
            used += r.nodes * (hi - lo)
    return used / (n_nodes * (b - a))


def mean_wait(rows: list[Row]) -> float:
    total = 0.0
    for r in rows:
        total += r.start - r.submit
    return total / len(rows)


def nearest_rank(values: list[float], percent: int) -> float:
    """The smallest value v such that at least percent % of the values are <= v."""
    ordered = sorted(values)
    n = len(ordered)
    for v in ordered:
        at_or_below = sum(1 for x in ordered if x <= v)
        if at_or_below * 100 >= percent * n:
            return v
    raise AssertionError("unreachable")


def wait_percentile(rows: list[Row], percent: int = 95) -> float:
    return nearest_rank([r.start - r.submit for r in rows], percent)


def bounded_slowdown(r: Row, tau: float = 10.0) -> float:
    wait = r.start - r.submit
    run = r.end - r.start
    return max(1.0, (wait + run) / max(run, tau))


def mean_bounded_slowdown(rows: list[Row], tau: float = 10.0) -> float:
    total = 0.0
    for r in rows:
        total += bounded_slowdown(r, tau)
    return total / len(rows)


def started_late(rows: list[Row], baseline: list[Row], tolerance: float = 0.0) -> list[str]:
    base = {r.job: r for r in baseline}
    out = []
    for r in rows:
        if r.start - base[r.job].start > tolerance:
            out.append(r.job)
    return out


def user_deltas(
    rows: list[Row], baseline: list[Row]
) -> list[tuple[str, int, float, float, float, int, int]]:
    """Per user, by sorted name: (user, jobs, mean wait, baseline mean wait, mean of the wait
    changes, jobs waiting longer, jobs waiting shorter)."""
    base = {r.job: r for r in baseline}
    per: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        b = base[r.job]
        per.setdefault(r.user, []).append((r.start - r.submit, b.start - b.submit))
    out = []
    for user in sorted(per):
        pairs = per[user]
        n = len(pairs)
        w = sum(p[0] for p in pairs) / n
        bw = sum(p[1] for p in pairs) / n
        change = 0.0
        for p in pairs:
            change += p[0] - p[1]
        longer = sum(1 for p in pairs if p[0] > p[1])
        shorter = sum(1 for p in pairs if p[0] < p[1])
        out.append((user, n, w, bw, change / n, longer, shorter))
    return out


def isclose(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
