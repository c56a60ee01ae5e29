"""The live join of drain totals and job events gives the replay's per-job record
(models.drain.jobs: job_times + JobDrain) whichever side comes first, and raises failure to
launch (seed 000 §V-C) once per job, at its end."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from models.alerts import FIRING, RESOLVED
from models.drain.jobjoin import DrainJobJoin
from models.drain.jobs import JobDrain, failure_to_launch, job_times
from models.records.jobevent import JobEvent

_job = st.tuples(
    st.integers(1, 64),  # nodes
    st.integers(0, 5000),  # start offset
    st.integers(0, 100),  # runtime (short ones fail to launch)
    st.integers(0, 50 * 3_600_000),  # drain ms
    st.integers(0, 3),  # nodes seen running
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_job, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_join_equals_the_replay_record_whichever_side_comes_first(
    jobs: list[tuple[int, int, int, int, int]], rnd: random.Random
) -> None:
    events, drains = [], []
    for i, (nodes, start, run, d, running) in enumerate(jobs):
        events += [JobEvent("submit", 1000.0 + start - 50, f"j{i}", nodes=nodes),
                   JobEvent("start", 1000.0 + start, f"j{i}", nodes=nodes),
                   JobEvent("end", 1000.0 + start + run, f"j{i}", nodes=nodes)]  # fmt: skip
        if d:
            drains.append([f"j{i}", d, nodes, 1_000_000, 1_000_000 + start * 1000, running])
    events.sort(key=lambda e: e.ts)
    join = DrainJobJoin(ftl_node_hours=10.0)
    # a random interleaving of the two sides; events stay in time order
    ev_q, dr_q, steps = list(events), list(drains), []
    while ev_q or dr_q:
        take_event = ev_q and (not dr_q or rnd.random() < 0.5)
        steps.append(("e", ev_q.pop(0)) if take_event else ("d", dr_q.pop(0)))
    rows: dict[str, tuple] = {}
    alerts = []
    for kind, x in steps:
        if kind == "e":
            join.events([x])
        else:
            join.drain([x])
        got, a = join.take()
        rows.update({r[0]: r for r in got})
        alerts += a
    times = job_times(events)
    want = {}
    ref = []
    for job, d, charged, first, last, _running in drains:
        jt = times[job]
        jd = JobDrain(job, d / 1000, charged, first, last, jt.nodes, jt.runtime, True)
        ref.append(jd)
        want[job] = (job, d, charged, first, last, jd.size, jd.runtime_s, jd.drain_per_node,
                     jd.drain_runtime_ratio)  # fmt: skip
    assert rows == want
    ftl = [j.job for j in failure_to_launch(ref) if j.drain_s * 1000 >= 10 * 3_600_000]
    assert sorted(a.subject for a in alerts if a.state == FIRING) == sorted(ftl)
    assert sorted(a.subject for a in alerts if a.state == RESOLVED) == sorted(ftl)
    for a in alerts:  # at the job's end
        assert a.at == times[a.subject].end


def test_failure_to_launch_the_seed_way() -> None:
    # seed 000 §V-C: a job drained a thousand nodes, then died in 10 seconds
    join = DrainJobJoin(ftl_node_hours=10.0)
    join.drain([["big", 1000 * 1800 * 1000, 1000, 0, 1_800_000, 0]])  # 500 node-hours
    join.events([JobEvent("start", 1800.0, "big", nodes=1000),
                 JobEvent("end", 1810.0, "big", nodes=1000)])  # fmt: skip
    rows, alerts = join.take()
    assert rows == [("big", 1_800_000_000, 1000, 0, 1_800_000, 1000, 10.0, 1800.0, 180.0)]
    assert [(a.id, a.state, a.at, a.value) for a in alerts] == [
        ("failure_to_launch:big", FIRING, 1810.0, 500.0),
        ("failure_to_launch:big", RESOLVED, 1810.0, 500.0),
    ]
    join.drain([["big", 1000 * 1800 * 1000, 1000, 0, 1_800_000, 1000]])  # seen running later
    assert join.take()[1] == []  # once per job
