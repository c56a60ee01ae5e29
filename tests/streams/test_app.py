"""The Faust app factory and `drainwatch worker`, unit and against the real local Kafka."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import faust
import pytest

from streams.app import AGENT_CONCURRENCY, create_app
from streams.config import Settings, load_settings
from streams.topics import topic_names

REPO = Path(__file__).resolve().parents[2]


def test_topic_names_from_prefix() -> None:
    t = topic_names("drainwatch.")
    assert t.all() == (
        "drainwatch.node-status",
        "drainwatch.job-events",
        "drainwatch.node-samples",
        "drainwatch.metrics.drain",
        "drainwatch.metrics.jobs",
        "drainwatch.metrics.shortjobs",
        "drainwatch.metrics.capability",
        "drainwatch.metrics.dfs",
        "drainwatch.alerts",
        "drainwatch.dead-letter",
        "drainwatch.drain-partials",
        "drainwatch.jobs-partials",
        "drainwatch.samples-partials",
        "drainwatch.worker-state",
    )
    assert topic_names("site-a.").dead_letter == "site-a.dead-letter"


def test_app_configuration_comes_from_settings(tmp_path: Path) -> None:
    s = load_settings(
        env={
            "DRAINWATCH_KAFKA_BOOTSTRAP": "k1:9092,k2:9093",
            "DRAINWATCH_WEB_PORT": "7123",
            "DRAINWATCH_STATE_DIR": str(tmp_path),
            "DRAINWATCH_BROKER_SESSION_TIMEOUT": "10",
            "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL": "1",
            "DRAINWATCH_TOPIC_PARTITIONS": "3",
            "DRAINWATCH_TOPIC_PREFIX": "x.",
        }
    )
    app = create_app(s, app_id="dw-test")
    conf = app.conf
    assert conf.id == "dw-test"
    assert [str(u) for u in conf.broker] == ["kafka://k1:9092", "kafka://k2:9093"]
    assert conf.web_port == 7123 and conf.web_bind == "127.0.0.1"
    assert str(conf.store) == "memory:"
    assert Path(conf.datadir) == tmp_path / "worker" / "dw-test"
    assert conf.broker_session_timeout == 10.0 and conf.broker_heartbeat_interval == 1.0
    assert conf.processing_guarantee.value == "at_least_once"
    assert conf.topic_partitions == 3 and conf.topic_replication_factor == 1
    topics = app.drainwatch_topics
    assert topics.node_status.get_topic_name() == "x.node-status"
    assert topics.metrics_drain.get_topic_name() == "x.metrics.drain"
    assert AGENT_CONCURRENCY == 1


def test_faust_environment_variables_do_not_override_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BROKER_URL", "kafka://elsewhere:1")
    monkeypatch.setenv("WEB_PORT", "9999")
    app = create_app(Settings())
    assert [str(u) for u in app.conf.broker] == ["kafka://127.0.0.1:19092"]
    assert app.conf.web_port == 6066


def test_app_gets_sasl_credentials() -> None:
    s = load_settings(
        env={
            "DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "DRAINWATCH_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
            "DRAINWATCH_KAFKA_SASL_USERNAME": "dw",
            "DRAINWATCH_KAFKA_SASL_PASSWORD": "pw",
        }
    )
    creds = create_app(s).conf.broker_credentials
    assert isinstance(creds, faust.SASLCredentials)
    assert creds.username == "dw" and creds.mechanism.value == "SCRAM-SHA-256"


def test_worker_print_settings_masks_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["DRAINWATCH_INFLUX_TOKEN"] = "very-secret-token"
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", "worker", "--print-settings"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "influx_token = '***'" in r.stdout and "very-secret-token" not in r.stdout


def test_worker_config_error_exits_2_naming_the_key() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["DRAINWATCH_MAX_GAP"] = "soon"
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", "worker"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "DRAINWATCH_MAX_GAP" in r.stderr


# --- against the real local broker -------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _local_settings(kafka_bootstrap: str, prefix: str, state: Path, port: int) -> dict[str, str]:
    return {
        "DRAINWATCH_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "DRAINWATCH_TOPIC_PREFIX": prefix,
        "DRAINWATCH_TOPIC_PARTITIONS": "1",
        "DRAINWATCH_STATE_DIR": str(state),
        "DRAINWATCH_WEB_PORT": str(port),
        "DRAINWATCH_BROKER_SESSION_TIMEOUT": "10",
        "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL": "1",
        "DRAINWATCH_BROKER_REBALANCE_TIMEOUT": "10",
    }


@pytest.mark.integration
async def test_round_trip_through_app_topic(
    kafka_bootstrap: str, topic_name: str, tmp_path: Path
) -> None:
    """The app's producer (from settings) writes to its topic; aiokafka reads it back."""
    from aiokafka import AIOKafkaConsumer

    s = load_settings(
        env=_local_settings(kafka_bootstrap, f"{topic_name}.", tmp_path, _free_port())
    )
    app = create_app(s, app_id=f"{topic_name}-app")
    app.loop = asyncio.get_running_loop()
    app.finalize()
    topic = app.drainwatch_topics.node_status
    payload = b'{"ts":"2014-12-31T06:03:19.696Z","nodes":[["27453","Idle",["1292428"],[]]]}'
    await app.producer.start()
    try:
        await topic.declare()
        meta = await (await topic.send(key=b"iteration-1", value=payload))
        assert meta.topic == f"{topic_name}.node-status" and meta.offset == 0
    finally:
        await app.producer.stop()
        await app.stop()

    consumer = AIOKafkaConsumer(
        meta.topic, group_id=None, auto_offset_reset="earliest", **s.aiokafka_kwargs()
    )
    await consumer.start()
    try:
        msg = await asyncio.wait_for(consumer.getone(), timeout=15)
    finally:
        await consumer.stop()
    assert (msg.key, msg.value, msg.offset) == (b"iteration-1", payload, 0)


