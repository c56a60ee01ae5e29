"""Per-job drain analytics (seed 000 §V)."""

import pytest

from models.drain.jobs import (
    JobDrain,
    by_size_group,
    failure_to_launch,
    job_times,
    size_group,
    sliding_jobs,
)
from models.records.jobevent import JobEvent


@pytest.mark.parametrize(
    ("nodes", "group"),
    [
        (1, "Tiny"),
        (128, "Tiny"),
        (129, "Sub1k"),
        (999, "Sub1k"),
        (1000, "1k+"),
        (1999, "1k+"),
        (2000, "2k+"),
        (3999, "2k+"),
        (4000, "4k+"),
        (7999, "4k+"),
        (8000, "8k+"),
        (15999, "8k+"),
        (16000, "16k+"),
        (26846, "16k+"),
    ],
)
def test_size_groups_are_the_papers(nodes: int, group: str) -> None:
    assert size_group(nodes) == group


def test_size_group_rejects_zero() -> None:
    with pytest.raises(ValueError):
        size_group(0)


def jd(job, drain, size=None, runtime=None, running=False, charged=1):
    return JobDrain(job, drain, charged, 0, 0, size, runtime, running)


def test_failure_to_launch_threshold_and_ratio() -> None:
    jobs = [
        jd("a", 3600.0 * 1000, size=1000, runtime=10.0),  # drained 1000 nodes, died in 10 s
        jd("b", 500.0, size=10, runtime=29.999),
        jd("c", 500.0, size=10, runtime=30.0),
        jd("d", 0.0, size=10, runtime=1.0),
    ]
    assert [j.job for j in failure_to_launch(jobs)] == ["a", "b"]
    # drain node-hours / run node-hours = 1000 nh / (10 s x 1000 nodes = 2.78 nh) = 360
    assert jobs[0].drain_runtime_ratio == pytest.approx(360.0)


def test_sliding_jobs_are_queued_jobs_ranked_by_drain_per_node() -> None:
    jobs = [
        jd("big", 8000.0, size=4000),
        jd("small", 3000.0, size=10),
        jd("ran", 1e9, size=1, running=True),
        jd("nosize", 600.0, charged=3),
    ]
    assert [j.job for j in sliding_jobs(jobs)] == ["small", "nosize", "big"]


def test_by_size_group_sums_and_means() -> None:
    rows = by_size_group(
        [
            jd("a", 100.0, size=10),
            jd("b", 300.0, size=100),
            jd("c", 5000.0, size=1000),
            jd("d", 1.0),
        ]
    )
    assert [(r.group, r.jobs, r.drain_s) for r in rows] == [("Tiny", 2, 400.0), ("1k+", 1, 5000.0)]
    assert rows[0].mean_drain_s == 200.0 and rows[0].mean_drain_per_node == (10.0 + 3.0) / 2


def test_job_times_from_events() -> None:
    ev = [
        JobEvent("submit", 10.0, "1", nodes=4),
        JobEvent("start", 100.0, "1", nodes=4),
        JobEvent("end", 112.5, "1"),
    ]
    jt = job_times(ev)["1"]
    assert (jt.nodes, jt.submit, jt.runtime) == (4, 10.0, 12.5)
