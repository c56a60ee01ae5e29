"""Lublin-Feitelson model: determinism, ranges, and statistics against its own parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.sim.lublin import (
    BUCKETS,
    LublinModel,
    LublinParams,
    daily_weights,
    gamma_cdf,
)


def test_deterministic_and_seed_dependent():
    a = LublinModel(256, seed=7).generate(n_jobs=2000)
    b = LublinModel(256, seed=7).generate(n_jobs=2000)
    c = LublinModel(256, seed=8).generate(n_jobs=2000)
    for x, y in (
        (a.submit, b.submit),
        (a.nodes, b.nodes),
        (a.runtime, b.runtime),
        (a.req_walltime, b.req_walltime),
    ):
        assert np.array_equal(x, y)
    assert not np.array_equal(a.nodes, c.nodes)


@pytest.mark.parametrize("nodes", [1, 2, 3, 100, 128, 400, 1000])
def test_sizes_runtimes_walltimes_in_range(nodes):
    j = LublinModel(nodes, seed=1).generate(n_jobs=20000)
    assert j.nodes.min() >= 1 and j.nodes.max() <= nodes
    assert np.all(np.diff(j.submit) >= 0) and j.submit[0] > 0
    assert j.runtime.min() >= 1 and j.runtime.max() <= math.exp(12)
    assert np.all(j.req_walltime >= j.runtime)
    assert np.all(j.req_walltime <= np.ceil(j.runtime * 3 / 60) * 60)
    assert np.all(j.req_walltime % 60 == 0)


def test_duration_mode_covers_the_span():
    m = LublinModel(128, seed=3)
    j = m.generate(duration=10 * 86400)
    assert j.submit.max() < 10 * 86400
    assert j.submit.max() > 9 * 86400  # about 100+ jobs a day at the default load


def _tol(p: float, n: int) -> float:
    return 5.0 * math.sqrt(p * (1 - p) / n)  # 5 sigma of a binomial proportion


def test_serial_and_power_of_two_fractions():
    p = LublinParams()
    m = LublinModel(128, seed=11)
    rng = np.random.default_rng(5)
    n = 200_000
    s = m.sizes(rng, n)
    serial = float(np.mean(s == 1))
    assert abs(serial - p.serial_prob) < _tol(p.serial_prob, n)
    pow2 = float(np.mean((s > 1) & ((s & (s - 1)) == 0)))
    # power-of-two jobs are drawn with pow2_prob; other parallel sizes hit a power of two rarely
    assert pow2 >= p.pow2_prob - _tol(p.pow2_prob, n)
    assert pow2 < p.pow2_prob + 0.05


def test_log_size_follows_two_stage_uniform():
    # log2 of a parallel size ~ two-stage uniform: mean uprob*(ulow+umed)/2 + (1-uprob)*(umed+uhi)/2
    # and P(x <= umed) = uprob (paper sec. 4; uhi = log2 128 = 7, umed = uhi - 2.5 = 4.5)
    m = LublinModel(128, seed=2)
    p = m.p
    n = 300_000
    x = m.two_stage_uniform(np.random.default_rng(9), n)
    assert (m.ulow, m.umed, m.uhi) == (1.2, 4.5, 7.0)
    expected = p.uprob * (m.ulow + m.umed) / 2 + (1 - p.uprob) * (m.umed + m.uhi) / 2
    assert abs(float(np.mean(x)) - expected) < 0.01
    assert abs(float(np.mean(x <= m.umed)) - p.uprob) < _tol(p.uprob, n)
    assert x.min() >= m.ulow and x.max() <= m.uhi
    # sizes of non-power-of-two parallel jobs are round(2**x): log2 stays within [ulow, uhi]
    s = m.sizes(np.random.default_rng(9), n)
    assert s[s > 1].min() == 2 and s.max() == 128


def test_runtime_hyper_gamma_mean_of_log():
    # ln(runtime) of serial jobs: p*a1*b1 + (1-p)*a2*b2 with p = pa + pb (truncation at 12 and
    # flooring to whole seconds move it by far less than the tolerance)
    m = LublinModel(128, seed=4)
    p = m.p
    r = m.runtimes(np.random.default_rng(1), np.ones(200_000, dtype=np.int64))
    q = p.pa * 1 + p.pb
    expected = q * p.a1 * p.b1 + (1 - q) * p.a2 * p.b2
    assert abs(np.mean(np.log(r)) - expected) < 0.05
    # bigger jobs run longer: p falls with size
    big = m.runtimes(np.random.default_rng(1), np.full(200_000, 128, dtype=np.int64))
    assert np.median(big) > np.median(r)


def test_gamma_cdf_known_values():
    # shape 1 is exponential; shape 2 has cdf 1 - (1+z)e^-z
    assert gamma_cdf(2.0, 1.0, 1.0) == pytest.approx(1 - math.exp(-2), rel=1e-12)
    assert gamma_cdf(3.0, 2.0, 1.5) == pytest.approx(1 - 3 * math.exp(-2), rel=1e-12)
    assert gamma_cdf(0.0, 6.1271, 5.274) == 0.0


def test_daily_cycle_weights_and_arrivals():
    w = daily_weights(6.1271, 5.2740)
    assert w.shape == (BUCKETS,) and w.mean() == pytest.approx(1.0)
    assert int(np.argmax(w)) in range(24, 30)  # peak early afternoon (12:00-15:00)
    assert int(np.argmin(w)) in range(6, 12)  # trough before dawn (03:00-06:00)
    m = LublinModel(128, seed=21)
    j = m.generate(n_jobs=100_000)
    bucket = ((j.submit % 86400) // 1800).astype(int)
    day = (bucket >= 18) & (bucket < 36)  # 09:00-18:00
    night = bucket < 12  # 00:00-06:00
    frac_day, frac_night = float(np.mean(day)), float(np.mean(night))
    assert frac_day > 2 * frac_night
    # in the long run bucket b gets w_b / 48 of the arrivals; arrivals are bursty, so be lenient
    assert frac_day == pytest.approx(w[18:36].sum() / BUCKETS, abs=0.03)
    assert frac_night == pytest.approx(w[:12].sum() / BUCKETS, abs=0.03)


def test_points_to_time_is_the_bucket_walk():
    m = LublinModel(128, seed=0, target_load=None)
    w = m.weights
    # paying exactly the first k buckets' weights lands at the end of bucket k
    for k in (1, 5, 48):
        assert m.points_to_time(np.array([w[:k].sum()]))[0] == pytest.approx(k * 1800.0)
    assert m.points_to_time(np.array([48.0 + w[0] / 2]))[0] == pytest.approx(86400 + 900.0)


def test_target_load_is_met_in_expectation():
    m = LublinModel(256, seed=5, target_load=0.7)
    j = m.generate(n_jobs=200_000)
    load = float(np.sum(j.nodes * j.runtime) / (256 * j.submit[-1]))
    assert load == pytest.approx(0.7, rel=0.2)  # heavy tails: a loose check of the scaling


def test_bad_arguments():
    with pytest.raises(ValueError):
        LublinModel(0, seed=1)
    with pytest.raises(ValueError):
        LublinModel(8, seed=1).generate()
    with pytest.raises(ValueError):
        LublinModel(8, seed=1, overestimate=0.5)
