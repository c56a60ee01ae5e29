"""Run-time prediction from job history (seed 001, Holt, ECMWF; section 11.2 and Figure 4).

History is kept per (user, job name): every past run, as in the seed (Figure 4 averages 17 runs,
Figure 7 recomputes from 4 and then 5); ``history`` = N keeps only the last N runs instead
(``replay --history N``). A job that has run fewer than ``min_runs`` (2) times has an unknown
run time (shown as ``*1-day`` on the seed's displays). With at least ``trim_from`` runs the
shortest and the longest are discarded; the prediction is the mean of the rest.

Figure 4's other columns, for every prediction: Min/Max (shortest and longest run of the
history), the +-3 % band around the average (the seed's expected range, 00:47:59 .. 00:50:55),
the standard deviation and the spread (longest - shortest) of the kept runs (00:44:58 to
00:51:52, 414 s).

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
5,200 s (per user only) to 3,100 s.

Every run rather than the last few: with the last 5 runs only 3 remain after the trim, and a
standard deviation of 3 runs underestimates the spread (mean + 1.96 s covers far less than
95 %), so 14.6 % of KTH jobs and 13.4 % of NASA jobs overran the upper estimate; over every run
5.9 % and 4.4 % do, at a higher mean absolute error (KTH 3,362 s against 3,120 s, NASA 719 s
against 648 s: old runs weigh as much as recent ones). Overruns stay far more common than the
seed's "quite rare" because its jobs are consistent (Figure 4: sigma/avg = 105/2967 = 3.5 %,
a +-3 % target) while the median sigma/avg of a kept history is 60 % on KTH and 112 % on NASA
and only 7 % (KTH) and 3 % (NASA) of the jobs end inside the +-3 % band.

``cap_by_request``: on systems that kill a job at its requested wall time, neither estimate can
usefully exceed the request, so both are capped by it (off for ECMWF-style "1+" limits).

Overrun: a running job is flagged when it has run more than ``overrun_margin`` (60 s) past its
predicted run time; like the seed's wall_clock_limit, the predicted run time used is the upper
estimate.
"""

from __future__ import annotations

import itertools
import math
from bisect import insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from models.records.jobevent import JobEvent
from models.state import StateFormatError
from models.statetree import (
    array_in,
    bools_out,
    dict_in,
    floats_in,
    floats_out,
    int_in,
    ints_in,
    ints_out,
    keys_in,
    opt_floats_in,
    opt_floats_out,
    ragged_in,
    ragged_out,
    strs_in,
    strs_out,
)

UNKNOWN_RUNTIME_S = 86400.0  # the seed's "*1-day"
DEFAULT_MIN_RUNS = 2
DEFAULT_TRIM_FROM = 3
DEFAULT_Z = 1.96
DEFAULT_HISTORY: int | None = None  # every past run (the seed); N: the last N runs
BAND = 0.03  # the seed's expected +-3 % run-time range
DEFAULT_OVERRUN_MARGIN_S = 60.0


# (runs, mean, upper, std, shortest, longest, kept shortest, kept longest) of one history
_Estimate = tuple[
    int,
    float | None,
    float | None,
    float | None,
    float | None,
    float | None,
    float | None,
    float | None,
]
_NONE6 = (None, None, None, None, None, None)


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class Prediction:
    runs: int
    predicted: float | None
    upper: float | None
    std: float | None = None  # of the kept runs
    shortest: float | None = None  # of all the runs (Figure 4's Min)
    longest: float | None = None  # (Figure 4's Max)
    spread: float | None = None  # longest - shortest kept run

    @property
    def band(self) -> tuple[float, float] | None:
        """The seed's expected range: average -+3 %."""
        p = self.predicted
        return None if p is None else (p * (1 - BAND), p * (1 + BAND))


def predict_from_history(
    runs: Sequence[float],
    min_runs: int = DEFAULT_MIN_RUNS,
    trim_from: int = DEFAULT_TRIM_FROM,
    z: float = DEFAULT_Z,
) -> Prediction:
    """Prediction from past run times (seconds); None/None when fewer than min_runs."""
    n, mean, up, sd, lo, hi, klo, khi = _estimate(runs, min_runs, trim_from, z)
    spread = None if klo is None or khi is None else khi - klo
    return Prediction(n, mean, up, sd, lo, hi, spread)


