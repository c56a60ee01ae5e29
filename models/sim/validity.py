"""Schedule validity: rules every schedule the simulator makes must satisfy. Pure.

Inputs: the jobs (a :class:`~models.sim.scheduler.Workload`: submit, nodes, requested and actual
run time) and, per job, its start, end and node ids (a
:class:`~models.sim.scheduler.JobRecord`, as ``EasyScheduler.records`` or ``run_all`` give them;
a NaN start: never started). :func:`check_schedule` returns every broken rule as a
:class:`Violation` (``rule``):

* ``not_started``: the job has no start (only with ``require_all``); the rules below skip it;
* ``before_submit``: start < submit;
* ``node_count``: it holds another number of node ids than the nodes it asked for;
* ``node_repeated``: a node id twice in one job;
* ``node_range``: a node id outside 0 .. n_nodes - 1;
* ``end``: end != start + min(actual, requested), exactly (the scheduler adds the same floats;
  it kills a job at its request). With ``kill_at_request=False``, start + actual (a recorded
  schedule). A job that ended NODE_FAIL (outages) may end earlier, never before its start;
* ``overlap``: a node used by two jobs at once: on each node, the jobs sorted by (start, end)
  each start no earlier than the one before ends. A zero-length job at t occupies the instant
  t: it may sit between a job that ends at t and one that starts at t, not inside a job.

Reservation rules (:func:`check_reservations`), against the scheduler's log of promises
(``log_reservations=True``; :class:`~models.sim.scheduler.Reservation`: at ``made``, job
``job`` will start at ``start`` at the latest):

* ``promise_in_past``: a promise made for a start before the time it was made;
* ``promise_delayed``: a job promised a later start than it was promised before;
* ``late_start``: a job started after its last promise (or never started).

EASY logs its head's shadow time (each change while the job is the head; Lifka 1995, Mu'alem &
Feitelson 2001: a backfilled job never delays the head), conservative backfilling every job's
reservation (when made, and when compression moves it earlier). With plans that bound the actual
run times (requested walltimes, or the actual run times) and no outages the three rules hold
exactly: the head's shadow time never moves later while it waits, under conservative
backfilling no reservation does, and every job starts at or before its promise. With
predictions they need not hold, and are not expected to: a running job that outlives its
prediction frees its nodes later than planned, so the head's shadow time (or a conservative
reservation) moves later and the job can start after what it was first promised (Tsafrir,
Etsion & Feitelson 2007 accept this: the user's request, not the prediction, bounds the delay).
Outages (a node down, a drain) break them too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from models.sim.scheduler import JobRecord, Reservation, Workload


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken rule (see the module docstring); ``job`` is the workload index."""

    rule: str
    job: int
    detail: str


def check_schedule(
    jobs: Workload,
    schedule: Sequence[JobRecord],
    n_nodes: int,
    *,
    kill_at_request: bool = True,
    require_all: bool = True,
) -> list[Violation]:
    """Every violation of the schedule rules, by job; an empty list for a valid schedule."""
    n = len(jobs)
    if len(schedule) != n:
        raise ValueError(f"{len(schedule)} scheduled jobs for {n} jobs")
    out: list[Violation] = []
    submit = jobs.submit.tolist()
    nodes = jobs.nodes.tolist()
    actual = jobs.runtime.tolist()
    req = jobs.req_walltime.tolist()
    rows_node: list[int] = []
    rows_job: list[int] = []
    for j, r in enumerate(schedule):
        s, e = r.start, r.end
        if s != s:
            if require_all:
                out.append(Violation("not_started", j, "no start"))
            continue
        if s < submit[j]:
            out.append(Violation("before_submit", j, f"start {s} < submit {submit[j]}"))
        ids = r.node_ids
        if len(ids) != nodes[j]:
            out.append(Violation("node_count", j, f"{len(ids)} node ids for {nodes[j]} nodes"))
        if len(set(ids)) != len(ids):
            out.append(Violation("node_repeated", j, f"node ids {ids}"))
        for i in sorted(set(ids)):
            if 0 <= i < n_nodes:
                rows_node.append(i)
                rows_job.append(j)
            else:
                out.append(Violation("node_range", j, f"node id {i} outside 0..{n_nodes - 1}"))
        run = min(actual[j], req[j]) if kill_at_request else actual[j]
        want = s + run
        if r.state == "NODE_FAIL":
            if not s <= e <= want:
                out.append(Violation("end", j, f"node failure end {e} outside [{s}, {want}]"))
        elif e != want:
            out.append(Violation("end", j, f"end {e} != start {s} + {run}"))
    if rows_node:
        out.extend(_overlaps(schedule, rows_node, rows_job))
    return out


def _overlaps(
    schedule: Sequence[JobRecord], rows_node: list[int], rows_job: list[int]
) -> list[Violation]:
    node = np.asarray(rows_node, dtype=np.int64)
    job = np.asarray(rows_job, dtype=np.int64)
    start = np.array([schedule[j].start for j in rows_job], dtype=np.float64)
    end = np.array([schedule[j].end for j in rows_job], dtype=np.float64)
    order = np.lexsort((end, start, node))
    node, job, start, end = node[order], job[order], start[order], end[order]
    bad = np.flatnonzero((node[1:] == node[:-1]) & (start[1:] < end[:-1]))
    return [
        Violation(
            "overlap",
            int(job[k + 1]),
            f"node {int(node[k])}: starts at {float(start[k + 1])}, "
            f"inside job {int(job[k])} [{float(start[k])}, {float(end[k])})",
        )
        for k in bad.tolist()
    ]


def check_reservations(
    schedule: Sequence[JobRecord], log: Iterable[Reservation]
) -> list[Violation]:
    """Every violation of the reservation rules: promises never in the past, never later than
    the job's previous promise, and each job started no later than its last promise."""
    out: list[Violation] = []
    last: dict[int, float] = {}
    for r in log:
        if r.start < r.made:
            out.append(Violation("promise_in_past", r.job, f"made at {r.made} for {r.start}"))
        before = last.get(r.job)
        if before is not None and r.start > before:
            out.append(
                Violation("promise_delayed", r.job, f"at {r.made}: {r.start} after {before}")
            )
        last[r.job] = r.start
    for j, promised in sorted(last.items()):
        s = schedule[j].start
        if not s <= promised:
            out.append(Violation("late_start", j, f"started {s}, promised {promised}"))
    return out
