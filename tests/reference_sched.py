"""Slow, plainly written schedulers to check models/sim/scheduler.py against on tiny workloads.

Rows are (submit, nodes, runtime, requested walltime); a job holds its nodes for
min(runtime, requested) (killed at its request). Each function returns
``{job: (start, node ids, backfilled, end)}`` and the promises it made, ``[(made, job, start)]``.

* :func:`easy`: EASY with depth 1 on specific nodes (the rules of the scheduler's module
  docstring), planning with ``estimate``: "requested", "actual" (min(runtime, request)) or
  "tsafrir" (the average of the user's last two ended jobs, capped at the request; the
  request with fewer than two; raised in Tsafrir steps when a job outlives it);
* :func:`conservative`: conservative backfilling on whole time units (integer times only):
  the free nodes of every unit [x, x + 1) recomputed from scratch for each question, and the
  earliest fit found by trying every start time in turn.
"""

from __future__ import annotations

import numpy as np

Row = tuple[float, int, float, float]
Result = dict[int, tuple[float, tuple[int, ...], bool, float]]
Promises = list[tuple[float, int, float]]

STEPS = (60, 300, 900, 1800, 3600, 7200, 18000, 36000, 72000, 180000, 360000)


def _held(row: Row) -> float:
    return min(row[2], row[3])


def easy(
    n: int,
    rows: list[Row],
    users: list[str] | None = None,
    estimate: str = "requested",
    shortest_first: bool = False,
) -> tuple[Result, Promises]:
    plan: dict[int, float] = {}
    initial: dict[int, float] = {}
    corrections: dict[int, int] = {}
    history: dict[str, list[float]] = {}  # user -> run times of their ended jobs, end order
    node_job: list[int | None] = [None] * n
    queue: list[int] = []
    running: dict[int, float] = {}  # job -> start
    started: dict[int, tuple[float, tuple[int, ...], bool]] = {}
    result: Result = {}
    promises: Promises = []
    pending = sorted(range(len(rows)), key=lambda j: (rows[j][0], j))
    t = rows[pending[0]][0] if pending else 0.0

    def first_plan(j: int) -> float:
        req = rows[j][3]
        if estimate == "requested":
            return req
        if estimate == "actual":
            return _held(rows[j])
        h = history.get(users[j], []) if users else []
        return req if len(h) < 2 else min(req, (h[-1] + h[-2]) / 2)

    while True:
        # ends by t, in (end, job) order
        ending = [j for j in running if running[j] + _held(rows[j]) <= t]
        for j in sorted(ending, key=lambda j: (running[j] + _held(rows[j]), j)):
            s = running.pop(j)
            end = s + _held(rows[j])
            for i in range(n):
                if node_job[i] == j:
                    node_job[i] = None
            if users:
                history.setdefault(users[j], []).append(end - s)
            result[j] = (*started[j], end)
        # running jobs at the end of their plan: raise it
        for j in sorted(running):
            s = running[j]
            if s + plan[j] <= t:
                k = corrections[j] = corrections.get(j, 0) + 1
                req = rows[j][3]
                new = min(initial[j] + STEPS[k - 1] if k <= len(STEPS) else req, req)
                if not new > (s + plan[j]) - s:
                    new = req
                plan[j] = new
        while pending and rows[pending[0]][0] <= t:
            j = pending.pop(0)
            queue.append(j)
            plan[j] = initial[j] = max(0.0, min(rows[j][3], first_plan(j)))

        def start(j: int, ids: list[int], bf: bool, t: float = t) -> None:
            for i in ids:
                node_job[i] = j
            running[j] = t
            started[j] = (t, tuple(ids), bf)
            queue.remove(j)

        while queue:
            j = queue[0]
            free = [i for i in range(n) if node_job[i] is None]
            if len(free) < rows[j][1]:
                break
            start(j, free[: rows[j][1]], False)
        if queue:
            head = queue[0]
            need = rows[head][1]
            expect = []
            for i in range(n):
                k = node_job[i]
                expect.append(t if k is None else running[k] + plan[k])
            shadow = sorted(expect)[need - 1]
            if not promises or promises[-1][1:] != (head, shadow):
                promises.append((t, head, shadow))
            cands = [i for i in range(n) if expect[i] <= shadow]
            cands.sort(key=lambda i: (-expect[i], i))
            reserved = set(cands[:need])
            order = list(queue[1:])
            if shortest_first:  # SJBF: the shortest planned first, queue order among equals
                order.sort(key=lambda j: plan[j])
            for j in order:
                free = [i for i in range(n) if node_job[i] is None]
                ok = [i for i in free if i not in reserved or t + plan[j] <= shadow]
                if len(ok) >= rows[j][1]:
                    start(j, ok[: rows[j][1]], True)
        nxt = [running[j] + _held(rows[j]) for j in running]
        nxt += [running[j] + plan[j] for j in running if plan[j] < _held(rows[j])]
        nxt += [rows[p][0] for p in pending]
        if not nxt:
            return result, promises
        t = min(nxt)


