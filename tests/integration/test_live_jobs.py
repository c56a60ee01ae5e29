"""The live job-events path: the KTH trace shipped through Kafka, with the worker killed with
-9 in the middle and restarted, gives in InfluxDB and on the metric topics exactly the rows
``drainwatch replay`` writes for the events the worker has released (usage, short-job
penalties, run-time predictions, turnover, capability, fair share), and bad events are
dead-lettered."""

from __future__ import annotations

import csv
import gzip
import signal
import subprocess
import sys
import time
from datetime import datetime
from typing import Any

import jsonschema
import orjson
import pytest

from models.formats.jobsource import iter_job_events, sort_events
from streams.format import format_rows
from streams.sinks.jobpoints import MEASUREMENTS
from streams.stages.jobs import (
    CAPABILITY_DAILY,
    FAIRSHARE_USAGE,
    RELEASE_FORECAST,
    RUNTIME_PREDICTIONS,
    SHORTJOBS,
    TURNOVER,
    USAGE_DAILY,
)
from streams.tables import Table
from streams.topics import TOPICS
from tests.golden.make_golden import DATA
from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live

pytestmark = pytest.mark.integration
KTH = DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def _watermark(live: Live, lateness: float = 600) -> float:
    """The live merger's final watermark: the lowest over the partitions of their latest
    event time, minus the lateness (read back from job-events: each event's partition)."""
    latest: dict[int, float] = {}
    for _, v, part in read_topic(live.stack.kafka_bootstrap, live.prefix + "job-events"):
        for line in v.split(b"\n"):  # batches of JSON lines
            ts = orjson.loads(line)["ts"] if line.startswith(b"{") else None
            if isinstance(ts, float | int) and ts < 2e9:
                latest[part] = max(latest.get(part, ts), ts)
    return min(latest.values()) - lateness


def _replay(live: Live, wm: float) -> dict[str, list[list[str]]]:
    """``drainwatch replay`` (the CLI) over the events the live merger can have released:
    every event up to the watermark, as a job-events file; its CSV rows by file."""
    events = sort_events(iter_job_events("swf", gzip.open(KTH, "rb")))
    path = live.tmp / "released.jsonl"
    path.write_bytes(b"".join(e.to_json() + b"\n" for e in events if e.ts <= wm))
    out = live.tmp / "replay"
    subprocess.run([sys.executable, "-m", "streams.cli", "replay", "--format", "jobevents",
                    "--out", str(out), "--section-nodes", "100", "--max-jump", "0",
                    "--no-progress", str(path)], env=live.env, check=True,
                   capture_output=True)  # fmt: skip
    return {t.file: [r[:] for r in list(csv.reader((out / t.file).open()))[1:]]
            for t in (SHORTJOBS, USAGE_DAILY, TURNOVER, RUNTIME_PREDICTIONS, CAPABILITY_DAILY,
                      FAIRSHARE_USAGE, RELEASE_FORECAST)}  # fmt: skip


def _released_events(live: Live) -> list[Any]:
    """The events of released.jsonl (what the live merger released, as _replay wrote it)."""
    with open(live.tmp / "released.jsonl", "rb") as f:
        return list(iter_job_events("jobevents", f))


