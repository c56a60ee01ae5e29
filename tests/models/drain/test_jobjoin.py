"""The live join of drain totals and job events gives the replay's per-job record
(models.drain.jobs: job_times + JobDrain) whichever side comes first, and raises failure to
launch (seed 000 §V-C) once per job, at its end."""

from __future__ import annotations

import pickle
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from models.alerts import FIRING, RESOLVED
from models.drain.jobjoin import DrainJobJoin
from models.drain.jobs import JobDrain, by_size_group, failure_to_launch, job_times, size_groups
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
        events += [
            JobEvent("submit", 1000.0 + start - 50, f"j{i}", nodes=nodes),
            JobEvent("start", 1000.0 + start, f"j{i}", nodes=nodes),
            JobEvent("end", 1000.0 + start + run, f"j{i}", nodes=nodes),
        ]
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
        got, a, _ = join.take()
        rows.update({r[0]: r for r in got})
        alerts += a
    times = job_times(events)
    want = {}
    ref = []
    for job, d, charged, first, last, _running in drains:
        jt = times[job]
        jd = JobDrain(job, d / 1000, charged, first, last, jt.nodes, jt.runtime, True)
        ref.append(jd)
        want[job] = (
            job,
            d,
            charged,
            first,
            last,
            jd.size,
            jd.runtime_s,
            jd.drain_per_node,
            jd.drain_runtime_ratio,
        )
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
    join.events(
        [JobEvent("start", 1800.0, "big", nodes=1000), JobEvent("end", 1810.0, "big", nodes=1000)]
    )
    rows, alerts, _ = join.take()
    assert rows == [("big", 1_800_000_000, 1000, 0, 1_800_000, 1000, 10.0, 1800.0, 180.0)]
    assert [(a.id, a.state, a.at, a.value) for a in alerts] == [
        ("failure_to_launch:big", FIRING, 1810.0, 500.0),
        ("failure_to_launch:big", RESOLVED, 1810.0, 500.0),
    ]
    join.drain([["big", 1000 * 1800 * 1000, 1000, 0, 1_800_000, 1000]])  # seen running later
    assert join.take()[1] == []  # once per job


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 40), st.integers(1, 9 * 10**9)), min_size=1, max_size=15),
    st.sampled_from(["absolute", "relative"]),
    st.randoms(use_true_random=False),
)
def test_live_size_groups_equal_the_replay_whatever_the_order_of_updates(
    jobs: list[tuple[int, int]], scale: str, rnd: random.Random
) -> None:
    # seed 000 §V-D: every job's latest drain in its group; a job's total grows in steps
    groups = size_groups(scale, 100)
    join = DrainJobJoin(groups=groups)
    join.events([JobEvent("submit", 1.0, f"j{i}", nodes=n) for i, (n, _d) in enumerate(jobs)])
    steps = []
    for i, (_n, d) in enumerate(jobs):
        steps.append((i, [f"j{i}", d // 3, 1, 0, 1000, 0]))
        steps.append((i, [f"j{i}", d, 1, 0, 2000, 0]))
    rnd.shuffle(steps)
    steps.sort(key=lambda s: s[1][4])  # a job's final total comes after its first
    got: dict[str, object] = {}
    for k, (_i, row) in enumerate(steps):
        join.drain([row])
        join.take()
        if k == len(steps) // 2:  # a restart in the middle: the state is pickled
            join = pickle.loads(pickle.dumps(join))
        got.update({g.group: g for g in join.size_group_rows()})
    ref = [JobDrain(f"j{i}", d / 1000, 1, 0, 2000, n) for i, (n, d) in enumerate(jobs)]
    want = by_size_group(ref, groups)
    assert list(got.values()) != [] and sorted(got) == sorted(g.group for g in want)
    assert [got[g.group] for g in want] == want
    assert join.size_group_rows(changed_only=False) == want


def test_sliding_rank_fires_for_the_top_k_and_resolves_past_2k_or_at_start() -> None:
    # seed 000 §V-A.2: queued jobs ranked by drain per node; K = 1, resolved past rank 2
    join = DrainJobJoin(top_k=1, rank_node_hours=1.0)
    join.events([JobEvent("submit", 0.0, j, nodes=n) for j, n in (("a", 10), ("b", 10), ("c", 5))])
    h = 3_600_000
    join.drain([["a", 40 * h, 10, 0, 1000_000, 0], ["b", 0.5 * h, 10, 0, 1000_000, 0]])
    _, alerts, _ = join.take()
    assert [(a.id, a.state, a.value, a.details["rank"]) for a in alerts] == [
        ("sliding_rank:a", FIRING, 4 * 3600.0, 1)
    ]
    join.drain([["b", 50 * h, 10, 0, 2000_000, 0]])  # b overtakes a: a is rank 2, still firing
    _, alerts, _ = join.take()
    assert [(a.id, a.state, a.at) for a in alerts] == [("sliding_rank:b", FIRING, 2000.0)]
    join.drain([["c", 30 * h, 5, 0, 3000_000, 0]])  # c overtakes both: a is past rank 2
    _, alerts, _ = join.take()
    assert [(a.id, a.state, a.at) for a in alerts] == [
        ("sliding_rank:c", FIRING, 3000.0),
        ("sliding_rank:a", RESOLVED, 3000.0),
    ]
    # c runs: resolved at its start; a is rank 2 again, but only the top K fire
    join.events([JobEvent("start", 3500.0, "c", nodes=5)])
    _, alerts, _ = join.take()
    assert [(a.id, a.state, a.at) for a in alerts] == [("sliding_rank:c", RESOLVED, 3500.0)]
    join.drain([["d", 0.9 * h, 1, 0, 3600_000, 0]])  # below 1 node-hour: never ranked
    assert join.take()[1] == []


def test_a_lagging_drain_stream_still_finds_the_jobs_events() -> None:
    # the job events run days ahead of the drain stream (a loaded worker): the join keeps a
    # job's events until the drain stream's watermark is past its retention, so its failure to
    # launch is seen when its drain arrives
    day = 86400.0
    join = DrainJobJoin(ftl_node_hours=10.0, retention_s=2 * day)
    join.drain([], watermark_ms=0)  # the drain stream is at the start
    join.events(
        [
            JobEvent("submit", 0.0, "big", nodes=64),
            JobEvent("start", 3 * day, "big", nodes=64),
            JobEvent("end", 3 * day + 27, "big", nodes=64),
        ]
    )
    for k in range(4, 8):  # other jobs' events, four more days
        join.events([JobEvent("end", k * day, f"o{k}", nodes=1)])
        join.take()
    assert "big" in join.times  # held: the drain stream has not passed it
    join.drain(
        [["big", 64 * 3 * 86_400_000, 64, 0, 3 * 86_400_000, 0]], watermark_ms=round(3 * day * 1000)
    )
    rows, alerts, _ = join.take()
    assert [(r[0], r[5], r[6]) for r in rows] == [("big", 64, 27.0)]
    assert [(a.id, a.state) for a in alerts] == [
        ("failure_to_launch:big", FIRING),
        ("failure_to_launch:big", RESOLVED),
    ]
    # without the drain stream's watermark the events would have left memory at day 5
    join2 = DrainJobJoin(ftl_node_hours=10.0, retention_s=2 * day)
    join2.events(
        [JobEvent("submit", 0.0, "big", nodes=64), JobEvent("end", 3 * day + 27, "big", nodes=64)]
    )
    for k in range(4, 8):
        join2.events([JobEvent("end", k * day, f"o{k}", nodes=1)])
        join2.take()
    assert "big" not in join2.times


def test_a_jobs_rows_keep_one_point_time_while_its_first_charge_moves_earlier() -> None:
    # two node-status partitions charged the job: the one that charged it later reports first,
    # so the first charge moves from 07:40 to 07:20 between two totals; both rows carry the
    # stamp of the first report (the combiner's, when it sends one), one InfluxDB point
    join = DrainJobJoin()
    join.drain([["j1", 32_100_503, 19, 27_600_000, 73_200_000, 0]])
    rows1, _, stamps1 = join.take()
    join.drain([["j1", 53_100_765, 30, 26_400_000, 73_200_000, 0]])
    rows2, _, stamps2 = join.take()
    assert (rows1[0][3], rows2[0][3]) == (27_600_000, 26_400_000)  # first_charged moved
    assert stamps1 == stamps2 == [27_600_000]
    join.drain([["j2", 1000, 1, 5000, 6000, 0, 4000]])  # the combiner's stamp wins
    join.drain([["j2", 2000, 2, 3000, 6000, 0, 4000]])
    assert join.take()[2] == [4000]
    restored = pickle.loads(pickle.dumps(join))  # kept in the snapshot
    restored.drain([["j1", 60_000_000, 31, 20_000_000, 80_000_000, 0]])
    assert restored.take()[2] == [27_600_000]
