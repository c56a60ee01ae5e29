"""The live job-events path, short-job penalties first (seed 002): the KTH trace shipped
through Kafka, with the worker killed with -9 in the middle and restarted, gives in InfluxDB
and on metrics.shortjobs exactly the replay's tick rows (all ticks the watermark has closed),
and bad events are dead-lettered."""

from __future__ import annotations

import gzip
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from models.formats.jobsource import iter_job_events, sort_events
from models.jobs.shortjobs import ShortJobPenalty
from streams.stages.jobs import SHORTJOBS, ShortJobsStage
from streams.topics import TOPICS
from tests.golden.make_golden import DATA
from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live

pytestmark = pytest.mark.integration
KTH = DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def _replay_rows(live: Live) -> list[tuple[float, str, str, int, float, float]]:
    """The replay's rows over the events the live merger can have released: every event up
    to its final watermark (the lowest over the partitions of their latest event time, minus
    the lateness), read back from job-events to learn each event's partition."""
    events = sort_events(iter_job_events("swf", gzip.open(KTH, "rb")))
    latest: dict[int, float] = {}
    for _, v, part in read_topic(live.stack.kafka_bootstrap, live.prefix + "job-events"):
        ts = orjson.loads(v)["ts"] if v.startswith(b"{") else None
        if isinstance(ts, float | int) and ts < 2e9:
            latest[part] = max(latest.get(part, ts), ts)
    wm = min(latest.values()) - 600
    st = ShortJobsStage(ShortJobPenalty())
    out = list(st.step([e for e in events if e.ts <= wm]))
    return [tuple(r) for t, rows in out if t == SHORTJOBS for r in rows]  # type: ignore[misc]


def _topic_rows(live: Live) -> dict[tuple[float, str, str], tuple[int, float, float]]:
    """Rows on metrics.shortjobs by (tick, kind, holder): a re-sent row is the same row."""
    out: dict[tuple[float, str, str], tuple[int, float, float]] = {}
    for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "metrics.shortjobs"):
        d = orjson.loads(v)
        key = (d["ts_s"], d["holder_kind"], d["holder"])
        row = (d["n_short"], d["penalty_seconds"], d["adjust"])
        assert out.setdefault(key, row) == row, key  # a re-sent row never differs
    return out


def _wait_for(
    live: Live, want: dict[tuple[float, str, str], tuple[int, float, float]], timeout: float = 240
) -> dict[tuple[float, str, str], tuple[int, float, float]]:
    """The topic's rows once they are ``want`` (or, at the timeout, whatever they are)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = _topic_rows(live)
        if rows == want or time.monotonic() > deadline:
            return rows
        time.sleep(3)


def _ship_jobs(live: Live, *args: str) -> subprocess.Popen[bytes]:
    log = open(live.tmp / "ship-jobs.log", "ab")  # noqa: SIM115
    p = subprocess.Popen([sys.executable, "-m", "streams.cli", "ship", "jobs", *args],
                         env=live.env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    live.procs.append(p)
    return p


@pytest.fixture
def live(stack: Any, influx: Any, tmp_path: Path) -> Any:
    run = Live(stack, influx, tmp_path)
    yield run
    run.stop()


def test_live_short_job_penalties_equal_the_replay_through_a_kill(live: Live) -> None:
    live.env["DRAINWATCH_LIVE_JOBS"] = "shortjobs"
    w = live.worker()
    garbage = [b"not json", b'{"type": "end", "ts": "soon", "job": "x"}',
               b'{"type": "end", "ts": 99999999999, "job": "far"}']  # fmt: skip
    live.produce("job-events", garbage, partition=0)
    ship = _ship_jobs(live, "--format", "swf", str(KTH), "--no-progress")
    time.sleep(4)  # the worker is in the middle of the trace: kill it
    w.send_signal(signal.SIGKILL)
    w.wait(10)
    assert ship.wait(180) == 0, (live.tmp / "ship-jobs.log").read_text()
    live.worker()
    expect = _replay_rows(live)
    want = {(r[0], r[1], r[2]): (r[3], r[4], r[5]) for r in expect}
    assert len(want) > 20_000
    got = _wait_for(live, want)
    assert len(got) == len(want)
    assert got == want

    schema = jsonschema.Draft202012Validator(next(t.schema for t in TOPICS
                                                  if t.name == "metrics.shortjobs"))  # fmt: skip
    for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "metrics.shortjobs")[:500]:
        schema.validate(orjson.loads(v))
    points = live.influx.influxql(
        "SELECT n_short, penalty_seconds, adjust, kind, holder FROM shortjobs"
    )
    assert len(points) == len(want)
    adj = sum(p["adjust"] for p in points)
    assert abs(adj - sum(a for _, _, a in want.values())) <= 1e-9 * max(adj, 1.0)
    dead = [orjson.loads(v) for _, v, _ in read_topic(live.stack.kafka_bootstrap,
                                                      live.prefix + "dead-letter")]  # fmt: skip
    # the three bad messages are the first of partition 0; at least once, a dead letter can
    # come twice (again after the restart), at the same place
    reasons = sorted({(d["partition"], d["offset"]): d["reason"] for d in dead
                      if d["source"] == "job-events" and d["partition"] == 0
                      and d["offset"] < 3}.values())  # fmt: skip
    assert reasons == ["bad_json", "bad_ts", "implausible_time"]
    assert not [d for d in dead if d["reason"] == "late"]  # every partition is waited for
