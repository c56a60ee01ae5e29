"""EASY backfilling on specific nodes, with outages and admin drains, observed every iteration.

EASY (Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995; Mu'alem & Feitelson, IEEE TPDS
12(6), 2001): jobs queue in FCFS order. Whenever something changes (a submit, an end, a node
going down or coming back, a drain starting or ending) the scheduler

1. starts queued jobs in order while the first one fits on the free nodes (lowest node ids first);
2. gives the first waiting job (the *head*) a reservation on specific nodes at its *shadow time*:
   every node gets the time it is expected to be free (now if free, the running job's start plus
   its requested walltime if busy, never if down or drained); the shadow time is the earliest time
   at which ``nodes`` nodes are free. Of the nodes free by then the head reserves those that become
   free latest (ties: lowest id), so the surplus ("extra nodes" of EASY) is the nodes free soonest,
   idle ones first, which long jobs may backfill. With
   ``depth`` > 1 the next jobs get reservations the same way, after the earlier reservations'
   requested end times are taken into account (Moab's RESERVATIONDEPTH);
3. backfills the other waiting jobs in queue order (with ``shortest_first``, in order of their
   planning run times, queue order among equals: the SJBF of Tsafrir et al.'s EASY++): a job
   starts now on free nodes that either carry no reservation or whose earliest reservation
   starts no sooner than now + the job's requested walltime (so it ends before the shadow time,
   or uses nodes the head does not need).

Jobs run for their actual runtime, or are killed at their requested walltime. Because planning
uses requested walltimes, which bound actual run times, a backfilled job never delays a
reservation unless a node fails. A node that goes Down kills its job (end state NODE_FAIL). An
admin drain on a busy node shows as Draining until the job ends, then Drained (Moab's node states;
seed 000 footnote 1: not the seed's "drain").

Planning estimates (Mu'alem & Feitelson 2001 compare users' estimates with actual run times;
Tsafrir, Etsion & Feitelson, "Backfilling using system-generated predictions rather than user
runtime estimates", IEEE TPDS 18(6), 2007, plan with predictions):
everything above that says "requested walltime" is the job's *planning run time*, ``plan[j]``.
By default it is the requested walltime (the behaviour above, unchanged); an ``estimate``
(:class:`Estimate`, e.g. those of :mod:`models.sim.policies`) sets it when the job is submitted,
never above the request. A job is still killed at its requested walltime, never at its plan.
When a running job reaches start + plan without having ended, the estimate raises its plan
(``outlived``; a new plan that is not past the elapsed time becomes the request) and the
scheduler plans again at that instant. With plans that bound the actual run time (the request,
or the actual run time itself) no job ever outlives its plan.

:class:`ConservativeScheduler` (conservative backfilling, Mu'alem & Feitelson 2001): every
waiting job holds a reservation, in queue order; see its docstring.

``run`` observes the machine; :meth:`EasyScheduler.run_all` is the fast path (no iteration
states, no event lists kept): it runs to the end and returns the job records (start, end,
nodes). With ``log_reservations`` the scheduler keeps :class:`Reservation` entries (the
promises :mod:`models.sim.validity` checks).

The machine is observed at each iteration, ``start + k * period``: each :class:`IterationState`
gives every node's state
code (the codes of :mod:`models.records.nodestatus`, named by its ``KNOWN_STATES``), its
reservation list (jobs whose reservations include the node, in start order) and job list. Busy
nodes are reported as ``Busy`` (Moab also knows ``Running``; the simulator never emits it).
Pure: times are floats that come in with the workload.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

# node states: the codes (and, through KNOWN_STATES, the names) of the node-status records
from models.records.nodestatus import BUSY, DOWN, DRAINED, DRAINING, IDLE

INF = float("inf")
NO_JOB_INDEX = -1  # node_job of a node that runs no job (else the job's workload index)


@dataclass(slots=True)
class Workload:
    """Jobs to schedule (parallel arrays); ``submit`` is absolute seconds, any order."""

    job_id: list[str]
    submit: np.ndarray  # float64
    nodes: np.ndarray  # int64
    runtime: np.ndarray  # float64
    req_walltime: np.ndarray  # float64
    user: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.job_id)


@dataclass(slots=True, frozen=True)
class NodeInterval:
    """Node ``node`` (0-based index) is Down (kind 'down') or admin-drained (kind 'drain') in
    [start, end)."""

    node: int
    start: float
    end: float
    kind: str = "down"


@dataclass(slots=True, frozen=True)
class SchedEvent:
    """A job submit/start/end. ``job`` indexes the workload; ``node_ids`` are 0-based indices;
    ``state`` on ends is COMPLETED, TIMEOUT (killed at its walltime) or NODE_FAIL.
    ``reserved_start`` on starts: the shadow time EASY reserved when the job became the queue
    head and could not start at once (its ``first_shadow``; under conservative backfilling the
    reservation made at its submit); None for a job never reserved."""

    type: str
    ts: float
    job: int
    backfill: bool | None = None
    node_ids: tuple[int, ...] = ()
    state: str | None = None
    reserved_start: float | None = None


@dataclass(slots=True, frozen=True)
class Reservation:
    """A promise the scheduler made at ``made``: job ``job`` (workload index) will start at
    ``start`` at the latest. EASY logs its head's shadow time (each time it changes while the
    job is the head); conservative backfilling logs every job's reservation when it is made or
    moved."""

    made: float
    job: int
    start: float


class EstimateState(Protocol):
    """One simulation's run-time estimates (made by :meth:`Estimate.for_workload`)."""

    def submitted(self, job: int, now: float) -> float:
        """The planning run time of ``job``, submitted at ``now`` (the scheduler caps it at the
        request)."""
        ...

    def ended(self, job: int, ran: float) -> None:
        """``job`` ended (completed, or killed at its request) after running ``ran`` seconds."""
        ...

    def outlived(self, job: int, elapsed: float) -> float:
        """``job`` has run ``elapsed`` seconds, its whole plan, and goes on: its new plan."""
        ...


