"""InfluxSink under the Sink contract (declare, write, commit, abort), against a stand-in for
InfluxDB's write endpoint (no server): the lines it writes for the drain path's live tables are
the points ``window_point``/``state_points``/``job_point`` made, and for the job tables
``table_lines``'; nothing is written before the commit (below ``flush_points``) and an abort
writes nothing."""

from __future__ import annotations

import logging
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from influxdb_client.rest import ApiException

from models.drain.live import LiveJob, LiveWindow
from streams.sinks import points as point_lines
from streams.sinks.influx import InfluxError, InfluxSink, job_point, state_points, window_point
from streams.sinks.points import LIVE_DRAIN_MEASUREMENTS, table_lines
from streams.stages.drain import live_job_rows, live_window_rows
from streams.tables.drain import (
    DRAIN_DAILY,
    DRAIN_JOBS_WITH_EVENTS,
    LIVE_JOBS,
    LIVE_TABLES,
    LIVE_WINDOW_STATES,
    LIVE_WINDOWS,
)
from streams.tables.jobs import SHORTJOBS, USAGE_DAILY

BERLIN = ZoneInfo("Europe/Berlin")


class StandInInflux:
    """Stands in for InfluxDB's write endpoint: keeps each request body; ``fail`` holds the
    errors the next requests raise, in order."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.fail: list[BaseException] = []

    def post(self, body: bytes) -> None:
        if self.fail:
            raise self.fail.pop(0)
        self.bodies.append(body)

    @property
    def lines(self) -> list[str]:
        return [ln for b in self.bodies for ln in b.decode().split("\n")]


def http_error(status: int) -> BaseException:
    """InfluxDB's answer ``status`` as the client raises it."""
    error: Any = ApiException  # untyped in the client
    return error(status=status)  # type: ignore[no-any-return]


def sink_with(stand_in: StandInInflux, **kw: Any) -> InfluxSink:
    kw.setdefault("sleep", lambda s: None)
    return InfluxSink(
        "http://influx.invalid:8086", "token", "org", "bucket", "c", post=stand_in.post, **kw
    )


def windows() -> list[LiveWindow]:
    return [
        LiveWindow(
            "minute", 60_000, 60_000, 2, 120_000, 5_500, 0, 0, 0, 4.6, 4.6, 60.0, "ok", False
        ),
        LiveWindow(
            "hour",
            0,
            3_600_000,
            3,
            7_200_000,
            12_345,
            100,
            7,
            1,
            None,
            0.17,
            2400.0,
            "short",
            True,
            {"Idle": [0, 0, 3_500, 0], "Busy": [10, 2_000, 0, 9]},
        ),
        LiveWindow(
            "day",
            0,
            86_400_000,
            3,
            8_000_000,
            12_345,
            100,
            7,
            1,
            0.005,
            float("nan"),
            2666.5,
            "short",
            True,
            {"Down": [7, 0, 0, 0]},
        ),
    ]


def jobs() -> list[LiveJob]:
    return [
        LiveJob("1001", 5_000, 2, 1_000, 3_000, 0, 1_000),
        LiveJob('a job,with=odd "chars"', 9_001, 3, 1_000, 4_000, 1, 1_000),
    ]


def old_points(cluster: str = "c") -> list[str]:
    """What ``replay --influx`` wrote before it went through the driver."""
    out = []
    for w in windows():
        out += [window_point(cluster, w), *state_points(cluster, w)]
    return out + [job_point(cluster, j) for j in jobs()]


def write_live(sink: InfluxSink) -> None:
    for t in LIVE_TABLES:
        sink.declare(t)
    rows, states = live_window_rows(windows())
    assert sink.write(LIVE_WINDOWS, rows) == len(rows)
    assert sink.write(LIVE_WINDOW_STATES, states) == len(states)
    assert sink.write(LIVE_JOBS, iter(live_job_rows(jobs()))) == len(jobs())


def test_the_live_tables_are_written_as_the_old_points() -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in)
    write_live(sink)
    assert stand_in.bodies == []  # nothing before the commit
    sink.commit()
    want = old_points()
    assert sorted(stand_in.lines) == sorted(want)
    # each series keeps its order (here: one point per series and time)
    assert len(set(want)) == len(want)
    assert sink.stats.points == len(want)
    sink.commit()  # nothing left: no request
    assert len(stand_in.bodies) == 1


