"""deploy/local/stack.py's start order, without servers: the stack's Grafana is provisioned and
started only after InfluxDB's bootstrap wrote the token files (a prebuilt Grafana starts in a
second, InfluxDB's first start takes several), and with the read-only token, never the admin's;
when InfluxDB does not come up, Grafana is not started and says why."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import load_stack_control


@pytest.fixture
def control(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> SimpleNamespace:
    """The stack module with every server call replaced: Kafka and InfluxDB "start" (InfluxDB
    slowly, writing its token files at the end), Grafana is built and records its start."""
    stack = load_stack_control()
    monkeypatch.setenv("DRAINWATCH_STATE_DIR", str(tmp_path / "state"))
    cfg = stack.Config.from_env()
    started: list[dict[str, Any]] = []

    def start_influx(cfg: Any) -> str:
        time.sleep(0.5)
        for path in (
            cfg.influx_token_file,
            cfg.influx_write_token_file,
            cfg.influx_read_token_file,
        ):
            stack._write_private(path, f"{path.stem}:pw\n")
        return "started"

    def start_grafana_instance(cfg: Any, run: Path, *args: Any, **kwargs: Any) -> int:
        ds = run / "provisioning" / "datasources" / "influxdb.yaml"
        started.append({"read_token": cfg.influx_read_token_file.is_file(), "ds": ds.read_text()})
        return 4242

    monkeypatch.setattr(
        stack, "health", lambda cfg: dict.fromkeys(("kafka", "influxdb", "grafana"), False)
    )
    monkeypatch.setattr(stack, "start_kafka", lambda cfg: "started")
    monkeypatch.setattr(stack, "start_influx", start_influx)
    monkeypatch.setattr(stack, "ensure_grafana", lambda cfg: False)
    monkeypatch.setattr(stack, "_ports_free", lambda *a: None)
    monkeypatch.setattr(stack, "start_grafana_instance", start_grafana_instance)
    for name in ("stop_kafka", "stop_influx", "stop_grafana"):
        monkeypatch.setattr(stack, name, lambda cfg: False)
    return SimpleNamespace(stack=stack, cfg=cfg, started=started)


def test_grafana_starts_after_the_tokens_with_the_read_only_one(control: SimpleNamespace) -> None:
    env = control.stack.start(control.cfg)
    cfg = control.cfg
    (grafana,) = control.started
    assert grafana["read_token"], "Grafana started before InfluxDB wrote its token files"
    assert f"Token $__file{{{cfg.influx_read_token_file}}}" in grafana["ds"]
    assert str(cfg.influx_token_file) not in grafana["ds"]
    assert env["DRAINWATCH_STACK_INFLUX_READ_TOKEN_FILE"] == str(cfg.influx_read_token_file)
    assert env["DRAINWATCH_STACK_INFLUX_WRITE_TOKEN_FILE"] == str(cfg.influx_write_token_file)


def test_grafana_is_not_started_when_influxdb_fails(
    control: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_influx(cfg: Any) -> str:
        time.sleep(0.2)
        raise control.stack.StackError("influxd exited during start-up")

    monkeypatch.setattr(control.stack, "start_influx", failing_influx)
    with pytest.raises(control.stack.StackError) as e:
        control.stack.start(control.cfg)
    assert control.started == []
    assert "influxdb: influxd exited" in str(e.value)
    assert "grafana: not started: InfluxDB did not come up" in str(e.value)