class Estimate(Protocol):
    """Where planning run times come from (see the module docstring)."""

    def for_workload(self, workload: Workload) -> EstimateState:
        """Fresh state for one simulation of ``workload``."""
        ...


@dataclass(slots=True)
class IterationState:
    """The machine as seen at one scheduler iteration (what its node-status lines report)."""

    ts: float
    state: npt.NDArray[np.int8]  # state codes of models.records.nodestatus, one per node
    rsvlist: list[str]  # comma list of job ids or 'none', one per node
    joblist: list[str]  # running job id or 'none', one per node


@dataclass(slots=True)
class JobRecord:
    """What happened to a job (filled in as the simulation runs)."""

    start: float = float("nan")
    end: float = float("nan")
    backfill: bool = False
    # the shadow time when it first became the head and could not start at once (conservative
    # backfilling: its reservation made at submit, if later than the submit)
    first_shadow: float = float("nan")
    node_ids: tuple[int, ...] = ()
    state: str = ""


def _unseen(t: float) -> None:
    """The visit of a run nobody observes."""


class EasyScheduler:
    """Event-driven EASY backfilling over ``n_nodes`` nodes; see the module docstring."""

    def __init__(
        self,
        n_nodes: int,
        workload: Workload,
        outages: Sequence[NodeInterval] = (),
        depth: int = 1,
        estimate: Estimate | None = None,
        log_reservations: bool = False,
        shortest_first: bool = False,
    ) -> None:
        if n_nodes < 1:
            raise ValueError("n_nodes must be >= 1")
        if depth < 1:
            raise ValueError("depth must be >= 1")
        big = np.flatnonzero((workload.nodes > n_nodes) | (workload.nodes < 1))
        if big.size:
            raise ValueError(f"{big.size} jobs ask for more nodes than the machine (or < 1)")
        self.n = n_nodes
        self.w = workload
        self.depth = depth
        self.shortest_first = shortest_first
        self.records = [JobRecord() for _ in range(len(workload))]
        # planning run time per job: the request unless an estimate says otherwise
        self.plan: npt.NDArray[np.float64] = np.array(workload.req_walltime, dtype=np.float64)
        self._est = None if estimate is None else estimate.for_workload(workload)
        self._expiry: list[tuple[float, int]] = []  # heap (start + plan, job) of running jobs
        self.rsv_log: list[Reservation] | None = [] if log_reservations else None
        self._last_promise: tuple[int, float] | None = None
        # per-node state
        self.node_job = np.full(n_nodes, NO_JOB_INDEX, dtype=np.int64)
        self.free_at = np.zeros(n_nodes)  # expected free time of busy nodes (start + plan)
        self.down = np.zeros(n_nodes, dtype=np.int32)  # overlapping interval counts
        self.drain = np.zeros(n_nodes, dtype=np.int32)
        self.rsv_str = ["none"] * n_nodes
        self.rsv_job = np.full(n_nodes, NO_JOB_INDEX, dtype=np.int64)  # first job in rsv_str
        self.job_str = ["none"] * n_nodes
        self.rsv_start = np.full(n_nodes, INF)  # earliest reservation start per node
        self._rsv_nodes: list[int] = []
        self.queue: deque[int] = deque()
        self.running_ends: list[tuple[float, int]] = []  # heap (actual end, job)
        self.head: int | None = None
        order = np.lexsort((np.arange(len(workload)), workload.submit))
        self._submits = order.tolist()
        self._submit_times = workload.submit[order].tolist()
        self._si = 0
        trans: list[tuple[float, int, int, str]] = []  # (time, +1/-1 ordering, node, kind)
        for o in outages:
            if not 0 <= o.node < n_nodes:
                raise ValueError(f"outage on node index {o.node} outside the machine")
            if o.kind not in ("down", "drain"):
                raise ValueError(f"unknown outage kind {o.kind!r}")
            if o.end <= o.start:
                continue
            trans.append((o.start, 1, o.node, o.kind))
            trans.append((o.end, -1, o.node, o.kind))
        trans.sort(key=lambda x: (x[0], x[1]))  # at equal times, ends before starts
        self._trans = trans
        self._ti = 0

    # --- state -------------------------------------------------------------------------------

    def available(self) -> npt.NDArray[np.bool_]:
        """Nodes that may run new jobs (not down, not drained)."""
        ok: npt.NDArray[np.bool_] = (self.down == 0) & (self.drain == 0)  # stubs: == is Any
        return ok

    def state_codes(self) -> npt.NDArray[np.int8]:
        st = np.where(self.node_job >= 0, BUSY, IDLE).astype(np.int8)
        dr = self.drain > 0
        st[dr & (self.node_job >= 0)] = DRAINING
        st[dr & (self.node_job < 0)] = DRAINED
        st[self.down > 0] = DOWN
        return st

    def iteration_state(self, ts: float) -> IterationState:
        return IterationState(ts, self.state_codes(), list(self.rsv_str), list(self.job_str))

    def reserved_jobs(self) -> npt.NDArray[np.int64]:
        """Per node, the workload index of the first job its reservation list names (the job a
        drain is charged to, seed 000 §IV-A), else ``NO_JOB_INDEX``."""
        return self.rsv_job

    # --- events ------------------------------------------------------------------------------

    def _next_event_time(self) -> float:
        t = INF
        if self._si < len(self._submit_times):
            t = self._submit_times[self._si]
        if self.running_ends and self.running_ends[0][0] < t:
            t = self.running_ends[0][0]
        if self._ti < len(self._trans) and self._trans[self._ti][0] < t:
            t = self._trans[self._ti][0]
        if self._expiry and self._expiry[0][0] < t:
            t = self._expiry[0][0]
        return t

    def _end_job(self, j: int, t: float, state: str, out: list[SchedEvent]) -> None:
        rec = self.records[j]
        ids = np.asarray(rec.node_ids, dtype=np.int64)
        self.node_job[ids] = NO_JOB_INDEX
        self.free_at[ids] = 0.0
        for i in rec.node_ids:
            self.job_str[i] = "none"
        rec.end = t
        rec.state = state
        out.append(SchedEvent("end", t, j, node_ids=rec.node_ids, state=state))
        if self._est is not None and state != "NODE_FAIL":
            self._est.ended(j, t - rec.start)

    def _start_job(
        self, j: int, t: float, ids: np.ndarray, backfill: bool, out: list[SchedEvent]
    ) -> None:
        rec = self.records[j]
        w = self.w
        self.node_job[ids] = j
        plan = float(self.plan[j])
        self.free_at[ids] = t + plan
        jid = w.job_id[j]
        for i in ids.tolist():
            self.job_str[i] = jid
        rec.start = t
        rec.backfill = backfill
        rec.node_ids = tuple(ids.tolist())
        run = min(float(w.runtime[j]), float(w.req_walltime[j]))
        state = "COMPLETED" if w.runtime[j] <= w.req_walltime[j] else "TIMEOUT"
        rec.state = state
        heapq.heappush(self.running_ends, (t + run, j))
        if t + plan < t + run:
            heapq.heappush(self._expiry, (t + plan, j))
        shadow = rec.first_shadow
        rsv = None if shadow != shadow else shadow  # NaN: never reserved
        out.append(
            SchedEvent("start", t, j, backfill=backfill, node_ids=rec.node_ids, reserved_start=rsv)
        )

    def _process_events_at(self, t: float, out: list[SchedEvent]) -> None:
        ends = self.running_ends
        while ends and ends[0][0] <= t:
            te, j = heapq.heappop(ends)
            if self.records[j].end == self.records[j].end:  # already ended (killed)
                continue
            self._end_job(j, te, self.records[j].state, out)
        while self._ti < len(self._trans) and self._trans[self._ti][0] <= t:
            tt, sign, node, kind = self._trans[self._ti]
            self._ti += 1
            if kind == "down":
                self.down[node] += sign
                if sign > 0 and self.node_job[node] >= 0:
                    self._end_job(int(self.node_job[node]), tt, "NODE_FAIL", out)
            else:
                self.drain[node] += sign
        exp = self._expiry
        while exp and exp[0][0] <= t:
            te, j = heapq.heappop(exp)
            if self.records[j].end != self.records[j].end:  # still running (not NaN)
                self._outlived(j, te)
        est = self._est
        while self._si < len(self._submit_times) and self._submit_times[self._si] <= t:
            j = self._submits[self._si]
            self._si += 1
            self.queue.append(j)
            out.append(SchedEvent("submit", float(self.w.submit[j]), j))
            if est is not None:
                req = float(self.w.req_walltime[j])
                self.plan[j] = max(0.0, min(req, float(est.submitted(j, t))))

    def _outlived(self, j: int, t: float) -> None:
        """Running job ``j`` reached start + plan at ``t`` without ending: raise its plan (the
        estimate's new value, capped at the request; the request if not past the elapsed
        time) and its nodes' expected free time."""
        assert self._est is not None  # only estimates below the actual run time expire
        rec = self.records[j]
        w = self.w
        req = float(w.req_walltime[j])
        elapsed = t - rec.start
        new = min(req, float(self._est.outlived(j, elapsed)))
        if not new > elapsed:
            new = req
        self.plan[j] = new
        self.free_at[np.asarray(rec.node_ids, dtype=np.int64)] = rec.start + new
        if rec.start + new < rec.start + min(float(w.runtime[j]), req):
            heapq.heappush(self._expiry, (rec.start + new, j))

    # --- the EASY pass -----------------------------------------------------------------------

    def _schedule(self, now: float, out: list[SchedEvent]) -> None:
        w = self.w
        avail = self.available()
        free = avail & (self.node_job < 0)
        q = self.queue
        # 1. FCFS starts
        while q:
            j = q[0]
            need = int(w.nodes[j])
            ids = np.flatnonzero(free)
            if ids.size < need:
                break
            q.popleft()
            ids = ids[:need]
            free[ids] = False
            self._start_job(j, now, ids, False, out)
        # 2. reservations for the first `depth` waiting jobs
        for i in self._rsv_nodes:
            self.rsv_str[i] = "none"
        self.rsv_job[self._rsv_nodes] = NO_JOB_INDEX
        self._rsv_nodes = []
        self.rsv_start[:] = INF
        if not q:
            self.head = None
            return
        if q[0] != self.head:
            self.head = q[0]
            new_head = True
        else:
            new_head = False
        expect = np.where(avail, np.where(self.node_job >= 0, self.free_at, now), INF)
        node_rsv: dict[int, list[tuple[float, str, int]]] = {}
        reserved: set[int] = set()
        for k, j in enumerate(q):
            if k >= self.depth:
                break
            need = int(w.nodes[j])
            shadow = float(np.partition(expect, need - 1)[need - 1])
            if shadow == INF:
                break  # not enough usable nodes: no reservation (and none after it)
            # of the nodes free by the shadow time, reserve those free latest (ties: lowest id),
            # leaving the earliest-free ones (idle now) to backfill: classic EASY "extra nodes"
            cand = np.flatnonzero(expect <= shadow)
            order = cand[np.lexsort((cand, -expect[cand]))[:need]]
            if k == 0:
                if new_head:
                    self.records[j].first_shadow = shadow
                if self.rsv_log is not None and self._last_promise != (j, shadow):
                    self._last_promise = (j, shadow)
                    self.rsv_log.append(Reservation(now, j, shadow))
            reserved.add(j)
            jid = w.job_id[j]
            for i in order.tolist():
                node_rsv.setdefault(i, []).append((shadow, jid, j))
            self.rsv_start[order] = np.minimum(self.rsv_start[order], shadow)
            expect[order] = shadow + float(self.plan[j])
        for i, lst in node_rsv.items():
            lst.sort()
            self.rsv_str[i] = ",".join(x[1] for x in lst)
            self.rsv_job[i] = lst[0][2]
        self._rsv_nodes = list(node_rsv)
        # 3. backfill
        n_free = int(free.sum())
        if n_free == 0:
            return
        started: list[int] = []
        unres = free & (self.rsv_start == INF)
        n_unres = int(unres.sum())
        res_starts = sorted(self.rsv_start[free & (self.rsv_start < INF)].tolist())
        plan = self.plan
        for j in sorted(q, key=lambda j: plan[j]) if self.shortest_first else q:
            if n_free == 0:
                break
            if j in reserved:
                continue
            need = int(w.nodes[j])
            if need > n_free:
                continue
            limit = now + float(self.plan[j])
            n_ok = n_unres + len(res_starts) - bisect_left(res_starts, limit)
            if n_ok < need:
                continue
            ok = free & (self.rsv_start >= limit)
            ids = np.flatnonzero(ok)[:need]
            free[ids] = False
            self._start_job(j, now, ids, True, out)
            started.append(j)
            n_free -= need
            unres = free & (self.rsv_start == INF)
            n_unres = int(unres.sum())
            res_starts = sorted(self.rsv_start[free & (self.rsv_start < INF)].tolist())
        if started:
            s = set(started)
            self.queue = deque(x for x in q if x not in s)

    # --- driver ------------------------------------------------------------------------------

    def run(
        self, start: float, end: float, period: float
    ) -> Iterator[tuple[list[SchedEvent], IterationState | None]]:
        """Simulate from the first event up to ``end``; yield (events since the last yield,
        iteration state) for each iteration time start + k*period < end (events before ``start``
        come with the first iteration). Events after the last iteration are yielded with None."""
        if period <= 0:
            raise ValueError("period must be > 0")
        k = 0
        while True:
            t_iter = start + k * period
            if t_iter >= end:
                break
            events: list[SchedEvent] = []
            t = self._next_event_time()
            while t <= t_iter:
                self._process_events_at(t, events)
                self._schedule(t, events)
                t = self._next_event_time()
            yield events, self.iteration_state(t_iter)
            k += 1
        events = []
        t = self._next_event_time()
        while t < end:
            self._process_events_at(t, events)
            self._schedule(t, events)
            t = self._next_event_time()
        if events:
            yield events, None

    def run_each(self, visit: Callable[[float], None], end: float = INF) -> list[JobRecord]:
        """:meth:`run_all`, calling ``visit(t)`` once for each event time ``t`` before ``end``,
        after its last scheduling pass: the machine's state then holds until the next event
        time, so observing it at every ``visit`` sees every change of every node."""
        events: list[SchedEvent] = []
        t = self._next_event_time()
        while t < end:
            self._process_events_at(t, events)
            self._schedule(t, events)
            events.clear()
            nxt = self._next_event_time()
            if nxt > t:
                visit(t)
            t = nxt
        return self.records

    def run_all(self, end: float = INF) -> list[JobRecord]:
        """The fast path: process every event before ``end`` with no iteration observed and no
        event kept, and return the job records (start, end, node ids, state; NaN start for a
        job that never started)."""
        return self.run_each(_unseen, end)


