"""Run-time prediction from job history (seed 001, Holt, ECMWF; section 11.2 and Figure 4).

History is kept per (user, job name). A job that has run fewer than ``min_runs`` (2) times has an
unknown run time (shown as ``*1-day`` on the seed's displays). With at least ``trim_from`` runs the
shortest and the longest are discarded; the prediction is the mean of the rest.

Upper estimate ("Estim.95%/Max"): ``max(mean + z * s, longest kept run)`` over the kept runs, with
s the sample standard deviation and z = 1.96 (two-sided 95 %). Against Figure 4: 17 runs, kept
(15) runs spread 00:44:58 .. 00:51:52, mean 00:49:27 = 2967 s, 95%/Max 00:52:53 = 3173 s. Under
this definition s = (3173 - 2967) / 1.96 = 105 s, and the kept spread (414 s) is then 3.9 s; the
expected range of 15 normal samples is 3.5 s (sd ~0.7 s), so the published numbers are what this
estimator gives for a history like theirs (tests/models/jobs/test_runtime.py builds one). The
longest kept run (51:52) is below it, as in the figure.

Job identity when the name is unknown (SWF traces without an application number, e.g. KTH):
with ``request_as_name`` the requested wall time stands in for the name (a resubmitted script
carries the same request). On KTH this takes the mean absolute error of the prediction from
5,200 s (per user only) to 3,100 s; defaults (history 5, trim from 3 runs) were chosen on KTH
and NASA (bench/bench_jobs.py --mae prints the table).

``cap_by_request``: on systems that kill a job at its requested wall time, neither estimate can
usefully exceed the request, so both are capped by it (off for ECMWF-style "1+" limits).

Overrun: a running job is flagged when it has run more than ``overrun_margin`` (60 s) past its
predicted run time; like the seed's wall_clock_limit, the predicted run time used is the upper
estimate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from models.records.jobevent import JobEvent

UNKNOWN_RUNTIME_S = 86400.0  # the seed's "*1-day"
DEFAULT_MIN_RUNS = 2
DEFAULT_TRIM_FROM = 3
DEFAULT_Z = 1.96
DEFAULT_HISTORY = 5
DEFAULT_OVERRUN_MARGIN_S = 60.0


# (runs, mean, upper) of one history, as _estimate returns it
_Estimate = tuple[int, float | None, float | None]


@dataclass(slots=True, frozen=True)
class Prediction:
    runs: int
    predicted: float | None
    upper: float | None


def predict_from_history(
    runs: Sequence[float],
    min_runs: int = DEFAULT_MIN_RUNS,
    trim_from: int = DEFAULT_TRIM_FROM,
    z: float = DEFAULT_Z,
) -> Prediction:
    """Prediction from past run times (seconds); None/None when fewer than min_runs."""
    return Prediction(*_estimate(runs, min_runs, trim_from, z))


def _estimate(runs: Sequence[float], min_runs: int, trim_from: int, z: float) -> _Estimate:
    """(runs, mean, upper) of :func:`predict_from_history`, as a plain tuple (hot path)."""
    n = len(runs)
    if n < max(min_runs, 1):
        return n, None, None
    xs = sorted(runs)
    if n >= trim_from and n >= 3:
        xs = xs[1:-1]
    m = len(xs)
    mean = sum(xs) / m
    if m >= 2:
        ss = 0.0
        for x in xs:
            ss += (x - mean) * (x - mean)
        s = math.sqrt(ss / (m - 1))
    else:
        s = 0.0
    upper = mean + z * s
    if xs[-1] > upper:
        upper = xs[-1]
    return n, mean, upper


# a running job: (start, user, name, nodes, req, runs, predicted, upper, its _hist entry)
_Running = tuple[
    float, str | None, str | None, int, float | None, int, float | None, float | None, list[Any]
]


@dataclass(slots=True)
class PredictionRow:
    """One finished job: what was predicted when it started, and what it did."""

    job: str
    user: str | None
    name: str | None
    history_runs: int
    predicted_s: float | None
    upper_s: float | None
    actual_s: float
    req_walltime_s: float | None
    overran: bool


@dataclass(slots=True, frozen=True)
class RunningJob:
    """A running job with its expected end (start + upper estimate, or start + 1 day)."""

    job: str
    user: str | None
    name: str | None
    nodes: int
    start: float
    expected_end: float
    known: bool


class RuntimePredictor:
    """Streaming predictor: history per (user, name), prediction fixed at each job's start.
    Each history keeps its estimate until its next run ends (computed at most once per
    history version)."""

    __slots__ = (
        "min_runs",
        "trim_from",
        "z",
        "history",
        "overrun_margin",
        "cap_by_request",
        "request_as_name",
        "_hist",
        "_running",
        "unmatched_ends",
    )

    def __init__(
        self,
        min_runs: int = DEFAULT_MIN_RUNS,
        trim_from: int = DEFAULT_TRIM_FROM,
        z: float = DEFAULT_Z,
        history: int = DEFAULT_HISTORY,
        overrun_margin: float = DEFAULT_OVERRUN_MARGIN_S,
        cap_by_request: bool = True,
        request_as_name: bool = True,
    ) -> None:
        self.min_runs = min_runs
        self.trim_from = trim_from
        self.z = z
        self.history = history
        self.overrun_margin = overrun_margin
        self.cap_by_request = cap_by_request
        self.request_as_name = request_as_name
        # (user, name or request) -> [last runs (a list: a deque per history costs ~5x the
        # memory), their (runs, mean, upper) or None if stale]
        self._hist: dict[tuple[str | None, str | float | None], list[Any]] = {}
        self._running: dict[str, _Running] = {}
        self.unmatched_ends = 0

    def update(self, events: Iterable[JobEvent]) -> list[PredictionRow]:
        out: list[PredictionRow] = []
        append = out.append
        running, hist = self._running, self._hist
        cap, margin, maxlen = self.cap_by_request, self.overrun_margin, self.history
        as_name = self.request_as_name
        min_runs, trim_from, z = self.min_runs, self.trim_from, self.z
        none = _estimate((), min_runs, trim_from, z)
        for e in events:
            typ = e.type
            if typ == "start":
                user, name = e.user, e.name
                req = e.req_walltime
                sig: str | float | None = name
                if sig is None and req and as_name:
                    sig = req  # a float never equals a name (str)
                key = (user, sig)
                h = hist.get(key)
                if h is None:
                    # the job's history, held by the running job (no lookup at its end)
                    h = hist[key] = [[], none]
                est: _Estimate | None = h[1]
                if est is None:
                    est = h[1] = _estimate(h[0], min_runs, trim_from, z)
                runs, pred, up = est
                if cap and req and pred is not None:
                    if req < pred:
                        pred = req
                    if up is not None and req < up:  # up is set whenever pred is
                        up = req
                running[e.job] = (e.ts, user, name, e.nodes or 1, req, runs, pred, up, h)
            elif typ == "end":
                r = running.pop(e.job, None)
                if r is None:
                    self.unmatched_ends += 1
                    continue
                start, user, name, _nodes, req, runs, pred, up, h = r
                actual = e.ts - start
                if actual < 0.0:
                    actual = 0.0
                overran = up is not None and actual > up + margin
                append(PredictionRow(e.job, user, name, runs, pred, up, actual, req, overran))
                past = h[0]
                past.append(actual)
                if len(past) > maxlen:
                    del past[0]
                h[1] = None
        return out

    def running(self, now: float) -> list[RunningJob]:
        """Running jobs with expected ends (upper estimate; ``*1-day`` when unknown), sorted by
        expected end, the order of the seed's ll_jobs display."""
        out: list[RunningJob] = []
        for job, (start, user, name, nodes, _req, _runs, _pred, up, _hist) in self._running.items():
            known = up is not None
            end = start + (up if up is not None else UNKNOWN_RUNTIME_S)
            out.append(RunningJob(job, user, name, nodes, start, end, known))
        out.sort(key=lambda r: (r.expected_end, r.job))
        return out

    def overruns(self, now: float) -> list[RunningJob]:
        """Running jobs that have run more than overrun_margin past their predicted run time."""
        m = self.overrun_margin
        return [r for r in self.running(now) if r.known and now > r.expected_end + m]


