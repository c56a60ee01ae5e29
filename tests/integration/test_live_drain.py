"""The live drain pipeline on the real stack: shipper -> Kafka -> worker -> InfluxDB and metric
topics give exactly the numbers `drainwatch replay` gives on the same log, with garbage in the
topic, and with the worker, a second worker, the shipper, the broker and InfluxDB failing in
the middle."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from streams.topics import TOPICS
from tests.integration.kafka_read import read_topic
from tests.paths import REPO

DAY_FIELDS = (
    "accounted_node_seconds",
    "drain_node_seconds",
    "unallocated_idle_node_seconds",
    "down_node_seconds",
    "unaccounted_node_seconds",
    "drain_pct_static",
    "drain_pct_dynamic",
    "basis_seconds_per_node",
)
SCHEMAS = {t.name: t.schema for t in TOPICS}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "streams.cli", *args]


@pytest.fixture(scope="module")
def simlog(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One simulated day on 500 nodes, and the replay's reports of it."""
    d = tmp_path_factory.mktemp("live")
    subprocess.run(
        _cli(
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            "500",
            "--days",
            "1",
            "--period",
            "60",
            "--seed",
            "0",
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


def _csv(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Live:
    """Workers and shippers of one test: own topic prefix, consumer group and database."""

    def __init__(self, stack: Any, influx: Any, tmp: Path) -> None:
        self.stack, self.influx, self.tmp = stack, influx, tmp
        tag = uuid.uuid4().hex[:8]
        self.prefix = f"t{tag}."
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "DRAINWATCH_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
            "DRAINWATCH_TOPIC_PREFIX": self.prefix,
            "DRAINWATCH_INFLUX_URL": influx.url,
            "DRAINWATCH_INFLUX_TOKEN_FILE": stack.env["DRAINWATCH_INFLUX_TOKEN_FILE"],
            "DRAINWATCH_INFLUX_ORG": influx.org,
            "DRAINWATCH_INFLUX_BUCKET": influx.bucket,
            "DRAINWATCH_INFLUX_DATABASE": influx.database,
            "DRAINWATCH_TZ": "UTC",
            "DRAINWATCH_STATE_DIR": str(tmp / "state"),
            "DRAINWATCH_BROKER_SESSION_TIMEOUT": "10",
            "DRAINWATCH_BROKER_REBALANCE_TIMEOUT": "10",
            "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL": "1",
            "DRAINWATCH_CHECKPOINT_INTERVAL": "1",
            "DRAINWATCH_FLUSH_INTERVAL": "1",
            "DRAINWATCH_LOG_LEVEL": "warning",
        }
        self.group = f"g{tag}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port = 16100 + int(tag, 16) % 800

    def worker(self, n: int = 0) -> subprocess.Popen[bytes]:
        env = {**self.env, "DRAINWATCH_WEB_PORT": str(self.port + n)}
        log = open(self.tmp / f"worker{n}-{len(self.procs)}.log", "ab")  # noqa: SIM115
        p = subprocess.Popen(
            _cli("worker", "--group", self.group), env=env, stdout=log, stderr=subprocess.STDOUT
        )
        self.procs.append(p)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert p.poll() is None, (self.tmp / f"worker{n}-{len(self.procs) - 1}.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port + n}/health/", timeout=1):
                    return p
            except OSError:
                time.sleep(0.3)
        raise AssertionError("worker did not answer /health/ within 60 s")

    def metrics(self, n: int = 0) -> dict[str, float]:
        url = f"http://127.0.0.1:{self.port + n}/metrics"
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode()
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def ship(self, *args: str, wait: bool = True) -> subprocess.Popen[bytes]:
        log = open(self.tmp / "ship.log", "ab")  # noqa: SIM115
        p = subprocess.Popen(
            _cli("ship", "moab", *args), env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        self.procs.append(p)
        if wait:
            assert p.wait(120) == 0, (self.tmp / "ship.log").read_text()
        return p

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()

    def produce(self, topic: str, values: list[bytes], partition: int = 0) -> None:
        async def go() -> None:
            from aiokafka import AIOKafkaProducer

            prod = AIOKafkaProducer(bootstrap_servers=self.stack.kafka_bootstrap)
            await prod.start()
            try:
                for v in values:
                    await (await prod.send(self.prefix + topic, v, partition=partition))
            finally:
                await prod.stop()

        asyncio.run(go())

    def produce_keyed(self, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
        """(key, value) messages to ``topic``'s partition 0 (a one-partition topic's only)."""

        async def go() -> None:
            from aiokafka import AIOKafkaProducer

            prod = AIOKafkaProducer(bootstrap_servers=self.stack.kafka_bootstrap)
            await prod.start()
            try:
                for k, v in messages:
                    await (await prod.send(self.prefix + topic, v, key=k, partition=0))
            finally:
                await prod.stop()

        asyncio.run(go())

    def consume(self, topic: str) -> list[tuple[bytes | None, bytes]]:
        return [(k, v) for k, v, _ in read_topic(self.stack.kafka_bootstrap, self.prefix + topic)]

    def wait_equal(self, replay: Path, timeout: float = 120) -> None:
        """Until InfluxDB holds the replay's day, hour and job numbers (or fail, showing why)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                check_influx(self.influx, replay)
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)


def _close(a: float | None, b: str) -> bool:
    if b == "":
        return a is None
    return a is not None and math.isclose(a, float(b), rel_tol=1e-9, abs_tol=1e-9)


def _ms(iso: str) -> int:
    from datetime import datetime

    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def check_influx(influx: Any, replay: Path) -> None:
    for unit, csv, key in (("day", "drain_daily.csv", "day"), ("hour", "drain_hourly.csv", "hour")):
        rows = influx.influxql(f"SELECT * FROM drain WHERE \"window\"='{unit}'")
        expect = _csv(replay / csv)
        assert len(rows) == len(expect), (unit, len(rows), len(expect))
        for r, e in zip(rows, expect, strict=True):
            if key == "hour":
                assert r["time"] == _ms(e["hour"]) * 1_000_000, (r["time"], e["hour"])
            for f in DAY_FIELDS:
                col = f if f in e else f
                assert _close(r.get(f), e[col]), (unit, r["time"], f, r.get(f), e[col])
            assert r["data_quality"] == e["data_quality"]
    # node-state breakdown: the day windows add up to node_states.csv summed over the nodes
    expect_states: dict[tuple[str, str, str], float] = {}
    for e in _csv(replay / "node_states.csv"):
        k = (e["state"], e["has_rsv"], e["has_job"])
        expect_states[k] = expect_states.get(k, 0.0) + float(e["seconds"])
    got_states: dict[tuple[str, str, str], float] = {}
    for r in influx.influxql("SELECT * FROM node_states WHERE \"window\"='day'"):
        k = (r["state"], r["has_rsv"], r["has_job"])
        got_states[k] = got_states.get(k, 0.0) + r["node_seconds"]
    assert set(got_states) == set(expect_states)
    for k, v in expect_states.items():
        assert math.isclose(got_states[k], v, rel_tol=1e-9), (k, got_states[k], v)
    jobs = influx.influxql("SELECT * FROM drain_job")  # one point per job: its first charge
    got = {j["job"]: j for j in jobs}
    assert len(got) == len(jobs)
    expect_jobs = _csv(replay / "drain_jobs.csv")
    assert expect_jobs, "the simulated day must drain for some job"
    assert set(got) == {e["job"] for e in expect_jobs}
    for e in expect_jobs:
        j = got[e["job"]]
        assert _close(j["drain_node_seconds"], e["drain_node_seconds"]), (e, j)
        assert j["nodes_charged"] == int(e["nodes_charged"])


def test_live_equals_replay_garbage_is_dead_lettered_and_messages_follow_schemas(
    live: Live, simlog: tuple[Path, Path]
) -> None:
    log, replay = simlog
    live.worker()
    good = orjson.loads(
        b'{"v":1,"source":"s","ts_ms":[1420070400000],"nodes":["zz"],'
        b'"node":[0],"states":["Idle"],"state":[0],"jobs":[],"rsv":[-1],'
        b'"run_row":[],"run_job":[]}'
    )
    garbage = [
        b"not json at all",
        b'{"v":1,"source":"s","ts_ms":[1,2',  # broken JSON
        orjson.dumps({**good, "node": ["0"]}),  # wrong type
        orjson.dumps({**good, "v": 7}),  # unknown version
        orjson.dumps({**good, "ts_ms": [13_569_465_600_000]}),  # year 2400
    ]
    live.produce("node-status", garbage, partition=0)
    live.ship(str(log), "--no-progress")
    live.wait_equal(replay)
    # the provisional flag: days and hours closed by the end of input are final
    last = max(
        r["time"] for r in live.influx.influxql("SELECT * FROM drain WHERE \"window\"='hour'")
    )
    open_rows = live.influx.influxql("SELECT * FROM drain WHERE provisional=true")
    assert all(r["window"] != "hour" or r["time"] == last for r in open_rows)

    dead = [orjson.loads(v) for _, v in live.consume("dead-letter")]
    assert sorted(d["reason"] for d in dead) == sorted(
        ["bad_json", "bad_json", "bad_message", "bad_version", "implausible_time"]
    )
    assert all(d["topic"] == live.prefix + "node-status" for d in dead)
    m = live.metrics()
    assert m["drainwatch_dead_letters_total"] == 5
    assert m["drainwatch_records_total"] == 720_000
    deadline = time.monotonic() + 25  # the pipeline measurement: every 10 s
    while True:
        rows = live.influx.influxql("SELECT last(records), last(dead_letters) FROM pipeline")
        if rows and rows[0]["last"] == 720_000 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert rows and rows[0]["last"] == 720_000 and rows[0]["last_1"] == 5

    # metric topics: latest value per key equals the replay; every message fits its schema
    by_key: dict[bytes | None, dict[str, Any]] = {}
    for topic in ("node-status", "metrics.drain", "metrics.jobs", "dead-letter", "drain-partials"):
        v = jsonschema.Draft202012Validator(SCHEMAS[topic])
        msgs = live.consume(topic)
        assert msgs, topic
        for k, raw in msgs:
            if topic == "node-status" and raw in garbage:
                continue
            doc = orjson.loads(raw)
            v.validate(doc)
            if topic == "metrics.drain":
                by_key[k] = doc
    for e in _csv(replay / "drain_daily.csv"):
        start = f"{e['day']}T00:00:00.000Z"
        (doc,) = [d for d in by_key.values() if d["window"] == "day" and d["start"] == start]
        for f in DAY_FIELDS:
            assert _close(doc[f], e[f]), (f, doc[f], e[f])
    jobs = {orjson.loads(v)["job"]: orjson.loads(v) for _, v in live.consume("metrics.jobs")}
    for e in _csv(replay / "drain_jobs.csv"):
        assert _close(jobs[e["job"]]["drain_node_seconds"], e["drain_node_seconds"])
        assert jobs[e["job"]]["first_charged"] == e["first_charged"]


def _pieces(log: Path, n: int) -> list[bytes]:
    lines = log.read_bytes().splitlines(keepends=True)
    step = -(-len(lines) // n)
    return [b"".join(lines[i : i + step]) for i in range(0, len(lines), step)]


def _wait_records(live: Live, at_least: int, n: int = 0, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if live.metrics(n).get("drainwatch_records_total", 0) >= at_least:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"worker {n} did not reach {at_least} records")


def test_same_totals_through_worker_shipper_broker_and_influxdb_failures(
    live: Live, simlog: tuple[Path, Path], stack: Any, tmp_path: Path
) -> None:
    log, replay = simlog
    pieces = _pieces(log, 12)
    followed = tmp_path / "moab.log"
    followed.write_bytes(b"")
    cp = str(tmp_path / "ship.checkpoint")
    w = live.worker()
    s = live.ship(str(followed), "--follow", "--checkpoint", cp, "--poll", "0.2", wait=False)
    sent = 0

    def append(i: int, path: Path = followed) -> None:
        nonlocal sent
        with open(path, "ab") as f:
            f.write(pieces[i])
        sent += pieces[i].count(b"\n")

    append(0)
    append(1)
    _wait_records(live, 1)
    w.kill()  # kill -9 mid-run: state since the last snapshot is lost, offsets were not acked
    w.wait()
    append(2)
    w = live.worker()
    append(3)
    w2 = live.worker(1)  # a second worker joins: partitions are handed over
    append(4)
    time.sleep(3)
    w2.send_signal(signal.SIGTERM)  # ... and leaves again
    w2.wait(30)
    append(5)
    time.sleep(1)
    s.kill()  # the shipper is killed -9 mid-file and restarted from its checkpoint
    s.wait()
    append(6)
    s = live.ship(str(followed), "--follow", "--checkpoint", cp, "--poll", "0.2", wait=False)
    time.sleep(2)
    followed.rename(tmp_path / "moab.log.1")  # rotation: rename, new file
    append(7, tmp_path / "moab.log.1")  # the last lines of the old file come after the rename
    followed.write_bytes(b"")
    append(8)
    time.sleep(2)
    stack.restart_kafka()  # the broker restarted in the middle
    append(9)
    time.sleep(3)
    stack.control.stop_influx(stack.config)  # InfluxDB down for a while
    append(10)
    time.sleep(8)
    stack.control.start_influx(stack.config)
    append(11)
    assert sent == sum(p.count(b"\n") for p in pieces)
    time.sleep(3)
    empty = tmp_path / "end.log"
    empty.write_bytes(b"")
    live.ship(str(empty), "--no-progress")  # end of input: what is held is accounted
    live.wait_equal(replay, timeout=180)
    m = live.metrics()
    assert m["drainwatch_dead_letters_total"] >= 0


def test_replay_influx_writes_the_live_measurements(
    stack: Any, influx: Any, simlog: tuple[Path, Path], tmp_path: Path
) -> None:
    log, replay = simlog
    env = {**Live(stack, influx, tmp_path).env}
    out = tmp_path / "out"
    p = subprocess.run(
        _cli(
            "replay", "--format", "moab", str(log), "--out", str(out), "--influx", "--no-progress"
        ),
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    check_influx(influx, replay)
    for f in ("drain_daily.csv", "drain_hourly.csv", "drain_jobs.csv"):
        assert (out / f).read_bytes() == (replay / f).read_bytes(), f
    minutes = influx.influxql("SELECT * FROM drain WHERE \"window\"='minute'")
    assert len(minutes) >= 1440
    hours = _csv(replay / "drain_hourly.csv")
    assert sum(m["drain_node_seconds"] for m in minutes) == pytest.approx(
        sum(float(h["drain_node_seconds"]) for h in hours), rel=1e-12
    )
    # provisional: exactly the windows that end after the last record
    last_ms = max(_ms(h["hour"]) for h in hours)
    for r in influx.influxql("SELECT * FROM drain WHERE provisional=true"):
        assert r["time"] // 1_000_000 + r["length_seconds"] * 1000 > last_ms