class ConservativeScheduler(EasyScheduler):
    """Conservative backfilling (Mu'alem & Feitelson 2001, IEEE TPDS 12(6): their description of
    conservative backfilling and of schedule compression) over a free-node profile.

    Every waiting job holds a reservation: the earliest time at which enough nodes are free for
    its planning run time, given the running jobs (busy until start + plan) and every other
    reservation. Rules, at each scheduling pass:

    1. a newly submitted job gets the earliest reservation that fits around those already made
       (the jobs ahead of it keep theirs); a job whose reservation is now starts (lowest free
       node ids), so a job that starts while a job submitted before it still waits has been
       backfilled into a hole and delays no reservation;
    2. when a job ends before its planned end the schedule is compressed: in queue order each
       job is moved to the earliest time it fits given all the other reservations (never later
       than where it was), repeated until no job moves;
    3. when the machine gets smaller than planned (a running job outlives its predicted run
       time, a node goes down or is drained) the reservations are made again from scratch in
       queue order; then reservations may move later.

    Reservations count nodes, not specific nodes: a job gets its node ids when it starts, so the
    iteration states list no per-node reservations (``rsvlist`` 'none'). With plans that bound the
    actual run times and no outages a reservation never moves later and every job starts at
    its reservation. A job's reservation made at its submit is its ``first_shadow`` (when it
    could not start at once). ``depth`` does not apply.

    The nodes the reservations hold idle (:meth:`reserved_jobs`, the drain of seed 000 under
    this policy): of the idle nodes, as many as no job that started now and ran for ever could
    use, that is the idle nodes less the fewest free nodes the plan has at any time from now on.
    Under EASY's single reservation this is the number of its nodes that are idle (its other
    nodes are busy until the shadow time). They are the highest-numbered idle nodes (jobs start
    on the lowest) and are charged to the reservation that makes the plan that full: of those
    covering the first time the plan has the fewest free nodes, the one starting last."""

    def __init__(
        self,
        n_nodes: int,
        workload: Workload,
        outages: Sequence[NodeInterval] = (),
        estimate: Estimate | None = None,
        log_reservations: bool = False,
    ) -> None:
        super().__init__(n_nodes, workload, outages, 1, estimate, log_reservations)
        # free nodes on [pt[i], pt[i + 1]) (the last segment without end); pt[0] <= now
        self._pt: list[float] = [-INF]
        self._pf: list[int] = [0]
        self._rsv: dict[int, float] = {}  # waiting job -> reserved start (INF: none fits)
        self._rebuild = True
        self._freed = False
        self._wake = INF  # the next reservation start after the last pass
        self._nodes: list[int] = workload.nodes.tolist()
        self._now = -INF  # the time of the last scheduling pass

    # --- the profile -------------------------------------------------------------------------

    def _split(self, x: float) -> int:
        """Index of the profile segment starting at ``x`` (made if needed; ``x`` >= pt[0])."""
        t = self._pt
        if x == INF:
            return len(t)
        i = bisect_left(t, x)
        if i < len(t) and t[i] == x:
            return i
        t.insert(i, x)
        self._pf.insert(i, self._pf[i - 1])
        return i

    def _add(self, t0: float, t1: float, k: int) -> None:
        """``k`` more free nodes on [t0, t1)."""
        if not t1 > t0:
            return
        i0 = self._split(t0)
        i1 = self._split(t1)
        f = self._pf
        for i in range(i0, i1):
            f[i] += k

    def _fit(self, now: float, need: int, dur: float, own_s: float, own_e: float) -> float:
        """Earliest start >= ``now`` and < ``own_s`` where ``need`` nodes are free for ``dur``
        seconds (at least at the start), counting the job's own reservation [own_s, own_e)
        (segment boundaries) as free; INF if there is none."""
        t, f = self._pt, self._pf
        n = len(t)
        i = bisect_right(t, now) - 1
        while i < n:
            start = t[i] if t[i] > now else now
            if start >= own_s:
                return INF
            if f[i] < need:
                i += 1
                continue
            end = start + dur
            j = i + 1
            while j < n and t[j] < end:
                fj = f[j] + need if own_s <= t[j] < own_e else f[j]
                if fj < need:
                    break
                j += 1
            else:
                return start
            i = j + 1
        return INF

    def _build(self, now: float) -> None:
        """The profile of the running jobs alone: a node is free from now if idle, from its
        job's start + plan if busy, never if down or drained."""
        avail = self.available()
        expect = np.where(avail, np.where(self.node_job >= 0, self.free_at, now), INF)
        vals, counts = np.unique(expect[expect < INF], return_counts=True)
        cum = np.cumsum(counts).tolist()
        t = [now]
        f = [0]
        for v, c in zip(vals.tolist(), cum, strict=True):
            if v <= now:
                f[0] = c
            else:
                t.append(v)
                f.append(c)
        self._pt, self._pf = t, f

    def _trim(self, now: float) -> None:
        t = self._pt
        i = bisect_right(t, now) - 1
        if i > 0:
            del t[:i]
            del self._pf[:i]
        if len(t) > 32 + 4 * (len(self._rsv) + len(self.running_ends)):
            self._compact()

    def _compact(self) -> None:
        """Merge segments with equal free counts, keeping reservation boundaries."""
        keep = set(self._rsv.values())
        keep.update(s + float(self.plan[j]) for j, s in self._rsv.items())
        t, f = self._pt, self._pf
        nt, nf = [t[0]], [f[0]]
        for x, y in zip(t[1:], f[1:], strict=True):
            if y != nf[-1] or x in keep:
                nt.append(x)
                nf.append(y)
        self._pt, self._pf = nt, nf

    # --- reservations ------------------------------------------------------------------------

    def reserved_jobs(self) -> npt.NDArray[np.int64]:
        rj = self.rsv_job
        rj[:] = NO_JOB_INDEX
        waiting = [(s, k) for k, j in enumerate(self.queue) if (s := self._rsv.get(j, INF)) < INF]
        if not waiting:
            return rj
        idle = np.flatnonzero(self.available() & (self.node_job < 0))
        t, f = self._pt, self._pf
        i = max(0, bisect_right(t, self._now) - 1)
        low = min(f[i:])
        held = min(idle.size, idle.size - low)
        if held > 0:
            at = t[f.index(low, i)]  # the first time the plan is that full
            plan = self.plan
            by = [(s, k) for s, k in waiting if s <= at < s + plan[self.queue[k]]]
            rj[idle[idle.size - held :]] = self.queue[max(by)[1] if by else min(waiting)[1]]
        return rj

    def _promise(self, now: float, j: int, s: float) -> None:
        self._rsv[j] = s
        if s < INF and self.rsv_log is not None:
            self.rsv_log.append(Reservation(now, j, s))

    def _place(self, j: int, now: float) -> None:
        d = float(self.plan[j])
        need = self._nodes[j]
        s = self._fit(now, need, d, INF, INF)
        if s < INF:
            self._add(s, s + d, -need)
            rec = self.records[j]
            if s > now and rec.first_shadow != rec.first_shadow:
                rec.first_shadow = s
        self._promise(now, j, s)

    def _compress(self, now: float) -> None:
        rsv = self._rsv
        moved = True
        while moved:
            moved = False
            for j in self.queue:
                s = rsv.get(j)
                if s is None or s <= now:
                    continue
                d = float(self.plan[j])
                need = self._nodes[j]
                s2 = self._fit(now, need, d, s, s + d)
                if s2 < s:
                    if s < INF:
                        self._add(s, s + d, need)
                    self._add(s2, s2 + d, -need)
                    self._promise(now, j, s2)
                    moved = True

    # --- events ------------------------------------------------------------------------------

    def _next_event_time(self) -> float:
        t = super()._next_event_time()
        return t if t < self._wake else self._wake

    def _end_job(self, j: int, t: float, state: str, out: list[SchedEvent]) -> None:
        rec = self.records[j]
        planned = rec.start + float(self.plan[j])
        super()._end_job(j, t, state, out)
        if t < planned and not self._rebuild:
            self._add(t, planned, self._nodes[j])
            self._freed = True

    def _outlived(self, j: int, t: float) -> None:
        super()._outlived(j, t)
        self._rebuild = True

    def _process_events_at(self, t: float, out: list[SchedEvent]) -> None:
        ti = self._ti
        super()._process_events_at(t, out)
        if self._ti != ti:  # a node went down or came back, a drain began or ended
            self._rebuild = True

    def _schedule(self, now: float, out: list[SchedEvent]) -> None:
        q = self.queue
        rsv = self._rsv
        if self._rebuild:
            self._build(now)
            rsv.clear()
            for j in q:
                self._place(j, now)
            self._rebuild = self._freed = False
        else:
            self._trim(now)
            if self._freed:
                self._compress(now)
                self._freed = False
            for j in q:
                if j not in rsv:
                    self._place(j, now)
        # start the jobs whose reservation is now, in queue order, on the lowest free node ids
        # (a job whose nodes are still held by a zero-length job ending now starts at the next
        # pass, at the same time)
        free = self.available() & (self.node_job < 0)
        n_free = int(free.sum())
        waiting_ahead = False
        started: list[int] = []
        for j in q:
            need = self._nodes[j]
            if rsv[j] <= now and need <= n_free:
                ids = np.flatnonzero(free)[:need]
                free[ids] = False
                n_free -= need
                del rsv[j]
                self._start_job(j, now, ids, waiting_ahead, out)
                started.append(j)
            else:
                waiting_ahead = True
        if started:
            s = set(started)
            self.queue = deque(x for x in q if x not in s)
        self._wake = min((x for x in rsv.values() if x > now), default=INF)
        self._now = now