def _instant_s(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


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
                row.append(p["day"] if c.kind == "day" else
                           round(t * 1000) if c.kind == "instant_ms" else t)  # fmt: skip
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


def _ship_jobs(live: Live, *args: str) -> subprocess.Popen[bytes]:
    log = open(live.tmp / "ship-jobs.log", "ab")  # noqa: SIM115
    p = subprocess.Popen([sys.executable, "-m", "streams.cli", "ship", "jobs", *args],
                         env=live.env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    live.procs.append(p)
    return p


def test_live_job_analytics_equal_the_replay_through_a_kill(live: Live) -> None:
    live.env["DRAINWATCH_LIVE_JOBS"] = "on"
    live.env["DRAINWATCH_SECTION_NODES"] = "100"  # KTH's MaxNodes, what the replay uses
    live.env["DRAINWATCH_ADJUST_OUT"] = str(live.tmp / "hook" / "adjust.tsv")
    w = live.worker()
    garbage = [b"not json", b'{"type": "end", "ts": "soon", "job": "x"}',
               b'{"type": "end", "ts": 99999999999, "job": "far"}']  # fmt: skip
    live.produce("job-events", garbage, partition=0)
    ship = _ship_jobs(live, "--format", "swf", str(KTH), "--no-progress")
    time.sleep(4)  # the worker is in the middle of the trace: kill it
    w.send_signal(signal.SIGKILL)
    w.wait(10)
    assert ship.wait(180) == 0, (live.tmp / "ship-jobs.log").read_text()
    w = live.worker()
    want = _replay(live, _watermark(live))

    # short-job ticks: every tick the watermark closed (the replay's last, open tick is not)
    short = {tuple(r[:3]) for r in want[SHORTJOBS.file]}
    last_tick = max(r[0] for r in want[SHORTJOBS.file])
    closed = sorted(r for r in want[SHORTJOBS.file] if r[0] != last_tick)
    assert len(closed) > 20_000
    deadline = time.monotonic() + 240
    while True:
        got_short = _topic_rows(live, "metrics.shortjobs", _short_key)
        cols = ("ts_s", "holder_kind", "holder", "n_short", "penalty_seconds", "adjust")
        rows = sorted(format_rows(SHORTJOBS, [[d[c] for c in cols] for d in got_short.values()]))
        if rows[: len(closed)] == closed or time.monotonic() > deadline:
            break
        assert w.poll() is None, "the worker stopped"
        time.sleep(3)
    assert [r for r in rows if r[0] != last_tick] == closed
    assert all(tuple(r[:3]) in short for r in rows)
    assert _influx_rows(live, SHORTJOBS) == rows

    # usage: every day, final (the jobs that ran on a day have all ended by the watermark's
    # last release); the resource is the cluster live, the file stem in the replay
    usage = _influx_rows(live, USAGE_DAILY)
    assert [r[:1] + r[2:] for r in usage] == [r[:1] + r[2:] for r in want[USAGE_DAILY.file]]
    assert len(usage) > 300
    # run-time predictions: every ended job
    runtime = _influx_rows(live, RUNTIME_PREDICTIONS)
    assert runtime == sorted(want[RUNTIME_PREDICTIONS.file])
    assert len(runtime) > 25_000
    # node-release forecasts (seed 001 Fig. 9): the rows the worker wrote at each submit,
    # overwritten step by step at the start (or the end of a job cancelled while pending), are
    # the replay's, which writes a job still pending at the watermark at its end of input
    forecast = _influx_rows(live, RELEASE_FORECAST)
    assert forecast == sorted(want[RELEASE_FORECAST.file])
    assert len(forecast) > 25_000
    # turnover windows, capability and fair-share days: the replay's rows but the last few,
    # which its end of input closed (days with jobs still running, the windows after the
    # last event)
    caps = _topic_rows(live, "metrics.capability", lambda d: d["day"])
    cap_rows = sorted(format_rows(CAPABILITY_DAILY, [[d[c] for c in CAPABILITY_DAILY.names]
                                               for d in caps.values()]))  # fmt: skip
    assert _influx_rows(live, CAPABILITY_DAILY) == cap_rows
    fair = _influx_rows(live, FAIRSHARE_USAGE)
    turnover = _influx_rows(live, TURNOVER)
    for got, table in ((cap_rows, CAPABILITY_DAILY), (fair, FAIRSHARE_USAGE), (turnover, TURNOVER)):
        replayed = sorted(want[table.file])
        assert got == replayed[: len(got)], table.file
        left = {r[0] for r in replayed[len(got) :]}  # days, or window starts
        if table is TURNOVER:  # the windows the replay's end of input closed: those a gap of
            # up to --turnover-max-gap (1 h) before the last event could still refill, and the
            # rest of its day
            last = max(e.ts for e in _released_events(live))
            assert all(_instant_s(t) + 3600 > last - 3600 for t in left), sorted(left)[:3]
        else:
            assert len(left) <= 3, (table.file, sorted(left))
    assert len(cap_rows) > 300 and len(fair) > 1000 and len(turnover) > 7000

    # the scheduler hook's file: the lookup table at the last closed tick
    hook = (live.tmp / "hook" / "adjust.tsv").read_text()
    assert hook.count("\n") >= 1 and all(len(line.split("\t")) == 3 for line in hook.splitlines())

    for topic in ("metrics.shortjobs", "metrics.capability"):
        schema = jsonschema.Draft202012Validator(next(t.schema for t in TOPICS
                                                      if t.name == topic))  # fmt: skip
        for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + topic)[:500]:
            schema.validate(orjson.loads(v))
    dead = [orjson.loads(v) for _, v, _ in read_topic(live.stack.kafka_bootstrap,
                                                      live.prefix + "dead-letter")]  # fmt: skip
    # the three bad messages are the first of partition 0; at least once, a dead letter can
    # come twice (again after the restart), at the same place
    reasons = sorted({(d["partition"], d["offset"]): d["reason"] for d in dead
                      if d["source"] == "job-events" and d["partition"] == 0
                      and d["offset"] < 3}.values())  # fmt: skip
    assert reasons == ["bad_json", "bad_ts", "implausible_time"]
    assert not [d for d in dead if d["reason"] == "late"]  # every partition is waited for
