"""A backlog shipped before the worker starts (issue 30): 60 simulated days waiting in
``node-status``. The worker's first partial then holds every minute window of days; it goes out
in parts of at most ``kafka.message_max_bytes`` (set low here, so they must split), and the live
numbers equal ``drainwatch replay`` of the same log: straight through, and with the worker
killed with SIGKILL a third of the way and restarted."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from streams.topics import TOPICS
from tests.integration.test_live_drain import Live, _cli

pytestmark = pytest.mark.integration

BOUND = 65_536  # the setting's minimum: a backlog's partial is many times this
NODES, DAYS, PERIOD = 32, 60, 600  # 276,480 records, ~29 MB of log
RECORDS = NODES * DAYS * 86_400 // PERIOD
MINUTES = DAYS * 1440  # minute windows


@pytest.fixture(scope="module")
def backlog(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """60 simulated days of a 32-node machine, and the replay's reports of it."""
    d = tmp_path_factory.mktemp("backlog")
    subprocess.run(
        _cli(
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            str(NODES),
            "--days",
            str(DAYS),
            "--period",
            str(PERIOD),
            "--seed",
            "3",
            "--out",
            str(d / "sim"),
        ),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        _cli(
            "replay",
            "--format",
            "moab",
            str(d / "sim" / "moab.log"),
            "--tz",
            "UTC",
            "--out",
            str(d / "replay"),
            "--no-progress",
        ),
        check=True,
        capture_output=True,
    )
    return d / "sim" / "moab.log", d / "replay"


def _ship_backlog(live: Live, log: Path) -> None:
    live.env["DRAINWATCH_MESSAGE_MAX_BYTES"] = str(BOUND)
    live.ship(str(log), "--no-progress")  # the whole log, its end of input, before any worker


def _check_bounded(live: Live) -> None:
    """Every message the worker wrote is at most the bound; the drain partials were split
    (a part before the last carries no watermark, and rows)."""
    written = [
        t.name for t in TOPICS if t.name not in ("node-status", "job-events", "node-samples")
    ]
    sizes = {}
    for topic in written:
        values = [v for _k, v in live.consume(topic)]
        sizes[topic] = max((len(v) for v in values), default=0)
        assert sizes[topic] <= BOUND, (topic, sizes[topic])
    assert sizes["drain-partials"] > BOUND // 2, sizes  # parts filled near the bound
    parts = [orjson.loads(v) for _k, v in live.consume("drain-partials")]
    inner = [p for p in parts if p["watermark_ms"] is None and p["windows"]]
    assert inner, "the backlog's partials must have been split"
    assert sizes["worker-state"] > 0


def _minutes_written(live: Live) -> int:
    """Minute windows the combiner has written to InfluxDB (each at least once)."""
    q = "SELECT count(accounted_node_seconds) FROM drain WHERE \"window\"='minute'"
    rows = live.influx.influxql(q)
    return int(rows[0]["count"]) if rows else 0


def test_a_backlog_goes_out_in_bounded_parts_and_equals_the_replay(
    live: Live, backlog: tuple[Path, Path]
) -> None:
    log, replay = backlog
    _ship_backlog(live, log)
    live.worker()
    live.wait_equal(replay, timeout=120)
    assert live.metrics()["drainwatch_records_total"] == RECORDS
    _check_bounded(live)


def test_a_backlog_through_a_kill_equals_the_replay(live: Live, backlog: tuple[Path, Path]) -> None:
    log, replay = backlog
    _ship_backlog(live, log)
    w = live.worker()
    # a third of the way: a third of the minute windows in InfluxDB (asked of InfluxDB, not
    # of the worker, whose /metrics waits while it reads the backlog in bursts)
    deadline = time.monotonic() + 90
    while (written := _minutes_written(live)) < MINUTES // 3:
        assert time.monotonic() < deadline and w.poll() is None, written
        time.sleep(0.05)
    w.send_signal(signal.SIGKILL)  # part-way: state since its snapshots is lost
    w.wait()
    assert _minutes_written(live) < MINUTES, "killed after the end"
    live.worker()
    live.wait_equal(replay, timeout=150)
    _check_bounded(live)
