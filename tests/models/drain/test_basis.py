"""Drain percentages and their basis (seed 000 §III-B.3, §IV-A)."""

from __future__ import annotations

import pytest

from models.drain.basis import QUALITY_MIN, static_basis_node_hours, window_basis

DAY_MS = 86_400_000


def test_paper_basis_blue_waters() -> None:
    # seed 000 §III-B.3: (86,400 * 26,846) / 3600 = 644,304 node-hours per day
    assert static_basis_node_hours(26_846, 86_400) == 644_304


def test_static_and_dynamic_percentages() -> None:
    # 10 nodes for a day, 2 of them down all day, 1 node-day of drain
    b = window_basis(
        drain_ms=DAY_MS,
        accounted_ms=10 * DAY_MS,
        down_ms=2 * DAY_MS,
        nodes=10,
        length_ms=DAY_MS,
        basis_nodes=10,
    )
    assert b.drain_pct_static == pytest.approx(10.0)
    assert b.drain_pct_dynamic == pytest.approx(12.5)  # Down nodes cannot be drained
    assert b.seconds_per_node == 86_400 and b.quality == "ok"


def test_no_basis_no_percentage() -> None:
    b = window_basis(0, 5 * DAY_MS, 5 * DAY_MS, 5, DAY_MS, basis_nodes=0)
    assert b.drain_pct_static is None and b.drain_pct_dynamic is None


def test_quality_short_below_95_percent_of_the_window() -> None:
    edge = round(QUALITY_MIN * DAY_MS)
    assert window_basis(0, edge, 0, 1, DAY_MS, 1).quality == "ok"
    assert window_basis(0, edge - 1, 0, 1, DAY_MS, 1).quality == "short"
    # a 23-hour DST day is measured against its own length
    assert window_basis(0, 23 * 3_600_000, 0, 1, 23 * 3_600_000, 1).quality == "ok"