@dataclass(slots=True, frozen=True)
class PredictionScore:
    jobs: int
    covered: int  # jobs with a history-based prediction
    mae_predicted: float | None  # over covered jobs
    mae_request_covered: float | None  # requested wall time on covered jobs with a request
    mae_hybrid: float | None  # all jobs with a request: prediction, else the request
    mae_request: float | None  # all jobs with a request
    with_request: int
    overran_upper: float | None  # share of covered jobs with actual > upper + margin
    over_request: float | None  # share of jobs with a request that ran past it + margin


def score_predictions(
    rows: Iterable[PredictionRow], margin: float = DEFAULT_OVERRUN_MARGIN_S
) -> PredictionScore:
    """Mean absolute errors of the history prediction and of the users' requested wall time."""
    n = cov = wr = cov_wr = 0
    e_pred = e_req_cov = e_hyb = e_req = 0.0
    over = over_req = 0
    for r in rows:
        n += 1
        a = r.actual_s
        req = r.req_walltime_s if r.req_walltime_s else None
        if r.predicted_s is not None:
            cov += 1
            e_pred += abs(r.predicted_s - a)
            if r.overran:
                over += 1
        if req is not None:
            wr += 1
            e_req += abs(req - a)
            if a > req + margin:
                over_req += 1
            e_hyb += abs((r.predicted_s if r.predicted_s is not None else req) - a)
            if r.predicted_s is not None:
                cov_wr += 1
                e_req_cov += abs(req - a)
    return PredictionScore(
        jobs=n,
        covered=cov,
        mae_predicted=e_pred / cov if cov else None,
        mae_request_covered=e_req_cov / cov_wr if cov_wr else None,
        mae_hybrid=e_hyb / wr if wr else None,
        mae_request=e_req / wr if wr else None,
        with_request=wr,
        overran_upper=over / cov if cov else None,
        over_request=over_req / wr if wr else None,
    )
