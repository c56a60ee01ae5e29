"""Per-job InfluxDB points: the job id is a field, two jobs at one millisecond are two points,
a job's re-written row is the same point; a row's columns become tags/fields by kind."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from streams.sinks.jobpoints import MEASUREMENTS, runtime_point
from streams.stages.jobs import RUNTIME_PREDICTIONS, USAGE_DAILY

UTC = ZoneInfo("UTC")


def _row(job: str, actual: float) -> tuple[object, ...]:
    return (job, "alice", "sim", 5, 100.0, 120.0, actual, 0, 90.0, 130.0, 97.0, 103.0, 5.0, 40.0)


def test_two_jobs_ending_in_one_millisecond_are_two_points() -> None:
    a = runtime_point("c", _row("1001", 100.0), 1_700_000_000.0, UTC).to_line_protocol()
    b = runtime_point("c", _row("1002", 100.0), 1_700_000_000.0, UTC).to_line_protocol()
    again = runtime_point("c", _row("1001", 101.0), 1_700_000_000.0, UTC).to_line_protocol()
    ta, tb, t2 = (int(x.rsplit(" ", 1)[1]) for x in (a, b, again))
    assert ta != tb and ta == t2  # distinct points; the re-written row overwrites its own
    assert ta // 1_000_000 == tb // 1_000_000 == 1_700_000_000_000  # the same millisecond
    assert a.startswith("runtime_prediction,cluster=c,user=alice ")  # no job tag
    assert 'job="1001"' in a and "actual_s=100," in a and "history_runs=5i" in a


def test_a_day_row_is_a_point_at_the_zone_midnight() -> None:
    m = MEASUREMENTS[USAGE_DAILY.file]
    row = ("2024-03-31", "kth", 12.5, 2.0, 1.0, 3, 4)
    lp = m.point("c", row, ZoneInfo("Europe/Berlin")).to_line_protocol()
    assert lp.startswith("usage,cluster=c,day=2024-03-31,resource=kth ")
    assert lp.endswith(" 1711839600000000000")  # 2024-03-31T00:00+01:00
    assert "jobs_started=3i" in lp and "cpu_hours=12.5" in lp
    assert RUNTIME_PREDICTIONS.file in MEASUREMENTS
