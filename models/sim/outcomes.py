"""Outcome measures of a schedule: utilisation, waits, bounded slowdown, jobs started late and
the per-user effect, for a simulated schedule or the recorded one (*as-run*).

A :class:`Schedule` holds, per job, its id, user, submit, size in nodes, start, end, requested
walltime and actual run time (the run time the workload says the job needs). For job *i*:

* wait_i = start_i - submit_i;
* run_i = end_i - start_i, the time it held its nodes in this schedule (the simulator kills a
  job at its requested walltime, so there run_i = min(actual_i, requested_i), less if a node
  fails; as-run it is the recorded run time).

The measures (Feitelson, Rudolph, Schwiegelshohn, Sevcik & Wong, "Theory and practice in parallel
job scheduling", JSSPP 1997, for bounded slowdown; the EASY metrics of Mu'alem & Feitelson,
"Utilization, predictability, workloads, and user runtime estimates in scheduling the IBM SP2
with backfilling", IEEE TPDS 12(6), 2001: utilisation, wait and bounded slowdown with a 10 s
threshold):

* utilisation over a span [a, b) on ``n_nodes`` nodes: sum_i nodes_i * |[start_i, end_i) ∩ [a, b)|
  / (n_nodes * (b - a)); the default span is first submit to last end;
* mean wait: the arithmetic mean of wait_i;
* p-th percentile wait, nearest rank: the ceil(p * n / 100)-th smallest wait (1-based), an
  observed wait (numpy's ``method='inverted_cdf'``), computed in integers so it is exact;
* bounded slowdown (Feitelson et al. 1997): max(1, (wait_i + run_i) / max(run_i, tau)), tau = 10 s,
  and its mean over jobs;
* jobs started late against a baseline: jobs (matched by id) whose start exceeds the baseline's
  start by more than a tolerance (0 by default);
* per-user deltas against a baseline: per user, the mean of (wait_i - baseline wait_i) and the
  number of jobs that wait longer or shorter than in the baseline, users in code-point order.

Pure: numpy arrays in, numbers out; no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.formats.swf import SwfJob
from models.sim.scheduler import JobRecord, Workload

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
StrArray = npt.NDArray[np.str_]

BSLD_TAU = 10.0  # seconds: the bounded-slowdown threshold of Feitelson et al. 1997
P95 = 95


def _frozen(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    out = np.array(a, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, slots=True)
class Schedule:
    """When each job of a workload ran: parallel read-only 1-D arrays, one entry per job.

    Invariants (checked): equal lengths, unique ids, nodes >= 1, finite times with
    submit <= start <= end, requested and actual >= 0."""

    job_id: StrArray
    user: StrArray
    submit: FloatArray
    nodes: IntArray
    start: FloatArray
    end: FloatArray
    requested: FloatArray
    actual: FloatArray

    def __post_init__(self) -> None:
        cols: dict[str, npt.NDArray[np.generic]] = {
            "job_id": np.asarray(self.job_id, dtype=np.str_),
            "user": np.asarray(self.user, dtype=np.str_),
            "submit": np.asarray(self.submit, dtype=np.float64),
            "nodes": np.asarray(self.nodes, dtype=np.int64),
            "start": np.asarray(self.start, dtype=np.float64),
            "end": np.asarray(self.end, dtype=np.float64),
            "requested": np.asarray(self.requested, dtype=np.float64),
            "actual": np.asarray(self.actual, dtype=np.float64),
        }
        n = len(cols["job_id"])
        for name, a in cols.items():
            if a.ndim != 1 or len(a) != n:
                raise ValueError(f"{name}: expected a 1-D array of {n} entries, got {a.shape}")
            object.__setattr__(self, name, _frozen(a))
        times = np.concatenate([self.submit, self.start, self.end, self.requested, self.actual])
        if not np.all(np.isfinite(times)):
            raise ValueError("times must be finite (every job started and ended)")
        if np.unique(self.job_id).size != n:
            raise ValueError("job ids must be unique")
        if np.any(self.nodes < 1):
            raise ValueError("nodes must be >= 1")
        if np.any(self.start < self.submit) or np.any(self.end < self.start):
            raise ValueError("need submit <= start <= end for every job")
        if np.any(self.requested < 0) or np.any(self.actual < 0):
            raise ValueError("requested and actual run times must be >= 0")

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def waits(self) -> FloatArray:
        """start - submit, per job."""
        w: FloatArray = self.start - self.submit
        return w

    @property
    def runs(self) -> FloatArray:
        """end - start, per job: the time it held its nodes here."""
        r: FloatArray = self.end - self.start
        return r


def _of_workload(workload: Workload, start: FloatArray, end: FloatArray) -> Schedule:
    """The workload's jobs (ids, users, submits, sizes, requested and actual run times) with
    these starts and ends."""
    users = list(workload.user) if workload.user else ["unknown"] * len(workload)
    return Schedule(
        job_id=np.asarray(workload.job_id, dtype=np.str_),
        user=np.asarray(users, dtype=np.str_),
        submit=workload.submit,
        nodes=workload.nodes,
        start=start,
        end=end,
        requested=workload.req_walltime,
        actual=workload.runtime,
    )


def schedule_from_records(workload: Workload, records: Sequence[JobRecord]) -> Schedule:
    """The schedule an :class:`~models.sim.scheduler.EasyScheduler` made (its ``records``, one
    per workload job). Raises ValueError if a job never started or never ended (run the
    simulation to its end)."""
    if len(records) != len(workload):
        raise ValueError(f"{len(records)} records for {len(workload)} jobs")
    start = np.array([r.start for r in records], dtype=np.float64)
    end = np.array([r.end for r in records], dtype=np.float64)
    unfinished = int(np.count_nonzero(~(np.isfinite(start) & np.isfinite(end))))
    if unfinished:
        raise ValueError(f"{unfinished} jobs never started or never ended")
    return _of_workload(workload, start, end)


def schedule_as_run(workload: Workload, start: npt.ArrayLike) -> Schedule:
    """The recorded schedule: each workload job started at ``start`` (aligned with the workload)
    and ran its actual run time (``workload.runtime``, past its request if it did so)."""
    st = np.asarray(start, dtype=np.float64)
    if st.shape != (len(workload),):
        raise ValueError(f"start: expected {len(workload)} entries, got {st.shape}")
    return _of_workload(workload, st, st + workload.runtime)


def as_run_from_swf(workload: Workload, jobs: Iterable[SwfJob], job_base: int = 0) -> Schedule:
    """The recorded schedule of a workload made by
    :func:`models.sim.simulator.workload_from_swf` (same ``job_base``): start = the workload's
    submit + the SWF wait field (recorded start - submit). Raises ValueError if a workload job
    is missing from ``jobs`` or its wait is unknown."""
    wanted = {jid: i for i, jid in enumerate(workload.job_id)}
    wait = np.full(len(workload), np.nan)
    for j in jobs:
        i = wanted.get(str(job_base + j.job))
        if i is not None and j.wait is not None:
            wait[i] = float(j.wait)
    missing = int(np.count_nonzero(np.isnan(wait)))
    if missing:
        raise ValueError(f"{missing} workload jobs have no recorded wait")
    return schedule_as_run(workload, workload.submit + wait)


# --- measures ----------------------------------------------------------------------------------


def _nonempty(s: Schedule) -> None:
    if len(s) == 0:
        raise ValueError("empty schedule")


def default_span(s: Schedule) -> tuple[float, float]:
    """[first submit, last end) of a non-empty schedule."""
    _nonempty(s)
    return float(s.submit.min()), float(s.end.max())


def utilisation(s: Schedule, n_nodes: int, span: tuple[float, float] | None = None) -> float:
    """Node-seconds used within ``span`` [a, b) / (n_nodes * (b - a)); the default span is
    first submit to last end. A default span of length 0 (every job ran 0 s at its submit)
    gives 0.0."""
    if n_nodes < 1:
        raise ValueError("n_nodes must be >= 1")
    if span is None:
        a, b = default_span(s)
        if b <= a:
            return 0.0
    else:
        a, b = span
        if not b > a:
            raise ValueError(f"span [{a}, {b}) is empty")
    held = np.clip(np.minimum(s.end, b) - np.maximum(s.start, a), 0.0, None)
    used = float(np.dot(s.nodes.astype(np.float64), held))
    return used / (n_nodes * (b - a))


def mean_wait(s: Schedule) -> float:
    """Arithmetic mean of start - submit."""
    _nonempty(s)
    return float(np.mean(s.waits))


def nearest_rank(values: npt.ArrayLike, percent: int) -> float:
    """The p-th percentile by nearest rank: the ceil(p * n / 100)-th smallest value (1-based,
    integer arithmetic), as numpy's ``method='inverted_cdf'``."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("no values")
    if not 1 <= percent <= 100:
        raise ValueError("percent must be in 1..100")
    k = (percent * v.size + 99) // 100  # ceil, exact
    return float(np.partition(v, k - 1)[k - 1])


