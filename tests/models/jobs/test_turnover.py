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


@settings(max_examples=60, deadline=None)
@given(job_specs())
def test_matches_unit_slot_reference(specs) -> None:
    evs = build_events(specs)
    m = SlotTurnover(window=H, max_gap=1800, max_stack=10**9)
    end = (evs[-1].ts if evs else B) + 2 * H
    rows = m.update(evs) + m.flush(end)
    gaps = turnover_ref(evs, 1800)
    assert m.n == sum(c for _r, _t, c in gaps)
    assert m.sum_w == pytest.approx(sum((t - r) * c for r, t, c in gaps))
    ref = window_sums(gaps, H)
    got = {int(r.start // H): [r.n_gaps, r.sum_w] for r in rows if r.n_gaps or r.sum_w}
    assert set(got) == {k for k, v in ref.items() if v[0] or v[1]}
    for k, v in got.items():
        assert v[0] == ref[k][0] and v[1] == pytest.approx(ref[k][1])
    starts = [r.start for r in rows]
    assert starts == sorted(starts)
    assert all(b - a == H for a, b in zip(starts, starts[1:], strict=False))
