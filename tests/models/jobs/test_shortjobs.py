"""Short-job penalties (seed 002): N_s, T_s, A(t) = lam A(t-1) + (1 - lam) T_s(t)."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings

from models.jobs.shortjobs import (
    DEFAULT_FLOOR,
    DEFAULT_INTERVAL_S,
    DEFAULT_LAMBDA,
    ShortJobPenalty,
    lookup_table_json,
    lookup_table_text,
)
from models.records.jobevent import JobEvent
from tests.reference_jobs import build_events, job_specs, shortjobs_ref

T0 = 1_700_000_100.0  # a multiple of 180 s plus 100 s


def job(
    i: int, start: float, dur: float, user: str = "flood", group: str = "g", cores: int | None = 1
) -> list[JobEvent]:
    c = dict(job=f"j{i}", user=user, group=group, cores=cores, nodes=1)
    return [JobEvent("start", start, **c), JobEvent("end", start + dur, **c)]


def test_seed_defaults() -> None:
    # seed 002 "algorithm": every 3 min, lambda = 0.9
    assert DEFAULT_INTERVAL_S == 180.0
    assert DEFAULT_LAMBDA == 0.9


def test_flood_rises_then_decays_exact() -> None:
    """A user submits 1-second jobs, 10 per 3-minute tick for 3 ticks, then stops."""
    m = ShortJobPenalty(threshold=600, interval=180, lam=0.9, floor=1.0, history="ticks")
    base = 180.0 * 9_444_445  # tick boundary
    evs = []
    i = 0
    for tick in range(3):
        for k in range(10):
            evs += job(i, base + tick * 180 + 10 + k * 15, 1.0)
            i += 1
    evs.sort(key=lambda e: e.ts)
    rows = m.update(evs)
    rows += m.flush(base + 180 * 8)
    user = [r for r in rows if r.holder_kind == "user"]
    # T_s = 10 jobs x (600 - 1) s x 1 slot = 5990 each flood tick
    assert [r.n_short for r in user[:4]] == [10, 10, 10, 0]
    assert [r.penalty_s for r in user[:3]] == [5990.0] * 3
    expect = []
    a = 0.0
    for t_s in [5990.0, 5990.0, 5990.0, 0, 0, 0, 0, 0]:
        a = 0.9 * a + 0.1 * t_s
        expect.append(a)
    assert [r.adjust for r in user] == pytest.approx(expect, rel=1e-12)
    assert expect[:3] == pytest.approx([599.0, 1138.1, 1623.29])
    # rises during the flood, decays after it
    adj = [r.adjust for r in user]
    assert adj[0] < adj[1] < adj[2] and adj[2] > adj[3] > adj[4] > adj[7]
    assert [r.ts for r in user] == [base + 180 * k for k in range(1, 9)]
    # group holder gets the same values
    assert [r.adjust for r in rows if r.holder_kind == "group"] == pytest.approx(expect)
    assert m.value("user", "flood") == pytest.approx(expect[-1])
    assert m.value("user", "nobody") == 0.0


def test_long_jobs_not_penalised_and_slots_count() -> None:
    m = ShortJobPenalty(threshold=600, interval=180, history="ticks")
    evs = job(1, T0, 600.0) + job(2, T0, 599.0, user="u2", cores=16)
    evs.sort(key=lambda e: e.ts)
    rows = m.update(evs) + m.flush(T0 + 2000)
    assert {r.holder for r in rows} == {"u2", "g"}
    first = [r for r in rows if r.holder == "u2"][0]
    assert first.penalty_s == 16.0  # 1 missing second x 16 slots
    assert first.adjust == pytest.approx(1.6)


def test_min_runtime_above_threshold() -> None:
    m = ShortJobPenalty(threshold=60, min_runtime=300, interval=180, floor=1e-9)
    rows = m.update(job(1, 180 * 1000 + 5, 10.0)) + m.flush(180 * 1001)
    r = [x for x in rows if x.holder_kind == "user"][0]
    assert r.penalty_s == 290.0 and r.adjust == pytest.approx(29.0)


def test_decay_drops_holder_below_floor() -> None:
    m = ShortJobPenalty(threshold=600, interval=180, floor=50.0, history="ticks")
    m.update(job(1, 180 * 1000 + 5, 1.0, cores=1))
    rows = m.flush(180 * 1010)
    user = [r for r in rows if r.holder_kind == "user"]
    # 59.9 -> 53.91 -> 48.519 < 50: dropped, hook returns 0.0
    assert [round(r.adjust, 3) for r in user] == [59.9, 53.91, 0.0]
    assert m.value("user", "flood") == 0.0 and m.table() == {}


def test_flood_changes_mode_rows_and_lazy_values() -> None:
    """Default history: rows at flood ticks and at the drop tick; A(t) in between by formula."""
    m = ShortJobPenalty(threshold=600, interval=180, lam=0.9, floor=1.0)
    base = 180.0 * 9_444_445
    evs = []
    for tick in range(3):
        for k in range(10):
            evs += job(tick * 10 + k, base + tick * 180 + 10 + k * 15, 1.0)
    evs.sort(key=lambda e: e.ts)
    rows = [r for r in m.update(evs) + m.flush(base + 180 * 4) if r.holder_kind == "user"]
    assert [r.adjust for r in rows] == pytest.approx([599.0, 1138.1, 1623.29])
    assert m.value("user", "flood") == pytest.approx(1623.29 * 0.9)  # tick 4, no jobs
    assert m.table("user") == {"flood": pytest.approx(1623.29 * 0.9)}
    rows = [r for r in m.flush(base + 180 * 200) if r.holder_kind == "user"]
    # 1623.29 * 0.9^m < 1 first for m = 71: one drop row at tick 3 + 71
    assert [(r.ts, r.n_short, r.adjust) for r in rows] == [(base + 180 * 74, 0, 0.0)]
    assert 1623.29 * 0.9**70 >= 1.0 > 1623.29 * 0.9**71
    assert m.value("user", "flood") == 0.0 and m.table("user") == {}


def test_lookup_table_sorted_bytes_and_json() -> None:
    table = {"zoe": 1.0, "Bob": 2.5, "alice": 3.25, "élan": 0.5}
    text = lookup_table_text(table)
    assert text.splitlines() == ["Bob\t2.500", "alice\t3.250", "zoe\t1.000", "élan\t0.500"]
    doc = orjson.loads(lookup_table_json({"user": table, "group": {}}, 180.0))
    assert list(doc["user"]) == ["Bob", "alice", "zoe", "élan"] and doc["ts"] == 180.0


def test_batches_equal_one_pass() -> None:
    evs = []
    for i in range(50):
        evs += job(i, T0 + i * 37.0, float(i % 7) * 100, user=f"u{i % 3}")
    evs.sort(key=lambda e: e.ts)
    one = ShortJobPenalty(floor=0.5)
    rows1 = one.update(evs) + one.flush(T0 + 10_000)
    two = ShortJobPenalty(floor=0.5)
    rows2 = []
    for k in range(0, len(evs), 7):
        rows2 += two.update(evs[k : k + 7])
        rows2 += two.advance(evs[k : k + 7][-1].ts)
    rows2 += two.flush(T0 + 10_000)
    assert rows1 == rows2


@pytest.mark.parametrize("history", ["ticks", "changes"])
@settings(max_examples=60, deadline=None)
@given(specs=job_specs())
def test_matches_reference(history, specs) -> None:
    evs = build_events(specs)
    until = (evs[-1].ts if evs else 0.0) + 7200
    m = ShortJobPenalty(threshold=600, interval=180, lam=0.9, floor=1.0, history=history)
    got = m.update(evs) + m.flush(until)
    ref = shortjobs_ref(evs, 600, 600, 180, 0.9, 1.0, until)
    if history == "changes":
        ref = [r for r in ref if r[3] > 0 or r[5] == 0.0]
    got_t = [(r.ts, r.holder_kind, r.holder, r.n_short, r.penalty_s, r.adjust) for r in got]
    assert len(got_t) == len(ref)
    for g, r in zip(got_t, ref, strict=True):
        assert g[:4] == r[:4]
        assert g[4] == pytest.approx(r[4]) and g[5] == pytest.approx(r[5])


def test_close_emits_the_last_open_tick() -> None:
    """A trace ending at 180*1000 + 30 s: the tick at 180*1001 holds the last short job and is
    emitted by close() (flush(last_ts) leaves it open)."""
    m = ShortJobPenalty(threshold=600, interval=180, floor=1.0, history="ticks")
    m.update(job(1, 180 * 1000 + 5, 1.0) + job(2, 180 * 1000 + 20, 10.0))
    assert m.flush(180 * 1000 + 30) == []
    rows = [r for r in m.close(180 * 1000 + 30) if r.holder_kind == "user"]
    assert [(r.ts, r.n_short, r.penalty_s) for r in rows] == [(180 * 1001, 2, 599.0 + 590.0)]
    assert rows[0].adjust == pytest.approx(0.1 * 1189.0)
    assert m.value("user", "flood") == pytest.approx(118.9)
    assert m.close(180 * 1000 + 30) == []  # idempotent


def test_default_floor_keeps_one_second_job_39_ticks() -> None:
    """Default floor 1 slot-second: one 1-second job, A = 59.9 * 0.9^j, stays while >= 1
    (j <= 38), and its row at j = 39 is 0.0 (dropped: the hook's 'not found')."""
    assert DEFAULT_FLOOR == 1.0
    m = ShortJobPenalty(threshold=600, interval=180, history="ticks")
    m.update(job(1, 180 * 1000 + 5, 1.0))
    rows = [r for r in m.flush(180 * 1100) if r.holder_kind == "user"]
    assert len(rows) == 40
    assert rows[38].adjust == pytest.approx(59.9 * 0.9**38) and rows[38].adjust >= 1.0
    assert rows[39].adjust == 0.0 and m.table() == {}
