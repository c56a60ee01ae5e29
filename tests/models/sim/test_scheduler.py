"""EASY backfilling: hand-worked schedules, invariants, and a slow reference implementation."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.formats.swf import parse_swf
from models.records.nodestatus import BUSY, DOWN, DRAINED, DRAINING, IDLE
from models.sim.scheduler import EasyScheduler, NodeInterval
from tests.models.sim.workloads import wl
from tests.paths import SHARED_DATA


def run(n, w, period=30.0, end=1000.0, outages=(), depth=1):
    s = EasyScheduler(n, w, outages, depth=depth)
    steps = list(s.run(0.0, end, period))
    return s, steps


def test_hand_worked_backfill_before_shadow():
    # 4 nodes. J0 takes nodes 0,1 until 100. J1 (4 nodes) is head: shadow 100 on all 4 nodes.
    # J2 (req 90 at t=10) ends by 100: backfills on node 2. J3 (req 200) would delay J1: waits
    # and starts when J1 ends at 150.
    w = wl([(0, 2, 100, 100), (0, 4, 50, 50), (10, 1, 80, 90), (20, 1, 30, 200)])
    s, steps = run(4, w)
    r = s.records
    assert [x.start for x in r] == [0.0, 100.0, 10.0, 150.0]
    assert [x.end for x in r] == [100.0, 150.0, 90.0, 180.0]
    assert [x.backfill for x in r] == [False, False, True, False]
    assert r[1].first_shadow == 100.0
    assert r[0].node_ids == (0, 1) and r[1].node_ids == (0, 1, 2, 3)
    assert r[2].node_ids == (2,) and r[3].node_ids == (0,)
    iteration = next(it for _, it in steps if it is not None and it.ts == 60.0)
    assert iteration.state.tolist() == [BUSY, BUSY, BUSY, IDLE]
    assert iteration.joblist == ["J0", "J0", "J2", "none"]
    assert iteration.rsvlist == ["J1"] * 4  # node 3 is Idle with a reservation: drain
    iteration = next(it for _, it in steps if it is not None and it.ts == 120.0)
    assert iteration.joblist == ["J1"] * 4 and iteration.rsvlist == ["J3", "none", "none", "none"]


def test_hand_worked_backfill_on_extra_node():
    # 4 nodes. J0 holds 0,1 until 100; head J1 needs 3: free by 100 are all 4 nodes, it reserves
    # the latest-free ones (0, 1) and then node 2; node 3 is extra, so long J2 backfills there.
    w = wl([(0, 2, 100, 100), (0, 3, 50, 60), (10, 1, 500, 1000)])
    s, steps = run(4, w, end=300)
    r = s.records
    assert [x.start for x in r] == [0.0, 100.0, 10.0]
    assert r[1].node_ids == (0, 1, 2) and r[2].node_ids == (3,) and r[2].backfill
    iteration = next(it for _, it in steps if it is not None and it.ts == 30.0)
    assert iteration.rsvlist == ["J1", "J1", "J1", "none"]
    assert iteration.state.tolist() == [BUSY, BUSY, IDLE, BUSY]


def test_walltime_kill_and_fcfs_order():
    w = wl([(0, 1, 500, 100), (5, 1, 10, 10)])
    s, _ = run(1, w, end=400)
    assert (s.records[0].end, s.records[0].state) == (100.0, "TIMEOUT")
    assert s.records[1].start == 100.0 and s.records[1].state == "COMPLETED"


def test_down_kills_job_and_drain_waits_for_job():
    w = wl([(0, 2, 500, 600), (0, 1, 500, 600)])
    outs = [NodeInterval(0, 50, 120, "down"), NodeInterval(2, 40, 200, "drain")]
    s, steps = run(3, w, outages=outs, end=600)
    r = s.records
    assert (r[0].end, r[0].state) == (50.0, "NODE_FAIL")
    by_ts = {it.ts: it for _, it in steps if it is not None}
    assert by_ts[30.0].state.tolist() == [BUSY, BUSY, BUSY]
    assert by_ts[60.0].state.tolist() == [DOWN, IDLE, DRAINING]
    assert by_ts[210.0].state.tolist() == [IDLE, IDLE, BUSY]  # drain over; J1 still running
    assert r[1].end == 500.0


def test_drained_after_job_ends():
    w = wl([(0, 1, 50, 60)])
    s, steps = run(1, w, outages=[NodeInterval(0, 10, 200, "drain")], end=300)
    by_ts = {it.ts: it for _, it in steps if it is not None}
    assert by_ts[30.0].state[0] == DRAINING and by_ts[60.0].state[0] == DRAINED
    assert by_ts[210.0].state[0] == IDLE


def test_rejects_jobs_larger_than_machine():
    with pytest.raises(ValueError):
        EasyScheduler(2, wl([(0, 3, 1, 1)]))


# --- a slow, obviously-correct reference: lists and dicts, same rules -------------------------


def reference_easy(n, rows):
    """Event-driven EASY on specific nodes, written plainly. Returns {job: (start, nodes, bf)}."""
    jobs = list(enumerate(rows))
    node_job = [None] * n
    node_free = [0.0] * n  # requested end of the job on the node
    queue = []
    ends = {}  # job -> actual end
    result = {}
    times = sorted({r[0] for r in rows})
    pending = sorted(jobs, key=lambda x: (x[1][0], x[0]))
    t = times[0] if times else 0.0
    while True:
        for j, e in list(ends.items()):
            if e <= t:
                for i in range(n):
                    if node_job[i] == j:
                        node_job[i] = None
                del ends[j]
        while pending and pending[0][1][0] <= t:
            queue.append(pending.pop(0)[0])

        def start(j, ids, bf, t=t):
            sub, k, rt, req = rows[j]
            for i in ids:
                node_job[i] = j
                node_free[i] = t + req
            ends[j] = t + min(rt, req)
            result[j] = (t, tuple(ids), bf)
            queue.remove(j)

        while queue:
            j = queue[0]
            free = [i for i in range(n) if node_job[i] is None]
            if len(free) < rows[j][1]:
                break
            start(j, free[: rows[j][1]], False)
        if queue:
            head = queue[0]
            need = rows[head][1]
            expect = [t if node_job[i] is None else node_free[i] for i in range(n)]
            shadow = sorted(expect)[need - 1]
            cands = [i for i in range(n) if expect[i] <= shadow]
            cands.sort(key=lambda i: (-expect[i], i))
            reserved = set(cands[:need])
            for j in list(queue[1:]):
                free = [i for i in range(n) if node_job[i] is None]
                ok = [i for i in free if i not in reserved or t + rows[j][3] <= shadow]
                if len(ok) >= rows[j][1]:
                    start(j, ok[: rows[j][1]], True)
        nxt = [e for e in ends.values()] + [p[1][0] for p in pending]
        if not nxt:
            return result
        t = min(nxt)


job_rows = st.lists(
    st.tuples(
        st.integers(0, 400).map(float),
        st.integers(1, 6),
        st.integers(0, 300).map(float),
        st.integers(1, 400).map(float),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=job_rows)
def test_matches_reference(rows):
    n = 6
    s, _ = run(n, wl(rows), period=50.0, end=20000.0)
    ref = reference_easy(n, rows)
    got = {
        j: (r.start, r.node_ids, r.backfill) for j, r in enumerate(s.records) if r.start == r.start
    }
    assert got == ref


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=job_rows, depth=st.integers(1, 3))
def test_invariants(rows, depth):
    n = 6
    w = wl(rows)
    s, steps = run(n, w, period=25.0, end=20000.0, depth=depth)
    recs = s.records
    for j, r in enumerate(recs):
        assert r.start == r.start, "every job runs on an outage-free machine"
        assert r.start >= w.submit[j]
        assert len(r.node_ids) == w.nodes[j] == len(set(r.node_ids))
        assert r.end - r.start == min(w.runtime[j], w.req_walltime[j])
        # a job never starts later than the shadow time computed when it became head
        if r.first_shadow == r.first_shadow:
            assert r.start <= r.first_shadow
    # no node runs two jobs at once
    for i in range(n):
        iv = sorted((r.start, r.end) for r in recs if i in r.node_ids and r.end > r.start)
        for (_a0, a1), (b0, _) in zip(iv, iv[1:], strict=False):
            assert b0 >= a1
    for _, iteration in steps:
        if iteration is None:
            continue
        t = iteration.ts
        for i in range(n):
            running = [j for j, r in enumerate(recs) if i in r.node_ids and r.start <= t < r.end]
            assert iteration.joblist[i] == (w.job_id[running[0]] if running else "none")
            assert iteration.state[i] == (BUSY if running else IDLE)
            for name in iteration.rsvlist[i].split(","):
                if name == "none":
                    continue
                j = int(name[1:])  # a reservation names a job waiting at t
                assert w.submit[j] <= t < recs[j].start
        # the head's reservation covers exactly its size
        waiting = [j for j, r in enumerate(recs) if w.submit[j] <= t < r.start]
        if waiting:
            head = min(waiting, key=lambda j: (w.submit[j], j))
            n_rsv = sum(1 for x in iteration.rsvlist if w.job_id[head] in x.split(","))
            assert n_rsv == w.nodes[head]


KTH = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.mark.data
def test_invariants_on_the_kth_trace():
    """Ten days of the real KTH SP2 trace (100 nodes, EASY in production) through the scheduler."""
    if not KTH.exists():
        pytest.skip(f"real SWF trace not available at {KTH} (../shared/data absent)")
    with gzip.open(KTH, "rt") as f:
        _, jobs = parse_swf(f)
        rows = [
            (
                float(j.submit),
                j.procs_req or j.procs_alloc,
                float(j.run),
                float(j.time_req or j.run),
            )
            for j in jobs
            if j.submit < 10 * 86400 + 599850 and j.run is not None
        ]
    w = wl(rows)
    s, steps = run(100, w, period=600.0, end=40 * 86400.0)
    recs = s.records
    assert all(r.start == r.start for r in recs)  # everything ran
    starts = np.array([r.start for r in recs])
    assert np.all(starts >= w.submit)
    shadows = np.array([r.first_shadow for r in recs])
    has = ~np.isnan(shadows)
    assert has.sum() > 100 and np.all(starts[has] <= shadows[has])
    n_bf = sum(r.backfill for r in recs)
    assert 0.1 * len(recs) < n_bf < len(recs)
    assert any(r.state == "TIMEOUT" for r in recs)  # KTH has jobs that overran their request
    # no node runs two jobs at once
    iv = sorted((i, r.start, r.end) for r in recs for i in r.node_ids if r.end > r.start)
    for (n0, _, e0), (n1, s1, _) in zip(iv, iv[1:], strict=False):
        assert n0 != n1 or s1 >= e0
    # iterations: every Idle node with a reservation is reserved for a job waiting at that time
    waiting_drain = 0
    for _, iteration in steps:
        if iteration is None:
            continue
        for i in np.flatnonzero(iteration.state == IDLE).tolist():
            if iteration.rsvlist[i] != "none":
                j = int(iteration.rsvlist[i].split(",")[0][1:])
                assert w.submit[j] <= iteration.ts < recs[j].start
                waiting_drain += 1
    assert waiting_drain > 0


def test_start_event_carries_the_reservation_easy_made():
    # The hand-worked schedule above: J1 (4 nodes) heads the queue at 0 with shadow 100 and
    # starts at 100; J3 heads it at 100 (J1 holds every node until 150) and starts at 150.
    # J0 started at once and J2 was backfilled: never reserved, no reserved_start.
    w = wl([(0, 2, 100, 100), (0, 4, 50, 50), (10, 1, 80, 90), (20, 1, 30, 200)])
    _, steps = run(4, w)
    starts = {e.job: e for evs, _ in steps for e in evs if e.type == "start"}
    assert {j: e.reserved_start for j, e in starts.items()} == {
        0: None,
        1: 100.0,
        2: None,
        3: 150.0,
    }
    assert all(e.reserved_start is None for evs, _ in steps for e in evs if e.type != "start")


def test_reserved_start_is_the_first_shadow_not_the_start():
    # J0 asks for 100 s but ends at 60: wide J1 reserved for 100 starts at 60 and its start
    # event still says 100, the time EASY reserved when it became the head.
    w = wl([(0, 2, 60, 100), (10, 4, 50, 50)])
    s, steps = run(4, w)
    assert s.records[1].start == 60.0
    (e,) = [e for evs, _ in steps for e in evs if e.type == "start" and e.job == 1]
    assert e.reserved_start == 100.0