def _estimate(runs: Sequence[float], min_runs: int, trim_from: int, z: float) -> _Estimate:
    """(runs, mean, upper) of :func:`predict_from_history`, as a plain tuple (hot path)."""
    n = len(runs)
    if n < max(min_runs, 1):
        return (n, *_NONE6, None)
    xs = sorted(runs)
    lo, hi = xs[0], xs[-1]
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
    return n, mean, upper, s, lo, hi, xs[0], xs[-1]


def _estimate_sorted(h: list[Any], min_runs: int, trim_from: int, z: float) -> _Estimate:
    """:func:`_estimate` of an all-runs history ``[sorted runs, _, shift, sum, sum of squares]``
    (sums of run - shift) in O(1): drop the ends, mean and sample deviation from the sums."""
    xs: list[float] = h[0]
    n = len(xs)
    if n < max(min_runs, 1):
        return (n, *_NONE6, None)
    shift, s1, s2 = h[2], h[3], h[4]
    lo, hi = xs[0], xs[-1]
    klo, khi, m = lo, hi, n
    if n >= trim_from and n >= 3:
        a, b = lo - shift, hi - shift
        s1 -= a + b
        s2 -= a * a + b * b
        m = n - 2
        klo, khi = xs[1], xs[-2]
    mean = shift + s1 / m
    if m >= 2:
        var = (s2 - s1 * s1 / m) / (m - 1)
        s = math.sqrt(var) if var > 0.0 else 0.0
    else:
        s = 0.0
    upper = mean + z * s
    if khi > upper:
        upper = khi
    if mean < klo:  # rounding of the sums: the mean lies within the kept runs
        mean = klo
    elif mean > khi:
        mean = khi
    return n, mean, upper, s, lo, hi, klo, khi


