"""The live node-samples path: a generated samples trace (64 nodes, 8 jobs, two write bursts)
shipped through Kafka gives in InfluxDB and on metrics.dfs exactly the DFS minutes and the
hot-zone episodes ``drainwatch replay --format samples`` writes, the hot-zone alert fires and
resolves once for the long burst and not for the short one, and bad lines are dead-lettered
with the good samples around them kept."""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from models.formats.sampletrace import dumps
from models.records.nodesample import NodeSample
from streams.format import format_rows
from streams.tables.samples import (
    DFS_MINUTELY,
    DFS_MINUTELY_FS,
    HOT_ZONES,
    HOT_ZONES_FS,
    JOB_UTILIZATION,
)
from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live
from tests.integration.test_live_jobs import _influx_rows

pytestmark = pytest.mark.integration
T0 = 1_700_000_040.0  # a minute boundary
MB = 1_000_000


def _trace(path: Path) -> Path:
    """64 nodes, job J<k> on nodes 8k..8k+7, one process each, a sample a minute for two
    hours (J0-J3: one hour). Every node writes 0.5 MB/s (32 MB/s in all); J1 writes 15 MB/s a
    node in minutes 30-39 (152.5 MB/s: a 10-minute hot zone), J5 and J6 7 MB/s in minutes
    70-72 (a 3-minute one). Per file system (speeds, as LLview gives them): ``scratch`` takes
    those writes, ``home`` 0.1 MB/s a node."""
    lines = []
    for n in range(64):
        job = f"J{n // 8}"
        written = 0
        for m in range(120 if n >= 32 else 60):  # J0-J3 end after an hour
            rate = 0.5
            if job == "J1" and 30 <= m < 40 or job in ("J5", "J6") and 70 <= m < 73:
                rate = 15.0 if job == "J1" else 7.0
            written += round(rate * MB * 60)
            s = NodeSample(
                T0 + 60 * m + (n % 7) * 0.5,
                job,
                1000 + n,
                f"n{n:03d}",
                "app",
                1,
                1,
                1_000_000 + 1000 * n + m,
                0,
                0,
                0,
                0,
                written,
                25.0 + n + (m % 5) * 10,
                0,
                0,
                start=T0 - 3600.0,
                cores=4,
                fs_rates=(("home", 0.1, 0.2), ("scratch", rate, 0.0)),
            )
            lines.append(dumps(s))
    lines.insert(500, b'{"ts": "later", "job": "J0"}')  # one bad line among the good ones
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_live_dfs_and_hot_zones_equal_the_replay(live: Live) -> None:
    live.env.update(
        {
            "DRAINWATCH_LIVE_SAMPLES": "on",
            "DRAINWATCH_LATENESS": "120",
            "DRAINWATCH_MEM_PER_CORE": "6",
            "DRAINWATCH_ALERT_HOT_ZONE_FS": "scratch=100MB/s",
        }
    )
    trace = _trace(live.tmp / "samples.jsonl")
    out = live.tmp / "replay"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "replay",
            "--format",
            "samples",
            str(trace),
            "--out",
            str(out),
            "--hot-zone",
            "93MB/s",
            "--hot-zone-fs",
            "scratch=100MB/s",
            "--mem-per-core",
            "6",
            "--no-progress",
        ],
        env=live.env,
        check=True,
        capture_output=True,
    )
    want_minutes = list(csv.reader((out / DFS_MINUTELY.file).open()))[1:]
    want_zones = list(csv.reader((out / HOT_ZONES.file).open()))[1:]
    assert len(want_minutes) == 120 and len(want_zones) == 2

    w = live.worker()
    live.produce("node-samples", [b"garbage, not a sample"], partition=0)
    p = subprocess.run(
        [sys.executable, "-m", "streams.cli", "ship", "sample-files", str(trace)],
        env=live.env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "5,760 samples" in p.stderr and "1 dead letters" in p.stderr
    # the shipper's end of input: every minute final, all of them the replay's
    deadline = time.monotonic() + 90
    while True:
        got = _influx_rows(live, DFS_MINUTELY)
        if len(got) >= 120 or time.monotonic() > deadline:
            break
        assert w.poll() is None, "the worker stopped"
        time.sleep(1)
    assert got == sorted(want_minutes)  # exactly the replay's numbers
    assert _influx_rows(live, HOT_ZONES) == sorted(want_zones)
    # per file system: the final minutes and episodes are the replay's (scratch: 100 MB/s)
    want_fs = sorted(list(csv.reader((out / DFS_MINUTELY_FS.file).open()))[1:])
    got_fs = _influx_rows(live, DFS_MINUTELY_FS)
    assert len(want_fs) == 240 and got_fs == want_fs
    want_fs_zones = sorted(list(csv.reader((out / HOT_ZONES_FS.file).open()))[1:])
    assert [r[0] for r in want_fs_zones] == ["scratch", "scratch"]
    assert _influx_rows(live, HOT_ZONES_FS) == want_fs_zones
    # per-job utilisation: every job final at the end of input, the replay's rows
    util = {r[0]: r for r in _influx_rows(live, JOB_UTILIZATION)}
    want_util = {r[0]: r for r in csv.reader((out / JOB_UTILIZATION.file).open()) if r[0] != "job"}
    assert sorted(util) == sorted(want_util) == [f"J{k}" for k in range(8)]
    assert util == want_util
    last: dict[str, int] = {}  # the job is a field: its points share one series
    for pt in sorted(
        live.influx.influxql('SELECT "job", "final" FROM "job_util"'), key=lambda pt: pt["time"]
    ):
        last[pt["job"]] = pt["final"]
    assert last == {f"J{k}": 1 for k in range(8)}
    topic, topic_fs = {}, {}
    for key, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "metrics.dfs"):
        d = orjson.loads(v)
        if "fs" in d:
            assert key == f"{d['fs']}:{d['minute_ms']}".encode()
            topic_fs[key] = d
            continue
        assert key == str(d["minute_ms"]).encode()
        topic[d["minute_ms"]] = d
    assert len(topic_fs) == len(got_fs)
    assert (
        sorted(
            format_rows(
                DFS_MINUTELY,
                [
                    [d[c] for c in ("minute_ms", "write_mb_s", "read_mb_s", "jobs_writing")]
                    for d in topic.values()
                ],
            )
        )
        == got
    )

    alerts = [
        orjson.loads(v)
        for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "alerts")
    ]
    states = [(a["id"], a["state"], a["since"], a["at"]) for a in alerts]
    start = T0 + 30 * 60
    assert sorted(set(states)) == [
        ("hot_zone:dfs", "firing", start, start + 5 * 60),
        ("hot_zone:dfs", "resolved", start, start + 10 * 60),
        ("hot_zone:fs:scratch", "firing", start, start + 5 * 60),
        ("hot_zone:fs:scratch", "resolved", start, start + 10 * 60),
    ]
    firing = next(a for a in alerts if a["state"] == "firing" and a["subject"] == "dfs")
    assert firing["details"]["top_jobs"][0][0] == "J1" and firing["threshold"] == 93.0
    dead = [
        orjson.loads(v)
        for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "dead-letter")
    ]
    # the shipper's reject, and the worker's own: a garbage line in a sweep
    assert {(d["source"], d["reason"]) for d in dead} == {
        ("node-samples", "bad_json"),
        (str(trace), "missing_field"),
    }


