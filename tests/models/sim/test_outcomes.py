"""Schedule outcome measures: hand-worked schedules, and the numpy code against the slow
reference (tests/reference_outcomes.py) on random schedules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.swf import parse_swf_job
from models.sim import outcomes as oc
from models.sim.outcomes import Schedule
from models.sim.scheduler import EasyScheduler, Workload
from models.sim.simulator import SimConfig, workload_from_swf
from tests import reference_outcomes as ref
from tests.models.sim.workloads import Row
from tests.models.sim.workloads import wl as workload


def sched(rows: list[tuple[str, str, float, int, float, float]]) -> Schedule:
    """rows: (id, user, submit, nodes, start, end); requested = actual = end - start."""
    run = [r[5] - r[4] for r in rows]
    return Schedule(
        job_id=np.array([r[0] for r in rows], dtype=np.str_),
        user=np.array([r[1] for r in rows], dtype=np.str_),
        submit=np.array([r[2] for r in rows], dtype=float),
        nodes=np.array([r[3] for r in rows], dtype=np.int64),
        start=np.array([r[4] for r in rows], dtype=float),
        end=np.array([r[5] for r in rows], dtype=float),
        requested=np.array(run, dtype=float),
        actual=np.array(run, dtype=float),
    )


# 4 nodes. A (u1, 2 nodes) runs 0-100; B (u2, 4 nodes, submitted 10) waits for A: 100-150;
# C (u1, 1 node, submitted 20, runs 5 s) waits for B: 150-155.
# waits: A 0, B 90, C 130; runs: A 100, B 50, C 5.
S = sched(
    [
        ("A", "u1", 0.0, 2, 0.0, 100.0),
        ("B", "u2", 10.0, 4, 100.0, 150.0),
        ("C", "u1", 20.0, 1, 150.0, 155.0),
    ]
)
# The baseline: B started earlier (60, wait 50), C later (160, wait 140), A the same.
BASE = sched(
    [
        ("A", "u1", 0.0, 2, 0.0, 100.0),
        ("B", "u2", 10.0, 4, 60.0, 110.0),
        ("C", "u1", 20.0, 1, 160.0, 165.0),
    ]
)


def test_utilisation_hand_worked():
    # default span [first submit 0, last end 155): node-seconds A 2*100 + B 4*50 + C 1*5 = 405,
    # over 4 nodes * 155 s = 620
    assert oc.default_span(S) == (0.0, 155.0)
    assert oc.utilisation(S, 4) == pytest.approx(405 / 620)
    # [0, 100): only A, 200 / (4 * 100)
    assert oc.utilisation(S, 4, (0.0, 100.0)) == pytest.approx(0.5)
    # [120, 160): B's last 30 s on 4 nodes (120) + C's 5 s on 1 node = 125 / (4 * 40)
    assert oc.utilisation(S, 4, (120.0, 160.0)) == pytest.approx(125 / 160)
    # the same jobs on an 8-node machine: half as busy
    assert oc.utilisation(S, 8) == pytest.approx(405 / 1240)


def test_utilisation_edge_cases():
    # one job that ran 0 s at its submit: the default span is empty -> 0.0
    assert oc.utilisation(sched([("A", "u", 5.0, 1, 5.0, 5.0)]), 1) == 0.0
    with pytest.raises(ValueError):
        oc.utilisation(S, 4, (10.0, 10.0))
    with pytest.raises(ValueError):
        oc.utilisation(S, 0)


def test_waits_hand_worked():
    # waits 0, 90, 130: mean 220 / 3
    assert oc.mean_wait(S) == pytest.approx(220 / 3)
    # nearest rank of n = 3: p95 -> ceil(2.85) = 3rd smallest = 130; p50 -> ceil(1.5) = 2nd = 90;
    # p34 -> ceil(1.02) = 2nd = 90; p33 -> ceil(0.99) = 1st = 0
    assert oc.wait_percentile(S) == 130.0
    assert oc.wait_percentile(S, 50) == 90.0
    assert oc.wait_percentile(S, 34) == 90.0
    assert oc.wait_percentile(S, 33) == 0.0


def test_nearest_rank_is_exact_at_rank_boundaries():
    # 20 values 1..20: p95 -> rank 95 * 20 / 100 = 19 exactly (no float rounding up to 20)
    v = list(range(20, 0, -1))
    assert oc.nearest_rank(v, 95) == 19.0
    assert oc.nearest_rank(v, 96) == 20.0  # ceil(19.2) = 20
    assert oc.nearest_rank(v, 100) == 20.0
    assert oc.nearest_rank(v, 1) == 1.0  # ceil(0.2) = 1
    # numpy's inverted_cdf is the same definition
    assert oc.nearest_rank(v, 95) == np.percentile(v, 95, method="inverted_cdf")
    for bad in (0, 101):
        with pytest.raises(ValueError):
            oc.nearest_rank(v, bad)
    with pytest.raises(ValueError):
        oc.nearest_rank([], 95)


def test_bounded_slowdown_hand_worked():
    # A: max(1, (0 + 100) / 100) = 1; B: (90 + 50) / 50 = 2.8;
    # C: runs 5 s < tau = 10: (130 + 5) / 10 = 13.5. Mean (1 + 2.8 + 13.5) / 3 = 17.3 / 3
    assert oc.bounded_slowdown(S).tolist() == pytest.approx([1.0, 2.8, 13.5])
    assert oc.mean_bounded_slowdown(S) == pytest.approx(17.3 / 3)
    # with tau = 1 s C is no longer bounded: 135 / 5 = 27
    assert oc.bounded_slowdown(S, tau=1.0)[2] == pytest.approx(27.0)
    # a job that ran 0 s without waiting: max(1, 0 / 10) = 1, not 0
    assert oc.bounded_slowdown(sched([("Z", "u", 0.0, 1, 0.0, 0.0)])).tolist() == [1.0]


def test_started_late_hand_worked():
    # S against BASE: B 100 > 60 is late; A equal (tolerance 0: not late); C 150 < 160 is early
    assert oc.started_late(S, BASE).tolist() == ["B"]
    # B is 40 s late: not more than a 40 s tolerance
    assert oc.started_late(S, BASE, tolerance=40.0).tolist() == []
    assert oc.started_late(BASE, S).tolist() == ["C"]
    assert oc.started_late(S, S).tolist() == []


def test_user_deltas_hand_worked():
    # u1: A 0 vs 0, C 130 vs 140 -> mean 65 vs 70, change (0 - 10) / 2 = -5, 1 shorter
    # u2: B 90 vs 50 -> change +40, 1 longer
    assert oc.user_deltas(S, BASE) == [
        oc.UserDelta("u1", 2, 65.0, 70.0, -5.0, 0, 1),
        oc.UserDelta("u2", 1, 90.0, 50.0, 40.0, 1, 0),
    ]


def test_jobs_are_matched_by_id_not_position():
    rev = sched(
        [
            ("C", "u1", 20.0, 1, 160.0, 165.0),
            ("A", "u1", 0.0, 2, 0.0, 100.0),
            ("B", "u2", 10.0, 4, 60.0, 110.0),
        ]
    )
    assert oc.started_late(S, rev).tolist() == ["B"]
    assert oc.user_deltas(S, rev) == oc.user_deltas(S, BASE)
    other = sched([("A", "u1", 0.0, 2, 0.0, 100.0), ("B", "u2", 10.0, 4, 60.0, 110.0)])
    with pytest.raises(ValueError, match="jobs against"):
        oc.started_late(S, other)
    renamed = sched([(r, "u1", 0.0, 1, 0.0, 1.0) for r in ("A", "B", "X")])
    with pytest.raises(ValueError, match="different job ids"):
        oc.user_deltas(S, renamed)
    reassigned = sched([("A", "u9", 0.0, 2, 0.0, 100.0), *_rows(BASE)[1:]])
    with pytest.raises(ValueError, match="different users"):
        oc.user_deltas(S, reassigned)


def _rows(s: Schedule) -> list[tuple[str, str, float, int, float, float]]:
    return [
        (str(j), str(u), float(a), int(n), float(b), float(c))
        for j, u, a, n, b, c in zip(
            s.job_id, s.user, s.submit, s.nodes, s.start, s.end, strict=True
        )
    ]


def test_users_sorted_by_code_point():
    s = sched([(str(i), u, 0.0, 1, 0.0, 1.0) for i, u in enumerate(["user9", "Zed", "user10"])])
    assert [d.user for d in oc.user_deltas(s, s)] == ["Zed", "user10", "user9"]


def test_outcome_summary():
    o = oc.outcome(S, 4, baseline=BASE)
    assert o.jobs == 3 and o.span == (0.0, 155.0)
    assert o.utilisation == pytest.approx(405 / 620)
    assert o.mean_wait == pytest.approx(220 / 3) and o.p95_wait == 130.0
    assert o.mean_bounded_slowdown == pytest.approx(17.3 / 3)
    assert o.started_late == 1
    assert oc.outcome(S, 4).started_late is None
    assert oc.outcome(S, 4, span=(0.0, 100.0)).utilisation == pytest.approx(0.5)


def test_schedule_validation():
    ok = ("A", "u", 0.0, 1, 0.0, 1.0)
    for bad in (
        [ok, ok],  # duplicate id
        [("A", "u", 10.0, 1, 5.0, 20.0)],  # starts before its submit
        [("A", "u", 0.0, 1, 5.0, 4.0)],  # ends before its start
        [("A", "u", 0.0, 0, 0.0, 1.0)],  # no nodes
        [("A", "u", 0.0, 1, float("nan"), 1.0)],  # never started
    ):
        with pytest.raises(ValueError):
            sched(bad)
    with pytest.raises(ValueError, match="1-D array"):
        Schedule(
            job_id=np.array(["A"]),
            user=np.array(["u"]),
            submit=np.zeros(2),
            nodes=np.ones(1, dtype=np.int64),
            start=np.zeros(1),
            end=np.ones(1),
            requested=np.ones(1),
            actual=np.ones(1),
        )
    empty = sched([])
    assert len(empty) == 0 and oc.user_deltas(empty, empty) == []
    with pytest.raises(ValueError, match="empty"):
        oc.mean_wait(empty)


def test_schedule_is_read_only():
    with pytest.raises(ValueError):
        S.start[0] = 1.0


def wl(rows: list[Row]) -> Workload:
    """rows: (submit, nodes, runtime, req_walltime); ids J0.., users alternate a/b."""
    return workload(rows, ["a" if i % 2 == 0 else "b" for i in range(len(rows))])


def test_schedule_from_the_scheduler():
    # tests/models/sim/test_scheduler.py's hand-worked EASY case on 4 nodes: J0 0-100 (2 nodes),
    # J1 (4 nodes) waits for J0: 100-150, J2 backfills at its submit 10: 10-90, J3 (1 node,
    # asks 200 s) would delay J1, waits for it: 150-180.
    w = wl([(0, 2, 100, 100), (0, 4, 50, 50), (10, 1, 80, 90), (20, 1, 30, 200)])
    s = EasyScheduler(4, w)
    for _ in s.run(float("inf"), float("inf"), 1.0):  # no iteration observed: just run
        pass
    got = oc.schedule_from_records(w, s.records)
    assert got.start.tolist() == [0.0, 100.0, 10.0, 150.0]
    assert got.end.tolist() == [100.0, 150.0, 90.0, 180.0]
    assert got.user.tolist() == ["a", "b", "a", "b"]
    # waits 0, 100, 0, 130 -> mean 57.5; node-seconds 200 + 200 + 80 + 30 = 510 over 4 * 180
    assert oc.mean_wait(got) == 57.5
    assert oc.utilisation(got, 4) == pytest.approx(510 / 720)


def test_schedule_from_records_kills_at_the_request_and_as_run_does_not():
    # J0 asks 50 s and needs 80: the simulator ends it at 50, the recorded schedule at 80
    w = wl([(0, 1, 80, 50)])
    s = EasyScheduler(1, w)
    for _ in s.run(float("inf"), float("inf"), 1.0):
        pass
    sim = oc.schedule_from_records(w, s.records)
    assert sim.end.tolist() == [50.0] and sim.actual.tolist() == [80.0]
    assert sim.requested.tolist() == [50.0]
    rec = oc.schedule_as_run(w, [5.0])
    assert rec.end.tolist() == [85.0] and rec.waits.tolist() == [5.0]


def test_schedule_from_unfinished_records_raises():
    w = wl([(0, 1, 100, 100), (0, 1, 100, 100)])
    s = EasyScheduler(1, w)
    for _ in s.run(0.0, 150.0, 1000.0):  # stops at 150: J1 started at 100, never ended
        pass
    with pytest.raises(ValueError, match="1 jobs never"):
        oc.schedule_from_records(w, s.records)
    with pytest.raises(ValueError, match="records for"):
        oc.schedule_from_records(w, s.records[:1])


def test_as_run_from_swf():
    # SWF fields 1-4: job, submit, wait, run. Job 1 waited 30 s, job 4 0 s; the workload maps
    # trace time 0 to 1000, so the recorded starts are 1030 and 1050 + 0.
    cfg = SimConfig(nodes=8, days=1.0, start=1000.0, warmup=0.0, job_base=0)
    lines = [
        "1 0 30 100 4 -1 -1 4 200 -1 1 3 1 -1 -1 -1 -1 -1",
        "4 50 0 50 2 -1 -1 2 60 -1 1 7 1 -1 -1 -1 -1 -1",
    ]
    jobs = [parse_swf_job(x) for x in lines]
    w, _ = workload_from_swf(jobs, cfg)
    rec = oc.as_run_from_swf(w, jobs)
    assert rec.job_id.tolist() == ["1", "4"] and rec.user.tolist() == ["user003", "user007"]
    assert rec.start.tolist() == [1030.0, 1050.0]
    assert rec.end.tolist() == [1130.0, 1100.0]  # run 100 and 50
    unknown = [jobs[0], parse_swf_job("4 50 -1 50 2 -1 -1 2 60 -1 1 7 1 -1 -1 -1 -1 -1")]
    with pytest.raises(ValueError, match="1 workload jobs"):
        oc.as_run_from_swf(w, unknown)
    with pytest.raises(ValueError, match="2 workload jobs"):
        oc.as_run_from_swf(w, jobs, job_base=1000)


# --- against the slow reference ----------------------------------------------------------------


@st.composite
def paired_schedules(draw: st.DrawFn) -> tuple[Schedule, Schedule, int]:
    """A schedule and a baseline of the same jobs (ids, users, submits, sizes, run times) with
    other starts, in a shuffled order; times in quarter seconds so ties happen."""
    n = draw(st.integers(1, 30))
    n_nodes = draw(st.integers(1, 8))
    q = st.integers(0, 4000).map(lambda x: x / 4)
    jobs = [
        (
            f"j{i}",
            draw(st.sampled_from(["alice", "bob", "Carol", "u10", "u9"])),
            draw(q),
            draw(st.integers(1, n_nodes)),
            draw(st.integers(0, 400).map(lambda x: x / 4)),
        )
        for i in range(n)
    ]

    def one() -> list[tuple[str, str, float, int, float, float]]:
        rows = []
        for jid, user, sub, nodes, run in jobs:
            start = sub + draw(st.sampled_from([0.0, 0.25, 5.0]) | q)
            rows.append((jid, user, sub, nodes, start, start + run))
        return rows

    s_rows = one()
    b_rows = draw(st.permutations(one()))
    return sched(s_rows), sched(b_rows), n_nodes


def ref_rows(s: Schedule) -> list[ref.Row]:
    return [ref.Row(*r) for r in _rows(s)]


@settings(max_examples=200, deadline=None)
@given(paired_schedules(), st.integers(1, 100), st.sampled_from([None, (0.0, 500.0), (250, 2e3)]))
def test_measures_match_the_reference(
    pair: tuple[Schedule, Schedule, int], percent: int, span: tuple[float, float] | None
) -> None:
    s, base, n_nodes = pair
    rs, rb = ref_rows(s), ref_rows(base)
    assert ref.isclose(oc.utilisation(s, n_nodes, span), ref.utilisation(rs, n_nodes, span))
    assert ref.isclose(oc.mean_wait(s), ref.mean_wait(rs))
    assert oc.wait_percentile(s, percent) == ref.wait_percentile(rs, percent)
    assert oc.wait_percentile(s) == ref.wait_percentile(rs, 95)
    for tau in (10.0, 1.0):
        assert ref.isclose(oc.mean_bounded_slowdown(s, tau), ref.mean_bounded_slowdown(rs, tau))
    for tol in (0.0, 0.25, 5.0):
        assert oc.started_late(s, base, tol).tolist() == ref.started_late(rs, rb, tol)
    got = oc.user_deltas(s, base)
    want = ref.user_deltas(rs, rb)
    assert [(d.user, d.jobs, d.longer, d.shorter) for d in got] == [
        (u, n, lo, sh) for u, n, _, _, _, lo, sh in want
    ]
    for d, (_, _, w, bw, ch, _, _) in zip(got, want, strict=True):
        assert ref.isclose(d.mean_wait, w) and ref.isclose(d.baseline_mean_wait, bw)
        assert ref.isclose(d.mean_wait_change, ch)


@settings(max_examples=50, deadline=None)
@given(paired_schedules())
def test_measures_are_deterministic(pair: tuple[Schedule, Schedule, int]) -> None:
    s, base, n_nodes = pair
    assert oc.outcome(s, n_nodes, base) == oc.outcome(s, n_nodes, base)
    assert oc.user_deltas(s, base) == oc.user_deltas(s, base)
