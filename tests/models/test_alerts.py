"""Alert state changes: one firing and one resolved record per episode, deduplicated by id,
from the job stages' rows (short-job flood, capability) and the run-time predictor (overrun)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.alerts import (
    FIRING,
    RESOLVED,
    Alert,
    AlertBook,
    DrainAlerts,
    JobAlerts,
    StallWatch,
)
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
    return p.update(
        [
            JobEvent("start", start, job, user="u", name="sim", nodes=4),
            JobEvent("end", end, job, user="u", name="sim", nodes=4),
        ]
    )


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
        ("overrun:big", FIRING, 10_160.0, 10_160.0)  # at the deadline, however late seen
    ]
    assert ja.overrun_started(p.running(10_500.0), 10_500.0) == []  # deduplicated
    rows = p.update([JobEvent("end", 11_000.0, "big", user="u", name="sim", nodes=4)])
    row = rows[0]
    as_row = (
        row.job,
        row.user,
        row.name,
        row.history_runs,
        row.predicted_s,
        row.upper_s,
        row.actual_s,
        int(row.overran),
    )
    done = ja.overrun_ended([as_row], {"big": 11_000.0})
    assert [(a.state, a.since, a.at, a.value) for a in done] == [
        (RESOLVED, 10_160.0, 11_000.0, 1000.0)
    ]
    # a job that overran and ended before any check saw it: both records at its end
    p.update([JobEvent("start", 20_000.0, "quick", user="u", name="sim", nodes=4)])
    row = p.update([JobEvent("end", 20_400.0, "quick", user="u", name="sim", nodes=4)])[0]
    as_row = (
        row.job,
        row.user,
        row.name,
        row.history_runs,
        row.predicted_s,
        row.upper_s,
        row.actual_s,
        int(row.overran),
    )
    both = ja.overrun_ended([as_row], {"quick": 20_400.0})
    deadline = 20_000.0 + row.upper_s + 60.0
    assert [(a.state, a.at) for a in both] == [(FIRING, deadline), (RESOLVED, 20_400.0)]
    assert both[0].since == deadline
    # the firing record is the one a check during the run would have sent
    p2, ja2 = RuntimePredictor(overrun_margin=60.0), JobAlerts(overrun_margin=60.0)
    for i in range(6):
        _run(p2, f"h{i}", 1000.0 * i, 1000.0 * i + 100.0)
    _run(p2, "big", 10_000.0, 11_000.0)  # the same history as above
    p2.update([JobEvent("start", 20_000.0, "quick", user="u", name="sim", nodes=4)])
    seen = ja2.overrun_started(p2.running(20_300.0), 20_300.0)
    assert seen == [both[0]]
    assert not ja.book.open


def test_flood_resolves_at_the_tick_its_decay_crosses_the_threshold() -> None:
    # seed 002's update on the model's own rows: ten 1-second 8-core jobs in one tick give
    # T_s = 10 x 599 x 8 = 47,920 and A = 0.1 x 47,920 = 4,792; with no more short jobs the
    # model writes no row until the holder leaves the table, while A decays x 0.9 a tick:
    # 4,312.8, 3,881.52, 3,493.37 <= 3,600 at the third tick after
    from models.jobs.shortjobs import ShortJobPenalty

    m = ShortJobPenalty()
    ev = [
        JobEvent(t, 1000.0 + d, f"j{i}", user="u", group="g", cores=8)
        for i in range(10)
        for t, d in (("start", 0.0), ("end", 1.0))
    ]
    rows = m.update(sorted(ev, key=lambda e: e.ts)) + m.advance(1000.0 + 3600.0)
    user_rows = [
        (r.ts, r.holder_kind, r.holder, r.n_short, r.penalty_s, r.adjust)
        for r in rows
        if r.holder_kind == "user"
    ]
    tick = user_rows[0][0]
    assert user_rows[0][3:] == (10, 47_920.0, pytest.approx(4792.0))
    ja = JobAlerts(flood=3600.0)
    (on,) = ja.shortjobs(user_rows[:1])
    assert ja.advance(tick + 2 * 180) == []  # 3,881.52: still above
    (off,) = ja.advance(tick + 3 * 180)
    assert (on.state, on.at, off.state, off.at) == (FIRING, tick, RESOLVED, tick + 540)
    assert off.value == pytest.approx(4792.0 * 0.9**3)
    # the holder's next row (its drop row, 0.0, hours later) changes nothing: it is over
    later = [(tick + 80 * 180, "user", "u", 0, 0.0, 0.0)]
    assert ja.shortjobs(later) == []
    # the same from a restored state, and when the next row (not advance) shows the crossing
    ja2 = JobAlerts(flood=3600.0)
    ja2.shortjobs(user_rows[:1])
    ja3 = JobAlerts(flood=3600.0)
    ja3.restore(ja2.to_dict())
    assert ja3.shortjobs(later) == [off]


def _lj(job: str, drain_h: float, running: int, first: float, last: float) -> Any:
    from models.drain.live import LiveJob

    return LiveJob(
        job,
        round(drain_h * 3_600_000),
        20,
        round(first * 1000),
        round(last * 1000),
        running,
        round(first * 1000),
    )


def test_sliding_job_fires_while_queued_and_resolves_when_it_runs_or_is_let_go() -> None:
    da = DrainAlerts(sliding_node_hours=100.0, quiet_s=3600.0)
    assert da.jobs([_lj("A", 99.9, 0, 0.0, 18_000.0)]) == []  # below the threshold
    (on,) = da.jobs([_lj("A", 100.0, 0, 0.0, 18_000.0)])
    assert (on.state, on.since, on.at, on.value, on.severity) == (
        FIRING,
        0.0,
        18_000.0,
        100.0,
        "critical",
    )
    assert da.jobs([_lj("A", 110.0, 0, 0.0, 19_800.0)]) == []  # still queued: no record
    saved = DrainAlerts()
    saved.restore(da.to_dict())
    (off,) = saved.jobs([_lj("A", 110.0, 20, 0.0, 19_800.0)])  # started
    assert (off.state, off.since, off.at) == (RESOLVED, 0.0, 19_800.0)
    assert saved.jobs([_lj("A", 110.0, 20, 0.0, 19_800.0)]) == []  # done: never again
    # let go: nothing held for it for an hour of event time
    (on,) = da.jobs([_lj("B", 120.0, 0, 0.0, 10_000.0)])
    assert da.quiet(13_600_000) == []
    (off,) = da.quiet(13_600_001)
    assert (off.id, off.state, off.at) == ("sliding_job:B", RESOLVED, 13_600.0)
    # first seen running (a worker catching up): both records at its last charge
    both = da.jobs([_lj("C", 150.0, 8, 100.0, 9_000.0)])
    assert [(a.state, a.since, a.at) for a in both] == [
        (FIRING, 100.0, 9_000.0),
        (RESOLVED, 100.0, 9_000.0),
    ]


def test_data_quality_follows_closed_windows_per_length() -> None:
    from types import SimpleNamespace

    def w(unit: str, start: float, per_node: float, quality: str, prov: bool = False) -> Any:
        return SimpleNamespace(
            unit=unit,
            start_ms=round(start * 1000),
            length_ms=3_600_000,
            basis_seconds_per_node=per_node,
            data_quality=quality,
            provisional=prov,
        )

    da = DrainAlerts()
    rows = [
        w("hour", 0, 3600, "ok"),
        w("hour", 3600, 1740, "short", prov=True),
        w("hour", 3600, 1740, "short"),
        w("hour", 7200, 2000, "short"),
        w("hour", 10_800, 3600, "ok"),
    ]
    changes = da.windows(rows)
    assert [(a.id, a.state, a.since, a.at, a.value) for a in changes] == [
        ("data_quality:hour", FIRING, 3600.0, 7200.0, 1740.0),
        ("data_quality:hour", RESOLVED, 3600.0, 14_400.0, 3600.0),
    ]


def test_stall_watch_fires_after_the_quiet_time_and_resolves_on_input() -> None:
    sw = StallWatch(300.0, "host:6066")
    assert sw.check(1000.0) == []  # no topic seen yet: nothing to watch
    assert sw.seen("p.node-status", 1000.0) == []
    assert sw.check(1300.0) == []
    (on,) = sw.check(1300.5)
    assert (on.id, on.since, on.at, on.value) == (
        "stalled:p.node-status@host:6066",
        1000.0,
        1300.5,
        300.5,
    )
    assert sw.check(2000.0) == []  # still firing: no record
    (off,) = sw.seen("p.node-status", 2100.0)
    assert (off.state, off.since, off.at) == (RESOLVED, 1000.0, 2100.0)
    assert StallWatch(0.0, "w").check(1e12) == []  # 0: off
