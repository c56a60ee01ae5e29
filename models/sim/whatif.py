"""What if the site's own jobs had run under another policy: each policy's schedule, its drain
accounted as the replay accounts a node-status log (seed 000), and its outcomes
(:mod:`models.sim.outcomes`) held against the recorded schedule. Pure.

Jobs (:func:`jobs_from_events`, from the job events every job source gives): a job is
simulated when its events give its start, end and size; its submit is the submit event's time
(else its start: it waited 0 s); its actual run time is end - start; its requested walltime is
the request, raised to its run time where the job ran past it (a site's grace time: it must run
as long here, so every policy uses the same node-seconds), or its run time where it has none.
Jobs larger than the machine, that never started, or that had not ended are left out, counted
by reason; so are the events of a job given twice.

Drain (:func:`account_drain`): the scheduler is observed after each event time's last pass
(:meth:`~models.sim.scheduler.EasyScheduler.run_each`), and every node whose state, first
reservation or job changed gets a node-status record at that time. Between event times nothing
changes, so the :class:`~models.drain.accountant.DrainAccountant` fed these records (no gap
limit, a closing record for every node at the last end) accounts every node-millisecond of
[first submit, last end) exactly: drain is Idle with a reservation, charged to the first one
(seed 000 §III-B.2). Drain % is over the static basis, nodes x that span (§III-B.3).
The recorded schedule (*as-run*) shows no reservations, so it has no drain.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from models.drain.accountant import DrainAccountant
from models.records.jobevent import JobEvent
from models.records.nodestatus import NO_JOB, Codebook, NodeStatusBatch
from models.sim.outcomes import (
    Outcome,
    Schedule,
    UserDelta,
    outcome,
    schedule_as_run,
    schedule_from_records,
    user_deltas,
)
from models.sim.policies import POLICIES, TrimmedMeanUpper, TsafrirLastTwo, make_scheduler
from models.sim.scheduler import NO_JOB_INDEX, EasyScheduler, Estimate, JobRecord, Workload

AS_RUN = "as-run"
# the estimates ``easy-predicted`` is run with: Tsafrir et al.'s and seed 001's
PREDICTORS: dict[str, Estimate] = {
    "last-two": TsafrirLastTwo(),
    "trimmed-upper": TrimmedMeanUpper(),
}
# the planning run time of each policy
ESTIMATE_OF = {
    AS_RUN: "recorded",
    "easy": "request",
    "easy-perfect": "actual",
    "conservative": "request",
}
_FLUSH = 1 << 16  # records buffered before the accountant takes them


@dataclass(frozen=True, slots=True)
class WhatifJobs:
    """The jobs to simulate and their recorded schedule; what was left out or filled in."""

    workload: Workload
    recorded: Schedule
    left_out: dict[str, int] = field(default_factory=dict)
    filled_in: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Job:
    submit: float | None = None
    start: float | None = None
    end: float | None = None
    nodes: int | None = None
    request: float | None = None
    user: str | None = None
    twice: bool = False


def _count(d: dict[str, int], key: str) -> None:
    d[key] = d.get(key, 0) + 1


def jobs_from_events(events: Iterable[JobEvent], n_nodes: int) -> WhatifJobs:
    """The simulated jobs of ``events`` (see the module docstring), in submit order (ties: the
    job id), with their recorded starts and ends."""
    jobs: dict[str, _Job] = {}
    for e in events:
        j = jobs.setdefault(e.job, _Job())
        if e.type in ("submit", "start", "end"):
            if getattr(j, e.type) is not None:
                j.twice = True
            setattr(j, e.type, e.ts)
        j.nodes = e.nodes if e.nodes is not None else j.nodes
        j.request = e.req_walltime if e.req_walltime is not None else j.request
        j.user = e.user if e.user is not None else j.user
    left: dict[str, int] = {}
    filled: dict[str, int] = {}
    rows: list[tuple[float, str, float, float, int, float, str]] = []
    for jid, j in jobs.items():
        if j.twice:
            _count(left, "events_twice")
        elif j.start is None:
            _count(left, "never_started")
        elif j.end is None:
            _count(left, "not_ended")
        elif j.nodes is None or j.nodes < 1:
            _count(left, "no_size")
        elif j.nodes > n_nodes:
            _count(left, "larger_than_machine")
        else:
            run = j.end - j.start
            submit = j.submit
            if submit is None or submit > j.start:
                _count(filled, "submit_from_start")
                submit = j.start
            req = j.request
            if req is None or req <= 0:
                _count(filled, "request_from_run")
                req = run
            elif req < run:
                _count(filled, "request_raised_to_run")
                req = run
            user = j.user
            if user is None:
                _count(filled, "user_unknown")
                user = "unknown"
            rows.append((submit, jid, j.start, run, j.nodes, req, user))
    rows.sort(key=lambda r: (r[0], r[1]))
    w = Workload(
        [r[1] for r in rows],
        np.array([r[0] for r in rows], dtype=np.float64),
        np.array([r[4] for r in rows], dtype=np.int64),
        np.array([r[3] for r in rows], dtype=np.float64),
        np.array([r[5] for r in rows], dtype=np.float64),
        [r[6] for r in rows],
    )
    start = np.array([r[2] for r in rows], dtype=np.float64)
    return WhatifJobs(w, schedule_as_run(w, start), left, filled)


@dataclass(frozen=True, slots=True)
class DrainTotals:
    """A simulated schedule's node-time over [first_ms, last_ms) on ``nodes`` nodes, in exact
    node-milliseconds: ``accounted_ms`` is all of it (nodes x span), ``drain_ms`` the drain."""

    nodes: int
    first_ms: int
    last_ms: int
    accounted_ms: int
    drain_ms: int
    records: int

    @property
    def drain_pct(self) -> float | None:
        """Drain over the static basis (seed 000 §III-B.3); None for a span of length 0."""
        span = self.last_ms - self.first_ms
        return self.drain_ms / (self.nodes * span) * 100.0 if span > 0 else None


class _Observer:
    """Node-status records of each node that changed since the last visit, fed to the
    accountant in batches."""

    def __init__(self, sched: EasyScheduler, tz: str, span_ms: int) -> None:
        self.sched = sched
        n = sched.n
        book = Codebook()
        self.node_codes = book.nodes.codes([f"n{i}" for i in range(n)])
        # workload index -> job code; index -1 (none) -> NO_JOB
        self.job_codes = np.append(book.jobs.codes(list(sched.w.job_id)), NO_JOB)
        self.acc = DrainAccountant(book, tz, max_gap_ms=max(1, span_ms + 1))
        self.state = np.full(n, -1, dtype=np.int64)
        self.rsv = np.full(n, -2, dtype=np.int64)
        self.job = np.full(n, -2, dtype=np.int64)
        self.seen_ms = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        self.buf: list[npt.NDArray[np.int64]] = []  # per visit: (ts, node, state, rsv, job) rows
        self.buffered = 0
        self.records = 0

    def visit(self, t: float) -> None:
        s = self.sched
        ts = round(t * 1000)
        state = s.state_codes().astype(np.int64)
        rsv = s.reserved_jobs()
        job = s.node_job
        changed = np.flatnonzero((state != self.state) | (rsv != self.rsv) | (job != self.job))
        if changed.size:
            self.state[changed] = state[changed]
            self.rsv[changed] = rsv[changed]
            self.job[changed] = job[changed]
            self._record(ts, changed)

    def close(self, t: float) -> None:
        """A record at ``t`` for every node not recorded at ``t``: the last intervals accrue."""
        ts = round(t * 1000)
        self._record(ts, np.flatnonzero(self.seen_ms < ts))
        self.flush()

    def _record(self, ts: int, nodes: npt.NDArray[np.intp]) -> None:
        if not nodes.size:
            return
        self.seen_ms[nodes] = ts
        rows = np.empty((nodes.size, 5), dtype=np.int64)
        rows[:, 0] = ts
        rows[:, 1] = nodes
        rows[:, 2] = self.state[nodes]
        rows[:, 3] = self.rsv[nodes]
        rows[:, 4] = self.job[nodes]
        self.buf.append(rows)
        self.buffered += nodes.size
        if self.buffered >= _FLUSH:
            self.flush()

    def flush(self) -> None:
        if not self.buf:
            return
        r = np.concatenate(self.buf)
        self.buf.clear()
        self.buffered = 0
        has_job = r[:, 4] != NO_JOB_INDEX
        rows = np.flatnonzero(has_job).astype(np.int64)
        batch = NodeStatusBatch(
            ts_ms=r[:, 0].copy(),
            node=self.node_codes[r[:, 1]],
            state=r[:, 2].copy(),
            rsv=self.job_codes[r[:, 3]],
            has_job=has_job,
            run_row=rows,
            run_job=self.job_codes[r[rows, 4]],
        )
        self.acc.add(batch)
        self.records += len(batch)


def account_drain(sched: EasyScheduler, tz: str = "UTC") -> tuple[list[JobRecord], DrainTotals]:
    """Run ``sched`` to the end, its drain accounted (see the module docstring): the job
    records and the totals over [first submit, last end)."""
    w = sched.w
    if not len(w):
        raise ValueError("no job to schedule")
    first = float(w.submit.min())
    # no schedule lasts past the last submit plus every job run one after another
    longest = float(w.submit.max()) - first + float(np.minimum(w.runtime, w.req_walltime).sum())
    span_ms = round(longest * 1000) + 1000
    obs = _Observer(sched, tz, span_ms)
    records = sched.run_each(obs.visit)
    last = max(float(np.nanmax([r.end for r in records])), float(w.submit.max()))
    obs.close(last)
    rows = obs.acc.windows()
    drain = sum(r.drain_ms for r in rows)
    accounted = sum(r.accounted_ms for r in rows)
    totals = DrainTotals(
        nodes=sched.n,
        first_ms=round(first * 1000),
        last_ms=round(last * 1000),
        accounted_ms=accounted,
        drain_ms=drain,
        records=obs.records,
    )
    return records, totals


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """One policy's schedule: its outcomes against the recorded schedule, its drain (None for
    the recorded schedule) and the per-user effect."""

    policy: str
    estimate: str
    schedule: Schedule
    outcome: Outcome
    drain: DrainTotals | None
    users: list[UserDelta]


def policy_runs(policies: Sequence[str], predictors: Sequence[str]) -> list[tuple[str, str]]:
    """(policy, estimate) pairs in the order given: ``easy-predicted`` once per predictor."""
    out: list[tuple[str, str]] = []
    for p in policies:
        if p not in POLICIES:
            raise ValueError(f"unknown policy {p!r} (known: {', '.join(POLICIES)})")
        if p == "easy-predicted":
            for k in predictors:
                if k not in PREDICTORS:
                    raise ValueError(f"unknown predictor {k!r} (known: {', '.join(PREDICTORS)})")
                out.append((p, k))
        else:
            out.append((p, ESTIMATE_OF[p]))
    return list(dict.fromkeys(out))


def run_whatif(
    jobs: WhatifJobs,
    n_nodes: int,
    policies: Sequence[str] = POLICIES,
    predictors: Sequence[str] = tuple(PREDICTORS),
    tz: str = "UTC",
) -> list[PolicyResult]:
    """Every (policy, estimate) of :func:`policy_runs` on ``jobs`` (at least one job)."""
    base = jobs.recorded
    out: list[PolicyResult] = []
    for policy, est in policy_runs(policies, predictors):
        if policy == AS_RUN:
            sched, drain = base, None
        else:
            s = make_scheduler(policy, n_nodes, jobs.workload, predictor=PREDICTORS.get(est))
            records, drain = account_drain(s, tz)
            sched = schedule_from_records(jobs.workload, records)
        out.append(
            PolicyResult(
                policy,
                est,
                sched,
                outcome(sched, n_nodes, base),
                drain,
                user_deltas(sched, base),
            )
        )
    return out