def _ship_samples(live: Live, path: Path, *more: str) -> None:
    cmd = [sys.executable, "-m", "streams.cli", "ship", "sample-files", str(path), *more]
    p = subprocess.run(cmd, env=live.env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_live_samples_through_a_kill_equal_the_replay(live: Live) -> None:
    # the worker is killed (-9) while it works through the first 45 minutes, the rest is
    # shipped while it is down; a new worker resumes from the saved state and the committed
    # offsets: the final rows are the replay's, and a consumer reading alerts by id sees each
    # state change once (re-sent records are identical)
    live.env.update(
        {
            "DRAINWATCH_LIVE_SAMPLES": "on",
            "DRAINWATCH_LATENESS": "120",
            "DRAINWATCH_MEM_PER_CORE": "6",
            "DRAINWATCH_CHECKPOINT_INTERVAL": "1",
            "DRAINWATCH_FLUSH_INTERVAL": "0.5",
            "DRAINWATCH_ALERT_HOT_ZONE_FS": "scratch=100MB/s",
        }
    )
    trace = _trace(live.tmp / "samples.jsonl")
    lines = trace.read_bytes().splitlines()

    def early(line: bytes) -> bool:
        ts = orjson.loads(line).get("ts")
        return isinstance(ts, float) and ts < T0 + 45 * 60

    part1, part2 = live.tmp / "part1.jsonl", live.tmp / "part2.jsonl"
    part1.write_bytes(b"".join(ln + b"\n" for ln in lines if early(ln)))
    part2.write_bytes(b"".join(ln + b"\n" for ln in lines if not early(ln)))
    out = live.tmp / "replay"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "replay",
            "--format",
            "samples",
            str(trace),
            "--out",
            str(out),
            "--hot-zone",
            "93MB/s",
            "--hot-zone-fs",
            "scratch=100MB/s",
            "--mem-per-core",
            "6",
            "--no-progress",
        ],
        env=live.env,
        check=True,
        capture_output=True,
    )

    w = live.worker()
    _ship_samples(live, part1, "--no-markers")  # the rest, and its end, in a second run
    deadline = time.monotonic() + 60
    while len(_influx_rows(live, DFS_MINUTELY)) < 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    w.send_signal(signal.SIGKILL)
    w.wait(10)
    killed_at = len(_influx_rows(live, DFS_MINUTELY))
    assert 20 <= killed_at < 117
    _ship_samples(live, part2)
    w = live.worker()
    deadline = time.monotonic() + 90
    while len(got := _influx_rows(live, DFS_MINUTELY)) < 120 and time.monotonic() < deadline:
        assert w.poll() is None, "the worker stopped"
        time.sleep(1)
    want = sorted(list(csv.reader((out / DFS_MINUTELY.file).open()))[1:])
    assert got == want  # the second run's end of input: every minute final
    assert _influx_rows(live, HOT_ZONES) == sorted(
        list(csv.reader((out / HOT_ZONES.file).open()))[1:]
    )
    want_fs = sorted(list(csv.reader((out / DFS_MINUTELY_FS.file).open()))[1:])
    assert _influx_rows(live, DFS_MINUTELY_FS) == [r for r in want_fs if r[1] <= got[-1][0]]
    want_fz = sorted(list(csv.reader((out / HOT_ZONES_FS.file).open()))[1:])
    assert _influx_rows(live, HOT_ZONES_FS) == want_fz
    util = {r[0]: r for r in _influx_rows(live, JOB_UTILIZATION)}
    want_util = {r[0]: r for r in csv.reader((out / JOB_UTILIZATION.file).open()) if r[0] != "job"}
    for job in ("J0", "J1", "J2", "J3"):  # ended an hour in: final
        assert util[job] == want_util[job], job

    alerts = [
        orjson.loads(v)
        for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "alerts")
    ]
    changes: dict[tuple[str, str], bytes] = {}
    for a in alerts:  # a re-sent change is the same record
        rec = orjson.dumps(a, option=orjson.OPT_SORT_KEYS)
        assert changes.setdefault((a["id"], a["state"]), rec) == rec
    start = T0 + 30 * 60
    assert sorted((i, s, orjson.loads(r)["at"]) for (i, s), r in changes.items()) == [
        ("hot_zone:dfs", "firing", start + 5 * 60),
        ("hot_zone:dfs", "resolved", start + 10 * 60),
        ("hot_zone:fs:scratch", "firing", start + 5 * 60),
        ("hot_zone:fs:scratch", "resolved", start + 10 * 60),
    ]
