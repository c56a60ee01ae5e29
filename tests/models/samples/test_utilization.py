"""Per-job utilisation and squashed area (seed 003 §5), against hand numbers and the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings

from models.records.nodesample import NodeSample, to_arrays
from models.samples.utilization import (
    UTIL_EDGES,
    class_sa_ratios,
    histogram,
    job_utilization,
    measures_from_samples,
    sa_ratio,
    squashed_area,
)
from tests.reference_samples import ref_job_utilization, sample_strategy

GB_KB = 1024 * 1024


def s(ts, job="1", pid=1, node="n1", core=100.0, rss=0, swap=0, cores=0, start=0.0, cls=""):
    return NodeSample(
        ts=ts,
        job=job,
        pid=pid,
        node=node,
        command="x",
        vm_peak_kb=rss,
        vm_size_kb=rss,
        vm_rss_kb=rss,
        vm_swap_kb=swap,
        syscr=0,
        syscw=0,
        read_bytes=0,
        write_bytes=0,
        core=core,
        receive=0,
        transmit=0,
        start=start,
        cores=cores,
        job_class=cls,
    )


def test_core_utilization_mean_is_the_seed_formula():
    """A job on 2 nodes x 4 cores, 3 measures. core_consumption(t_i) = sum of its cores' use:
    t1: 4 + 2 = 6 cores, t2: 4 + 0 = 4, t3: 2 + 0 = 2 -> sum 12 / (8 cores x 3) = 0.5."""
    samples = [
        # node 1: two processes, each 200 % then 200 % then 100 %
        s(0, pid=1, core=200, cores=4),
        s(0, pid=2, core=200, cores=4),
        s(60, pid=1, core=200, cores=4),
        s(60, pid=2, core=200, cores=4),
        s(120, pid=1, core=100, cores=4),
        s(120, pid=2, core=100, cores=4),
        # node 2: one process at 200 % then idle
        s(1, node="n2", core=200, cores=4),
        s(61, node="n2", core=0, cores=4),
        s(121, node="n2", core=0, cores=4),
    ]
    u = job_utilization(measures_from_samples(to_arrays(samples)), 6 * GB_KB)
    assert u.cores[0] == 8 and u.measures[0] == 3 and u.nodes[0] == 2
    assert u.core_util_mean[0] == pytest.approx(12 / (8 * 3))
    # run time: first measure 0 s, last 121 s, plus one period
    assert u.run_seconds[0] == pytest.approx(121 + 60)
    assert u.sa_core_seconds[0] == pytest.approx(8 * 181)


def test_memory_ratios_and_the_seeds_125_percent_job():
    """Seed 003 §5.1: theoretical memory per core 6 GB; a job peaking at 125 % of it on a core.
    A 2-core job on one node using 15 GB then 9 GB: max per core 7.5 GB = 125 %, mean memory
    12 GB vs theoretical 12 GB = 100 %."""
    samples = [s(0, rss=15 * GB_KB, cores=2), s(60, rss=9 * GB_KB, cores=2)]
    u = job_utilization(measures_from_samples(to_arrays(samples)), 6 * GB_KB)
    assert u.mem_max_core_ratio[0] == pytest.approx(1.25)
    assert u.mem_mean_ratio[0] == pytest.approx(1.0)


def test_swap_max_is_per_measure_sum_and_twice_sampled_process_counts_once():
    samples = [
        s(0, pid=1, swap=10, rss=100),
        s(0, pid=2, swap=5, rss=100),
        s(30, pid=1, swap=20, rss=300),  # same bucket as ts=0: replaces pid 1's sample
        s(60, pid=1, swap=1, rss=100),
    ]
    u = job_utilization(measures_from_samples(to_arrays(samples)), 1000.0, cores_per_node=1)
    assert u.swap_kb_max[0] == 25  # bucket 0: 20 (last of pid 1) + 5
    assert u.measures[0] == 2
    assert u.mem_mean_ratio[0] == pytest.approx((400 + 100) / 2 / 1000)


def test_unknown_cores_and_memory_give_nan_not_a_guess():
    u = job_utilization(measures_from_samples(to_arrays([s(0)])))
    assert math.isnan(u.core_util_mean[0]) and math.isnan(u.mem_mean_ratio[0])


def test_sa_ratio_arithmetic_seed_style():
    """Seed 003 §5.1 quotes SA ratios such as 53.7 % (normal jobs under 25 % core use) and
    12.7 % (near 100 %). Jobs built so the low subset's area is 537 of 1000 core-hours."""
    cores = np.array([8, 1, 4, 2, 16])
    run = np.array([50.0, 127.0, 34.25, 168.0, 0.0]) * 3600
    sa = cores * run
    assert squashed_area(cores, run) == pytest.approx(1000 * 3600)
    util = np.array([0.10, 0.99, 0.20, 0.5, 0.01])
    assert sa_ratio(sa, util < 0.25) == pytest.approx(0.537)
    assert sa_ratio(sa, util >= 0.9) == pytest.approx(0.127)
    # restricted to a class
    cls = np.array([True, True, False, False, True])
    assert sa_ratio(sa, util < 0.25, cls) == pytest.approx(400 / 527)
    assert math.isnan(sa_ratio(sa, util < 0.25, np.zeros(5, bool)))


def test_class_sa_ratios_per_class():
    samples = [
        s(0, job="a", core=10, cores=4, cls="besteffort"),
        s(0, job="b", core=100, cores=1, cls="besteffort"),
        s(0, job="c", core=50, cores=2, cls="normal"),
    ]
    u = job_utilization(measures_from_samples(to_arrays(samples)))
    r = class_sa_ratios(u, 0.25)
    # a: util 0.1/4 = 0.025, SA 4 x 60; b: util 1.0, SA 1 x 60
    assert r["besteffort"]["sa_ratio_util_below_0.25"] == pytest.approx(4 / 5)
    assert r["besteffort"]["sa_ratio_util_at_least_0.9"] == pytest.approx(1 / 5)
    assert r["normal"]["jobs"] == 1


def test_histogram_bins_and_weights():
    v = np.array([0.0, 0.04, 0.05, 0.26, 1.0, np.nan, 1.3])
    h = histogram(v)
    assert h.sum() == 6 and h[0] == 2 and h[1] == 1 and h[5] == 1 and h[-1] == 2
    hw = histogram(v, UTIL_EDGES, np.array([1, 1, 1, 1, 10, 5, 0]))
    assert hw[-1] == 10


@settings(max_examples=80, deadline=None)
@given(sample_strategy())
def test_matches_reference(samples):
    period, mpc, cpn = 60.0, 5e6, 3.0
    u = job_utilization(measures_from_samples(to_arrays(samples), period), mpc, cpn)
    ref = ref_job_utilization(samples, period, mpc, cpn)
    for j, name in enumerate(u.jobs):
        r = ref[name]
        assert u.nodes[j] == r["nodes"] and u.measures[j] == r["measures"]
        assert u.cores[j] == pytest.approx(r["cores"])
        for k in ("core_util_mean", "mem_mean_ratio", "mem_max_core_ratio", "swap_kb_max"):
            assert getattr(u, k)[j] == pytest.approx(r[k], rel=1e-9), k
        assert u.sa_core_seconds[j] == pytest.approx(r["sa"])
