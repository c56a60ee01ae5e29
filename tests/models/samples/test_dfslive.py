"""The streaming DFS load and hot zones equal the batch ones (seed 003 §5.2) however the
samples are batched and the minutes closed, on the golden samples trace and on generated
traces (counter resets, reused pids, processes that start inside the window)."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.sampletrace import parse_trace
from models.records.nodesample import NodeSample, to_arrays
from models.samples.dfs import dfs_minutely, hot_zones, io_from_rates, io_from_samples
from models.samples.dfslive import DfsStream, FsStreams
from tests.golden.make_golden import INPUTS


def _batch(samples: list[NodeSample], thr: float, gap: int) -> tuple[list, list]:
    arr = to_arrays(samples)
    io = io_from_samples(arr, 60.0)
    minutes = np.unique(np.floor(arr.ts / 60).astype(np.int64))
    dm = dfs_minutely(io, minutes)
    rows = [
        (int(dm.minute[k]), float(dm.write[k]), float(dm.read[k]), int(dm.jobs_writing[k]))
        for k in range(dm.minute.shape[0])
    ]
    zones = hot_zones(dm, io, thr, top=3, max_gap=gap)
    return rows, [(z.start, z.end, z.peak, z.minutes, z.top_jobs) for z in zones]


def _stream(samples: list[NodeSample], thr: float, gap: int, cuts: list[int]) -> tuple:
    s = DfsStream(threshold=thr, max_gap=gap, alert_minutes=3)
    ordered = sorted(samples, key=lambda x: x.ts)
    rows, zones, alerts = [], [], []
    i, k = 0, 0
    while i < len(ordered):
        j = min(len(ordered), i + cuts[k % len(cuts)])
        s.update(ordered[i:j])
        if j < len(ordered):  # the minute of the next sample may still grow
            r, z, a = s.close(math.floor(ordered[j].ts / 60))
        else:
            r, z, a = s.finish()
        rows += r
        zones += z
        alerts += a
        i, k = j, k + 1
    return (
        [(r.minute, r.write, r.read, r.jobs_writing) for r in rows],
        [(z.start, z.end, z.peak, z.minutes, z.top_jobs) for z in zones],
        alerts,
    )


def _same_zones(got: list, want: list) -> None:
    assert [z[:4] for z in got] == [z[:4] for z in want]
    for g, w in zip(got, want, strict=True):
        assert [j for j, _ in g[4]] == [j for j, _ in w[4]]
        assert [s for _, s in g[4]] == pytest.approx([s for _, s in w[4]], rel=1e-12)


@pytest.mark.parametrize("cuts", [[1], [7, 50, 3], [100_000]])
def test_golden_trace_streamed_equals_the_batch(cuts: list[int]) -> None:
    with gzip.open(INPUTS / "samples.jsonl.gz", "rb") as f:
        samples = list(parse_trace(f.read().splitlines(), rejects=[]))
    rows, zones = _batch(samples, 40.0, 1)
    got_rows, got_zones, alerts = _stream(samples, 40.0, 1, cuts)
    assert got_rows == rows  # exact: whole bytes summed, minutes by fsum
    assert len(zones) >= 2
    _same_zones(got_zones, zones)
    # one firing and one resolved record per episode with 3 consecutive hot minutes
    long = [z for z in zones if z[3] >= 3]
    assert [a.state for a in alerts] == ["firing", "resolved"] * len(long)


_proc = st.tuples(
    st.integers(0, 2),  # node
    st.integers(0, 1),  # job
    st.booleans(),  # started inside the window
    st.lists(st.integers(0, 3 * 10**8), min_size=1, max_size=12),  # write increments
    st.integers(0, 20),  # first minute
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_proc, min_size=1, max_size=6),
    st.lists(st.integers(1, 9), min_size=1, max_size=5),
    st.integers(0, 2),
)
def test_generated_traces_streamed_equal_the_batch(procs: list, cuts: list[int], gap: int) -> None:
    t0 = 1_700_000_000.0
    samples = []
    for pid, (node, job, inside, incs, first) in enumerate(procs):
        total = 0
        for m, inc in enumerate(incs):
            total = inc if inc % 7 == 0 else total + inc  # some counters restart
            ts = t0 + 60 * (first + m) + pid
            start = t0 + 60 * first - (10 if inside else 1000)
            samples.append(
                NodeSample(
                    ts,
                    f"J{job}",
                    pid,
                    f"n{node}",
                    "a",
                    1,
                    1,
                    1,
                    0,
                    0,
                    0,
                    0,
                    total,
                    1.0,
                    0,
                    0,
                    start=start,
                )
            )
    rows, zones = _batch(samples, 5.0, gap)
    got_rows, got_zones, _ = _stream(samples, 5.0, gap, cuts)
    assert got_rows == rows
    _same_zones(got_zones, zones)


@pytest.mark.parametrize("cuts", [[1], [7, 50, 3], [100_000]])
def test_golden_trace_job_utilisation_streamed_equals_the_batch(cuts: list[int]) -> None:
    from models.samples.dfs import job_write_stats
    from models.samples.utilization import job_utilization, measures_from_samples
    from models.samples.utillive import JobUtilStream

    with gzip.open(INPUTS / "samples.jsonl.gz", "rb") as f:
        samples = list(parse_trace(f.read().splitlines(), rejects=[]))
    arr = to_arrays(samples)
    mpc = 6 * 1024 * 1024.0  # --mem-per-core 6 (GiB), as the golden replay
    u = job_utilization(measures_from_samples(arr, 60.0), mpc, None)
    wmax, wtot = job_write_stats(io_from_samples(arr, 60.0))
    want = {
        name: (
            name,
            int(u.nodes[j]),
            u.cores[j],
            int(u.measures[j]),
            u.core_util_mean[j],
            u.mem_mean_ratio[j],
            u.mem_max_core_ratio[j],
            u.swap_kb_max[j],
            u.sa_core_seconds[j],
            wmax[j],
            wtot[j],
        )
        for j, name in enumerate(u.jobs)
        if u.measures[j]
    }
    dfs, util = DfsStream(threshold=40.0), JobUtilStream(60.0, mpc, None, quiet_s=300.0)
    ordered = sorted(samples, key=lambda x: x.ts)
    got: dict[str, tuple] = {}
    final: dict[str, tuple] = {}
    i, k = 0, 0
    while i < len(ordered):
        j = min(len(ordered), i + cuts[k % len(cuts)])
        dfs.update(ordered[i:j])
        util.update(ordered[i:j])
        until = ordered[j].ts if j < len(ordered) else math.inf
        dfs.close(math.floor(until / 60) if j < len(ordered) else 10**12)
        changed, done = util.close(until)
        got.update({job: util.row(job, dfs.io_of(job)) for job in changed})
        final.update({job: util.row(job, dfs.io_of(job)) for job in done})
        util.forget(done)
        i, k = j, k + 1
    assert got == want  # the latest row of every job is the replay's, exactly
    # jobs quiet for 5 minutes before the last sample were final (and left memory) earlier
    assert final and all(final[job] == want[job] for job in final)


def _batch_fs(samples: list[NodeSample], thr: dict[str, float], gap: int) -> dict[str, tuple]:
    """The replay's per-file-system load (streams.stages.samples: io_from_rates per system,
    minutes = every minute a sample was taken in)."""
    arr = to_arrays(samples)
    jix = {n: i for i, n in enumerate(arr.jobs)}
    nix = {n: i for i, n in enumerate(arr.nodes)}
    minutes = np.unique(np.floor(arr.ts / 60).astype(np.int64))
    per: dict[str, list] = {}
    for s in samples:
        for fs, w, r in s.fs_rates:
            per.setdefault(fs, []).append((jix[s.job], nix[s.node], s.ts, w, r))
    out = {}
    for fs, rs in per.items():
        a = np.array(rs, dtype=float)
        codes = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64)
        io = io_from_rates(
            *codes, a[:, 2], a[:, 3], a[:, 4], np.full(len(rs), 60.0), arr.jobs, arr.nodes
        )
        dm = dfs_minutely(io, minutes)
        rows = [
            (int(dm.minute[k]), float(dm.write[k]), float(dm.read[k]), int(dm.jobs_writing[k]))
            for k in range(dm.minute.shape[0])
        ]
        zones = hot_zones(dm, io, thr[fs], top=3, max_gap=gap)
        out[fs] = (rows, [(z.start, z.end, z.peak, z.minutes, z.top_jobs) for z in zones])
    return out


_fs_sample = st.tuples(
    st.integers(0, 30),  # minute
    st.integers(0, 59),  # second
    st.integers(0, 2),  # node
    st.integers(0, 2),  # job
    st.lists(
        st.tuples(
            st.sampled_from(["home", "scratch"]),
            st.floats(0, 500, allow_nan=False),
            st.floats(0, 50, allow_nan=False),
        ),
        max_size=2,
        unique_by=lambda t: t[0],
    ),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_fs_sample, min_size=1, max_size=40),
    st.lists(st.integers(1, 9), min_size=1, max_size=5),
    st.integers(0, 2),
)
def test_per_file_system_streamed_equals_the_batch(rows: list, cuts: list[int], gap: int) -> None:
    # every system named in the first sample, so the live minutes start where the replay's do
    t0 = 1_700_000_000.0
    first = (0, 0, 0, 0, [("home", 1.0, 0.0), ("scratch", 1.0, 0.0)])
    samples = sorted(
        (
            NodeSample(
                t0 + 60 * m + sec,
                f"J{job}",
                1,
                f"n{node}",
                "a",
                1,
                1,
                1,
                0,
                0,
                0,
                0,
                0,
                1.0,
                0,
                0,
                fs_rates=tuple(fs),
            )
            for m, sec, node, job, fs in [first, *rows]
        ),
        key=lambda s: s.ts,
    )
    thr = {"home": 300.0, "scratch": 150.0}
    want = _batch_fs(samples, thr, gap)
    live = FsStreams({"home": 300.0}, 150.0, max_gap=gap, alert_minutes=2)
    got: dict[str, tuple[list, list]] = {}
    alerts = []
    i, k = 0, 0
    while i < len(samples):
        j = min(len(samples), i + cuts[k % len(cuts)])
        live.update(samples[i:j])
        closed = live.close(math.floor(samples[j].ts / 60)) if j < len(samples) else live.finish()
        for fs, r, z, a in closed:
            g = got.setdefault(fs, ([], []))
            g[0].extend((x.minute, x.write, x.read, x.jobs_writing) for x in r)
            g[1].extend((x.start, x.end, x.peak, x.minutes, x.top_jobs) for x in z)
            alerts += a
        i, k = j, k + 1
    assert sorted(got) == sorted(want)
    for fs in want:
        assert got[fs][0] == want[fs][0]  # exact: fsum means, fsum minutes
        _same_zones(got[fs][1], want[fs][1])
    assert {a.subject for a in alerts} <= {"fs:home", "fs:scratch"}
    long = sum(1 for fs in want for z in want[fs][1] if z[3] >= 2)
    assert len([a for a in alerts if a.state == "firing"]) <= long


_util_sample = st.tuples(
    st.integers(0, 8),  # minute
    st.integers(0, 59),  # second
    st.integers(0, 2),  # node
    st.integers(0, 1),  # job
    st.integers(0, 4),  # pid: up to five processes of a job on a node
    st.floats(0, 400, allow_nan=False),  # core %
    st.integers(0, 10**7),  # RSS KiB
    st.integers(0, 10**4),  # swap KiB
    st.sampled_from([0, 4, 8]),  # cores
)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(_util_sample, min_size=1, max_size=60),
    st.lists(st.integers(1, 9), min_size=1, max_size=5),
)
def test_generated_job_utilisation_streamed_equals_the_batch(rows: list, cuts: list[int]) -> None:
    """Many processes per node (sums of more than two values), a process sampled more than
    once in a minute (its last sample counts), samples at equal times, any batching."""
    from models.samples.utilization import job_utilization, measures_from_samples
    from models.samples.utillive import JobUtilStream

    t0 = 1_700_000_000.0
    samples = sorted(
        (
            NodeSample(
                t0 + 60 * m + sec,
                f"J{job}",
                pid,
                f"n{node}",
                "a",
                1,
                1,
                rss,
                swap,
                0,
                0,
                0,
                0,
                core,
                0,
                0,
                start=t0 - 100,
                cores=cores,
            )
            for m, sec, node, job, pid, core, rss, swap, cores in rows
        ),
        key=lambda s: s.ts,
    )
    mpc = 1024.0 * 1024
    u = job_utilization(measures_from_samples(to_arrays(samples), 60.0), mpc, 8)
    want = {
        name: (
            name,
            int(u.nodes[j]),
            u.cores[j],
            int(u.measures[j]),
            u.core_util_mean[j],
            u.mem_mean_ratio[j],
            u.mem_max_core_ratio[j],
            u.swap_kb_max[j],
            u.sa_core_seconds[j],
        )
        for j, name in enumerate(u.jobs)
        if u.measures[j]
    }
    util = JobUtilStream(60.0, mpc, 8, quiet_s=10**9)
    i, k = 0, 0
    got: dict[str, tuple] = {}
    while i < len(samples):
        j = min(len(samples), i + cuts[k % len(cuts)])
        util.update(samples[i:j])
        changed, _ = util.close(samples[j].ts if j < len(samples) else math.inf)
        got.update({job: util.row(job, (0.0, 0.0))[:9] for job in changed})
        i, k = j, k + 1
    assert sorted(got) == sorted(want)
    for job in want:
        g, w = got[job], want[job]
        assert g[:4] == w[:4] and g[7] == w[7]
        for a, b in zip(g[4:], w[4:], strict=True):  # the replay's exact sums: equal bits
            assert (math.isnan(a) and math.isnan(b)) or a == b


def _proc_sample(ts: float, written: int, pid: int = 7) -> NodeSample:
    return NodeSample(
        ts, "J", pid, "n1", "a", 1, 1, 1, 0, 0, 0, 0, written, 1.0, 0, 0, start=1000.0
    )


def test_a_process_is_forgotten_after_its_silence_and_comes_back_as_a_baseline() -> None:
    t0 = 1_700_000_000.0
    s = DfsStream(forget_s=3600.0)
    s.update([_proc_sample(t0, 100), _proc_sample(t0, 5, pid=8)])
    s.close(math.floor(t0 / 60) + 1)
    s.update([_proc_sample(t0 + 60, 400)])  # pid 8 goes quiet
    rows, _z, _a = s.close(math.floor(t0 / 60) + 2)
    assert [r.write for r in rows] == [300 / 1e6 / 60]
    for k in range(1, 9):  # pid 7 goes on every 15 minutes; closes pass the forget time
        s.update([_proc_sample(t0 + 60 + 900 * k, 400 + k)])
        s.close(math.floor((t0 + 60 + 900 * k) / 60) + 1)
    assert len(s._procs) == 1 and s._last.shape[1] == 1  # pid 8 left memory
    s.update([_proc_sample(t0 + 9000, 50, pid=8), _proc_sample(t0 + 9000, 410)])
    rows, _z, _a = s.close(math.floor((t0 + 9000) / 60) + 1)
    assert [r.write for r in rows] == [2 / 1e6 / 60]  # pid 7: 408 -> 410; pid 8: a baseline