# a running job: (start, user, name, nodes, req, runs, predicted, upper, its _hist entry,
# its history's estimate for Figure 4's columns)
_Running = tuple[
    float,
    str | None,
    str | None,
    int,
    float | None,
    int,
    float | None,
    float | None,
    list[Any],
    _Estimate,
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
    # Figure 4's columns (None while the run time is unknown): shortest and longest run of the
    # history, the average -+3 %, standard deviation and spread of the kept runs
    min_s: float | None = None
    max_s: float | None = None
    band_min_s: float | None = None
    band_max_s: float | None = None
    std_s: float | None = None
    spread_s: float | None = None


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
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
        history: int | None = DEFAULT_HISTORY,
        overrun_margin: float = DEFAULT_OVERRUN_MARGIN_S,
        cap_by_request: bool = True,
        request_as_name: bool = True,
    ) -> None:
        self.min_runs = min_runs
        self.trim_from = trim_from
        self.z = z
        if history is not None and history < 1:
            raise ValueError("history must be >= 1 run, or None for every run")
        self.history = history
        self.overrun_margin = overrun_margin
        self.cap_by_request = cap_by_request
        self.request_as_name = request_as_name
        # (user, name or request) -> [last runs (a list: a deque per history costs ~5x the
        # memory), their _Estimate or None if stale]; with every run kept (history None):
        # [sorted runs, estimate, shift, sum(run - shift), sum((run - shift)^2)]
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
        keep_all = maxlen is None
        keep_n = 0 if maxlen is None else maxlen
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
                    h = hist[key] = [[], none, 0.0, 0.0, 0.0] if keep_all else [[], none]
                est: _Estimate | None = h[1]
                if est is None:
                    if keep_all:
                        est = h[1] = _estimate_sorted(h, min_runs, trim_from, z)
                    else:
                        est = h[1] = _estimate(h[0], min_runs, trim_from, z)
                runs, pred, up = est[0], est[1], est[2]
                if cap and req and pred is not None:
                    if req < pred:
                        pred = req
                    if up is not None and req < up:  # up is set whenever pred is
                        up = req
                running[e.job] = (e.ts, user, name, e.nodes or 1, req, runs, pred, up, h, est)
            elif typ == "end":
                r = running.pop(e.job, None)
                if r is None:
                    self.unmatched_ends += 1
                    continue
                start, user, name, _nodes, req, runs, pred, up, h, est = r
                actual = e.ts - start
                if actual < 0.0:
                    actual = 0.0
                overran = up is not None and actual > up + margin
                row = PredictionRow(e.job, user, name, runs, pred, up, actual, req, overran)
                if pred is not None:  # the band is around the prediction shown
                    row.min_s, row.max_s, row.std_s = est[4], est[5], est[3]
                    row.band_min_s, row.band_max_s = pred * (1 - BAND), pred * (1 + BAND)
                    klo, khi = est[6], est[7]
                    if klo is not None and khi is not None:
                        row.spread_s = khi - klo
                append(row)
                past = h[0]
                if keep_all:
                    if not past:
                        h[2] = actual  # the shift: the sums stay small (no cancellation)
                    insort(past, actual)
                    d = actual - h[2]
                    h[3] += d
                    h[4] += d * d
                else:
                    past.append(actual)
                    if len(past) > keep_n:
                        del past[0]
                h[1] = None
        return out

    # ---- durable state (the live worker's snapshot) ----------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The histories and the running jobs as a state tree of columns (models.state); the
        settings are the constructor's. A history is keyed by (user, name or request: one of
        ``hist_name`` and ``hist_req`` is set, or neither) and holds its runs (sorted when
        every run is kept, with the shift and the two sums of the O(1) estimate, so that the
        estimates come out bit for bit); its cached estimate is not saved (computed again from
        the same runs and sums). A running job keeps the estimate its history had at its start
        (``est``: 7 values a job after the run count, None where unknown) and its history's
        index."""
        keys = list(self._hist)
        hists = list(self._hist.values())
        index = {id(h): i for i, h in enumerate(hists)}
        sigs = [k[1] for k in keys]
        rs = list(self._running.values())
        return {
            "hist_user": strs_out([k[0] for k in keys]),
            "hist_name": strs_out([x if isinstance(x, str) else None for x in sigs]),
            "hist_req": opt_floats_out([None if isinstance(x, str) else x for x in sigs]),
            "hist_runs": ragged_out([h[0] for h in hists]),
            "runs": floats_out(itertools.chain.from_iterable(h[0] for h in hists)),
            # shift, sum and sum of squares a history (every run kept)
            "hist_sums": (
                floats_out(x for h in hists for x in h[2:5]) if self.history is None else None
            ),
            "running": {
                "job": strs_out(list(self._running)),
                "start": floats_out(r[0] for r in rs),
                "user": strs_out([r[1] for r in rs]),
                "name": strs_out([r[2] for r in rs]),
                "nodes": ints_out(r[3] for r in rs),
                "req": opt_floats_out([r[4] for r in rs]),
                "runs": ints_out(r[5] for r in rs),
                "pred": opt_floats_out([r[6] for r in rs]),
                "upper": opt_floats_out([r[7] for r in rs]),
                "hist": ints_out(index[id(r[8])] for r in rs),
                "est": opt_floats_out([x for r in rs for x in r[9][1:]]),
            },
            "unmatched_ends": self.unmatched_ends,
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) predictor, made with the snapshot's settings, from
        :meth:`snapshot`'s tree; a tree of another shape raises
        :class:`~models.state.StateFormatError`."""
        users = strs_in(tree["hist_user"], none=True)
        n = len(users)
        names = strs_in(tree["hist_name"], n, none=True)
        reqs = opt_floats_in(tree["hist_req"], n)
        runs = ragged_in(tree["hist_runs"], floats_in(tree["runs"]), n)
        most = self.history
        sums = tree["hist_sums"]
        if (most is None) == (sums is None):
            raise StateFormatError("runtime state: histories kept with another history setting")
        flat = [] if sums is None else floats_in(sums, 3 * n)
        hist: dict[tuple[str | None, str | float | None], list[Any]] = {}
        hists: list[list[Any]] = []
        for i, (user, name, req, past) in enumerate(zip(users, names, reqs, runs, strict=True)):
            if name is not None and req is not None:
                raise StateFormatError("runtime state: a history keyed by a name and a request")
            if most is None:
                if past != sorted(past):
                    raise StateFormatError("runtime state: a history of every run out of order")
                h = [past, None, *flat[3 * i : 3 * i + 3]]
            else:
                if len(past) > most:
                    raise StateFormatError(f"runtime state: a history of more than {most} runs")
                h = [past, None]
            hist[(user, name if req is None else req)] = h
            hists.append(h)
        if len(hist) != n:
            raise StateFormatError("runtime state: a history key twice")
        r = dict_in(tree["running"])
        jobs = keys_in(r["job"])
        m = len(jobs)
        est = opt_floats_in(r["est"], 7 * m)
        cols = zip(
            jobs,
            floats_in(r["start"], m),
            strs_in(r["user"], m, none=True),
            strs_in(r["name"], m, none=True),
            ints_in(r["nodes"], m),
            opt_floats_in(r["req"], m),
            ints_in(r["runs"], m),
            opt_floats_in(r["pred"], m),
            opt_floats_in(r["upper"], m),
            ints_in(r["hist"], m),
            strict=True,
        )
        running: dict[str, _Running] = {}
        for i, (job, start, user, name, nodes, req, k, pred, up, hi) in enumerate(cols):
            if not 0 <= hi < n:
                raise StateFormatError(f"runtime state: running job {job!r} without history")
            mean, upper, sd, lo, top, klo, khi = est[7 * i : 7 * i + 7]
            e: _Estimate = (k, mean, upper, sd, lo, top, klo, khi)
            running[job] = (start, user, name, nodes, req, k, pred, up, hists[hi], e)
        if len(running) != m:
            raise StateFormatError("runtime state: a running job twice")
        self._hist, self._running = hist, running
        self.unmatched_ends = int_in(tree["unmatched_ends"])

    def running(self, now: float) -> list[RunningJob]:
        """Running jobs with expected ends (upper estimate; ``*1-day`` when unknown), sorted by
        expected end, the order of the seed's ll_jobs display."""
        out: list[RunningJob] = []
        for job, (start, user, name, nodes, _req, _runs, _pred, up, *_h) in self._running.items():
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


