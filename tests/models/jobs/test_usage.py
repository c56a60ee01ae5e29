"""Usage totals by day: Open XDMoD's phillips expectations, DST days, numpy split vs a slow
reference that follows XDMoD's statistic_ratio_case.sql literally."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.jobsource import iter_job_events, sort_events
from models.jobs.usage import (
    UsageAccumulator,
    add_exact,
    day_edges,
    intervals_from_events,
    usage_by_day,
    usage_from_events,
)
from models.records.jobevent import JobEvent
from tests.paths import SHARED_DATA

PHILLIPS = SHARED_DATA / "sacct" / "phillips.log"


def utc(*a: int) -> float:
    return datetime(*a, tzinfo=UTC).timestamp()


def reference_usage(
    jobs: list[tuple[int, int, float, float]], tz: str, first: date, last: date
) -> dict[date, list[float]]:
    """XDMoD's per-period share, written the way statistic_ratio_case.sql states it, one job and
    one day at a time: period [Ds, De] with De = next midnight - 1 (whole seconds), and
      inside -> wall; starts before, ends inside -> wall*(Se-Ds)/(Se-Ss);
      starts inside, ends after -> wall*((De+1)-Ss)/(Se-Ss); spans -> wall*max/(Se-Ss).
    Jobs are (start, end, nodes, cpus) in integer seconds; wall = end - start."""
    z = ZoneInfo(tz)
    out: dict[date, list[float]] = {}
    d = first
    while d <= last:
        ds = int(datetime.combine(d, datetime.min.time(), z).timestamp())
        de = int(datetime.combine(d + timedelta(days=1), datetime.min.time(), z).timestamp()) - 1
        period = de + 1 - ds
        row = [0.0, 0.0, 0.0, 0, 0]
        for ss, se, nodes, cpus in jobs:
            wall = se - ss
            if not (ss <= de and se >= ds):
                share = 0.0
            elif ds <= ss <= de and ds <= se <= de:
                share = wall
            elif ss < ds and ds <= se <= de:
                share = wall * (se - ds) / (se - ss)
            elif ds <= ss <= de and se > de:
                share = wall * ((de + 1) - ss) / (se - ss)
            else:
                share = wall * period / (se - ss)
            row[0] += cpus * share / 3600
            row[1] += nodes * share / 3600
            row[2] += share / 3600
            row[3] += ds <= ss <= de
            row[4] += ds <= se <= de
        out[d] = row
        d += timedelta(days=1)
    return out


@pytest.mark.data
def test_phillips_matches_open_xdmod() -> None:
    if not PHILLIPS.exists():
        pytest.skip("../shared/data/sacct/phillips.log is not present")
    clip = (utc(2016, 12, 22), utc(2017, 1, 1, 23, 59, 59) + 1)
    with PHILLIPS.open() as f:
        u = usage_from_events(iter_job_events("sacct", f, "phillips.log"), tz="UTC", clip=clip)
    cpu, node, wall, started, ended = u.totals()
    assert (round(cpu, 4), round(node, 4), round(wall, 4)) == (11767.9883, 1344.8686, 438.8203)
    assert u.days[0] == date(2016, 12, 22) and u.days[-1] == date(2017, 1, 1)
    # 4285 allocations, 239 cancelled while pending ("None assigned") are not jobs XDMoD keeps
    assert started == ended == 4046
    # per day: the reference (XDMoD's formula, job by job) agrees day by day
    with PHILLIPS.open() as f:
        iv = intervals_from_events(iter_job_events("sacct", f))
    jobs = [
        (int(s), int(e), n, c)
        for s, e, n, c in zip(iv.start, iv.end, iv.nodes, iv.cpus, strict=True)
    ]
    ref = reference_usage(jobs, "UTC", date(2016, 12, 22), date(2017, 1, 1))
    for i, d in enumerate(u.days):
        assert u.cpu_hours[i] == pytest.approx(ref[d][0], abs=1e-9)
        assert u.node_hours[i] == pytest.approx(ref[d][1], abs=1e-9)
        assert u.wall_hours[i] == pytest.approx(ref[d][2], abs=1e-9)
        assert (u.jobs_started[i], u.jobs_ended[i]) == (ref[d][3], ref[d][4])
    # Dec 23-26 had exactly one 12-core job running all day (job 163485)
    assert u.cpu_hours[1] == 288.0 and u.node_hours[1] == 24.0 and u.wall_hours[1] == 24.0


def test_split_exactly_at_midnight() -> None:
    # 2 nodes x 8 cpus from 22:00 to 02:00 next day: 2 h on each day
    u = usage_by_day([utc(2024, 1, 1, 22)], [utc(2024, 1, 2, 2)], [2], [8])
    assert u.days == [date(2024, 1, 1), date(2024, 1, 2)]
    assert list(u.wall_hours) == [2.0, 2.0]
    assert list(u.node_hours) == [4.0, 4.0] and list(u.cpu_hours) == [16.0, 16.0]
    assert list(u.jobs_started) == [1, 0] and list(u.jobs_ended) == [0, 1]
    # ending exactly at midnight: nothing is charged to the next day, but it ended that day
    u = usage_by_day([utc(2024, 1, 1, 22)], [utc(2024, 1, 2)], [1], [1])
    assert list(u.wall_hours) == [2.0, 0.0] and list(u.jobs_ended) == [0, 1]


def test_multi_day_job_full_days() -> None:
    u = usage_by_day([utc(2024, 1, 1, 12)], [utc(2024, 1, 4, 6)], [3], [30])
    assert list(u.wall_hours) == [12.0, 24.0, 24.0, 6.0]
    assert list(u.cpu_hours) == [360.0, 720.0, 720.0, 180.0]


def test_dst_days_in_local_time() -> None:
    # Europe/Berlin: 2024-03-31 has 23 hours, 2024-10-27 has 25 hours.
    tz = "Europe/Berlin"
    s = datetime(2024, 3, 30, 12, tzinfo=ZoneInfo(tz)).timestamp()
    e = datetime(2024, 4, 1, 12, tzinfo=ZoneInfo(tz)).timestamp()
    u = usage_by_day([s], [e], [1], [4], tz=tz)
    assert list(u.wall_hours) == [12.0, 23.0, 12.0]
    s = datetime(2024, 10, 26, 12, tzinfo=ZoneInfo(tz)).timestamp()
    e = datetime(2024, 10, 28, 12, tzinfo=ZoneInfo(tz)).timestamp()
    assert list(usage_by_day([s], [e], [1], [4], tz=tz).wall_hours) == [12.0, 25.0, 12.0]
    edges = day_edges(date(2024, 10, 27), date(2024, 10, 27), tz)
    assert edges[1] - edges[0] == 25 * 3600


def test_clip_range_clips_usage_and_counts() -> None:
    w = (utc(2024, 1, 2), utc(2024, 1, 3))
    u = usage_by_day(
        [utc(2024, 1, 1, 20), utc(2024, 1, 2, 5)],
        [utc(2024, 1, 2, 4), utc(2024, 1, 5)],
        [1, 2],
        [1, 2],
        clip=w,
    )
    assert u.days == [date(2024, 1, 2)]
    assert list(u.wall_hours) == [4.0 + 19.0]
    assert list(u.node_hours) == [4.0 + 38.0]
    assert list(u.jobs_started) == [1] and list(u.jobs_ended) == [1]


def test_degenerate_inputs() -> None:
    u = usage_by_day([], [], [], [])
    assert u.days == [] and u.totals() == (0.0, 0.0, 0.0, 0, 0)
    u = usage_by_day([10.0, 50.0], [5.0, 50.0], [1, 1], [np.nan, 1])  # end<start ignored
    assert u.totals() == (0.0, 0.0, 0.0, 1, 1)
    with pytest.raises(ValueError):
        usage_by_day([1.0], [2.0, 3.0], [1], [1])


def test_rows() -> None:
    u = usage_by_day([utc(2024, 1, 1, 22)], [utc(2024, 1, 2, 2)], [2], [8])
    assert list(u.rows("alpha")) == [
        ("2024-01-01", "alpha", 16.0, 4.0, 2.0, 1, 0),
        ("2024-01-02", "alpha", 16.0, 4.0, 2.0, 0, 1),
    ]


def test_intervals_from_events_pairs_and_skips() -> None:
    ev = [
        JobEvent("submit", 0.0, "a", nodes=1, cores=2),
        JobEvent("start", 10.0, "a", nodes=1, cores=2),
        JobEvent("submit", 5.0, "p"),
        JobEvent("end", 20.0, "p", state="CANCELLED"),  # never ran
        JobEvent("start", 15.0, "r", nodes=4, cores=4),  # still running
        JobEvent("end", 40.0, "a", nodes=1, cores=2),
        JobEvent("start", 50.0, "a", nodes=1, cores=2),  # requeued: second run
        JobEvent("end", 70.0, "a", nodes=1, cores=2),
    ]
    iv = intervals_from_events(sort_events(ev))
    assert iv.job == ["a", "a"]
    assert list(iv.start) == [10.0, 50.0] and list(iv.end) == [40.0, 70.0]
    assert list(iv.nodes) == [1.0, 1.0] and list(iv.cpus) == [2.0, 2.0]


_T0 = int(utc(2024, 3, 28))
_job = st.tuples(
    st.integers(0, 9 * 86400), st.integers(0, 4 * 86400), st.integers(1, 64), st.integers(1, 256)
).map(lambda t: (_T0 + t[0], _T0 + t[0] + t[1], t[2], t[3]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_job, min_size=1, max_size=25),
    st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]),
)
def test_numpy_split_equals_reference(jobs: list[tuple[int, int, int, int]], tz: str) -> None:
    s, e, n, c = (np.array(x, dtype=np.float64) for x in zip(*jobs, strict=True))
    u = usage_by_day(s, e, n, c, tz=tz)
    ref = reference_usage(jobs, tz, u.days[0], u.days[-1])
    for i, d in enumerate(u.days):
        r = ref[d]
        assert u.cpu_hours[i] == pytest.approx(r[0], rel=1e-12, abs=1e-9)
        assert u.node_hours[i] == pytest.approx(r[1], rel=1e-12, abs=1e-9)
        assert u.wall_hours[i] == pytest.approx(r[2], rel=1e-12, abs=1e-9)
        assert u.jobs_started[i] == r[3]
        assert u.jobs_ended[i] == r[4]
    # the split loses nothing: day shares add up to the wall time of every job
    assert u.wall_hours.sum() == pytest.approx(float((e - s).sum()) / 3600, rel=1e-12)


# ---- the streaming accumulator (the live worker's and the replay's usage) ------------------


def _events(jobs: list[tuple[int, int, int, int]]) -> list[JobEvent]:
    ev: list[JobEvent] = []
    for i, (s, e, n, c) in enumerate(jobs):
        ev.append(JobEvent("start", float(s), f"j{i}", nodes=n, cores=c))
        ev.append(JobEvent("end", float(e), f"j{i}", nodes=n, cores=c))
    return sort_events(ev)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_job, min_size=1, max_size=25),
    st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]),
    st.lists(st.integers(1, 7), min_size=1, max_size=8),
)
def test_accumulator_equals_reference_however_batched(
    jobs: list[tuple[int, int, int, int]], tz: str, cuts: list[int]
) -> None:
    ev = _events(jobs)
    whole = UsageAccumulator(tz)
    whole.update(ev)
    rows = whole.rows()
    batched, i, k, seen = UsageAccumulator(tz), 0, 0, {}
    while i < len(ev):  # any batching, with changed() read in between, gives the same rows
        j = i + cuts[k % len(cuts)]
        batched.update(ev[i:j])
        seen.update({r[0]: r for r in batched.changed()})
        i, k = j, k + 1
    assert batched.rows() == rows
    assert sorted(seen.values()) == rows  # the re-written days end as the final rows
    first, last = date.fromisoformat(rows[0][0]), date.fromisoformat(rows[-1][0])
    ref = reference_usage(jobs, tz, first, last)
    for r in rows:
        want = ref[date.fromisoformat(r[0])]
        assert r[2:5] == pytest.approx(want[:3], rel=1e-12, abs=1e-9)
        assert r[5:] == (want[3], want[4])
    assert [r[0] for r in rows] == [d.isoformat() for d in usage_from_events(ev, tz=tz).days]


def test_accumulator_sums_do_not_depend_on_order() -> None:
    # (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1 in floats; the exact partials do not care
    a: list[float] = []
    b: list[float] = []
    for x in (0.1, 0.2, 0.3, 1e16, -1e16):
        add_exact(a, x)
    for x in (-1e16, 0.3, 1e16, 0.2, 0.1):
        add_exact(b, x)
    assert (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1
    assert math.fsum(a) == math.fsum(b) == math.fsum([0.1, 0.2, 0.3]) == 0.6


@pytest.mark.data
def test_accumulator_on_phillips_equals_the_batch_split() -> None:
    if not PHILLIPS.exists():
        pytest.skip("../shared/data/sacct/phillips.log is not present")
    with PHILLIPS.open() as f:
        ev = sort_events(iter_job_events("sacct", f, "phillips.log"))
    acc = UsageAccumulator("UTC")
    acc.update(ev)
    rows = acc.rows()
    ref = list(usage_from_events(ev, tz="UTC").rows())
    assert [r[0] for r in rows] == [r[0] for r in ref]
    for r, want in zip(rows, ref, strict=True):
        assert r[2:5] == pytest.approx(want[2:5], rel=1e-12)
        assert r[5:] == want[5:]
    # Dec 23 had exactly one 12-core job running all day (job 163485)
    assert rows[[r[0] for r in rows].index("2016-12-23")][2:5] == (288.0, 24.0, 24.0)