def wait_percentile(s: Schedule, percent: int = P95) -> float:
    """Nearest-rank percentile of start - submit (:func:`nearest_rank`)."""
    _nonempty(s)
    return nearest_rank(s.waits, percent)


def bounded_slowdown(s: Schedule, tau: float = BSLD_TAU) -> FloatArray:
    """Per job max(1, (wait + run) / max(run, tau)) (Feitelson et al. 1997), run = end - start."""
    if not tau > 0:
        raise ValueError("tau must be > 0")
    run = s.runs
    bsld: FloatArray = np.maximum(1.0, (s.waits + run) / np.maximum(run, tau))
    return bsld


def mean_bounded_slowdown(s: Schedule, tau: float = BSLD_TAU) -> float:
    """Mean over jobs of :func:`bounded_slowdown` (Mu'alem & Feitelson 2001: tau = 10 s)."""
    _nonempty(s)
    return float(np.mean(bounded_slowdown(s, tau)))


def align(s: Schedule, baseline: Schedule) -> IntArray:
    """For each job of ``s``, the index of the same job id in ``baseline``. Raises ValueError
    unless both hold the same ids and each job has the same user in both."""
    if len(s) != len(baseline):
        raise ValueError(f"{len(s)} jobs against a baseline of {len(baseline)}")
    if np.array_equal(s.job_id, baseline.job_id):
        idx: IntArray = np.arange(len(s), dtype=np.int64)
    else:
        order = np.argsort(baseline.job_id, kind="stable")
        pos = np.searchsorted(baseline.job_id, s.job_id, sorter=order)
        pos = np.minimum(pos, len(s) - 1)
        idx = order[pos].astype(np.int64)
        if not np.array_equal(baseline.job_id[idx], s.job_id):
            raise ValueError("the schedules hold different job ids")
    if not np.array_equal(baseline.user[idx], s.user):
        raise ValueError("a job has different users in the two schedules")
    return idx


