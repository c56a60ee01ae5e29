"""Node-release forecast for a reservation (seed 001, Holt, ECMWF; Figure 9, section 17).

A reservation needs ``need`` nodes at time ``at``. ``held`` nodes are already its own (in
operational use or free). The running jobs that still hold nodes, taken in order of expected end
(the order of the seed's ll_jobs display), release them one job after another; the forecast lists
for each job its nodes and the remaining Need after its release (Figure 9's "Free / Need"
columns: 48 -> 32 -> 16 -> 0), the time the reservation is complete and how late that is.
Checkpointable jobs (Figure 9's "Chkpt") may be taken as released at ``now``.

:class:`RunningReleases` keeps the running jobs in that order as they start and end, for
:class:`ReleaseForecaster`, which makes a forecast at every submit of a section's jobs and
resolves it at the job's start (or end); its running and pending jobs (with their forecasts) go
into the live worker's state as columns: :func:`held_snapshot`, :func:`pending_snapshot` and
their ``_restore``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from models.jobs.usage import add_exact
from models.records.jobevent import JobEvent
from models.statetree import (
    array_in,
    bools_out,
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
    opt_floats_in,
    opt_floats_out,
    ragged_in,
    ragged_out,
    strs_in,
    strs_out,
)


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class Holder:
    """A running job holding nodes the reservation may need."""

    job: str
    nodes: int
    expected_end: float
    name: str | None = None
    checkpointable: bool = False


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class ReleaseStep:
    job: str
    name: str | None
    nodes: int
    release_at: float
    free_after: int  # nodes the reservation has once this job has ended
    need_after: int  # nodes still missing once this job has ended
    checkpointed: bool
    in_the_way: bool  # releases after the reservation's time


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class ReleaseForecast:
    need: int
    at: float
    held: int
    missing: int  # need - held at `now` (Figure 9's first Need)
    ready_at: float | None  # when `need` nodes are free (None: the running jobs cannot free them)
    late_by: float | None  # max(0, ready_at - at)
    steps: tuple[ReleaseStep, ...]  # only the jobs whose release is needed
    in_the_way: tuple[str, ...]  # jobs among steps that release after `at`


def forecast_release(
    need: int,
    at: float,
    held: int,
    running: Iterable[Holder],
    now: float | None = None,
    checkpoint: bool = False,
) -> ReleaseForecast:
    """When will ``need`` nodes be free for a reservation due at ``at``?

    ``held``: nodes the reservation already has (in its use or idle). ``checkpoint``: release
    checkpointable jobs at ``now`` (they write a restart file and stop)."""
    if checkpoint and now is None:
        raise ValueError("checkpoint needs now")
    base = now if now is not None else at
    if need <= held:
        return _walk(need, at, held, base, ())
    order: list[tuple[float, str, int, str | None, bool]] = []
    for h in running:
        ck = checkpoint and h.checkpointable
        rel = base if ck else h.expected_end  # ck implies now is not None, so base is now
        if now is not None and rel < now:
            rel = now  # overrunning jobs: expected any moment
        order.append((rel, h.job, h.nodes, h.name, ck))
    order.sort(key=lambda x: (x[0], x[1]))
    return _walk(need, at, held, base, order)


def forecast_in_order(
    need: int,
    at: float,
    held: int,
    releases: Iterable[tuple[float, str, int, str | None, bool]],
    now: float,
) -> ReleaseForecast:
    """:func:`forecast_release` at ``now`` for running jobs given already in its order:
    ``releases`` are (release time, job, nodes, name, checkpointed), the release time a job's
    expected end, or ``now`` for a job past it (or checkpointed), sorted by release time, then
    job. The same forecast without making, sorting and walking a holder per running job: the
    walk stops at the job that completes the reservation (the live stage keeps its running
    jobs in order)."""
    return _walk(need, at, held, now, releases)


def _walk(
    need: int,
    at: float,
    held: int,
    base: float,
    releases: Iterable[tuple[float, str, int, str | None, bool]],
) -> ReleaseForecast:
    """The releases, in order, until ``need`` nodes are free (Figure 9's Free / Need rows);
    ``base``: when the reservation could start if nothing is missing (now, else ``at``)."""
    missing = need - held
    if missing <= 0:
        return ReleaseForecast(need, at, held, 0, base if base <= at else at, 0.0, (), ())
    free = held
    steps: list[ReleaseStep] = []
    in_the_way: list[str] = []
    ready: float | None = None
    for rel, job, nodes, name, ck in releases:
        if nodes <= 0:
            continue
        free += nodes
        left = need - free if need > free else 0
        steps.append(ReleaseStep(job, name, nodes, rel, free, left, ck, rel > at))
        if rel > at:
            in_the_way.append(job)
        if left == 0:
            ready = rel
            break
    late = None if ready is None else max(0.0, ready - at)
    return ReleaseForecast(need, at, held, missing, ready, late, tuple(steps), tuple(in_the_way))


# ---- the running jobs in release order, as jobs start and end ----------------------------------
_GONE = (0, 0.0, None, 0)  # the record of a job not held (entries are numbered from 1)


class RunningReleases:
    """The running jobs that can release nodes (an expected end and nodes > 0), yielded in
    :func:`forecast_release`'s order at ``now`` by :meth:`releases`, for
    :func:`forecast_in_order`'s walk.

    Rule: the cost grows with the releases a walk takes, never with the jobs still running.
    The jobs past their end at the last ``now`` (released at any moment, in job order) and the
    others (by end, then job) are two binary heaps (heapq), O(log n) a push or pop:

    * a start is one push; an end only forgets the job (its entry, now stale, is dropped by the
      first pop that meets it, and a heap with three times as many stale entries as live ones
      (and over a thousand) is rebuilt: O(1) amortised, and memory O(jobs running));
    * a job crosses from the second heap to the first once, as ``now`` passes its end;
    * a walk that takes k releases pops all but the last (and the stale entries before them,
      each popped once ever) and pushes them back before the next change or walk.

    So a walk costs O((k + stale) log n), and jobs that never end cost O(log n) each however
    many forecasts are made while they run. ``now`` is expected to move forward (the stages'
    input is in time order); a step back moves the jobs not yet past their end at the earlier
    time back, a pass over those past their end.

    Counted for the cost tests: ``heap_ops`` (pushes and pops, O(log n) each), ``walked``
    (releases the walks took), ``stale`` (stale entries popped), ``rebuilt`` (entries the
    rebuilds went over), ``rewinds`` (steps back in time)."""

    __slots__ = (
        "held",
        "_due",
        "_ahead",
        "_live",
        "_taken_due",
        "_taken_ahead",
        "_now",
        "_seq",
        "_heap_ops",
        "_walked",
        "stale",
        "rebuilt",
        "rewinds",
    )

    rebuild_over = 1024  # a heap is rebuilt only above this many entries (and 4 x its jobs)

    def __init__(self) -> None:
        # job -> nodes, end, name, and the number of the entry that stands for it
        self.held: dict[str, tuple[int, float, str | None, int]] = {}
        self._due: list[tuple[str, int]] = []  # (job, entry) of jobs with end <= _now
        self._ahead: list[tuple[float, str, int]] = []  # (end, job, entry), end > _now
        self._live = [0, 0]  # jobs in _due, in _ahead
        # popped by the last walk, to push back before the next change or walk
        self._taken_due: list[tuple[str, int]] = []
        self._taken_ahead: list[tuple[float, str, int]] = []
        self._now = -math.inf
        self._seq = 0
        self._heap_ops = self._walked = self.stale = self.rebuilt = self.rewinds = 0

    def __len__(self) -> int:
        return len(self.held)

    @property
    def walked(self) -> int:
        """Releases the walks have taken."""
        return self._walked

    @property
    def heap_ops(self) -> int:
        """Heap pushes and pops so far (a release a walk went past: a pop, and a push to give
        it back)."""
        return self._heap_ops + 2 * (len(self._taken_due) + len(self._taken_ahead))

    def put(self, job: str, nodes: int, end: float | None, name: str | None) -> None:
        """``job`` runs from now on with ``nodes`` until ``end`` (replacing what it had); a job
        without an end or nodes releases nothing the forecast can count on, and is not kept."""
        if self._taken_due or self._taken_ahead:
            self._give_back()
        held = self.held
        if job in held:
            self.drop(job)
        if end is None or nodes <= 0:
            return
        self._seq = seq = self._seq + 1
        held[job] = (nodes, end, name, seq)
        self._heap_ops += 1
        if end <= self._now:  # as drop tells where a job is
            heapq.heappush(self._due, (job, seq))
            self._live[0] += 1
        else:
            heapq.heappush(self._ahead, (end, job, seq))
            self._live[1] += 1

    def drop(self, job: str) -> None:
        """``job`` no longer runs (nothing if it was not kept)."""
        old = self.held.pop(job, None)
        if old is None:
            return
        k = 0 if old[1] <= self._now else 1
        live = self._live
        live[k] -= 1
        heap: list[Any] = self._ahead if k else self._due
        if len(heap) > 4 * live[k] + self.rebuild_over:
            if self._taken_due or self._taken_ahead:
                self._give_back()
            self._rebuild(heap, k)

    def _rebuild(self, heap: list[Any], k: int) -> None:
        """Drop the stale entries of one heap (``k``: 0 ``_due``, 1 ``_ahead``)."""
        held = self.held
        self.rebuilt += len(heap)
        heap[:] = [e for e in heap if (held.get(e[k]) or _GONE)[3] == e[-1]]
        heapq.heapify(heap)

    def releases(self, now: float) -> Iterator[tuple[float, str, int, str | None, bool]]:
        """The releases at ``now`` in :func:`forecast_in_order`'s order: the jobs past their end
        (``end <= now``: released at ``now``) by job id, then the others by end and job id, as
        (release time, job, nodes, name, checkpointed: never here). Lazy: a walk that stops
        early costs only the entries it took. The jobs must not change while it is consumed."""
        if self._taken_due or self._taken_ahead:
            self._give_back()
        if now != self._now:
            ahead = self._ahead
            if now < self._now or (ahead and ahead[0][0] <= now):
                self._move_to(now)
            else:
                self._now = now
        held = self.held
        pop = heapq.heappop
        # each release is looked at on the heap's top and popped only when the walk goes on
        # (most walks stop at their first release and pop nothing)
        due, taken = self._due, self._taken_due
        while due:
            e = due[0]
            h = held.get(e[0])
            if h is None or h[3] != e[1]:
                pop(due)
                self.stale += 1
                self._heap_ops += 1
                continue
            self._walked += 1
            yield now, e[0], h[0], h[2], False
            taken.append(pop(due))
        ahead, taken_ahead = self._ahead, self._taken_ahead
        while ahead:
            f = ahead[0]
            h = held.get(f[1])
            if h is None or h[3] != f[2]:
                pop(ahead)
                self.stale += 1
                self._heap_ops += 1
                continue
            self._walked += 1
            yield f[0], f[1], h[0], h[2], False
            taken_ahead.append(pop(ahead))

    def _give_back(self) -> None:
        """Push back the entries the last walk took (popped in order: the smallest first)."""
        push = heapq.heappush
        taken, heap = self._taken_due, self._due
        n = len(taken)
        for e in taken:
            push(heap, e)
        taken.clear()
        taken_ahead, ahead = self._taken_ahead, self._ahead
        n += len(taken_ahead)
        for f in taken_ahead:
            push(ahead, f)
        taken_ahead.clear()
        self._heap_ops += 2 * n

    def _move_to(self, now: float) -> None:
        """Make ``now`` the edge between the two heaps."""
        due, ahead, held, live = self._due, self._ahead, self.held, self._live
        if now < self._now:  # the jobs that are not past their end at `now` go back
            self.rewinds += 1
            self.rebuilt += len(due)
            keep: list[tuple[str, int]] = []
            for job, seq in due:
                h = held.get(job)
                if h is not None and h[3] == seq:
                    if h[1] > now:
                        heapq.heappush(ahead, (h[1], job, seq))
                        self._heap_ops += 1
                        live[1] += 1
                    else:
                        keep.append((job, seq))
            heapq.heapify(keep)
            due[:] = keep
            live[0] = len(keep)
            self._now = now
            return
        self._now = now
        pop, push = heapq.heappop, heapq.heappush
        while ahead and ahead[0][0] <= now:
            end, job, seq = pop(ahead)
            self._heap_ops += 1
            h = held.get(job)
            if h is None or h[3] != seq:
                self.stale += 1
                continue
            push(due, (job, seq))
            self._heap_ops += 1
            live[0] += 1
            live[1] -= 1


# ---- durable state (the live worker's snapshot) -------------------------------------------------
def forecasts_snapshot(forecasts: Sequence[ReleaseForecast]) -> dict[str, Any]:
    """Forecasts as a state tree of columns (models.state): one value a forecast, and their
    steps one after another (``steps``: how many each has). ``in_the_way`` is not saved: it is
    the jobs of the steps flagged so, in order (as :func:`_walk` makes them)."""
    steps = [s for f in forecasts for s in f.steps]
    return {
        "need": ints_out(f.need for f in forecasts),
        "at": floats_out(f.at for f in forecasts),
        "held": ints_out(f.held for f in forecasts),
        "missing": ints_out(f.missing for f in forecasts),
        "ready_at": opt_floats_out([f.ready_at for f in forecasts]),
        "late_by": opt_floats_out([f.late_by for f in forecasts]),
        "steps": ragged_out([f.steps for f in forecasts]),
        "step_job": strs_out([s.job for s in steps]),
        "step_name": strs_out([s.name for s in steps]),
        "step_nodes": ints_out(s.nodes for s in steps),
        "step_release_at": floats_out(s.release_at for s in steps),
        "step_free_after": ints_out(s.free_after for s in steps),
        "step_need_after": ints_out(s.need_after for s in steps),
        "step_checkpointed": bools_out((s.checkpointed for s in steps), len(steps)),
        "step_in_the_way": bools_out((s.in_the_way for s in steps), len(steps)),
    }


def forecasts_restore(tree: dict[str, Any], n: int) -> list[ReleaseForecast]:
    """The ``n`` forecasts of :func:`forecasts_snapshot`'s tree; a tree of another shape raises
    :class:`~models.state.StateFormatError`."""
    t = dict_in(tree)
    k = len(array_in(t["step_nodes"], "i"))
    steps = [
        ReleaseStep(*s)
        for s in zip(
            keys_in(t["step_job"], k),
            strs_in(t["step_name"], k, none=True),
            ints_in(t["step_nodes"], k),
            floats_in(t["step_release_at"], k),
            ints_in(t["step_free_after"], k),
            ints_in(t["step_need_after"], k),
            array_in(t["step_checkpointed"], "b", k).tolist(),
            array_in(t["step_in_the_way"], "b", k).tolist(),
            strict=True,
        )
    ]
    out = []
    for need, at, held, missing, ready, late, mine in zip(
        ints_in(t["need"], n),
        floats_in(t["at"], n),
        ints_in(t["held"], n),
        ints_in(t["missing"], n),
        opt_floats_in(t["ready_at"], n),
        opt_floats_in(t["late_by"], n),
        ragged_in(t["steps"], steps, n),
        strict=True,
    ):
        way = tuple(s.job for s in mine if s.in_the_way)
        out.append(ReleaseForecast(need, at, held, missing, ready, late, tuple(mine), way))
    return out


# a running job of the live forecast: (nodes, expected end or None, name)
Held = tuple[int, float | None, str | None]
# a pending job of the live forecast: (submit time, its forecast, reservation start or None)
Pending = tuple[float, ReleaseForecast, float | None]


def held_snapshot(running: Mapping[str, Held]) -> dict[str, Any]:
    """Running jobs (job -> nodes, end, name) as a state tree of columns (models.state)."""
    vals = list(running.values())
    return {
        "job": strs_out(list(running)),
        "nodes": ints_out(v[0] for v in vals),
        "end": opt_floats_out([v[1] for v in vals]),
        "name": strs_out([v[2] for v in vals]),
    }


def held_restore(tree: Any) -> dict[str, Held]:
    """The running jobs of :func:`held_snapshot`'s tree, in their order."""
    t = dict_in(tree)
    jobs = keys_in(t["job"])
    n = len(jobs)
    vals = zip(
        ints_in(t["nodes"], n),
        opt_floats_in(t["end"], n),
        strs_in(t["name"], n, none=True),
        strict=True,
    )
    return by_key(jobs, vals, "release state (running jobs)")


def pending_snapshot(pending: Mapping[str, Pending]) -> dict[str, Any]:
    """Pending jobs (job -> submit time, forecast, reservation start) as a state tree of
    columns (models.state)."""
    vals = list(pending.values())
    return {
        "job": strs_out(list(pending)),
        "ts": floats_out(v[0] for v in vals),
        "forecast": forecasts_snapshot([v[1] for v in vals]),
        "reserved_start": opt_floats_out([v[2] for v in vals]),
    }


def pending_restore(tree: Any) -> dict[str, Pending]:
    """The pending jobs of :func:`pending_snapshot`'s tree, in their order."""
    t = dict_in(tree)
    jobs = keys_in(t["job"])
    n = len(jobs)
    vals = zip(
        floats_in(t["ts"], n),
        forecasts_restore(t["forecast"], n),
        opt_floats_in(t["reserved_start"], n),
        strict=True,
    )
    return by_key(jobs, vals, "release state (pending jobs)")


# ---- a forecast at every submit, as a section's jobs are submitted, start and end ---------------
# a resolved forecast: (submit time, its forecast, reservation start or None, the job's start or
# None: cancelled while pending, or still pending at the end of the input)
Resolved = tuple[float, ReleaseForecast, float | None, float | None]
# the summary's counters, as :meth:`ReleaseForecaster.snapshot` saves them
_COUNTS = (
    "forecasts",
    "late",
    "never",
    "late_n",
    "wait_n",
    "too_large",
    "holders_without_walltime",
)


class ReleaseForecaster:
    """Seed 001's node-release forecast made at every submit of a section's jobs (Figure 9 per
    job), and how each turned out.

    Rules:

    * A submit with nodes (no more than the section's) is forecast at once: its nodes are
      needed at its reservation's start (``reserved_start``), else at the submit; the nodes not
      held by a running job are free (the section's size minus the running jobs' nodes); the
      running jobs with a requested walltime release theirs in :class:`RunningReleases`' order
      (start + walltime, overrunning jobs any moment); the jobs queued ahead of it are not
      counted, and running jobs without a walltime are left out (``holders_without_walltime``
      counts them at every forecast).
    * A start runs the job with its nodes until start + requested walltime and resolves the
      job's pending forecast with its actual start. A start's ``reserved_start`` (a
      reservation made after the submit, as the simulator writes it) is the reservation of a
      forecast that had none: the forecast made at the submit is taken against it.
    * Any other event ends the job; a job still pending then was cancelled: its forecast is
      resolved without a start, as is every forecast still pending at the end of the input
      (:meth:`unresolved`).

    Every resolved forecast is counted for the summary: late, never ready, the mean and
    largest lateness and the mean actual lateness (start - reservation or submit), as exact
    partial sums (:func:`models.jobs.usage.add_exact`), O(1) in memory."""

    def __init__(self, section_nodes: int) -> None:
        self.section_nodes = section_nodes
        self.running: dict[str, Held] = {}
        self._running_sums = (0, 0)  # the running jobs' nodes, and those without an end
        self.order = RunningReleases()  # those with an end and nodes, in release order
        self.pending: dict[str, Pending] = {}
        self.forecasts = 0
        self.late = 0
        self.never = 0
        self.late_sum: list[float] = []  # exact partial sums (add_exact) of the late_by values
        self.late_n = 0
        self.late_max: float | None = None
        self.wait_sum: list[float] = []  # of start - reservation (or submit)
        self.wait_n = 0
        self.too_large = 0
        self.holders_without_walltime = 0

    def submit(self, e: JobEvent) -> bool:
        """Forecast the submitted job (pending from now on); False: no forecast (no nodes, or
        more than the section has)."""
        return self._forecast(e) is not None

    def start(self, e: JobEvent) -> Resolved | None:
        """The job runs from now on; its pending forecast, resolved with its start (None: it
        had none)."""
        end = None if e.req_walltime is None else e.ts + e.req_walltime
        self._run(e.job, (e.nodes or 0, end, e.name))
        p = self.pending.pop(e.job, None)
        if p is None:
            return None
        ts, f, rsv = p
        if rsv is None and e.reserved_start is not None:
            rsv = e.reserved_start
            f = _against(f, rsv, ts)
        self._count(f)
        add_exact(self.wait_sum, e.ts - f.at)
        self.wait_n += 1
        return ts, f, rsv, e.ts

    def end(self, job: str) -> Resolved | None:
        """The job ended; its forecast if it was still pending (cancelled), resolved without a
        start."""
        self._run(job, None)
        p = self.pending.pop(job, None)
        if p is None:
            return None
        self._count(p[1])
        return (*p, None)

    def unresolved(self) -> list[tuple[str, Resolved]]:
        """Every forecast still pending (the end of the input), resolved without a start, by
        submit time and job; none is pending afterwards."""
        out: list[tuple[str, Resolved]] = []
        for job, (ts, f, rsv) in sorted(self.pending.items(), key=lambda x: (x[1][0], x[0])):
            self._count(f)
            out.append((job, (ts, f, rsv, None)))
        self.pending.clear()
        return out

    def _run(self, job: str, held: Held | None) -> None:
        """``job`` holds ``held`` (nodes, end, name) from now on; None: it ended."""
        busy, no_end = self._running_sums
        old = self.running.pop(job, None)
        if old is not None:
            busy, no_end = busy - old[0], no_end - (old[1] is None)
        if held is not None:
            self.running[job] = held
            busy, no_end = busy + held[0], no_end + (held[1] is None)
            self.order.put(job, held[0], held[1], held[2])
        elif old is not None:
            self.order.drop(job)
        self._running_sums = (busy, no_end)

    def _forecast(self, e: JobEvent) -> ReleaseForecast | None:
        nodes = e.nodes or 0
        if nodes <= 0:
            return None
        if nodes > self.section_nodes:
            self.too_large += 1
            return None
        busy, no_end = self._running_sums
        self.holders_without_walltime += no_end
        free = max(0, self.section_nodes - busy)
        now = e.ts
        at = now if e.reserved_start is None else e.reserved_start
        # the running jobs' releases matter only when nodes are missing (RunningReleases:
        # O(log n) a start or an end, O(k log k) a walk that takes k releases)
        releases = self.order.releases(now) if nodes > free else ()
        f = forecast_in_order(nodes, at, free, releases, now)
        self.forecasts += 1
        self.pending[e.job] = (e.ts, f, e.reserved_start)
        return f

    def _count(self, f: ReleaseForecast) -> None:
        if f.late_by is None:
            self.never += 1
        else:
            add_exact(self.late_sum, f.late_by)
            self.late_n += 1
            self.late_max = f.late_by if self.late_max is None else max(self.late_max, f.late_by)
            self.late += f.late_by > 0

    def summary(self) -> dict[str, Any]:
        n = self.late_n
        return {
            "forecasts": self.forecasts,
            "forecasts_late": self.late,
            "forecasts_never_ready": self.never,
            "mean_late_by_s": math.fsum(self.late_sum) / n if n else None,
            "max_late_by_s": self.late_max,
            "mean_actual_late_s": math.fsum(self.wait_sum) / self.wait_n if self.wait_n else None,
            "jobs_larger_than_section": self.too_large,
            "holders_without_walltime": self.holders_without_walltime,
        }

    def snapshot(self) -> dict[str, Any]:
        """The running jobs, the pending ones with their forecasts, and the summary's counters
        and exact partial sums. The running jobs' node sums and release order are not saved:
        they are made again from the running jobs (the section's size is configuration)."""
        return {
            "running": held_snapshot(self.running),
            "pending": pending_snapshot(self.pending),
            "forecasts": self.forecasts,
            "late": self.late,
            "never": self.never,
            "late_sum": self.late_sum,
            "late_n": self.late_n,
            "late_max": self.late_max,
            "wait_sum": self.wait_sum,
            "wait_n": self.wait_n,
            "too_large": self.too_large,
            "holders_without_walltime": self.holders_without_walltime,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) forecaster from :meth:`snapshot`'s tree; a tree of another shape
        raises :class:`~models.state.StateFormatError` and changes nothing."""
        running = held_restore(tree["running"])
        pending = pending_restore(tree["pending"])
        counts = [int_in(tree[k]) for k in _COUNTS]
        late_sum = [float_in(x) for x in list_in(tree["late_sum"])]
        wait_sum = [float_in(x) for x in list_in(tree["wait_sum"])]
        late_max = opt_float_in(tree["late_max"])
        vals = running.values()
        self.running, self.pending = running, pending
        self._running_sums = (sum(v[0] for v in vals), sum(v[1] is None for v in vals))
        self.order = RunningReleases()
        for job, v in running.items():
            self.order.put(job, *v)
        for k, n in zip(_COUNTS, counts, strict=True):
            setattr(self, k, n)
        self.late_sum, self.wait_sum, self.late_max = late_sum, wait_sum, late_max


def _against(f: ReleaseForecast, at: float, submitted: float) -> ReleaseForecast:
    """The forecast made at ``submitted``, taken against a reservation at ``at`` instead: the
    same releases (its steps are the running jobs it needed, in order), so the forecast is
    recomputed from them."""
    holders = [Holder(s.job, s.nodes, s.release_at, s.name) for s in f.steps]
    return forecast_release(f.need, at, f.held, holders, now=submitted)
