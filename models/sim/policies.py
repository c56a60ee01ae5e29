"""Scheduling policies of ``drainwatch whatif``: which backfilling, and which run time the planner
uses for each job. Pure.

Policies (:data:`POLICIES`); every simulated one kills a job at its requested walltime:

* ``as-run``: the recorded starts, the baseline (no scheduler here:
  :func:`models.sim.outcomes.schedule_as_run`);
* ``easy``: EASY backfilling (:class:`~models.sim.scheduler.EasyScheduler`) planning with the
  users' requested walltimes, exactly as the simulator always did;
* ``easy-predicted``: EASY planning with system-generated predictions (Tsafrir, Etsion &
  Feitelson, "Backfilling using system-generated predictions rather than user runtime
  estimates", IEEE TPDS 18(6), 2007): :class:`TsafrirLastTwo` (their predictor) or
  :class:`TrimmedMeanUpper` (seed 001's upper estimate), raised by a :class:`Correction` when a
  job outlives its prediction;
* ``easy-perfect``: EASY planning with the actual run times (:class:`ActualTime`), the bound
  (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001, compare it with users' estimates);
* ``conservative``: conservative backfilling
  (:class:`~models.sim.scheduler.ConservativeScheduler`) with requested walltimes.

An estimate is an :class:`~models.sim.scheduler.Estimate`: ``for_workload`` makes the state of
one simulation, which gives each job its planning run time when it is submitted (the scheduler
caps it at the request), learns the run time of each job that ends (completed or killed at its
request; not a job killed by a node failure) and says what a job that outlives its plan is
planned to run now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from models.jobs.runtime import DEFAULT_MIN_RUNS, DEFAULT_TRIM_FROM, DEFAULT_Z, predict_from_history
from models.sim.scheduler import (
    ConservativeScheduler,
    EasyScheduler,
    Estimate,
    EstimateState,
    JobRecord,
    NodeInterval,
    Workload,
)

POLICIES = ("as-run", "easy", "easy-predicted", "easy-perfect", "conservative")

# Tsafrir et al.'s growing corrections, as the pyss/predictsim implementation of their EASY++
# lists them (correctors.py ``tsafrir``): 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h,
# 50 h, 100 h
TSAFRIR_STEPS_S: tuple[float, ...] = tuple(
    60.0 * m for m in (1, 5, 15, 30, 60, 120, 300, 600, 1200, 3000, 6000)
)


class Correction(Protocol):
    """The new prediction of a job that has run its whole prediction and goes on."""

    def corrected(self, initial: float, k: int, elapsed: float, request: float) -> float:
        """``k``-th correction (1 for the first) of a job first predicted ``initial`` seconds,
        now ``elapsed`` seconds into its run, that asked for ``request`` seconds."""
        ...


@dataclass(frozen=True, slots=True)
class TsafrirSteps:
    """Tsafrir et al. (2007) raise an outlived prediction in growing steps rather than jumping
    to the user's estimate. Rule used here (the paper's text was not at hand to check it; the
    steps are those of the pyss/predictsim EASY++ implementation): the k-th time a job outlives
    its prediction, the prediction becomes initial + ``steps[k - 1]`` (1 min, 5 min, 15 min,
    30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h, 100 h), never above the request; after the last step,
    the request. Each step is past the previous prediction, so the new one is past the
    elapsed time."""

    steps: tuple[float, ...] = TSAFRIR_STEPS_S

    def corrected(self, initial: float, k: int, elapsed: float, request: float) -> float:
        new = initial + self.steps[k - 1] if k <= len(self.steps) else request
        return min(new, request)


@dataclass(frozen=True, slots=True)
class ToRequest:
    """The other correction Tsafrir et al. discuss: an outlived prediction becomes the user's
    request at once."""

    def corrected(self, initial: float, k: int, elapsed: float, request: float) -> float:
        return request


class _Static:
    """Fixed planning run times (never outlived: they bound the actual run times)."""

    __slots__ = ("_plan", "_req")

    def __init__(self, plan: Sequence[float], req: Sequence[float]) -> None:
        self._plan = plan
        self._req = req

    def submitted(self, job: int, now: float) -> float:
        return self._plan[job]

    def ended(self, job: int, ran: float) -> None:
        return None

    def outlived(self, job: int, elapsed: float) -> float:
        return self._req[job]


@dataclass(frozen=True, slots=True)
class RequestedTime:
    """The users' requested walltimes: EASY as Lifka (1995) runs it, and the simulator's
    default (passing it gives exactly the schedule of passing no estimate)."""

    def for_workload(self, workload: Workload) -> EstimateState:
        req = workload.req_walltime.astype(np.float64).tolist()
        return _Static(req, req)


@dataclass(frozen=True, slots=True)
class ActualTime:
    """Perfect estimates: the time each job will hold its nodes, min(actual, request)
    (Mu'alem & Feitelson 2001's exact estimates; the kill at the request included)."""

    def for_workload(self, workload: Workload) -> EstimateState:
        req = workload.req_walltime.astype(np.float64)
        run = np.minimum(workload.runtime.astype(np.float64), req)
        return _Static(run.tolist(), req.tolist())


class _Predicting:
    """Shared by the predictors: remembers each job's first prediction and corrections."""

    __slots__ = ("_req", "_users", "_initial", "_k", "_correction")

    def __init__(self, workload: Workload, correction: Correction) -> None:
        self._req: list[float] = workload.req_walltime.astype(np.float64).tolist()
        self._users: list[str] | None = list(workload.user) if workload.user else None
        self._initial: dict[int, float] = {}
        self._k: dict[int, int] = {}
        self._correction = correction

    def _predicted(self, job: int, value: float | None) -> float:
        req = self._req[job]
        p = req if value is None else min(value, req)
        self._initial[job] = p
        return p

    def outlived(self, job: int, elapsed: float) -> float:
        k = self._k.get(job, 0) + 1
        self._k[job] = k
        init = self._initial.get(job, self._req[job])
        return self._correction.corrected(init, k, elapsed, self._req[job])