def predictions_snapshot(rows: Sequence[PredictionRow]) -> dict[str, Any]:
    """Prediction rows as a state tree of columns (models.state), one a field."""
    out: dict[str, Any] = {
        "job": strs_out([r.job for r in rows]),
        "user": strs_out([r.user for r in rows]),
        "name": strs_out([r.name for r in rows]),
        "history_runs": ints_out(r.history_runs for r in rows),
        "actual_s": floats_out(r.actual_s for r in rows),
        "overran": bools_out((r.overran for r in rows), len(rows)),
    }
    for k in _OPTIONAL_ROW_FLOATS:
        out[k] = opt_floats_out([getattr(r, k) for r in rows])
    return out


_OPTIONAL_ROW_FLOATS = (
    "predicted_s",
    "upper_s",
    "req_walltime_s",
    "min_s",
    "max_s",
    "band_min_s",
    "band_max_s",
    "std_s",
    "spread_s",
)


def predictions_restore(tree: Any) -> list[PredictionRow]:
    """The rows of :func:`predictions_snapshot`'s tree; a tree of another shape raises
    :class:`~models.state.StateFormatError`."""
    t = dict_in(tree)
    jobs = keys_in(t["job"])
    n = len(jobs)
    opt = {k: opt_floats_in(t[k], n) for k in _OPTIONAL_ROW_FLOATS}
    return [
        PredictionRow(job, user, name, runs, pred, up, actual, req, overran, *rest)
        for job, user, name, runs, pred, up, actual, req, overran, *rest in zip(
            jobs,
            strs_in(t["user"], n, none=True),
            strs_in(t["name"], n, none=True),
            ints_in(t["history_runs"], n),
            opt["predicted_s"],
            opt["upper_s"],
            floats_in(t["actual_s"], n),
            opt["req_walltime_s"],
            array_in(t["overran"], "b", n).tolist(),
            opt["min_s"],
            opt["max_s"],
            opt["band_min_s"],
            opt["band_max_s"],
            opt["std_s"],
            opt["spread_s"],
            strict=True,
        )
    ]