def started_late(s: Schedule, baseline: Schedule, tolerance: float = 0.0) -> StrArray:
    """Ids (in ``s`` order) of jobs whose start in ``s`` is later than their start in
    ``baseline`` by more than ``tolerance`` seconds."""
    if tolerance < 0:
        raise ValueError("tolerance must be >= 0")
    idx = align(s, baseline)
    late = s.start - baseline.start[idx] > tolerance
    out: StrArray = s.job_id[late]
    return out


@dataclass(frozen=True, slots=True)
class UserDelta:
    """One user's jobs in a schedule against a baseline. ``mean_wait_change`` is the mean of
    (wait - baseline wait) over the user's jobs: > 0 waits longer. ``longer``/``shorter`` count
    jobs whose wait is strictly longer/shorter than in the baseline."""

    user: str
    jobs: int
    mean_wait: float
    baseline_mean_wait: float
    mean_wait_change: float
    longer: int
    shorter: int


def user_deltas(s: Schedule, baseline: Schedule) -> list[UserDelta]:
    """Per-user effect of ``s`` against ``baseline`` (jobs matched by id), one entry per user,
    users in code-point order."""
    idx = align(s, baseline)
    if len(s) == 0:
        return []
    users, inv = np.unique(s.user, return_inverse=True)
    k = len(users)
    w = s.waits
    b = baseline.waits[idx]
    d = w - b
    n = np.bincount(inv, minlength=k)
    sw = np.bincount(inv, weights=w, minlength=k)
    sb = np.bincount(inv, weights=b, minlength=k)
    sd = np.bincount(inv, weights=d, minlength=k)
    longer = np.bincount(inv[d > 0], minlength=k)
    shorter = np.bincount(inv[d < 0], minlength=k)
    return [
        UserDelta(
            user=str(users[u]),
            jobs=int(n[u]),
            mean_wait=float(sw[u] / n[u]),
            baseline_mean_wait=float(sb[u] / n[u]),
            mean_wait_change=float(sd[u] / n[u]),
            longer=int(longer[u]),
            shorter=int(shorter[u]),
        )
        for u in range(k)
    ]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The summary measures of one schedule (see the module docstring); ``started_late`` is
    None without a baseline."""

    jobs: int
    span: tuple[float, float]
    utilisation: float
    mean_wait: float
    p95_wait: float
    mean_bounded_slowdown: float
    started_late: int | None


def outcome(
    s: Schedule,
    n_nodes: int,
    baseline: Schedule | None = None,
    span: tuple[float, float] | None = None,
) -> Outcome:
    """Every summary measure of a non-empty schedule; ``span`` as in :func:`utilisation`."""
    sp = default_span(s) if span is None else span
    return Outcome(
        jobs=len(s),
        span=sp,
        utilisation=utilisation(s, n_nodes, span),
        mean_wait=mean_wait(s),
        p95_wait=wait_percentile(s, P95),
        mean_bounded_slowdown=mean_bounded_slowdown(s),
        started_late=None if baseline is None else len(started_late(s, baseline)),
    )