class _LastTwoState(_Predicting):
    __slots__ = ("_last",)

    def __init__(self, workload: Workload, correction: Correction) -> None:
        super().__init__(workload, correction)
        self._last: dict[str, tuple[float, float | None]] = {}  # user -> (last, the one before)

    def submitted(self, job: int, now: float) -> float:
        users = self._users
        h = None if users is None else self._last.get(users[job])
        if h is None or h[1] is None:
            return self._predicted(job, None)
        return self._predicted(job, (h[0] + h[1]) / 2.0)

    def ended(self, job: int, ran: float) -> None:
        users = self._users
        if users is None:
            return
        h = self._last.get(users[job])
        self._last[users[job]] = (ran, None if h is None else h[0])


@dataclass(frozen=True, slots=True)
class TsafrirLastTwo:
    """Tsafrir, Etsion & Feitelson (2007)'s predictor: a job's predicted run time is the average
    of the run times of its user's last two jobs (the last two to have ended before its submit,
    in the order they ended), never above its own request; with fewer than two such jobs (or no
    user names in the workload), the request. Fixed at submit; raised by ``correction`` when
    the job outlives it."""

    correction: Correction = TsafrirSteps()

    def for_workload(self, workload: Workload) -> EstimateState:
        return _LastTwoState(workload, self.correction)


class _TrimmedState(_Predicting):
    __slots__ = ("_hist", "_p")

    def __init__(self, workload: Workload, p: TrimmedMeanUpper) -> None:
        super().__init__(workload, p.correction)
        self._hist: dict[tuple[str | None, float | None], list[float]] = {}
        self._p = p

    def _key(self, job: int) -> tuple[str | None, float | None]:
        user = None if self._users is None else self._users[job]
        return user, (self._req[job] if self._p.request_as_name else None)

    def submitted(self, job: int, now: float) -> float:
        runs = self._hist.get(self._key(job))
        if not runs:
            return self._predicted(job, None)
        p = self._p
        pred = predict_from_history(runs, p.min_runs, p.trim_from, p.z)
        return self._predicted(job, pred.upper if p.upper else pred.predicted)

    def ended(self, job: int, ran: float) -> None:
        self._hist.setdefault(self._key(job), []).append(ran)


@dataclass(frozen=True, slots=True)
class TrimmedMeanUpper:
    """Seed 001's estimator (section 11.2, Figure 4; :func:`models.jobs.runtime.
    predict_from_history`): over every earlier run of the same user and request (the request
    stands in for the job name, as ``RuntimePredictor(request_as_name=True)``; SWF traces carry
    no name), drop the shortest and longest from ``trim_from`` runs on, and predict
    max(mean + z * s, longest kept run) (``upper``; else the trimmed mean), never above the
    request; with fewer than ``min_runs`` runs, the request. Fixed at submit; raised by
    ``correction`` when the job outlives it."""

    min_runs: int = DEFAULT_MIN_RUNS
    trim_from: int = DEFAULT_TRIM_FROM
    z: float = DEFAULT_Z
    upper: bool = True
    request_as_name: bool = True
    correction: Correction = TsafrirSteps()

    def for_workload(self, workload: Workload) -> EstimateState:
        return _TrimmedState(workload, self)


def make_scheduler(
    policy: str,
    n_nodes: int,
    workload: Workload,
    *,
    predictor: Estimate | None = None,
    outages: Sequence[NodeInterval] = (),
    log_reservations: bool = False,
    shortest_first: bool = False,
) -> EasyScheduler:
    """The scheduler of a simulated policy (see the module docstring); ``predictor`` is the
    estimate of ``easy-predicted`` (default :class:`TsafrirLastTwo`); ``shortest_first``
    backfills the shortest planned jobs first (EASY policies only: with ``easy-predicted`` it is
    Tsafrir et al.'s EASY++). ``as-run`` has no scheduler (ValueError), nor has an unknown
    name."""
    if policy == "easy":
        est: Estimate | None = None
    elif policy == "easy-predicted":
        est = TsafrirLastTwo() if predictor is None else predictor
    elif policy == "easy-perfect":
        est = ActualTime()
    elif policy == "conservative":
        return ConservativeScheduler(n_nodes, workload, outages, log_reservations=log_reservations)
    elif policy == "as-run":
        raise ValueError("as-run replays the recorded starts: it has no scheduler")
    else:
        raise ValueError(f"unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    return EasyScheduler(
        n_nodes,
        workload,
        outages,
        estimate=est,
        log_reservations=log_reservations,
        shortest_first=shortest_first,
    )


def run_policy(
    policy: str, n_nodes: int, workload: Workload, *, predictor: Estimate | None = None
) -> list[JobRecord]:
    """Simulate ``workload`` under a policy to the end on the fast path
    (:meth:`~models.sim.scheduler.EasyScheduler.run_all`): each job's start, end and nodes."""
    return make_scheduler(policy, n_nodes, workload, predictor=predictor).run_all()
