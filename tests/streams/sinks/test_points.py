"""Per-job InfluxDB points: the job id is a field, two jobs at one millisecond are two points,
a job's re-written row is the same point; a row's columns become tags/fields by kind."""

from __future__ import annotations

import zlib
from zoneinfo import ZoneInfo

from streams.sinks.points import MEASUREMENTS, runtime_prediction_line
from streams.tables.jobs import RUNTIME_PREDICTIONS, USAGE_DAILY

UTC = ZoneInfo("UTC")


def _row(job: str, actual: float, partition: str | None = None) -> tuple[object, ...]:
    return (
        job,
        "alice",
        "sim",
        5,
        100.0,
        120.0,
        actual,
        0,
        90.0,
        130.0,
        97.0,
        103.0,
        5.0,
        40.0,
        partition,
    )


def test_two_jobs_ending_in_one_millisecond_are_two_points() -> None:
    a = runtime_prediction_line("c", _row("1001", 100.0), 1_700_000_000.0, UTC)
    b = runtime_prediction_line("c", _row("1002", 100.0), 1_700_000_000.0, UTC)
    again = runtime_prediction_line("c", _row("1001", 101.0), 1_700_000_000.0, UTC)
    ta, tb, t2 = (int(x.rsplit(" ", 1)[1]) for x in (a, b, again))
    assert ta != tb and ta == t2  # distinct points; the re-written row overwrites its own
    assert ta // 1_000_000 == tb // 1_000_000 == 1_700_000_000_000  # the same millisecond
    assert a.startswith("runtime_prediction,cluster=c,user=alice ")  # no job tag
    assert 'job="1001"' in a and "actual_s=100," in a and "history_runs=5i" in a
    # the job's partition, where the events name one, is a tag beside the user
    p = runtime_prediction_line("c", _row("1003", 9.0, "debug"), 1_700_000_000.0, UTC)
    assert p.startswith("runtime_prediction,cluster=c,partition=debug,user=alice ")


def test_a_day_row_is_a_point_at_the_zone_midnight() -> None:
    m = MEASUREMENTS[USAGE_DAILY.file]
    row = ("2024-03-31", "kth", 12.5, 2.0, 1.0, 3, 4)
    lp = m.line("c", row, ZoneInfo("Europe/Berlin"))
    assert lp.startswith("usage,cluster=c,day=2024-03-31,resource=kth ")
    assert lp.endswith(" 1711839600000000000")  # 2024-03-31T00:00+01:00
    assert "jobs_started=3i" in lp and "cpu_hours=12.5" in lp
    assert RUNTIME_PREDICTIONS.file in MEASUREMENTS


def test_drain_job_point_keeps_the_job_in_a_field_one_point_per_job() -> None:
    # InfluxDB 1.x refuses a tag's 100,001st value: the job id is a field; the point's time is
    # the job's first charge, its nanoseconds below the millisecond crc32(job) % 10**6
    from models.drain.live import LiveJob
    from streams.sinks.influx import job_point

    a1 = job_point("c", LiveJob("1001", 5_000, 2, 1_000, 3_000, 0, 1_000))
    a2 = job_point("c", LiveJob("1001", 9_000, 3, 1_000, 4_000, 1, 1_000))
    b = job_point("c", LiveJob("1002", 5_000, 2, 1_000, 3_000, 0, 1_000))
    lines = [a1, a2, b]
    assert all(line.startswith("drain_job,cluster=c ") for line in lines)
    assert 'job="1001"' in lines[0] and 'job="1002"' in lines[2]
    t = [int(line.rsplit(" ", 1)[1]) for line in lines]
    assert t[0] == t[1] == 1_000 * 1_000_000 + zlib.crc32(b"1001") % 1_000_000  # overwritten
    assert t[2] != t[0] and t[2] // 1_000_000 == 1_000
    assert "drain_node_seconds=9," in lines[1] and "nodes_running=1i" in lines[1]
