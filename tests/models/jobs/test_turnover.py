"""Slot turnover (seed 002): gaps w between a job's end and the next start on a slot,
U = (1/T) sum w_n per window, distribution of w."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from models.jobs.turnover import SlotTurnover
from models.records.jobevent import JobEvent
from tests.reference_jobs import build_events, job_specs, turnover_ref, window_sums

H = 3600.0
B = 1_700_000_000.0 - (1_700_000_000.0 % H)  # an hour boundary


def ev(
    t: str,
    ts: float,
    job: str,
    nodes: tuple[str, ...] = (),
    cores: int | None = None,
    n: int | None = None,
) -> JobEvent:
    return JobEvent(t, ts, job, node_list=nodes, cores=cores, nodes=n or len(nodes) or None)


def test_seed_like_gaps_on_one_16_slot_node() -> None:
    """16 single-slot jobs on a 16-slot node, each slot refilled 22 s after it frees:
    E[w] = 22 s; U over the hour = 16 * 22 / 3600 slots."""
    m = SlotTurnover(window=H, max_gap=H)
    evs = []
    for s in range(16):
        evs.append(ev("start", B + s, f"a{s}", ("wn1",), cores=1))
        evs.append(ev("end", B + 100 + s * 60, f"a{s}", ("wn1",), cores=1))
        evs.append(ev("start", B + 100 + s * 60 + 22, f"b{s}", ("wn1",), cores=1))
    evs.sort(key=lambda e: e.ts)
    rows = m.update(evs) + m.flush(B + 2 * H)
    assert m.n == 16 and m.mean_w == pytest.approx(22.0) and m.std_w == pytest.approx(0.0)
    assert rows[0].start == B and rows[0].n_gaps == 16
    assert rows[0].unusable_slots == pytest.approx(16 * 22 / 3600)
    hist = dict(((lo, hi), c) for lo, hi, c in m.histogram())
    assert hist[(20.0, 25.0)] == 16


def test_gap_clipped_across_windows_and_idle_dropped() -> None:
    m = SlotTurnover(window=H, max_gap=600)
    evs = [
        ev("start", B - 100, "a", ("n1",)),
        ev("end", B - 30, "a", ("n1",)),
        ev("start", B + 30, "b", ("n1",)),  # 60 s gap, 30 s in each hour
        ev("end", B + 100, "b", ("n1",)),
        ev("start", B + 1000, "c", ("n1",)),
    ]  # idle 900 s
    rows = m.update(evs) + m.flush(B + 2 * H)
    assert [(r.start, r.n_gaps, r.sum_w) for r in rows] == [
        (B - H, 0, 30.0),
        (B, 1, 30.0),
        (B + H, 0, 0.0),
    ]
    assert m.idle_gaps == 1 and m.n == 1
    assert m.idle_long_s == 900.0  # longer than max_gap: not split, not in the windows
    assert m.refills_without_submit == 1  # no submits: the latest-slot rule alone


def test_same_instant_refill_is_zero_gap() -> None:
    m = SlotTurnover()
    evs = [
        ev("start", B, "a", ("n1",)),
        ev("start", B + 50, "b", ("n1",)),
        ev("end", B + 50, "a", ("n1",)),
    ]  # sorted: start before end at equal ts
    m.update(evs)
    m.flush(B + H)
    assert m.n == 1 and m.sum_w == 0.0


def test_machine_pool_when_no_node_list() -> None:
    m = SlotTurnover()
    evs = [
        ev("start", B, "a", cores=8),
        ev("end", B + 10, "a", cores=8),
        ev("start", B + 15, "b", cores=4),
        ev("start", B + 25, "c", cores=8),
    ]
    m.update(evs)
    m.flush(B + H)
    # b refills 4 slots after 5 s; c refills the other 4 after 15 s and finds nothing more
    assert m.n == 8 and m.sum_w == 4 * 5 + 4 * 15


def test_empty_queue_is_idle_not_turnover() -> None:
    """a frees its slot at B+100; b is submitted at B+1000 and starts at B+1010: of the 910 s
    gap, 900 s are idle (nothing queued) and w = 10 s is turnover; they add up."""
    m = SlotTurnover(window=H, max_gap=H)
    evs = [
        ev("start", B, "a", ("n1",)),
        ev("end", B + 100, "a", ("n1",)),
        ev("submit", B + 1000, "b", ("n1",)),
        ev("start", B + 1010, "b", ("n1",)),
    ]
    rows = m.update(evs) + m.flush(B + 2 * H)
    assert m.n == 1 and m.sum_w == 10.0 and m.idle_s == 900.0
    assert m.refills_without_submit == 0
    r = rows[0]
    assert (r.start, r.n_gaps, r.sum_w, r.idle_s) == (B, 1, 10.0, 900.0)
    assert r.unusable_slots == pytest.approx(10 / H) and r.idle_slots == pytest.approx(900 / H)
    assert r.sum_w + r.idle_s == 910.0  # the gap


def test_queued_job_waits_for_the_latest_slot() -> None:
    """Machine pool: two 1-slot jobs end at B+10 and B+50; a 2-slot job queued since B starts
    at B+60. It could use its slots from B+50 (the latest): w = 10 s on each of the 2 slots,
    and the first slot's 40 s before are idle (it waited for the other: drain, not turnover)."""
    m = SlotTurnover(window=H, max_gap=H)
    evs = [
        ev("start", B - 100, "a", cores=1),
        ev("start", B - 100, "b", cores=1),
        ev("submit", B, "c", cores=2),
        ev("end", B + 10, "a", cores=1),
        ev("end", B + 50, "b", cores=1),
        ev("start", B + 60, "c", cores=2),
    ]
    m.update(evs)
    m.flush(B + H)
    assert m.n == 2 and m.sum_w == 20.0 and m.idle_s == 40.0 and m.mean_w == 10.0


