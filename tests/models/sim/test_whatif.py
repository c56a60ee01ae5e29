"""What-if (models.sim.whatif): the jobs taken from events, each policy's drain accounted by the
replay's accountant against a reference that reads the scheduler itself, and the results."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from models.formats.jobsource import iter_job_records, record_events
from models.records.jobevent import JobEvent
from models.sim.policies import TsafrirLastTwo, make_scheduler
from models.sim.scheduler import INF, ConservativeScheduler, EasyScheduler
from models.sim.whatif import (
    account_drain,
    jobs_from_events,
    policy_runs,
    run_whatif,
)
from tests.models.sim.workloads import wl, workloads
from tests.paths import SHARED_DATA

KTH = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def ev(type_, ts, job, **kw):
    return JobEvent(type=type_, ts=float(ts), job=job, **kw)


# --- jobs from events ------------------------------------------------------------------------


def test_jobs_from_events_rules():
    events = [
        # a: complete; ran 50 s past its 100 s request (grace): its request becomes 150
        ev("submit", 0, "a", user="u", nodes=2, req_walltime=100.0),
        ev("start", 10, "a"),
        ev("end", 160, "a"),
        # b: no submit event (waited 0 s), no request (its run time), no user
        ev("start", 20, "b", nodes=1),
        ev("end", 50, "b"),
        # left out: never started, still running, larger than the machine, no size, twice
        ev("submit", 0, "c", nodes=1, req_walltime=10.0),
        ev("end", 5, "c"),
        ev("submit", 0, "d", nodes=1, req_walltime=10.0),
        ev("start", 1, "d"),
        ev("submit", 0, "e", nodes=9, req_walltime=10.0),
        ev("start", 1, "e"),
        ev("end", 2, "e"),
        ev("start", 1, "f"),
        ev("end", 2, "f"),
        ev("submit", 0, "g", nodes=1, req_walltime=10.0),
        ev("start", 1, "g"),
        ev("end", 2, "g"),
        ev("end", 3, "g"),
    ]
    jobs = jobs_from_events(events, n_nodes=4)
    w = jobs.workload
    assert w.job_id == ["a", "b"]
    assert w.submit.tolist() == [0.0, 20.0]
    assert w.nodes.tolist() == [2, 1]
    assert w.runtime.tolist() == [150.0, 30.0]
    assert w.req_walltime.tolist() == [150.0, 30.0]
    assert w.user == ["u", "unknown"]
    assert jobs.recorded.start.tolist() == [10.0, 20.0]
    assert jobs.recorded.end.tolist() == [160.0, 50.0]
    assert jobs.left_out == {
        "never_started": 1,
        "not_ended": 1,
        "larger_than_machine": 1,
        "no_size": 1,
        "events_twice": 1,
    }
    assert jobs.filled_in == {
        "request_raised_to_run": 1,
        "submit_from_start": 1,
        "request_from_run": 1,
        "user_unknown": 1,
    }


# --- drain of a simulated schedule -----------------------------------------------------------


def test_easy_drain_by_hand():
    # 4 nodes. J0 (2 nodes) runs 0-100. J1 (4 nodes) is submitted at 10: EASY reserves all four
    # nodes at 100, so nodes 2 and 3 are idle and reserved from 10 to 100: 2 x 90 s of drain.
    # J1 runs 100-150. Span 0-150 on 4 nodes: 600 node-s, drain 180 = 30 %.
    s = EasyScheduler(4, wl([(0, 2, 100, 100), (10, 4, 50, 50)]))
    records, d = account_drain(s)
    assert [(r.start, r.end) for r in records] == [(0.0, 100.0), (100.0, 150.0)]
    assert (d.first_ms, d.last_ms) == (0, 150_000)
    assert d.accounted_ms == 4 * 150_000
    assert d.drain_ms == 180_000
    assert d.drain_pct == pytest.approx(30.0)


def test_conservative_drain_by_hand():
    # 4 nodes. J0 (3 nodes) runs 0-100; J1 (2 nodes, at 5) is reserved at 100-200; J2 (4 nodes,
    # at 6) at 200-210. At 5 the idle node is no drain: a job that ran for ever could have it
    # (the plan has 2 free nodes at 100-200). From 6 J2's reservation needs all four: the idle
    # node is held, 94 node-s. At 100 J1 starts on nodes 0-1; nodes 2-3 are held for J2 until
    # 200: 2 x 100 node-s. Total 294 node-s.
    s = ConservativeScheduler(4, wl([(0, 3, 100, 100), (5, 2, 100, 100), (6, 4, 10, 10)]))
    records, d = account_drain(s)
    assert [(r.start, r.end) for r in records] == [(0.0, 100.0), (100.0, 200.0), (200.0, 210.0)]
    assert d.drain_ms == 294_000
    assert d.accounted_ms == 4 * 210_000


def _reference_held(s: EasyScheduler) -> int:
    """Idle nodes held by reservations, read from the scheduler without its own answer: under
    EASY the idle nodes whose reservation list names a job; under conservative backfilling the
    idle nodes less the fewest free nodes at any time from now, counted job by job."""
    idle = (s.node_job < 0) & s.available()
    if not isinstance(s, ConservativeScheduler):
        return int(sum(1 for i in np.flatnonzero(idle) if s.rsv_str[i] != "none"))
    now = s._now
    rsv = {j: t for j, t in s._rsv.items() if t < INF}
    if not rsv:
        return 0
    running = [j for j in range(len(s.w)) if s.records[j].start == s.records[j].start]
    running = [j for j in running if s.records[j].end != s.records[j].end]
    busy = [(s.records[j].start + s.plan[j], int(s.w.nodes[j])) for j in running]
    times = {now}
    times.update(t for t in rsv.values())
    times.update(t + s.plan[j] for j, t in rsv.items())
    times.update(t for t, _ in busy)
    n = int(s.available().sum())

    def free(t):
        used = sum(k for end, k in busy if end > t)
        used += sum(int(s.w.nodes[j]) for j, a in rsv.items() if a <= t < a + s.plan[j])
        return n - used

    return max(0, int(idle.sum()) - min(free(t) for t in times if t >= now))


def _reference_drain_ms(s: EasyScheduler) -> int:
    seen: list[tuple[int, int]] = []
    s.run_each(lambda t: seen.append((round(t * 1000), _reference_held(s))))
    return sum(k * (b[0] - a[0]) for a, b in zip(seen, seen[1:], strict=False) for k in [a[1]])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(max_jobs=25, max_nodes=8))
def test_drain_against_reference(case):
    n, rows, users = case
    for policy in ("easy", "easy-predicted", "conservative"):
        w = wl(rows, users)
        _, d = account_drain(make_scheduler(policy, n, w, predictor=TsafrirLastTwo()))
        ref = _reference_drain_ms(make_scheduler(policy, n, wl(rows, users)))
        assert d.drain_ms == ref, policy
        assert d.accounted_ms == n * (d.last_ms - d.first_ms)


# --- the results ------------------------------------------------------------------------------


def test_policy_runs():
    assert policy_runs(["as-run", "easy-predicted", "easy"], ["last-two", "trimmed-upper"]) == [
        ("as-run", "recorded"),
        ("easy-predicted", "last-two"),
        ("easy-predicted", "trimmed-upper"),
        ("easy", "request"),
    ]
    assert policy_runs(["easy", "easy"], []) == [("easy", "request")]
    with pytest.raises(ValueError, match="unknown policy"):
        policy_runs(["fifo"], [])
    with pytest.raises(ValueError, match="unknown predictor"):
        policy_runs(["easy-predicted"], ["oracle"])


def test_run_whatif_against_the_recorded_schedule():
    # recorded: a (2 nodes) 0-100, b (2 nodes, submitted 0) 100-200: the machine has 4 nodes,
    # so every simulated policy starts b at once: 1 job earlier, none late
    events = [
        ev("submit", 0, "a", user="u", nodes=2, req_walltime=100.0),
        ev("start", 0, "a"),
        ev("end", 100, "a"),
        ev("submit", 0, "b", user="v", nodes=2, req_walltime=100.0),
        ev("start", 100, "b"),
        ev("end", 200, "b"),
    ]
    jobs = jobs_from_events(events, 4)
    res = {(r.policy, r.estimate): r for r in run_whatif(jobs, 4)}
    assert list(res) == [
        ("as-run", "recorded"),
        ("easy", "request"),
        ("easy-predicted", "last-two"),
        ("easy-predicted", "trimmed-upper"),
        ("easy-perfect", "actual"),
        ("conservative", "request"),
    ]
    base = res[("as-run", "recorded")]
    assert base.drain is None
    assert base.outcome.mean_wait == 50.0
    assert base.outcome.started_late == 0
    assert base.outcome.utilisation == pytest.approx(0.5)
    for key, r in res.items():
        if key[0] == "as-run":
            continue
        assert r.outcome.mean_wait == 0.0
        assert r.outcome.started_late == 0
        assert r.drain is not None and r.drain.drain_ms == 0
        assert r.outcome.utilisation == pytest.approx(1.0)
        v = {u.user: u for u in r.users}
        assert (v["v"].mean_wait_change, v["v"].shorter, v["v"].longer) == (-100.0, 1, 0)
        assert (v["u"].mean_wait_change, v["u"].shorter, v["u"].longer) == (0.0, 0, 0)


@pytest.mark.skipif(not KTH.exists(), reason=f"public trace not here: {KTH}")
def test_kth_whatif_is_deterministic_and_every_node_second_is_accounted():
    rejects, cls = [], []
    from collections import Counter

    with gzip.open(KTH, "rt") as f:
        events = list(record_events(iter_job_records("swf", f, "kth", rejects, Counter()), cls))
    jobs = jobs_from_events(events, 100)
    assert len(jobs.workload) == 28_475
    assert jobs.left_out == {"no_size": 1}
    assert jobs.filled_in == {"request_raised_to_run": 475}
    first = run_whatif(jobs, 100, ["easy", "conservative"], tz="Europe/Stockholm")
    again = run_whatif(jobs, 100, ["easy", "conservative"], tz="Europe/Stockholm")
    for a, b in zip(first, again, strict=True):
        assert a.outcome == b.outcome
        assert a.drain == b.drain
        assert np.array_equal(a.schedule.start, b.schedule.start)
        d = a.drain
        assert d is not None
        assert d.accounted_ms == 100 * (d.last_ms - d.first_ms)
        # every policy runs the same node-seconds as the recorded schedule
        assert np.array_equal(a.schedule.runs, jobs.recorded.runs)
