"""The live job-events path: the KTH trace shipped through Kafka, with the worker killed with
-9 in the middle and restarted, gives in InfluxDB and on the metric topics exactly the rows
``drainwatch replay`` writes for the whole file (usage, short-job penalties, run-time
predictions, node-release forecasts, turnover, capability, fair share): the shipper's
end-of-input markers (issue 30) make the worker release every event and finish every stage, as
the replay does at its end. Bad events are dead-lettered, none is late."""

from __future__ import annotations

import csv
import gzip
import math
import signal
import subprocess
import sys
import time
from typing import Any

import jsonschema
import orjson
import pytest

from models.formats.jobsource import iter_job_events, sort_events
from streams.codecs.control import is_marker
from streams.format import format_rows
from streams.sinks.points import MEASUREMENTS
from streams.tables import Table
from streams.tables.jobs import (
    CAPABILITY_DAILY,
    FAIRSHARE_USAGE,
    RELEASE_FORECAST,
    RUNTIME_PREDICTIONS,
    SHORTJOBS,
    TURNOVER,
    USAGE_DAILY,
)
from streams.topics import TOPICS
from tests.golden.make_golden import DATA
from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live

pytestmark = pytest.mark.integration
KTH = DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def _watermark(live: Live, lateness: float = 600) -> float:
    """The watermark the merger would reach from the events alone (no markers): the lowest
    over the partitions of their latest event time, minus the lateness (read back from
    job-events: each event's partition; markers left out)."""
    latest: dict[int, float] = {}
    for _, v, part in read_topic(live.stack.kafka_bootstrap, live.prefix + "job-events"):
        if is_marker(v):
            continue
        for line in v.split(b"\n"):  # batches of JSON lines
            ts = orjson.loads(line)["ts"] if line.startswith(b"{") else None
            if isinstance(ts, float | int) and ts < 2e9:
                latest[part] = max(latest.get(part, ts), ts)
    return min(latest.values()) - lateness


def _replay(live: Live, wm: float = math.inf) -> dict[str, list[list[str]]]:
    """``drainwatch replay`` (the CLI) over the events the live merger can have released:
    every event up to the watermark (all, after the end of input), as a job-events file; its
    CSV rows by file."""
    events = sort_events(iter_job_events("swf", gzip.open(KTH, "rb")))
    path = live.tmp / "released.jsonl"
    path.write_bytes(b"".join(e.to_json() + b"\n" for e in events if e.ts <= wm))
    out = live.tmp / "replay"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "replay",
            "--format",
            "jobevents",
            "--out",
            str(out),
            "--section-nodes",
            "100",
            "--max-jump",
            "0",
            "--no-progress",
            str(path),
        ],
        env=live.env,
        check=True,
        capture_output=True,
    )
    return {
        t.file: [r[:] for r in list(csv.reader((out / t.file).open()))[1:]]
        for t in (
            SHORTJOBS,
            USAGE_DAILY,
            TURNOVER,
            RUNTIME_PREDICTIONS,
            CAPABILITY_DAILY,
            FAIRSHARE_USAGE,
            RELEASE_FORECAST,
        )
    }


def _topic_rows(live: Live, topic: str, key: Any) -> dict[Any, dict[str, Any]]:
    """A metric topic's messages by ``key(message)``: a re-sent row is the same row."""
    out: dict[Any, dict[str, Any]] = {}
    for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + topic):
        d = orjson.loads(v)
        assert out.setdefault(key(d), d) == d, key(d)  # a re-sent row never differs
    return out


def _short_key(d: dict[str, Any]) -> tuple[Any, ...]:
    return (d["ts_s"], d["holder_kind"], d["holder"])