@pytest.mark.parametrize("native", [True, False])
def test_the_drain_measurements_give_each_rows_line(native: bool, monkeypatch: Any) -> None:
    if not native:
        monkeypatch.setattr(point_lines, "_native_lines", None)
    rows, states = live_window_rows(windows())
    utc = ZoneInfo("UTC")
    for table, rs in (
        (LIVE_WINDOWS, rows),
        (LIVE_WINDOW_STATES, states),
        (LIVE_JOBS, live_job_rows(jobs())),
    ):
        m = LIVE_DRAIN_MEASUREMENTS[table.file]
        assert m.lines("c", rs, utc) == [m.line("c", r, utc) for r in rs]
    assert table_lines("c", LIVE_WINDOWS, rows, utc) == [window_point("c", w) for w in windows()]


def test_job_tables_are_their_table_lines_in_the_sinks_zone() -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in, tz="Europe/Berlin")
    usage = [
        (date(2024, 3, 31), "r", 1.5, 2.0, 3.0, 4, 5),
        ("2024-04-01", "r", 0.0, None, 1.0, 0, 1),
    ]
    short = [(1_700_000_000.0, "user", "alice bob", 3, 12.5, 1.25)]
    sink.declare(USAGE_DAILY)
    sink.write(USAGE_DAILY, usage)
    sink.write(SHORTJOBS, short)  # written without a declare: declared then
    sink.commit()
    want = table_lines("c", USAGE_DAILY, usage, BERLIN) + table_lines("c", SHORTJOBS, short, BERLIN)
    assert sorted(stand_in.lines) == sorted(want)


def test_tables_without_a_measurement_or_a_time_column_are_ignored() -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in)
    for t in (DRAIN_DAILY, DRAIN_JOBS_WITH_EVENTS):  # no measurement; one without a time
        sink.declare(t)
        assert sink.write(t, [tuple(range(len(t.columns)))]) == 0
    sink.document("summary_drain.json", b"{}")
    sink.commit()
    assert stand_in.bodies == []


def test_abort_writes_nothing() -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in)
    write_live(sink)
    sink.abort()
    sink.commit()
    assert stand_in.bodies == []


def test_past_flush_points_lines_are_written_before_the_commit() -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in, flush_points=3)
    rows, states = live_window_rows(windows())
    sink.write(LIVE_WINDOWS, rows)  # 3 lines: written
    assert len(stand_in.lines) == 3
    sink.write(LIVE_JOBS, live_job_rows(jobs()))  # 2: held
    sink.abort()  # drops those only
    sink.commit()
    assert sorted(stand_in.lines) == sorted(window_point("c", w) for w in windows())


def test_a_refusal_fails_the_commit_and_5xx_is_retried(caplog: Any) -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in)
    stand_in.fail = [http_error(503), ConnectionError("http://u:pw@influx.invalid down")]
    write_live(sink)
    with caplog.at_level(logging.WARNING, logger="drainwatch.influx"):
        sink.commit()
    assert sorted(stand_in.lines) == sorted(old_points())
    assert sink.stats.retries == 2 and sink.stats.by_status == {"503": 1}
    assert "pw" not in sink.stats.last_error
    assert [r.name for r in caplog.records] == ["drainwatch.influx"] * 2
    stand_in.fail = [http_error(400)]
    sink.write(LIVE_JOBS, live_job_rows(jobs()))
    with pytest.raises(InfluxError, match="HTTP 400"):
        sink.commit()


def test_write_of_lines_is_write_lines_at_once() -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in)
    points = [job_point("c", j) for j in jobs()]
    sink.write_lines(points)
    assert stand_in.lines == points
    sink.write_lines(["", points[0]])
    assert stand_in.lines == [*points, points[0]]
    rows, states = live_window_rows(windows())
    sink.write(LIVE_WINDOWS, rows)
    sink.write(LIVE_WINDOW_STATES, states)
    sink.write(LIVE_JOBS, live_job_rows(jobs()))
    sink.commit()
    assert sorted(stand_in.lines[3:]) == sorted(old_points())


def test_timed_rows_take_their_times() -> None:
    stand_in = StandInInflux()
    sink = sink_with(stand_in)
    row = ("j1", 5_000, 2, 1_000, 3_000, 4, 10.0, 1.25, 0.125)
    sink.write_timed(DRAIN_JOBS_WITH_EVENTS, [row], [1.0])
    sink.commit()
    assert stand_in.lines == [
        point_lines.timed_line(DRAIN_JOBS_WITH_EVENTS, "c", row, 1.0, sink.zone)
    ]
    with pytest.raises(ValueError, match="no InfluxDB measurement"):
        sink.write_timed(DRAIN_DAILY, [], [])


def test_the_url_is_shown_masked() -> None:
    sink = InfluxSink(
        "http://user:secret@influx.invalid:8086?token=abc", "t", "o", "b", post=lambda body: None
    )
    assert "secret" not in repr(sink) and "abc" not in repr(sink)
