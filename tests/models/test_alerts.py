"""Alert state changes: one firing and one resolved record per episode, deduplicated by id,
from the job stages' rows (short-job flood, capability) and the run-time predictor (overrun)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from models.alerts import FIRING, RESOLVED, Alert, AlertBook, JobAlerts
from models.jobs.runtime import RuntimePredictor
from models.records.jobevent import JobEvent


def test_book_fires_once_and_resolves_once() -> None:
    b = AlertBook()
    a = b.fire("overrun", "42", 100.0, 700.0, 660.0, "run", since=90.0)
    assert a is not None and (a.id, a.state, a.since, a.at) == ("overrun:42", FIRING, 90.0, 100.0)
    assert b.fire("overrun", "42", 130.0, 730.0, 660.0, "run") is None  # still firing: no record
    saved = AlertBook.from_dict(b.to_dict())  # a restarted worker knows what fires
    assert saved.open == b.open
    r = saved.resolve("overrun", "42", 200.0, 800.0)
    assert r is not None and (r.id, r.state, r.since, r.at, r.value) == (
        "overrun:42",
        RESOLVED,
        90.0,
        200.0,
        800.0,
    )
    assert saved.resolve("overrun", "42", 210.0) is None
    assert Alert.from_dict(r.to_dict()) == r


def _episodes(values: list[float], thr: float) -> list[tuple[int, int | None]]:
    """Reference: maximal runs of ticks with a value above the threshold, (first, end tick)."""
    out: list[tuple[int, int | None]] = []
    start = None
    for i, v in enumerate(values):
        if v > thr and start is None:
            start = i
        elif v <= thr and start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, None))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 10.0, 3600.0, 3600.5, 9000.0]), max_size=30))
def test_shortjob_flood_episodes_are_the_runs_above_the_threshold(values: list[float]) -> None:
    ja = JobAlerts(flood=3600.0)
    rows = [(180.0 * (i + 1), "user", "alice", 3, 1000.0, v) for i, v in enumerate(values)]
    changes = ja.shortjobs(rows[:7]) + ja.shortjobs(rows[7:])  # batches do not matter
    got: list[tuple[int, int | None]] = []
    for a in changes:
        i = int(a.at / 180.0) - 1
        if a.state == FIRING:
            got.append((i, None))
        else:
            assert got[-1][1] is None and a.since == 180.0 * (got[-1][0] + 1)
            got[-1] = (got[-1][0], i)
    assert got == _episodes(values, 3600.0)
    assert all(a.id == "shortjob_flood:user:alice" for a in changes)


def test_capability_fires_on_a_day_below_target_and_resolves_on_one_above() -> None:
    ja = JobAlerts(cup40_target=0.80)
    rows = [
        (day, 1.0, 1.0, None, cup, None, None, None, None, None)
        for day, cup in (
            ("2024-01-01", 0.9),
            ("2024-01-02", 0.5),  # fires, at the end of the day
            ("2024-01-03", 0.6),  # still firing: nothing sent
            ("2024-01-04", None),  # no usage: no change
            ("2024-01-05", 0.85),  # resolves
        )
    ]
    changes = ja.capability(rows)
    assert [(a.state, a.value, a.details["day"]) for a in changes] == [
        (FIRING, 0.5, "2024-01-02"),
        (RESOLVED, 0.85, "2024-01-02"),
    ]
    assert changes[0].at == datetime(2024, 1, 3, tzinfo=UTC).timestamp()
    assert changes[1].at == datetime(2024, 1, 6, tzinfo=UTC).timestamp()


def _run(p: RuntimePredictor, job: str, start: float, end: float) -> list[object]:
    return p.update([JobEvent("start", start, job, user="u", name="sim", nodes=4),
                     JobEvent("end", end, job, user="u", name="sim", nodes=4)])  # fmt: skip


def test_overrun_fires_while_running_and_resolves_at_the_end() -> None:
    p = RuntimePredictor(overrun_margin=60.0)
    for i in range(6):  # a history of 100-second runs
        _run(p, f"h{i}", 1000.0 * i, 1000.0 * i + 100.0)
    ja = JobAlerts(overrun_margin=60.0)
    p.update([JobEvent("start", 10_000.0, "big", user="u", name="sim", nodes=4)])
    (r,) = p.running(10_000.0)
    assert r.known and r.expected_end == 10_100.0
    assert ja.overrun_started(p.running(10_150.0), 10_150.0) == []  # within the margin
    fired = ja.overrun_started(p.running(10_161.0), 10_161.0)
    assert [(a.id, a.state, a.since, a.at) for a in fired] == [
        ("overrun:big", FIRING, 10_160.0, 10_161.0)
    ]
    assert ja.overrun_started(p.running(10_500.0), 10_500.0) == []  # deduplicated
    rows = p.update([JobEvent("end", 11_000.0, "big", user="u", name="sim", nodes=4)])
    row = rows[0]
    as_row = (row.job, row.user, row.name, row.history_runs, row.predicted_s, row.upper_s,
              row.actual_s, int(row.overran))  # fmt: skip
    done = ja.overrun_ended([as_row], {"big": 11_000.0})
    assert [(a.state, a.since, a.at, a.value) for a in done] == [
        (RESOLVED, 10_160.0, 11_000.0, 1000.0)
    ]
    # a job that overran and ended before any check saw it: both records at its end
    p.update([JobEvent("start", 20_000.0, "quick", user="u", name="sim", nodes=4)])
    row = p.update([JobEvent("end", 20_400.0, "quick", user="u", name="sim", nodes=4)])[0]
    as_row = (row.job, row.user, row.name, row.history_runs, row.predicted_s, row.upper_s,
              row.actual_s, int(row.overran))  # fmt: skip
    both = ja.overrun_ended([as_row], {"quick": 20_400.0})
    assert [(a.state, a.at) for a in both] == [(FIRING, 20_400.0), (RESOLVED, 20_400.0)]
    assert both[0].since == 20_000.0 + row.upper_s + 60.0
    assert not ja.book.open
