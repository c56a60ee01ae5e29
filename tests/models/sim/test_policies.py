"""Scheduling policies: hand-worked schedules with known answers, the predictors' rules, today's
EASY unchanged, and the schedulers against the slow references of tests/reference_sched.py."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.formats.swf import parse_swf
from models.jobs.runtime import predict_from_history
from models.sim.policies import (
    POLICIES,
    TSAFRIR_STEPS_S,
    ActualTime,
    RequestedTime,
    ToRequest,
    TrimmedMeanUpper,
    TsafrirLastTwo,
    TsafrirSteps,
    make_scheduler,
    run_policy,
)
from models.sim.scheduler import (
    ConservativeScheduler,
    EasyScheduler,
    NodeInterval,
    Reservation,
)
from models.sim.simulator import SimConfig, workload_from_swf
from models.sim.validity import check_reservations, check_schedule
from tests import reference_sched as ref
from tests.models.sim.workloads import job_rows, wl, workloads
from tests.paths import SHARED_DATA


def starts(records):
    return [r.start for r in records]


# --- hand-worked schedules ------------------------------------------------------------------


def test_conservative_and_easy_differ_on_the_textbook_case():
    # 4 nodes, every job runs exactly its request. J0 (2 nodes) runs 0-100. J1 (3 nodes, at 1)
    # waits for it: both policies reserve 100-200. J2 (4 nodes, at 2) comes next. J3 (1 node,
    # 300 s, at 3) fits on the idle node now.
    # EASY protects only the head (J1): node 3 is not among J1's nodes, so J3 backfills at 3
    # and holds node 3 until 303; J2 needs all four nodes and waits until 303.
    # Conservative: J2 holds 200-300 on all four nodes, J3 (to 303) would overlap it, so J3 is
    # reserved after J2, 300-600.
    rows = [(0, 2, 100, 100), (1, 3, 100, 100), (2, 4, 100, 100), (3, 1, 300, 300)]
    easy = EasyScheduler(4, wl(rows)).run_all()
    assert starts(easy) == [0.0, 100.0, 303.0, 3.0]
    assert [r.backfill for r in easy] == [False, False, False, True]
    assert easy[3].node_ids == (3,) and easy[1].node_ids == (0, 1, 2)
    cons = ConservativeScheduler(4, wl(rows), log_reservations=True)
    got = cons.run_all()
    assert starts(got) == [0.0, 100.0, 200.0, 300.0]
    assert [r.end for r in got] == [100.0, 200.0, 300.0, 600.0]
    assert [r.backfill for r in got] == [False] * 4
    # every job reserved at its submit, and started there
    assert cons.rsv_log == [
        Reservation(0.0, 0, 0.0),
        Reservation(1.0, 1, 100.0),
        Reservation(2.0, 2, 200.0),
        Reservation(3.0, 3, 300.0),
    ]
    assert [r.first_shadow for r in got][1:] == [100.0, 200.0, 300.0]


def test_conservative_backfills_into_a_hole_and_compresses_on_early_end():
    # 4 nodes. J0 (3 nodes) asks 100 s, ends at 40. J1 (4 nodes, at 1) is reserved 100-150.
    # J2 (1 node, 50 s, at 2) fits the hole on node 3 now: backfilled, 2-52. When J0 ends at 40
    # the schedule is compressed: J1 cannot move before J2 ends at 52, and does so (52-102).
    rows = [(0, 3, 40, 100), (1, 4, 50, 50), (2, 1, 50, 50)]
    s = ConservativeScheduler(4, wl(rows), log_reservations=True)
    got = s.run_all()
    assert starts(got) == [0.0, 52.0, 2.0]
    assert got[2].backfill and got[2].node_ids == (3,)
    assert [(r.made, r.job, r.start) for r in s.rsv_log if r.job == 1] == [
        (1.0, 1, 100.0),
        (40.0, 1, 52.0),
    ]
    assert check_reservations(got, s.rsv_log) == []


def test_shortest_first_backfills_the_shortest_planned_job():
    # 4 nodes: J0 (2 nodes) runs 0-100; J1 (4 nodes, at 1) reserves every node at 100; at 2
    # J2 (2 nodes, 90 s) and J3 (2 nodes, 10 s) both fit before 100. In queue order J2 takes
    # the two free nodes; shortest first J3 does, and J2 waits for the head
    rows = [(0, 2, 100, 100), (1, 4, 50, 50), (2, 2, 90, 90), (2, 2, 10, 10)]
    fifo = starts(EasyScheduler(4, wl(rows)).run_all())
    sjbf = starts(EasyScheduler(4, wl(rows), shortest_first=True).run_all())
    assert fifo == [0.0, 100.0, 2.0, 150.0]
    assert sjbf == [0.0, 100.0, 150.0, 2.0]


def test_easy_perfect_backfills_a_job_easy_cannot():
    # 2 nodes. J0 (1 node) runs 0-100. J1 (2 nodes, at 1) waits for it: shadow 100 on both
    # nodes. J2 (1 node, at 2) asks 200 s but runs 30 s: with its request it would pass the
    # shadow time and waits (150-180 after J1); knowing it runs 30 s, it backfills at 2.
    rows = [(0, 1, 100, 100), (1, 2, 50, 50), (2, 1, 30, 200)]
    assert starts(run_policy("easy", 2, wl(rows))) == [0.0, 100.0, 150.0]
    perfect = run_policy("easy-perfect", 2, wl(rows))
    assert starts(perfect) == [0.0, 100.0, 2.0]
    assert perfect[2].backfill and perfect[2].end == 32.0


def test_easy_perfect_starts_the_head_when_the_running_job_really_ends():
    # 2 nodes. J0 (1 node) asks 100 s and runs 10. J1 (2 nodes, at 1) is the head. J2 (1 node,
    # 50 s, at 2). EASY plans J0 until 100: J2 ends by then, backfills at 2, and J1 waits for it
    # (52). Knowing J0 ends at 10, the shadow time is 10: J2 would delay J1 and waits (60).
    rows = [(0, 1, 10, 100), (1, 2, 50, 50), (2, 1, 50, 50)]
    easy = make_scheduler("easy", 2, wl(rows), log_reservations=True)
    assert starts(easy.run_all()) == [0.0, 52.0, 2.0]
    assert [(r.made, r.start) for r in easy.rsv_log] == [(1.0, 100.0), (10.0, 52.0)]
    perfect = make_scheduler("easy-perfect", 2, wl(rows), log_reservations=True)
    assert starts(perfect.run_all()) == [0.0, 10.0, 60.0]
    assert [(r.made, r.start) for r in perfect.rsv_log] == [(1.0, 10.0), (10.0, 60.0)]


def test_predicted_job_is_killed_at_its_request_not_its_prediction():
    # 2 nodes. User u's first two jobs run 10 s each (0-10): u's next job J2 (2 nodes, at 20,
    # asks 200 s, would run 5000 s) is predicted (10 + 10) / 2 = 10 s. J3 (v, 2 nodes, at 21)
    # waits for it. J2 outlives its prediction at 30: raised to 10 + 1 min = 70 s (ends 90); at
    # 90 to 10 + 5 min, past its request, so 200 s. It is killed at 20 + 200 = 220 (TIMEOUT),
    # never at a prediction, and J3 starts then. J3's promised start moves 30 -> 90 -> 220.
    rows = [(0, 1, 10, 1000), (0, 1, 10, 1000), (20, 2, 5000, 200), (21, 2, 10, 10)]
    w = wl(rows, users=["u", "u", "u", "v"])
    s = make_scheduler("easy-predicted", 2, w, log_reservations=True)
    got = s.run_all()
    assert (got[2].start, got[2].end, got[2].state) == (20.0, 220.0, "TIMEOUT")
    assert got[3].start == 220.0
    assert s.plan.tolist() == [1000.0, 1000.0, 200.0, 10.0]
    assert [(r.made, r.job, r.start) for r in s.rsv_log] == [
        (21.0, 3, 30.0),
        (30.0, 3, 90.0),
        (90.0, 3, 220.0),
    ]
    # the head's promise moved later twice: expected with predictions
    assert [v.rule for v in check_reservations(got, s.rsv_log)] == ["promise_delayed"] * 2
    assert check_schedule(w, got, 2) == []


def test_tsafrir_predictor_rule_on_a_user_history():
    # user a: no history -> the request; one ended job -> still the request; then the average
    # of the last two to end, capped at the request; user b has a history of its own.
    users = ["a", "a", "a", "b", "a", "a"]
    w = wl([(0, 1, 1, 100)] * 4 + [(0, 1, 1, 50), (0, 1, 1, 100)], users)
    p = TsafrirLastTwo().for_workload(w)
    assert p.submitted(0, 0.0) == 100.0
    p.ended(0, 30.0)
    assert p.submitted(1, 1.0) == 100.0
    p.ended(1, 50.0)
    assert p.submitted(2, 2.0) == 40.0  # (30 + 50) / 2
    assert p.submitted(3, 3.0) == 100.0  # b: no history
    p.ended(3, 7.0)  # b's run does not enter a's history
    p.ended(2, 90.0)  # a's last two: 90, 50
    assert p.submitted(4, 4.0) == 50.0  # (90 + 50) / 2 = 70, capped at J4's request 50
    assert p.submitted(5, 5.0) == 70.0
    # without user names there is no history: the request
    q = TsafrirLastTwo().for_workload(wl([(0, 1, 1, 100), (0, 1, 1, 80)]))
    q.ended(0, 5.0)
    q.ended(0, 5.0)
    assert q.submitted(1, 9.0) == 80.0


def test_tsafrir_predictions_follow_the_order_jobs_end_in():
    # a's jobs J0 (runs 100) and J1 (runs 10) start together; J1 ends first. J2 (at 5) sees no
    # two ended jobs (request); J3 (at 200) sees J1 then J0: (10 + 100) / 2 = 55.
    rows = [(0, 1, 100, 500), (0, 1, 10, 500), (5, 1, 1, 500), (200, 1, 1, 500)]
    s = make_scheduler("easy-predicted", 4, wl(rows, ["a"] * 4))
    s.run_all()
    assert s.plan.tolist()[2:] == [500.0, 55.0]


def test_tsafrir_steps_and_to_request():
    c = TsafrirSteps()
    # the k-th correction: the first prediction + the k-th step, capped at the request
    assert [c.corrected(10.0, k, 0.0, 1e9) for k in (1, 2, 3, 4, 5)] == [
        70.0,
        310.0,
        910.0,
        1810.0,
        3610.0,
    ]
    assert c.corrected(10.0, 3, 310.0, 500.0) == 500.0
    assert c.corrected(10.0, len(TSAFRIR_STEPS_S) + 1, 1e6, 2e6) == 2e6  # steps used up
    assert TSAFRIR_STEPS_S[-1] == 100 * 3600.0
    assert ToRequest().corrected(10.0, 1, 10.0, 500.0) == 500.0


def test_to_request_correction_in_a_run():
    # as the Tsafrir test above with ToRequest: J2 is raised to its request at once (30)
    rows = [(0, 1, 10, 1000), (0, 1, 10, 1000), (20, 2, 5000, 200), (21, 2, 10, 10)]
    w = wl(rows, users=["u", "u", "u", "v"])
    s = make_scheduler(
        "easy-predicted",
        2,
        w,
        predictor=TsafrirLastTwo(correction=ToRequest()),
        log_reservations=True,
    )
    got = s.run_all()
    assert (got[2].end, got[3].start) == (220.0, 220.0)
    assert [(r.made, r.start) for r in s.rsv_log] == [(21.0, 30.0), (30.0, 220.0)]


def test_trimmed_mean_upper_is_seed_001_estimate():
    # user a's runs with request 1000: the shortest (80) and longest (300) are dropped, the
    # kept 100, 110, 120 give mean 110, s = 10: upper 110 + 1.96 * 10 = 129.6
    runs = [100.0, 120.0, 80.0, 300.0, 110.0]
    users = ["a"] * 7 + ["b"]
    w = wl([(0, 1, 1, 1000)] * 6 + [(0, 1, 1, 120), (0, 1, 1, 1000)], users)
    p = TrimmedMeanUpper().for_workload(w)
    assert p.submitted(0, 0.0) == 1000.0  # no history: the request
    for r in runs:
        p.ended(0, r)
    assert predict_from_history(runs).upper == pytest.approx(129.6)
    assert p.submitted(5, 1.0) == predict_from_history(runs).upper
    assert p.submitted(6, 1.0) == 120.0  # another request: another history (request_as_name)
    assert p.submitted(7, 1.0) == 1000.0  # another user
    # per user only: J6 (request 120) shares a's history, and 129.6 is capped at its request
    per_user = TrimmedMeanUpper(request_as_name=False).for_workload(w)
    for r in runs:
        per_user.ended(0, r)
    assert per_user.submitted(6, 1.0) == 120.0
    assert per_user.submitted(5, 1.0) == pytest.approx(129.6)
    mean = TrimmedMeanUpper(upper=False).for_workload(w)
    for r in runs:
        mean.ended(0, r)
    assert mean.submitted(5, 1.0) == predict_from_history(runs).predicted == 110.0
    one = TrimmedMeanUpper().for_workload(w)
    one.ended(0, 5.0)
    assert one.submitted(1, 1.0) == 1000.0  # fewer than min_runs (2)


def test_policy_names():
    assert POLICIES == ("as-run", "easy", "easy-predicted", "easy-perfect", "conservative")
    w = wl([(0, 1, 1, 1)])
    assert isinstance(make_scheduler("conservative", 1, w), ConservativeScheduler)
    with pytest.raises(ValueError, match="recorded"):
        make_scheduler("as-run", 1, w)
    with pytest.raises(ValueError, match="unknown policy"):
        make_scheduler("fcfs", 1, w)


# --- generated workloads ----------------------------------------------------------------------


def events_and_states(s, period, end):
    out = []
    for evs, it in s.run(0.0, end, period):
        state = None if it is None else (it.ts, it.state.tolist(), it.rsvlist, it.joblist)
        out.append(([(e.type, e.ts, e.job, e.backfill, e.node_ids, e.state) for e in evs], state))
        out[-1][0].extend(e.reserved_start for e in evs)
    return out


@st.composite
def outages(draw, n):
    k = draw(st.integers(0, 4))
    out = []
    for _ in range(k):
        a = draw(st.integers(0, 3000))
        out.append(
            NodeInterval(
                draw(st.integers(0, n - 1)),
                float(a),
                float(a + draw(st.integers(1, 800))),
                draw(st.sampled_from(["down", "drain"])),
            )
        )
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), depth=st.integers(1, 3))
def test_requested_estimate_gives_todays_events(data, depth):
    """EasyScheduler with no estimate (today's path) and with RequestedTime: the same events,
    iteration states and records, outages and drains included."""
    n, rows, _ = data.draw(workloads(max_jobs=30, max_nodes=8))
    outs = data.draw(outages(n))
    w = wl(rows)
    a = EasyScheduler(n, w, outs, depth=depth)
    b = EasyScheduler(n, w, outs, depth=depth, estimate=RequestedTime())
    assert events_and_states(a, 100.0, 30000.0) == events_and_states(b, 100.0, 30000.0)
    assert [vars_of(r) for r in a.records] == [vars_of(r) for r in b.records]


def vars_of(r):
    return (r.start, r.end, r.backfill, r.first_shadow, r.node_ids, r.state)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), depth=st.integers(1, 3))
def test_run_all_gives_the_records_of_run(data, depth):
    n, rows, users = data.draw(workloads(max_jobs=30, max_nodes=8))
    outs = data.draw(outages(n))
    w = wl(rows, users)
    for est in (None, TsafrirLastTwo()):
        a = EasyScheduler(n, w, outs, depth=depth, estimate=est)
        for _ in a.run(0.0, 40000.0, 50.0):  # every job has ended by 40000
            pass
        assert all(r.end == r.end for r in a.records)
        b = EasyScheduler(n, w, outs, depth=depth, estimate=est).run_all()
        assert [vars_of(r) for r in a.records] == [vars_of(r) for r in b]


def same_as_reference(records, ref_result):
    got = {
        j: (r.start, r.node_ids, r.backfill, r.end)
        for j, r in enumerate(records)
        if r.start == r.start
    }
    return got == ref_result


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    estimate=st.sampled_from(["requested", "actual", "tsafrir"]),
    shortest_first=st.booleans(),
)
def test_easy_matches_the_reference(data, estimate, shortest_first):
    n = data.draw(st.integers(1, 6))
    if estimate == "tsafrir":
        # submits spread out, so users have ended jobs (predictions), and runs that outlive
        # them: about 4 workloads in 5 have a correction
        rows = data.draw(job_rows(25, 3000, 400, 900, n))
    else:
        rows = data.draw(job_rows(25, 400, 700, 600, n))
    users = data.draw(st.lists(st.sampled_from("ab"), min_size=len(rows), max_size=len(rows)))
    est = {"requested": RequestedTime(), "actual": ActualTime(), "tsafrir": TsafrirLastTwo()}
    s = EasyScheduler(
        n,
        wl(rows, users),
        estimate=est[estimate],
        log_reservations=True,
        shortest_first=shortest_first,
    )
    records = s.run_all()
    want, promises = ref.easy(n, rows, users, estimate, shortest_first)
    assert same_as_reference(records, want)
    assert [(r.made, r.job, r.start) for r in s.rsv_log] == promises


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), estimate=st.sampled_from(["requested", "actual"]))
def test_conservative_matches_the_reference(data, estimate):
    n = data.draw(st.integers(1, 6))
    rows = data.draw(job_rows(20, 60, 25, 25, n))
    est = RequestedTime() if estimate == "requested" else ActualTime()
    s = ConservativeScheduler(n, wl(rows), estimate=est, log_reservations=True)
    records = s.run_all()
    want, promises = ref.conservative(n, rows, estimate)
    assert same_as_reference(records, want)
    assert [(r.made, r.job, r.start) for r in s.rsv_log] == promises


PREDICTORS = {
    "tsafrir": TsafrirLastTwo(),
    "tsafrir-to-request": TsafrirLastTwo(correction=ToRequest()),
    "trimmed-mean-upper": TrimmedMeanUpper(),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_policy_gives_a_valid_schedule(data):
    """1-40 jobs on 1-16 nodes: every simulated policy's schedule obeys the validity rules;
    the reservation rules hold exactly for plans that bound the run times."""
    n, rows, users = data.draw(workloads())
    w = wl(rows, users)
    runs = [(p, None) for p in POLICIES if p != "as-run"]
    runs += [("easy-predicted", p) for p in PREDICTORS.values()]
    sjbf = data.draw(st.booleans())  # EASY++'s shortest-first backfill changes no rule
    for policy, predictor in runs:
        s = make_scheduler(
            policy, n, w, predictor=predictor, log_reservations=True, shortest_first=sjbf
        )
        records = s.run_all()
        assert check_schedule(w, records, n) == [], policy
        promises = check_reservations(records, s.rsv_log)
        if policy == "easy-predicted":
            assert {v.rule for v in promises} <= {"promise_delayed"}
        else:
            assert promises == [], policy
    # conservative backfilling with predictions: valid schedules; reservations may move later
    for predictor in PREDICTORS.values():
        s = ConservativeScheduler(n, w, estimate=predictor, log_reservations=True)
        records = s.run_all()
        assert check_schedule(w, records, n) == []
        assert {v.rule for v in check_reservations(records, s.rsv_log)} <= {"promise_delayed"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_conservative_with_outages_stays_valid(data):
    n, rows, _ = data.draw(workloads(max_jobs=25, max_nodes=8))
    outs = data.draw(outages(n))
    w = wl(rows)
    s = ConservativeScheduler(n, w, outs, log_reservations=True)
    records = s.run_all()
    assert check_schedule(w, records, n) == []
    down = [o for o in outs if o.kind == "down"]
    for o in down:  # no job starts on a node while it is down
        for r in records:
            if o.node in r.node_ids:
                assert not o.start <= r.start < o.end


KTH = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.mark.data
def test_every_policy_on_three_weeks_of_kth():
    if not KTH.exists():
        pytest.skip(f"real SWF trace not available at {KTH} (../shared/data absent)")
    with gzip.open(KTH, "rt") as f:
        _, jobs = parse_swf(f)
        cfg = SimConfig(nodes=100, days=21.0, start=0.0, warmup=0.0)
        w, _ = workload_from_swf(jobs, cfg)
    assert len(w) > 1000
    waits = {}
    for policy in POLICIES[1:]:
        s = make_scheduler(policy, 100, w, log_reservations=True)
        records = s.run_all()
        assert check_schedule(w, records, 100) == [], policy
        if policy != "easy-predicted":
            assert check_reservations(records, s.rsv_log) == [], policy
        waits[policy] = float(np.mean([r.start for r in records] - w.submit))
    # knowing the run times never makes EASY's mean wait worse here
    assert waits["easy-perfect"] < waits["easy"]