@pytest.mark.integration
def test_worker_command_starts_serves_health_and_stops_cleanly(
    kafka_bootstrap: str, topic_name: str, tmp_path: Path
) -> None:
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DRAINWATCH_") and k not in ("BROKER_URL", "WEB_PORT")
    }
    env.update(_local_settings(kafka_bootstrap, f"{topic_name}.", tmp_path, port))
    env["DRAINWATCH_INFLUX_TOKEN"] = "worker-secret-token-123"
    cfg = tmp_path / "dw.toml"
    cfg.write_text('log_level = "info"\n[accounting]\ntz = "America/Chicago"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "--config", str(cfg), "worker", "--no-influx"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        doc = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/", timeout=1) as r:
                    doc = json.loads(r.read())
                    break
            except OSError:
                time.sleep(0.2)
        assert doc is not None, f"worker never answered /health/; exit={proc.poll()}"
        assert doc["status"] == "ok" and doc["app"] == "drainwatch"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out[-3000:]
    assert "America/Chicago" in out  # effective settings logged (from --config)
    assert "influx_token': \"'***'\"" in out and "worker-secret-token-123" not in out


def test_the_worker_consumer_waits_briefly_for_new_data_on_the_broker() -> None:
    """Faust builds its consumer with fetch_max_wait_ms=1500; with one fetch in flight per
    broker, a drained busy partition then waited up to 1.5 s behind a fetch of idle ones
    (docs/state.md, Faust sharp edges). The worker's consumer asks for 100 ms."""
    from streams.app import FETCH_MAX_WAIT_MS

    async def build() -> int:
        app = create_app(load_settings(env={}), app_id="drainwatch-test-fetch")
        thread = app.consumer._thread  # type: ignore[attr-defined]
        consumer = thread._create_worker_consumer(app.transport)
        return int(consumer._fetch_max_wait_ms)

    assert asyncio.run(build()) == FETCH_MAX_WAIT_MS == 100


def test_the_worker_starts_without_fausts_one_second_wait_for_tables() -> None:
    """Faust's table manager sleeps 1 s at start for tables to be declared; drainwatch
    declares none, so its manager goes straight on (channels, recovery). The two steps after
    the sleep are recorded here (stand-ins: the recovery service needs a running consumer);
    the real start is every integration test's worker."""
    from types import SimpleNamespace

    from faust.tables import TableManager

    async def start() -> list[str]:
        app = create_app(load_settings(env={}), app_id="drainwatch-test-tables")
        tables = app.tables
        assert isinstance(tables, TableManager) and len(tables) == 0
        done: list[str] = []

        async def no_sleep(seconds: float) -> None:
            done.append(f"sleep {seconds}")

        async def step(name: str) -> None:
            done.append(name)

        tables.sleep = no_sleep  # type: ignore[method-assign]
        tables._update_channels = lambda: step("channels")  # type: ignore[method-assign]
        recovery = SimpleNamespace(start=lambda: step("recovery"))
        type(tables).recovery = property(lambda _self: recovery)  # type: ignore[assignment]
        await tables.on_start()
        return done

    assert asyncio.run(start()) == ["channels", "recovery"]
