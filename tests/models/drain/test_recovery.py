"""Back-fill efficiency and backlog (seed 000 §VI) against hand-worked numbers and a
second-by-second reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from models.drain.recovery import (
    BackfillWindow,
    BacklogWindow,
    Span,
    backfill_efficiency,
    backlog,
    node_ms_per_window,
)

H = 3_600_000
EDGES = np.arange(0, 5 * H, H, dtype=np.int64)  # four one-hour windows


def test_backfill_efficiency_is_backfill_over_backfill_plus_drain() -> None:
    # seed 000 §VI-A: a backfilled 4-node job from 0:30 to 2:00 gives back 2 node-hours in the
    # first hour and 4 in the second; 6 node-hours of drain in each hour
    spans = [Span(H // 2, 2 * H, 4)]
    rows = backfill_efficiency([0, H, 2 * H], [6 * H, 6 * H, 0], spans, EDGES)
    assert [(r.backfill_node_ms, r.drain_node_ms) for r in rows] == [
        (2 * H, 6 * H),
        (4 * H, 6 * H),
        (0, 0),
    ]
    assert rows[0].efficiency == 0.25 and rows[1].efficiency == 0.4
    assert rows[2].efficiency is None  # neither: unknown, not 0
    assert BackfillWindow(0, 0, 5).efficiency == 0.0


def test_backlog_verdicts() -> None:
    # hour 0: 8 idle nodes all hour, a 4-node job queued 0:00-0:30 and a 16-node one all hour
    # hour 1: 8 idle nodes, only the 16-node job (too large); hour 2: idle, nothing queued;
    # hour 3: no idle node-time
    queued = [Span(0, H // 2, 4), Span(0, 2 * H, 16)]
    rows = backlog([0, H, 2 * H, 3 * H], [H] * 4, [8 * H, 8 * H, 8 * H, 0], queued, EDGES)
    assert [r.verdict for r in rows] == [
        "backlog_fits",
        "backlog_too_large",
        "no_backlog",
        "no_idle",
    ]
    r0 = rows[0]
    assert (r0.jobs_queued, r0.smallest_queued_nodes) == (2, 4)
    assert r0.queued_job_ms == H // 2 + H and r0.queued_node_ms == 4 * H // 2 + 16 * H
    assert r0.mean_idle_nodes == 8.0
    assert (rows[1].jobs_queued, rows[1].smallest_queued_nodes) == (1, 16)
    assert rows[2].smallest_queued_nodes is None
    # exactly as many idle nodes as the smallest job needs: it fits
    assert BacklogWindow(0, H, 4 * H, H, 4 * H, 1, 4).verdict == "backlog_fits"
    assert BacklogWindow(0, H, 4 * H - 1, H, 4 * H, 1, 4).verdict == "backlog_too_large"


SPANS = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 5)).map(
        lambda t: Span(min(t[0], t[1]) * 1000, max(t[0], t[1]) * 1000, t[2])
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(SPANS, st.lists(st.integers(1, 9), min_size=1, max_size=6))
def test_node_ms_per_window_matches_a_second_by_second_count(
    spans: list[Span], widths: list[int]
) -> None:
    edges = (
        np.cumsum([0, *(w * 10 for w in widths), 1000]) * 1000
    )  # seconds -> ms, covering 0..40 s
    got = node_ms_per_window(spans, edges.astype(np.int64))
    expect = [0] * (edges.size - 1)
    for s in spans:
        for sec in range(s.start_ms // 1000, s.end_ms // 1000):
            w = int(np.searchsorted(edges, sec * 1000, side="right")) - 1
            expect[w] += s.nodes * 1000
    assert got.tolist() == expect
    assert int(got.sum()) == sum((s.end_ms - s.start_ms) * s.nodes for s in spans)
