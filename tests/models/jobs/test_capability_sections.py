"""Seed 004's P_CUP day term and the Red/Black section node-hours in CapabilityUse."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.jobs.capability import (
    CapabilityDay,
    CapabilityUse,
    min_large_nodes,
    p_cup,
    p_cup_factor,
    section_shares,
    share,
)
from models.records.jobevent import JobEvent

# "Red Storm Resource Allocation Parameters": global shares and each lab's Red fraction
SHARES = {"S": 0.45, "LA": 0.225, "LL": 0.225, "AC": 0.10}
RED = {"S": 0.75, "LA": 0.85, "LL": 0.90, "AC": 0.0}


def ts(s: str) -> float:
    return datetime.fromisoformat(s).replace(tzinfo=UTC).timestamp()


def job(name: str, start: str, end: str, nodes: int, partition: str | None) -> list[JobEvent]:
    return [
        JobEvent(type="start", ts=ts(start), job=name, nodes=nodes, partition=partition),
        JobEvent(type="end", ts=ts(end), job=name, nodes=nodes, partition=partition),
    ]


def events(*jobs: list[JobEvent]) -> list[JobEvent]:
    return sorted((e for j in jobs for e in j), key=lambda e: (e.ts, e.type != "start"))


def test_p_cup_factor_is_the_seeds_day_term() -> None:
    # "If CUP40 < 80%, then use P_CUP = [0.80 - CUP40] x [JobSize / (0.40 x Section Size)]^p x
    # [Standard PBS Fair share factor]"
    assert p_cup_factor(0.5) == pytest.approx(0.3)
    assert p_cup_factor(0.0) == pytest.approx(0.8)
    assert p_cup_factor(0.8) is None and p_cup_factor(0.95) is None  # goal met: standard factor
    assert p_cup_factor(None) is None
    # on the seed's 7,680-node section a 3,072-node job (40 %) has a size term of 1 for any p
    for p in (0.5, 1.0, 2.0):
        assert p_cup(0.5, 3072, 7680, 1.7, p=p) == pytest.approx(0.3 * 1.7)
    # a jumbo job on the 10,368-node configuration, p = 2: (10368 / 4147.2)^2 = 6.25
    assert p_cup(0.6, 10368, 10368, 1.0, p=2.0) == pytest.approx(0.2 * 6.25)
    day = CapabilityDay(datetime(2024, 1, 1).date(), 1.0, 3.0, None)
    assert day.p_cup_factor == pytest.approx(0.8 - 0.25)


def test_measured_red_share_against_the_seeds_f_r() -> None:
    """A day whose Red and Black sections deliver node-hours in the seed's f_R : f_B."""
    s = section_shares(SHARES, RED)
    assert round(s.f_red, 3) == 0.731 and round(s.f_black, 3) == 0.269  # 73.1 % / 26.9 %
    # 100-node jobs: Red 7 h 18 min 45 s = 731.25 node-hours, Black 2 h 41 min 15 s = 268.75
    m = CapabilityUse(10_368, red_partitions={"red"})
    m.update(
        events(
            job("r", "2024-01-01T00:00:00", "2024-01-01T07:18:45", 100, "red"),  # 731.25 nh
            job("b", "2024-01-01T00:00:00", "2024-01-01T02:41:15", 100, "black"),  # 268.75 nh
        )
    )
    (day,) = m.flush(ts("2024-01-02T00:00:00"))
    assert day.red_node_hours == pytest.approx(731.25)
    assert day.black_node_hours == pytest.approx(268.75)
    assert day.red_share == pytest.approx(s.f_red) and day.black_share == pytest.approx(s.f_black)


def test_red_black_hand_made() -> None:
    """10 nodes (large >= 4). Red: 'r1' and 'r2' partitions; any other partition is Black; a
    job without a partition counts in neither section (but in CUP40)."""
    assert min_large_nodes(10) == 4
    jobs = events(
        job("A", "2024-01-01T00:00:00", "2024-01-01T02:00:00", 4, "r1"),  # large, red, 8 nh
        job("B", "2024-01-01T01:00:00", "2024-01-01T02:00:00", 2, "r2"),  # red, 2 nh
        job("C", "2024-01-01T00:00:00", "2024-01-01T03:00:00", 1, "batch"),  # black, 3 nh
        job("D", "2024-01-01T05:00:00", "2024-01-01T06:00:00", 3, None),  # neither, 3 nh
        # black, across midnight: 2 nodes x 1 h on each day
        job("E", "2024-01-01T23:00:00", "2024-01-02T01:00:00", 2, "batch"),
    )
    m = CapabilityUse(10, red_partitions=["r1", "r2"])
    m.update(jobs)
    d1, d2 = m.flush(ts("2024-01-03T00:00:00"))
    assert (d1.large_node_hours, d1.small_node_hours) == (8.0, 10.0)
    assert (d1.red_node_hours, d1.black_node_hours) == (10.0, 5.0)
    assert d1.red_share == pytest.approx(10 / 15) and d1.black_share == pytest.approx(5 / 15)
    assert d1.p_cup_factor == pytest.approx(0.8 - 8 / 18)
    assert (d2.red_node_hours, d2.black_node_hours, d2.red_share) == (0.0, 2.0, 0.0)
    assert d2.p_cup_factor == pytest.approx(0.8)  # CUP40 0
    assert m.jobs_without_partition == 1

    # the partition of the end event wins (a job moved), else the start's
    m = CapabilityUse(10, red_partitions={"r1"})
    moved = job("M", "2024-01-01T00:00:00", "2024-01-01T01:00:00", 1, "batch")
    moved[1] = JobEvent(type="end", ts=moved[1].ts, job="M", nodes=1, partition="r1")
    m.update(moved)
    (d,) = m.flush(ts("2024-01-02T00:00:00"))
    assert (d.red_node_hours, d.black_node_hours) == (1.0, 0.0)


def test_red_black_unknown_without_red_partitions() -> None:
    m = CapabilityUse(10)
    m.update(events(job("A", "2024-01-01T00:00:00", "2024-01-01T02:00:00", 4, "r1")))
    (d,) = m.flush(ts("2024-01-02T00:00:00"))
    assert d.red_node_hours is None and d.black_node_hours is None
    assert d.red_share is None and d.black_share is None
    assert m.jobs_without_partition == 0


def test_share() -> None:
    assert share(1.0, 3.0) == 0.25
    assert share(0.0, 0.0) is None and share(None, 1.0) is None and share(1.0, None) is None