def test_nasa_like_empty_machine_is_idle() -> None:
    """The whole machine (128 slots) is freed at B and the next job is submitted and started
    at B+3000 (no wait): before the rule every slot counted as unusable (U = 128 * 3000 / 3600
    = 106.7); now U = 0 and the 3000 s x 128 slots are idle."""
    m = SlotTurnover(window=H, max_gap=H)
    evs = [
        ev("start", B - 500, "a", cores=128),
        ev("end", B, "a", cores=128),
        ev("submit", B + 3000, "b", cores=128),
        ev("start", B + 3000, "b", cores=128),
    ]
    rows = m.update(evs) + m.flush(B + 2 * H)
    assert m.n == 128 and m.sum_w == 0.0 and m.idle_s == 128 * 3000.0
    assert rows[0].unusable_slots == 0.0
    assert rows[0].idle_slots == pytest.approx(128 * 3000 / H)


def test_seed_numbers_with_a_steady_queue() -> None:
    """Seed 002 'Estimating w' on a farm whose queue is never empty: 16 single-slot jobs on a
    16-slot node, the next job of each slot queued from the start and dispatched w after the
    slot frees, w spread over 0 < w < 60 s with mean 22 s (the seed's E[w]); no idle time."""
    ws = [2, 5, 8, 10, 12, 15, 18, 20, 22, 25, 28, 30, 35, 40, 45, 37]
    assert all(0 < w < 60 for w in ws) and sum(ws) / 16 == 22
    m = SlotTurnover(window=H, max_gap=H)
    evs = []
    for s, w in enumerate(ws):
        evs.append(ev("start", B + s, f"a{s}", ("wn1",), cores=1))
        evs.append(ev("submit", B + s, f"b{s}", ("wn1",), cores=1))
        evs.append(ev("end", B + 100 + s * 60, f"a{s}", ("wn1",), cores=1))
        evs.append(ev("start", B + 100 + s * 60 + w, f"b{s}", ("wn1",), cores=1))
    evs.sort(key=lambda e: (e.ts, {"submit": 0, "start": 1, "end": 2}[e.type]))
    rows = m.update(evs) + m.flush(B + 2 * H)
    assert m.n == 16 and m.mean_w == pytest.approx(22.0) and m.idle_s == 0.0
    assert rows[0].unusable_slots == pytest.approx(16 * 22 / H)


@settings(max_examples=60, deadline=None)
@given(job_specs())
def test_matches_unit_slot_reference(specs) -> None:
    evs = build_events(specs)
    m = SlotTurnover(window=H, max_gap=1800, max_stack=10**9)
    end = (evs[-1].ts if evs else B) + 2 * H
    rows = m.update(evs) + m.flush(end)
    gaps = turnover_ref(evs, 1800)
    assert m.n == sum(c for _r, _q, _t, c in gaps)
    assert m.sum_w == pytest.approx(sum((t - q) * c for _r, q, t, c in gaps))
    assert m.idle_s == pytest.approx(sum((q - r) * c for r, q, _t, c in gaps))
    ref = window_sums(gaps, H)
    got = {
        int(r.start // H): [r.n_gaps, r.sum_w, r.idle_s]
        for r in rows
        if r.n_gaps or r.sum_w or r.idle_s
    }
    assert set(got) == {k for k, v in ref.items() if v[0] or v[1] or v[2]}
    for k, v in got.items():
        assert v[0] == ref[k][0]
        assert v[1] == pytest.approx(ref[k][1]) and v[2] == pytest.approx(ref[k][2])
    starts = [r.start for r in rows]
    assert starts == sorted(starts)
    assert all(b - a == H for a, b in zip(starts, starts[1:], strict=False))
