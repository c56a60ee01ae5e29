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
3. backfills the other waiting jobs in queue order: a job starts now on free nodes that either
   carry no reservation or whose earliest reservation starts no sooner than now + the job's
   requested walltime (so it ends before the shadow time, or uses nodes the head does not need).

Jobs run for their actual runtime, or are killed at their requested walltime. Because planning
uses requested walltimes, which bound actual run times, a backfilled job never delays a
reservation unless a node fails. A node that goes Down kills its job (end state NODE_FAIL). An
admin drain on a busy node shows as Draining until the job ends, then Drained (Moab's node states;
seed 000 footnote 1: not the seed's "drain").

The machine is observed at each iteration, ``start + k * period``: each :class:`IterationState`
gives every node's state
code (the codes of :mod:`models.records.nodestatus`, named by its ``KNOWN_STATES``), its
reservation list (jobs whose reservations include the node, in start order) and job list. Busy
nodes are reported as ``Busy`` (Moab also knows ``Running``; the simulator never emits it).
Pure: times are floats that come in with the workload.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

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
    head and could not start at once (its ``first_shadow``); None for a job never reserved."""

    type: str
    ts: float
    job: int
    backfill: bool | None = None
    node_ids: tuple[int, ...] = ()
    state: str | None = None
    reserved_start: float | None = None


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
    first_shadow: float = float("nan")  # shadow time computed when it first became head
    node_ids: tuple[int, ...] = ()
    state: str = ""


class EasyScheduler:
    """Event-driven EASY backfilling over ``n_nodes`` nodes; see the module docstring."""

    def __init__(
        self,
        n_nodes: int,
        workload: Workload,
        outages: Sequence[NodeInterval] = (),
        depth: int = 1,
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
        self.records = [JobRecord() for _ in range(len(workload))]
        # per-node state
        self.node_job = np.full(n_nodes, NO_JOB_INDEX, dtype=np.int64)
        self.free_at = np.zeros(n_nodes)  # expected free time of busy nodes (start + walltime)
        self.down = np.zeros(n_nodes, dtype=np.int32)  # overlapping interval counts
        self.drain = np.zeros(n_nodes, dtype=np.int32)
        self.rsv_str = ["none"] * n_nodes
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

    # --- events ------------------------------------------------------------------------------

    def _next_event_time(self) -> float:
        t = INF
        if self._si < len(self._submit_times):
            t = self._submit_times[self._si]
        if self.running_ends and self.running_ends[0][0] < t:
            t = self.running_ends[0][0]
        if self._ti < len(self._trans) and self._trans[self._ti][0] < t:
            t = self._trans[self._ti][0]
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

    def _start_job(
        self, j: int, t: float, ids: np.ndarray, backfill: bool, out: list[SchedEvent]
    ) -> None:
        rec = self.records[j]
        w = self.w
        self.node_job[ids] = j
        self.free_at[ids] = t + float(w.req_walltime[j])
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
        while self._si < len(self._submit_times) and self._submit_times[self._si] <= t:
            j = self._submits[self._si]
            self._si += 1
            self.queue.append(j)
            out.append(SchedEvent("submit", float(self.w.submit[j]), j))

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
        node_rsv: dict[int, list[tuple[float, str]]] = {}
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
            if k == 0 and new_head:
                self.records[j].first_shadow = shadow
            reserved.add(j)
            jid = w.job_id[j]
            for i in order.tolist():
                node_rsv.setdefault(i, []).append((shadow, jid))
            self.rsv_start[order] = np.minimum(self.rsv_start[order], shadow)
            expect[order] = shadow + float(w.req_walltime[j])
        for i, lst in node_rsv.items():
            lst.sort()
            self.rsv_str[i] = ",".join(x[1] for x in lst)
        self._rsv_nodes = list(node_rsv)
        # 3. backfill
        n_free = int(free.sum())
        if n_free == 0:
            return
        started: list[int] = []
        unres = free & (self.rsv_start == INF)
        n_unres = int(unres.sum())
        res_starts = sorted(self.rsv_start[free & (self.rsv_start < INF)].tolist())
        for j in q:
            if n_free == 0:
                break
            if j in reserved:
                continue
            need = int(w.nodes[j])
            if need > n_free:
                continue
            limit = now + float(w.req_walltime[j])
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
