"""Size groups (seed 000 §V-D): the seed's absolute sizes, and the same boundaries relative to
the machine (fractions of Blue Waters' 26,846 nodes, seed 000 §III-B.3)."""

from __future__ import annotations

import pytest

from models.drain.jobs import (
    ABSOLUTE_SIZE_GROUPS,
    BLUE_WATERS_NODES,
    SIZE_GROUPS,
    JobDrain,
    by_size_group,
    relative_size_groups,
    size_groups,
)


def test_blue_waters_is_the_seeds_node_count() -> None:
    # seed 000 §III-B.3: 26,846 nodes x 86,400 s / 3,600 = 644,304 node-hours a day
    assert BLUE_WATERS_NODES * 86_400 // 3_600 == 644_304


def test_relative_on_blue_waters_is_the_seed_table() -> None:
    g = relative_size_groups(BLUE_WATERS_NODES)
    assert g.groups == SIZE_GROUPS and g.scale == "relative"
    for s in (1, 128, 129, 999, 1000, 3999, 4000, 15999, 16000, 26846):
        assert g.group(s) == ABSOLUTE_SIZE_GROUPS.group(s)


def test_relative_on_100_nodes() -> None:
    # hand-made: lower bounds lo / 26,846 x 100 = 0.48, 3.72, 7.45, 14.9, 29.8, 59.6 nodes
    g = relative_size_groups(100)
    assert g.groups == (
        ("Tiny", 1, 0),  # 128 / 26,846 = 0.48 % of the machine: no whole job that small
        ("Sub1k", 1, 3),
        ("1k+", 4, 7),
        ("2k+", 8, 14),
        ("4k+", 15, 29),
        ("8k+", 30, 59),
        ("16k+", 60, None),
    )
    assert [g.group(s) for s in (1, 3, 4, 8, 15, 29, 30, 59, 60, 100)] == [
        "Sub1k",
        "Sub1k",
        "1k+",
        "2k+",
        "4k+",
        "4k+",
        "8k+",
        "8k+",
        "16k+",
        "16k+",
    ]


@pytest.mark.parametrize("machine", [1, 7, 40, 46, 100, 128, 300, 999, 4999, 5000, 26846, 10**6])
def test_relative_groups_are_the_fractions(machine: int) -> None:
    g = relative_size_groups(machine)
    fr = [lo / BLUE_WATERS_NODES for _, lo, _ in SIZE_GROUPS[1:]]
    for s in range(1, min(machine, 3000) + 1):
        want = SIZE_GROUPS[sum(s / machine >= f for f in fr)][0]
        assert g.group(s) == want, (machine, s)
    # groups tile 1.. without gaps or overlaps
    nxt = 1
    for _, lo, hi in g.groups:
        assert lo == nxt or lo == 1
        nxt = lo if hi is None else hi + 1


def test_auto_chooses_relative_below_5000_nodes() -> None:
    assert size_groups("auto", 100).scale == "relative"
    assert size_groups("auto", 4999).scale == "relative"
    assert size_groups("auto", 5000) is ABSOLUTE_SIZE_GROUPS
    assert size_groups("auto", None) is ABSOLUTE_SIZE_GROUPS
    assert size_groups("absolute", 100) is ABSOLUTE_SIZE_GROUPS
    assert size_groups("relative", 26846).groups == SIZE_GROUPS
    with pytest.raises(ValueError):
        size_groups("relative", None)
    with pytest.raises(ValueError):
        size_groups("bogus", 10)


def jd(job: str, drain: float, size: int) -> JobDrain:
    return JobDrain(job, drain, 1, 0, 0, size)


def test_every_job_tiny_on_a_small_machine_unless_relative() -> None:
    jobs = [jd("a", 100.0, 1), jd("b", 200.0, 5), jd("c", 400.0, 40), jd("d", 800.0, 80)]
    assert [(r.group, r.jobs) for r in by_size_group(jobs)] == [("Tiny", 4)]
    rows = by_size_group(jobs, size_groups("auto", 100))
    assert [(r.group, r.jobs, r.drain_s, r.nodes_lo, r.nodes_hi, r.scale) for r in rows] == [
        ("Sub1k", 1, 100.0, 1, 3, "relative"),
        ("1k+", 1, 200.0, 4, 7, "relative"),
        ("8k+", 1, 400.0, 30, 59, "relative"),
        ("16k+", 1, 800.0, 60, None, "relative"),
    ]
    (t,) = by_size_group(jobs)
    assert (t.nodes_lo, t.nodes_hi, t.scale) == (1, 128, "absolute")
