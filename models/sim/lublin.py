"""The Lublin-Feitelson workload model for rigid batch jobs on a parallel machine.

U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", J. Parallel Distrib. Comput. 63(11):1105-1122, 2003. Parameter
values are the paper's batch-job values as published with the authors' generator ``m_lublin99.c``
(Parallel Workloads Archive, "Models" page); only facts were taken from it, not code:

* size (sec. 4 of the paper): serial with probability ``serial_prob`` = 0.2927; otherwise
  ``x = log2(size)`` from a two-stage uniform: U(ulow, umed) with probability ``uprob`` = 0.875,
  else U(umed, uhi), with ulow = 1.2, uhi = log2(machine nodes) and umed = uhi - 2.5 (the
  authors' rule; their 128-node setting has uhi = 7, umed = 5 - they advise umed in
  [uhi-3.5, uhi-1.5]). A parallel job is a power of two with probability ``pow2_prob`` = 0.6686
  (x rounded to an integer); size = round(2**x).
* run time (sec. 5): ln(runtime) is hyper-gamma: Gamma(a1=6.57, b1=0.823) with probability
  p = pa*size + pb (pa = -0.003, pb = 0.6986, clipped to [0, 1]), else Gamma(a2=639.1,
  b2=0.0156); values with ln(runtime) > 12 are redrawn (the generator's 'too much time' cap,
  about 45 h). Gamma(a, b) has shape a and scale b (mean a*b).
* arrivals (sec. 6): in the rush hours ln(inter-arrival seconds) ~ Gamma(aarr=6.0415*1.0519
  (the ARAR rush-to-all ratio), barr=0.8531), redrawn when > 13. The daily cycle weights 48
  half-hour buckets by the Gamma(anum=6.1271, bnum=5.2740) probability mass of bucket i
  (i = 11 .. 58, cyclically mapped to bucket (i-1) mod 48; the generator's CYCLIC_DAY_START = 11),
  normalised to mean 1. Inter-arrival "points" (seconds / 1800) are paid bucket by bucket at each
  bucket's weight, i.e. local time runs through busy buckets slower: arrivals per hour are
  proportional to the bucket weight. Time 0 is local midnight.

Additions (not in the paper, documented choices):
* ``target_load``: the paper's arrival rate is for its 128-node machines; to use the model on any
  size the inter-arrival points are divided by one factor so that the offered load
  E[size*runtime] * jobs_per_day / (nodes * 86400) equals ``target_load`` (estimated from a fixed
  calibration sample, so the factor depends only on the parameters and the seed). ``None`` keeps
  the paper's rates.
* requested walltime: the "f-model" of Mu'alem and Feitelson (IEEE TPDS 12(6), 2001): the user
  estimate is runtime * U(1, f) with f = ``overestimate`` (default 3), here rounded up to a whole
  minute (users ask for round numbers) and never below ``min_walltime`` (60 s).
* a power-of-two size above the machine (possible after rounding x up) takes the power of two
  below; other sizes are clipped to [1, nodes].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SECONDS_PER_BUCKET = 1800.0
BUCKETS = 48
CYCLIC_DAY_START = 11
LN_RUNTIME_MAX = 12.0
LN_INTERARRIVAL_MAX = 13.0


@dataclass(slots=True, frozen=True)
class LublinParams:
    """Batch-job parameters of Lublin & Feitelson (2003); uhi/umed follow the machine size."""

    serial_prob: float = 0.2927
    pow2_prob: float = 0.6686
    ulow: float = 1.2
    umed_below_uhi: float = 2.5
    uprob: float = 0.875
    a1: float = 6.57
    b1: float = 0.823
    a2: float = 639.1
    b2: float = 0.0156
    pa: float = -0.003
    pb: float = 0.6986
    aarr: float = 6.0415
    barr: float = 0.8531
    arar: float = 1.0519
    anum: float = 6.1271
    bnum: float = 5.2740


@dataclass(slots=True)
class Jobs:
    """Generated jobs, sorted by submit time; times in seconds from local midnight of day 0."""

    submit: npt.NDArray[np.float64]
    nodes: npt.NDArray[np.int64]
    runtime: npt.NDArray[np.float64]  # whole seconds >= 1
    req_walltime: npt.NDArray[np.float64]  # whole minutes >= runtime

    def __len__(self) -> int:
        return int(self.submit.shape[0])


def gamma_cdf(x: float, shape: float, scale: float) -> float:
    """Regularised lower incomplete gamma P(shape, x/scale) by its power series."""
    z = x / scale
    if z <= 0.0:
        return 0.0
    term = 1.0 / shape
    total = term
    n = 1
    while n < 10_000:
        term *= z / (shape + n)
        total += term
        if term < total * 1e-16:
            break
        n += 1
    return min(1.0, math.exp(-z + shape * math.log(z) - math.lgamma(shape)) * total)


def daily_weights(anum: float, bnum: float) -> npt.NDArray[np.float64]:
    """Weights of the 48 half-hour buckets of a day (index 0 = 00:00-00:30), mean 1."""
    w = np.zeros(BUCKETS)
    for i in range(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START):
        w[(i - 1) % BUCKETS] = gamma_cdf(i + 0.5, anum, bnum) - gamma_cdf(i - 0.5, anum, bnum)
    return w / float(w.mean())


class LublinModel:
    """Seeded generator of the Lublin-Feitelson batch workload for a machine of ``nodes`` nodes."""

    def __init__(
        self,
        nodes: int,
        seed: int,
        params: LublinParams | None = None,
        target_load: float | None = 0.85,
        overestimate: float = 3.0,
        min_walltime: float = 60.0,
    ) -> None:
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        if overestimate < 1.0:
            raise ValueError("overestimate factor must be >= 1")
        if target_load is not None and target_load <= 0:
            raise ValueError("target_load must be > 0")
        self.nodes = nodes
        self.seed = seed
        self.p = params or LublinParams()
        self.uhi = math.log2(nodes)
        # tiny machines: keep ulow <= umed <= uhi (sizes stay within [1, nodes])
        self.umed = min(self.uhi, max(0.0, self.uhi - self.p.umed_below_uhi))
        self.ulow = min(self.p.ulow, self.umed)
        self.overestimate = overestimate
        self.min_walltime = min_walltime
        self.weights = daily_weights(self.p.anum, self.p.bnum)
        self.target_load = target_load
        self.points_scale = 1.0 if target_load is None else self._calibrate(target_load)

    # --- the three distributions -------------------------------------------------------------

    def two_stage_uniform(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
        """log2 of a parallel job's size: U(ulow, umed) w.p. uprob, else U(umed, uhi)."""
        first = rng.random(n) < self.p.uprob
        lo = rng.uniform(self.ulow, self.umed, n)
        return np.where(first, lo, rng.uniform(self.umed, self.uhi, n))

    def sizes(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        """Job sizes in nodes (paper sec. 4)."""
        p = self.p
        u = rng.random(n)
        x = self.two_stage_uniform(rng, n)
        pow2 = (u > p.serial_prob) & (u <= p.serial_prob + p.pow2_prob)
        xr = np.floor(x + 0.5)
        xr = np.where(xr > self.uhi, np.floor(self.uhi), xr)
        x = np.where(pow2, xr, x)
        size = np.floor(np.exp2(x) + 0.5).astype(np.int64)
        size = np.where(u <= p.serial_prob, 1, size)
        return np.clip(size, 1, self.nodes)

    def runtimes(
        self, rng: np.random.Generator, sizes: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        """Run times in whole seconds (>= 1): exp of a size-dependent hyper-gamma (sec. 5)."""
        p = self.p
        prob = np.clip(p.pa * sizes + p.pb, 0.0, 1.0)
        n = sizes.shape[0]
        out = np.empty(n)
        todo = np.arange(n)
        while todo.size:
            first = rng.random(todo.size) <= prob[todo]
            hg = np.where(first, rng.gamma(p.a1, p.b1, todo.size), rng.gamma(p.a2, p.b2, todo.size))
            ok = hg <= LN_RUNTIME_MAX
            out[todo[ok]] = hg[ok]
            todo = todo[~ok]
        return np.maximum(1.0, np.floor(np.exp(out)))

    def interarrival_points(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
        """Rush-hour inter-arrival times as bucket points (seconds / 1800), before load scaling."""
        p = self.p
        out = np.empty(n)
        todo = np.arange(n)
        while todo.size:
            g = rng.gamma(p.aarr * p.arar, p.barr, todo.size)
            ok = g <= LN_INTERARRIVAL_MAX
            out[todo[ok]] = g[ok]
            todo = todo[~ok]
        return np.exp(out) / SECONDS_PER_BUCKET

    def walltimes(
        self, rng: np.random.Generator, runtime: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """Requested walltime: runtime * U(1, f), rounded up to a minute (f-model, see module)."""
        f = rng.uniform(1.0, self.overestimate, runtime.shape[0])
        req = np.ceil(runtime * f / 60.0) * 60.0
        return np.maximum(np.maximum(req, runtime), self.min_walltime)

    # --- arrivals through the daily cycle ------------------------------------------------------

    def points_to_time(self, cum_points: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Seconds from midnight of day 0 at which ``cum_points`` points have been paid, paying
        bucket b's weight for its 1800 s (piecewise linear; equals the generator's bucket walk)."""
        day_points = float(self.weights.sum())  # = 48
        days = np.floor(cum_points / day_points)
        rem = cum_points - days * day_points
        knots = np.concatenate([[0.0], np.cumsum(self.weights)])
        tknots = np.arange(BUCKETS + 1) * SECONDS_PER_BUCKET
        in_day: npt.NDArray[np.float64] = np.interp(rem, knots, tknots)  # stubs: Any
        return days * 86400.0 + in_day

    def _calibrate(self, target_load: float) -> float:
        rng = np.random.default_rng([self.seed, 0xCA11B])
        n = 200_000
        s = self.sizes(rng, n)
        r = self.runtimes(rng, s)
        pts = self.interarrival_points(rng, n)
        work_per_job = float(np.mean(s * r))
        jobs_per_day = BUCKETS / float(np.mean(pts))  # 48 points are paid per day
        load = work_per_job * jobs_per_day / (self.nodes * 86400.0)
        return target_load / load

    def expected_jobs_per_day(self) -> float:
        rng = np.random.default_rng([self.seed, 0xCA11B, 1])
        return BUCKETS * self.points_scale / float(np.mean(self.interarrival_points(rng, 100_000)))

    # --- generation ---------------------------------------------------------------------------

    def generate(self, n_jobs: int | None = None, duration: float | None = None) -> Jobs:
        """``n_jobs`` jobs, or every job submitted in [0, duration) seconds; deterministic in
        (nodes, seed, params, target_load, overestimate)."""
        if (n_jobs is None) == (duration is None):
            raise ValueError("give exactly one of n_jobs or duration")
        rng = np.random.default_rng(self.seed)
        if n_jobs is not None:
            n = int(n_jobs)
            pts = self.interarrival_points(rng, n) / self.points_scale
        else:
            assert duration is not None
            chunks = []
            total = 0.0
            guess = max(16, int(self.expected_jobs_per_day() * duration / 86400.0 * 1.2) + 16)
            while True:
                c = self.interarrival_points(rng, guess) / self.points_scale
                chunks.append(c)
                total += float(c.sum())
                need = self.points_to_time(np.array([total]))
                if need[0] >= duration:
                    break
            pts = np.concatenate(chunks)
        # the first job arrives after its first inter-arrival time (as in the generator)
        submit = self.points_to_time(np.cumsum(pts))
        if duration is not None:
            submit = submit[submit < duration]
        n = submit.shape[0]
        size = self.sizes(rng, n)
        runtime = self.runtimes(rng, size)
        req = self.walltimes(rng, runtime)
        return Jobs(submit=submit, nodes=size, runtime=runtime, req_walltime=req)
