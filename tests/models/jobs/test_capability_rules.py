"""Seed 004 capability rules: "40 % or more" is a ceiling, and the modified CUP needs a source
that records backfilled jobs (blank, never 0, without one)."""

from __future__ import annotations

import pytest

from models.jobs.capability import (
    CapabilityDay,
    CapabilityUse,
    cup_modified,
    cup_over,
    min_large_nodes,
)
from models.records.jobevent import JobEvent

D0 = 1_700_006_400.0  # 2023-11-15 00:00 UTC


def ev(t: str, ts: float, job: str, nodes: int, bf: bool | None = None) -> JobEvent:
    return JobEvent(t, ts, job, nodes=nodes, backfill=bf)


@pytest.mark.parametrize(
    ("section", "large"),
    [
        (46, 19),  # 18.4: 18 nodes are 39.1 %, 19 are 41.3 % (phillips, 46 nodes)
        (100, 40),  # exact (KTH SP2)
        (128, 52),  # 51.2: 51 nodes are 39.8 % (NASA iPSC)
        (10, 4),
        (5, 2),
        (1, 1),
        (7680, 3072),  # 0.4 x 7680 is exact in the seed; no float spill to 3,073
        (2688, 1076),
        (10368, 4148),
    ],
)
def test_min_large_is_the_ceiling(section: int, large: int) -> None:
    assert min_large_nodes(section) == large
    assert large / section >= 0.40 and (large == 1 or (large - 1) / section < 0.40)


def test_min_large_other_fractions() -> None:
    assert min_large_nodes(46, 0.5) == 23 and min_large_nodes(46, 0.25) == 12  # 11.5 -> 12
    assert min_large_nodes(1000, 0.3) == 300  # 0.3 x 1000 = 300.00000000000006 in binary


def test_46_node_section_counts_18_nodes_small() -> None:
    m = CapabilityUse(section_nodes=46)
    m.update(
        [
            ev("start", D0, "a18", 18, False),
            ev("end", D0 + 3600, "a18", 18),
            ev("start", D0, "b19", 19, False),
            ev("end", D0 + 3600, "b19", 19),
        ]
    )
    (d,) = m.flush(0, final=True)
    assert (d.large_node_hours, d.small_node_hours) == (19.0, 18.0)
    assert d.cup40 == pytest.approx(19 / 37)


def _mixed(m: CapabilityUse, flag: bool | None) -> list[CapabilityDay]:
    """A large 40-node hour, a small 10-node backfilled hour (when flagged), a small 20-node
    hour run by the main pass."""
    m.update(
        [
            ev("start", D0, "big", 40, None if flag is None else False),
            ev("start", D0, "bf", 10, None if flag is None else True),
            ev("start", D0, "main", 20, None if flag is None else False),
            ev("end", D0 + 3600, "big", 40),
            ev("end", D0 + 3600, "bf", 10),
            ev("end", D0 + 3600, "main", 20),
        ]
    )
    return m.flush(0, final=True)


def test_modified_cup_with_flags() -> None:
    m = CapabilityUse(section_nodes=100)
    (d,) = _mixed(m, True)
    assert (d.large_node_hours, d.small_node_hours, d.backfill_node_hours) == (40.0, 30.0, 10.0)
    assert d.cup40 == pytest.approx(40 / 70) and d.cup40_modified == pytest.approx(40 / 60)
    assert (m.flagged_jobs, m.unflagged_jobs) == (3, 0)


def test_no_backfill_flag_is_unknown_not_zero() -> None:
    m = CapabilityUse(section_nodes=100, backfill_flags=False)
    (d,) = _mixed(m, None)
    assert d.backfill_node_hours is None and d.cup40_modified is None
    assert d.cup40 == pytest.approx(40 / 70)  # CUP40 itself needs no flag
    assert cup_over([d]) == (pytest.approx(40 / 70), None)
    assert (m.flagged_jobs, m.unflagged_jobs) == (0, 3)


def test_flagged_source_counts_unflagged_jobs_as_main() -> None:
    # a source with the flag: a job without one is not backfilled (counted in unflagged_jobs)
    m = CapabilityUse(section_nodes=100)
    m.update([ev("start", D0, "x", 10), ev("end", D0 + 3600, "x", 10)])
    (d,) = m.flush(0, final=True)
    assert d.backfill_node_hours == 0.0 and d.cup40_modified == 0.0
    assert m.unflagged_jobs == 1


def test_cup_over_any_unknown_day_is_unknown() -> None:
    from datetime import date

    known = CapabilityDay(date(2024, 1, 1), 10.0, 10.0, 5.0)
    unknown = CapabilityDay(date(2024, 1, 2), 10.0, 10.0, None)
    assert cup_over([known]) == (0.5, pytest.approx(10 / 15))
    assert cup_over([known, unknown]) == (0.5, None)
    assert cup_modified(1.0, 1.0, None) is None
