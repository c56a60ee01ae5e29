"""The node-release forecast stage on jobs that never end (issue 31, class 6): the same rows
and summary as the reference that hands every running job to forecast_release at every
submit, at a cost that grows with the forecasts' steps, not with the jobs still open."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as hst

from models.records.jobevent import JobEvent
from streams.stages.release import ReleaseForecastStage
from tests.reference_jobs import release_stage_ref


def _open_jobs(n_events: int, open_share: float, seed: int) -> list[JobEvent]:
    """One job a 10 s: submit, start 5 s later with 1-4 nodes and an hour's walltime; a share
    ``open_share`` of the jobs never ends, the others end within their walltime."""
    rnd = random.Random(seed)
    evs: list[tuple[float, int, JobEvent]] = []
    i = 0
    while len(evs) < n_events:
        sub, job, nodes = 10.0 * i, f"{i}", rnd.randint(1, 4)
        evs.append((sub, 0, JobEvent("submit", sub, job, nodes=nodes, req_walltime=3600.0)))
        evs.append((sub + 5, 1, JobEvent("start", sub + 5, job, nodes=nodes, req_walltime=3600.0)))
        if rnd.random() >= open_share:
            end = sub + 5 + rnd.uniform(60.0, 3500.0)
            evs.append((end, 2, JobEvent("end", end, job, nodes=nodes)))
        i += 1
    evs.sort(key=lambda x: (x[0], x[1]))
    return [e for _, _, e in evs[:n_events]]


@settings(max_examples=200, deadline=None)
@given(
    hst.lists(
        hst.tuples(
            hst.sampled_from(["submit", "start", "start", "end"]),  # few ends: jobs stay open
            hst.integers(0, 120),  # time
            hst.integers(0, 14),  # job
            hst.integers(-1, 12),  # nodes
            hst.one_of(hst.none(), hst.integers(0, 60).map(float)),  # requested walltime
        ),
        max_size=80,
    ),
    hst.integers(1, 30),
    hst.integers(1, 6),
)
def test_open_jobs_give_the_references_rows(events: list[Any], section: int, batch: int) -> None:
    """Jobs that start (again) and never end, past their end at later submits, without a
    walltime or nodes: the stage's rows and summary are the reference's."""
    evs = [
        JobEvent(t, float(ts), f"j{j}", name=f"n{j}", nodes=n, req_walltime=w)
        for t, ts, j, n, w in sorted(events, key=lambda x: x[1])
    ]
    fast, ref = ReleaseForecastStage(section), release_stage_ref(section)
    for i in range(0, len(evs), batch):
        assert list(fast.step(evs[i : i + batch])) == list(ref.step(evs[i : i + batch]))
    assert list(fast.finish()) == list(ref.finish())
    assert fast.summary() == ref.summary()


def test_jobs_that_never_end_cost_the_forecasts_steps() -> None:
    """Generated worst case (30,000 events, half the jobs never end, a 64-node section they
    soon fill): every submit walks the running jobs, thousands of them past their end. Counted,
    not timed: the walks take exactly the steps the forecasts list (at most the section's size
    each), and the order's heap pushes and pops (O(log n) each) are a few per start, end,
    crossing and step."""
    evs = _open_jobs(30_000, 0.5, seed=3)
    st = ReleaseForecastStage(64)
    steps = 0
    for i in range(0, len(evs), 4096):
        for _, rows in st.step(evs[i : i + 4096]):
            steps += sum(r[5] > 0 for r in rows)
    for _, rows in st.finish():
        steps += sum(r[5] > 0 for r in rows)
    order = st._order
    open_past = sum(1 for _, end, _, _ in order.held.values() if end <= evs[-1].ts)
    assert open_past > 4000  # what a sort of the jobs past their end would look at, per submit
    assert st.forecasts > 10_000 and st.summary()["forecasts_never_ready"] == 0
    assert order.walked == steps <= 64 * st.forecasts
    starts = sum(e.type == "start" for e in evs)
    ends = sum(e.type == "end" for e in evs)
    assert order.stale <= ends
    assert order.heap_ops <= 3 * starts + 2 * order.walked + order.stale  # O(log n) each
    assert order.rebuilt <= 2 * ends
    assert order.rewinds == 0