def _influx_rows(live: Live, table: Table) -> list[list[str]]:
    """A measurement's points back as the table's formatted rows (what the CSV would say)."""
    m = MEASUREMENTS[table.file]
    tags = dict(m.rename)
    out = []
    for p in live.influx.influxql(f'SELECT * FROM "{m.name}"'):
        t = (p["time"] // 1_000_000) / 1000  # epoch=ns; below the ms: a per-job offset
        row = []
        for c in table.columns:
            if c.name == m.time:
                row.append(
                    p["day"]
                    if c.kind == "day"
                    else round(t * 1000)
                    if c.kind == "instant_ms"
                    else t
                )
            elif c.kind == "seconds_ms":
                v = p.get(c.name)
                row.append(None if v is None else round(v * 1000))
            elif c.kind in ("instant", "instant_ms"):  # another time: a seconds field
                v = p.get(c.name + "_s")
                row.append(v if v is None or c.kind == "instant" else round(v * 1000))
            else:
                v = p.get(tags.get(c.name, c.name))
                row.append(None if v == "" else v)
        out += format_rows(table, [row])
    return sorted(out)


def _live_rows(live: Live) -> dict[str, list[list[str]]]:
    """The job tables' rows in InfluxDB by replay file (usage without its resource column),
    and the short-job and capability metric topics' rows."""
    tables = (
        SHORTJOBS,
        RUNTIME_PREDICTIONS,
        RELEASE_FORECAST,
        CAPABILITY_DAILY,
        FAIRSHARE_USAGE,
        TURNOVER,
    )
    out = {t.file: _influx_rows(live, t) for t in tables}
    out[USAGE_DAILY.file] = sorted(r[:1] + r[2:] for r in _influx_rows(live, USAGE_DAILY))
    short = _topic_rows(live, "metrics.shortjobs", _short_key).values()
    cols = ("ts_s", "holder_kind", "holder", "n_short", "penalty_seconds", "adjust")
    rows = [[d[c] for c in cols] for d in short]
    out["metrics.shortjobs"] = sorted(format_rows(SHORTJOBS, rows))
    caps = _topic_rows(live, "metrics.capability", lambda d: d["day"]).values()
    rows = [[d[c] for c in CAPABILITY_DAILY.names] for d in caps]
    out["metrics.capability"] = sorted(format_rows(CAPABILITY_DAILY, rows))
    return out


def _ship_jobs(live: Live, *args: str) -> subprocess.Popen[bytes]:
    log = open(live.tmp / "ship-jobs.log", "ab")  # noqa: SIM115
    p = subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "ship", "jobs", *args],
        env=live.env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    live.procs.append(p)
    return p


@pytest.mark.skipif(not KTH.exists(), reason=f"{KTH} (public test data) absent")
def test_live_job_analytics_equal_the_replay_through_a_kill(live: Live) -> None:
    live.env["DRAINWATCH_LIVE_JOBS"] = "on"
    live.env["DRAINWATCH_SECTION_NODES"] = "100"  # KTH's MaxNodes, what the replay uses
    live.env["DRAINWATCH_ADJUST_OUT"] = str(live.tmp / "hook" / "adjust.tsv")
    w = live.worker()
    garbage = [
        b"not json",
        b'{"type": "end", "ts": "soon", "job": "x"}',
        b'{"type": "end", "ts": 99999999999, "job": "far"}',
    ]
    live.produce("job-events", garbage, partition=0)
    ship = _ship_jobs(live, "--format", "swf", str(KTH), "--no-progress")
    time.sleep(4)  # the worker is in the middle of the trace: kill it
    w.send_signal(signal.SIGKILL)
    w.wait(10)
    assert ship.wait(180) == 0, (live.tmp / "ship-jobs.log").read_text()
    w = live.worker()
    want = {f: sorted(rows) for f, rows in _replay(live).items()}  # the whole file
    # usage: the resource is the cluster live, the file stem in the replay
    want[USAGE_DAILY.file] = sorted(r[:1] + r[2:] for r in want[USAGE_DAILY.file])
    want["metrics.shortjobs"] = want[SHORTJOBS.file]
    want["metrics.capability"] = want[CAPABILITY_DAILY.file]

    # every table the replay writes, once the end of input released all and finished the
    # stages: InfluxDB's rows and the metric topics'
    deadline = time.monotonic() + 300
    while True:
        got = _live_rows(live)
        if got == want or time.monotonic() > deadline:
            break
        assert w.poll() is None, "the worker stopped"
        time.sleep(3)
    for f, rows in want.items():
        assert got[f] == rows, f
    assert len(want[SHORTJOBS.file]) > 20_000 and len(want[USAGE_DAILY.file]) > 300
    assert len(want[RUNTIME_PREDICTIONS.file]) > 25_000 and len(want[TURNOVER.file]) > 7000
    assert len(want[RELEASE_FORECAST.file]) > 25_000 and len(want[FAIRSHARE_USAGE.file]) > 1000
    assert live.metrics().get('drainwatch_watermark_lag_seconds{family="jobs"}') == 0.0

    # the scheduler hook's file: the lookup table at the last closed tick
    hook = (live.tmp / "hook" / "adjust.tsv").read_text()
    assert hook.count("\n") >= 1 and all(len(line.split("\t")) == 3 for line in hook.splitlines())

    for topic in ("metrics.shortjobs", "metrics.capability"):
        schema = jsonschema.Draft202012Validator(next(t.schema for t in TOPICS if t.name == topic))
        for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + topic)[:500]:
            schema.validate(orjson.loads(v))
    dead = [
        orjson.loads(v)
        for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "dead-letter")
    ]
    # the three bad messages are the first of partition 0; at least once, a dead letter can
    # come twice (again after the restart), at the same place
    reasons = sorted(
        {
            (d["partition"], d["offset"]): d["reason"]
            for d in dead
            if d["source"] == "job-events" and d["partition"] == 0 and d["offset"] < 3
        }.values()
    )
    assert reasons == ["bad_json", "bad_ts", "implausible_time"]
    assert not [d for d in dead if d["reason"] == "late"]  # every partition is waited for
