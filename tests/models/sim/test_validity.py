"""The schedule validity checker: each rule on hand-made schedules, and the overlap rule against a
pairwise brute force on random schedules."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.sim.scheduler import JobRecord, Reservation
from models.sim.validity import check_reservations, check_schedule
from tests.models.sim.workloads import wl

NAN = math.nan


def rec(start: float, end: float, ids: tuple[int, ...], state: str = "COMPLETED") -> JobRecord:
    return JobRecord(start=start, end=end, node_ids=ids, state=state)


# 3 nodes. J0 (2 nodes) 0-100; J1 (1 node, asks 50, runs 80: killed at 50) 10-60 on node 2;
# J2 (3 nodes) 100-130; J3 (1 node, runs 0 s) at 130 on node 0, between J2 and J4; J4 130-140.
JOBS = wl([(0, 2, 100, 100), (5, 1, 80, 50), (20, 3, 30, 40), (100, 1, 0, 10), (125, 1, 10, 10)])


def valid() -> list[JobRecord]:
    return [
        rec(0.0, 100.0, (0, 1)),
        rec(10.0, 60.0, (2,), "TIMEOUT"),
        rec(100.0, 130.0, (0, 1, 2)),
        rec(130.0, 130.0, (0,)),
        rec(130.0, 140.0, (0,)),
    ]


def rules(violations):
    return sorted((v.rule, v.job) for v in violations)


def test_a_valid_schedule_has_no_violation():
    assert check_schedule(JOBS, valid(), 3) == []


@pytest.mark.parametrize(
    ("job", "change", "want"),
    [
        (1, {"start": 4.0, "end": 54.0}, [("before_submit", 1)]),
        (0, {"node_ids": (0,)}, [("node_count", 0)]),
        (0, {"node_ids": (1, 1)}, [("node_repeated", 0)]),
        (1, {"node_ids": (3,)}, [("node_range", 1)]),
        (1, {"end": 90.0}, [("end", 1)]),  # ran its 80 s: past its request of 50
        (2, {"end": 129.0}, [("end", 2)]),
        (1, {"node_ids": (1,)}, [("overlap", 1)]),  # node 1 is J0's until 100
        (2, {"start": 99.0, "end": 129.0}, [("overlap", 2), ("overlap", 2)]),
        # inside J2 on node 0, and the zero-length J3 (130) is now inside J4
        (4, {"start": 129.0, "end": 139.0}, [("overlap", 3), ("overlap", 4)]),
        (3, {"start": 120.0, "end": 120.0}, [("overlap", 3)]),  # zero-length inside J2
        (4, {"start": NAN, "end": NAN}, [("not_started", 4)]),
    ],
)
def test_each_rule(job, change, want):
    s = valid()
    for k, v in change.items():
        setattr(s[job], k, v)
    assert rules(check_schedule(JOBS, s, 3)) == want


def test_unstarted_jobs_may_be_allowed():
    s = valid()
    s[4] = JobRecord()
    assert check_schedule(JOBS, s, 3, require_all=False) == []
    with pytest.raises(ValueError):
        check_schedule(JOBS, s[:4], 3)


def test_a_recorded_schedule_runs_past_its_request():
    s = valid()
    s[1].end = 90.0  # J1 ran its 80 s
    assert check_schedule(JOBS, s, 3, kill_at_request=False) == []
    assert rules(check_schedule(JOBS, valid(), 3, kill_at_request=False)) == [("end", 1)]


def test_a_node_failure_ends_a_job_early_never_before_its_start():
    s = valid()
    s[0] = rec(0.0, 40.0, (0, 1), "NODE_FAIL")
    assert check_schedule(JOBS, s, 3) == []
    s[0] = rec(0.0, -1.0, (0, 1), "NODE_FAIL")
    assert rules(check_schedule(JOBS, s, 3)) == [("end", 0)]


def test_reservation_rules():
    s = valid()
    log = [
        Reservation(5.0, 1, 60.0),
        Reservation(8.0, 1, 10.0),  # moved earlier: fine; started at 10
        Reservation(20.0, 2, 100.0),
        Reservation(50.0, 2, 110.0),  # delayed; J2 still started by its last promise
        Reservation(128.0, 4, 125.0),  # in the past; J4 started at 130, after it
    ]
    got = check_reservations(s, log)
    assert rules(got) == [("late_start", 4), ("promise_delayed", 2), ("promise_in_past", 4)]
    s[1] = JobRecord()
    assert rules(check_reservations(s, log[:2])) == [("late_start", 1)]  # never started


@st.composite
def schedules(draw):
    n = draw(st.integers(1, 4))
    k = draw(st.integers(1, 12))
    rows, recs = [], []
    for _ in range(k):
        ids = tuple(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True)))
        start = float(draw(st.integers(0, 30)))
        run = float(draw(st.integers(0, 10)))
        rows.append((0.0, len(ids), run, 100.0))
        recs.append(rec(start, start + run, ids))
    return n, wl(rows), recs


def overlaps_brute_force(recs) -> bool:
    """Two jobs on a node at once: positive-length runs that intersect, or a zero-length job
    strictly inside a run."""
    for a in range(len(recs)):
        for b in range(len(recs)):
            x, y = recs[a], recs[b]
            if a == b or not set(x.node_ids) & set(y.node_ids):
                continue
            if x.end > x.start and y.end > y.start and x.start < y.end and y.start < x.end:
                return True
            if x.end == x.start and y.start < x.start < y.end:
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(schedules())
def test_overlap_rule_against_brute_force(case):
    n, jobs, recs = case
    got = check_schedule(jobs, recs, n)
    assert {v.rule for v in got} <= {"overlap"}
    assert bool(got) == overlaps_brute_force(recs)
