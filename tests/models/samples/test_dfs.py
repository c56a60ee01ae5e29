"""DFS minutely load and hot zones (seed 003 §5.2), hand numbers and the reference."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings

from models.records.nodesample import NodeSample, to_arrays
from models.samples.dfs import (
    IoRates,
    dfs_minutely,
    hot_zone_threshold,
    hot_zones,
    io_from_rates,
    io_from_samples,
    job_write_series,
    job_write_stats,
)
from tests.reference_samples import ref_deltas, ref_dfs_minutely, ref_hot_zones, sample_strategy

MB = 10**6


def w(ts, job="1", pid=1, node="n1", wb=0, rb=0, start=0.0):
    return NodeSample(
        ts=ts,
        job=job,
        pid=pid,
        node=node,
        command="x",
        vm_peak_kb=0,
        vm_size_kb=0,
        vm_rss_kb=0,
        vm_swap_kb=0,
        syscr=0,
        syscw=0,
        read_bytes=rb,
        write_bytes=wb,
        core=0.0,
        receive=0,
        transmit=0,
        start=start,
    )


def test_hot_zone_threshold_is_the_seeds_93():
    # IOR on Gofree's NFS: mean write 98 MB/s, standard deviation 5 -> 93 MB/s
    assert hot_zone_threshold(98, 5) == 93.0
    assert hot_zone_threshold(98, 5, k=2) == 88.0


def test_write_deltas_per_minute_and_counter_reset():
    samples = [
        w(0, wb=1000 * MB, start=-1000.0),  # running before the sampler: baseline
        w(60, wb=1000 * MB + 6000 * MB, start=-1000.0),  # +6000 MB in a minute = 100 MB/s
        w(120, wb=600 * MB, start=-1000.0),  # counter went down: reset, counts 600 MB
        w(60, pid=2, job="2", wb=60 * MB, start=30.0),  # new process: whole counter
    ]
    io = io_from_samples(to_arrays(samples))
    dm = dfs_minutely(io)
    assert dm.minute.tolist() == [0, 1, 2]
    assert dm.write.tolist() == pytest.approx([0.0, 101.0, 10.0])
    assert dm.jobs_writing.tolist() == [0, 2, 1]
    mx, tot = job_write_stats(io)
    assert tot.tolist() == pytest.approx([6600.0, 60.0])
    assert mx.tolist() == pytest.approx([100.0, 1.0])
    assert (io.write >= 0).all()


def _io(rows, jobs=("A", "B", "C")):
    """rows: (job code, minute, MB/s) on one node."""
    a = np.array(rows, dtype=float)
    return IoRates(
        job=a[:, 0].astype(np.int64),
        node=np.zeros(len(rows), np.int64),
        minute=a[:, 1].astype(np.int64),
        write=a[:, 2],
        read=np.zeros(len(rows)),
        write_amount=a[:, 2] * 60,
        read_amount=np.zeros(len(rows)),
        jobs=list(jobs),
        nodes=["n"],
    )


def test_hot_zone_episodes_with_top_jobs_and_shares():
    # minutes 10..16: load 50, 95, 120, 90, 94, 94, 10 with threshold 93
    io = _io(
        [
            (0, 10, 50),
            (0, 11, 60),
            (1, 11, 35),
            (0, 12, 30),
            (1, 12, 90),
            (0, 13, 90),
            (2, 14, 94),
            (0, 15, 47),
            (1, 15, 47),
            (0, 16, 10),
        ]
    )
    dm = dfs_minutely(io)
    assert dm.write.tolist() == [50, 95, 120, 90, 94, 94, 10]
    z = hot_zones(dm, io, hot_zone_threshold(98, 5))
    assert [(e.start, e.end, e.peak, e.minutes) for e in z] == [(11, 12, 120, 2), (14, 15, 94, 2)]
    # episode 1: A wrote 60 + 30 = 90, B 35 + 90 = 125 of 215
    assert z[0].top_jobs == [("B", pytest.approx(125 / 215)), ("A", pytest.approx(90 / 215))]
    assert z[1].top_jobs[0] == ("C", pytest.approx(94 / 188))
    # one episode when a one-minute dip is allowed
    z1 = hot_zones(dm, io, 93, max_gap=1)
    assert [(e.start, e.end, e.minutes) for e in z1] == [(11, 15, 4)]
    assert hot_zones(dm, io, 1000) == []


def test_rates_source_mean_per_minute_and_amounts():
    # node n0 sampled twice in minute 0 (rates 10 and 20 -> 15), n1 once (5)
    io = io_from_rates(
        np.array([0, 0, 0]),
        np.array([0, 0, 1]),
        np.array([0.0, 30.0, 10.0]),
        np.array([10.0, 20.0, 5.0]),
        np.zeros(3),
        np.array([0.0, 30.0, 60.0]),
        ["j"],
        ["n0", "n1"],
    )
    dm = dfs_minutely(io, np.array([0, 1]))
    assert dm.write.tolist() == [20.0, 0.0]
    assert io.write_amount.sum() == pytest.approx(20 * 30 + 5 * 60)
    m, v = job_write_series(io, 0)
    assert m.tolist() == [0] and v.tolist() == [20.0]


@settings(max_examples=80, deadline=None)
@given(sample_strategy())
def test_dfs_matches_reference(samples):
    io = io_from_samples(to_arrays(samples), 60.0)
    dm = dfs_minutely(io)
    ref = ref_dfs_minutely(samples, 60.0)
    assert dm.minute.tolist() == sorted(ref)
    for k, m in enumerate(dm.minute.tolist()):
        rw, rr, rj = ref[m]
        assert dm.write[k] == pytest.approx(rw, rel=1e-12, abs=1e-12)
        assert dm.read[k] == pytest.approx(rr, rel=1e-12, abs=1e-12)
        assert dm.jobs_writing[k] == rj
    # hot zones at a threshold inside the data's range
    # just below the median, so float rounding (the reference sums in another order) cannot put
    # a minute on different sides of the threshold in the two implementations
    thr = float(np.median(dm.write)) * (1 - 1e-7)
    job_minute: dict[tuple[str, int], float] = defaultdict(float)
    for s, dw, _ in ref_deltas(samples, 60.0):
        job_minute[(s.job, int(s.ts // 60))] += dw / 1e6 / 60
    want = ref_hot_zones({m: v[0] for m, v in ref.items()}, job_minute, thr, 3)
    got = hot_zones(dm, io, thr, top=3)
    assert [(z.start, z.end, z.minutes) for z in got] == [(a, b, n) for a, b, _, n, _ in want]
    for z, r in zip(got, want, strict=True):
        assert z.peak == pytest.approx(r[2])
        assert {j for j, _ in z.top_jobs} == {j for j, _ in r[4]}
        assert sorted(x for _, x in z.top_jobs) == pytest.approx(sorted(x for _, x in r[4]))


def test_job_minutely_sums_nodes_per_job_and_minute() -> None:
    from models.samples.dfs import IoRates, job_minutely

    io = IoRates(
        job=np.array([1, 0, 1, 1]),
        node=np.array([0, 0, 1, 0]),
        minute=np.array([5, 5, 5, 6]),
        write=np.array([1.5, 2.0, 0.25, 4.0]),
        read=np.array([0.0, 1.0, 1.0, 0.5]),
        write_amount=np.zeros(4),
        read_amount=np.zeros(4),
        jobs=["a", "b"],
        nodes=["n0", "n1"],
    )
    job, minute, w, r = job_minutely(io)
    assert list(zip(job.tolist(), minute.tolist(), w.tolist(), r.tolist(), strict=True)) == [
        (0, 5, 2.0, 1.0),
        (1, 5, 1.75, 1.0),
        (1, 6, 4.0, 0.5),
    ]


def test_rates_keep_their_unit_and_convert_exactly():
    from models.samples.dfs import Rate, convert_rate, parse_rate

    assert parse_rate("93MB/s") == Rate(93.0, "MB/s") == parse_rate(" 93 MBps ")
    assert parse_rate("93") == Rate(93.0)  # the source's unit
    assert parse_rate("1.2GiB/s") == Rate(1.2, "GiB/s")
    # 1 MiB = 1.048576 MB exactly; the seed's 93 MB/s in LLview's MiB/s
    assert convert_rate(1, "MiB/s", "MB/s") == 1.048576
    assert parse_rate("93MB/s").to("MiB/s") == 93e6 / 2**20
    assert parse_rate("93").to("MiB/s") == 93.0
    assert parse_rate("1.2GiB/s").to("MB/s") == 1.2 * 2**30 / 1e6
    assert parse_rate("0", zero_ok=True) == Rate(0.0)
    for bad, why in [
        ("93M/s", "not one of"),
        ("93Mb/s", "bits"),
        ("1Gbps", "bits"),
        ("93 MB", "not one of"),
        ("0", "> 0"),
        ("-1MB/s", "> 0"),
        ("inf", "no rate"),
        ("fast", "no rate"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_rate(bad)