def conservative(n: int, rows: list[Row], estimate: str = "requested") -> tuple[Result, Promises]:
    plan = [int(r[3]) if estimate == "requested" else int(_held(r)) for r in rows]
    size = [int(r[1]) for r in rows]
    horizon = int(max((r[0] for r in rows), default=0)) + sum(max(p, 1) for p in plan) + 2
    node_job: list[int | None] = [None] * n
    queue: list[int] = []
    running: dict[int, int] = {}  # job -> start
    started: dict[int, tuple[float, tuple[int, ...], bool]] = {}
    rsv: dict[int, int] = {}  # waiting job -> reserved start
    result: Result = {}
    promises: Promises = []
    pending = sorted(range(len(rows)), key=lambda j: (rows[j][0], j))
    t = int(rows[pending[0]][0]) if pending else 0

    def free_units(skip: int | None = None) -> np.ndarray:
        """Free nodes in each unit [x, x + 1): running jobs until start + plan, reservations."""
        free = np.full(horizon + max(plan) + 2, n)
        for j, s in running.items():
            free[s : s + plan[j]] -= size[j]
        for j, s in rsv.items():
            if j != skip:
                free[s : s + plan[j]] -= size[j]
        return free

    def earliest(j: int, free: np.ndarray, before: int) -> int | None:
        """The first x in [t, before) with size[j] nodes free on every unit of [x, x + plan)
        (on unit x for a zero-length plan)."""
        d = max(plan[j], 1)
        for x in range(t, before):
            if free[x : x + d].min() >= size[j]:
                return x
        return None

    while True:
        freed = False
        ending = [j for j in running if running[j] + _held(rows[j]) <= t]
        for j in sorted(ending, key=lambda j: (running[j] + _held(rows[j]), j)):
            s = running.pop(j)
            end = s + _held(rows[j])
            if end < s + plan[j]:
                freed = True
            for i in range(n):
                if node_job[i] == j:
                    node_job[i] = None
            result[j] = (*started[j], float(end))
        while pending and rows[pending[0]][0] <= t:
            queue.append(pending.pop(0))
        if freed:  # compress: move each job to its earliest fit, in queue order, until none moves
            moved = True
            while moved:
                moved = False
                for j in queue:
                    if j in rsv and rsv[j] > t:
                        x = earliest(j, free_units(skip=j), rsv[j])
                        if x is not None:
                            rsv[j] = x
                            promises.append((float(t), j, float(x)))
                            moved = True
        for j in queue:
            if j not in rsv:
                x = earliest(j, free_units(), horizon)
                assert x is not None
                rsv[j] = x
                promises.append((float(t), j, float(x)))
        waiting = False
        for j in list(queue):
            free = [i for i in range(n) if node_job[i] is None]
            if rsv[j] <= t and len(free) >= size[j]:
                for i in free[: size[j]]:
                    node_job[i] = j
                running[j] = t
                started[j] = (float(t), tuple(free[: size[j]]), waiting)
                queue.remove(j)
                del rsv[j]
            else:
                waiting = True
        nxt = [running[j] + int(_held(rows[j])) for j in running]
        nxt += [int(rows[p][0]) for p in pending] + [s for s in rsv.values() if s > t]
        if not nxt:
            return result, promises
        t = min(nxt)
