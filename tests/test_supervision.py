"""Restarts under supervision (issue 30): the worker's exit codes tell a supervisor which failures
a restart cures (75: Kafka or InfluxDB away; 1: unexpected) and which it cannot (2: bad
configuration), and the systemd units act on them: restart on failure with a growing backoff
and a start limit, never after exit 2. The worker and shippers run as real processes."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from streams.commands.worker import (
    EXIT_CONFIG,
    EXIT_CRASHED,
    EXIT_STOPPED,
    EXIT_TEMPFAIL,
    exit_code_of,
)
from streams.config import Settings

REPO = Path(__file__).resolve().parents[1]
UNITS = REPO / "deploy" / "systemd"
DROPIN = UNITS / "dropin" / "drainwatch-.service.d" / "restart-backoff.conf"
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\S+ [A-Z]+ ")  # a log record, not the command's answer


def _ini(path: Path) -> configparser.ConfigParser:
    c = configparser.ConfigParser(interpolation=None, strict=True)
    c.optionxform = str  # type: ignore[assignment,method-assign]
    c.read(path)
    return c


def _units() -> dict[str, configparser.ConfigParser]:
    return {p.name: _ini(p) for p in sorted(UNITS.glob("*.service"))}


def test_exit_codes_are_distinct() -> None:
    assert (EXIT_STOPPED, EXIT_CRASHED, EXIT_CONFIG, EXIT_TEMPFAIL) == (0, 1, 2, 75)


def test_crash_reasons_map_to_exit_codes() -> None:
    from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError

    from streams.kafka import Unreachable
    from streams.sinks.influx import InfluxError

    assert exit_code_of(None) == EXIT_STOPPED
    for away in (KafkaConnectionError(), KafkaTimeoutError(), Unreachable("x"), TimeoutError()):
        assert exit_code_of(away) == EXIT_TEMPFAIL, away
    for bug in (InfluxError("HTTP 400"), ValueError("x"), KeyError("x")):
        assert exit_code_of(bug) == EXIT_CRASHED, bug


# --- the units ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(_units()))
def test_unit_restarts_with_a_start_limit_and_never_after_a_configuration_error(name: str) -> None:
    u = _units()[name]
    unit, svc = u["Unit"], u["Service"]
    assert svc["Restart"] == "on-failure"
    assert svc["RestartPreventExitStatus"].split() == [str(EXIT_CONFIG)]
    restart = float(svc["RestartSec"])
    interval, burst = float(unit["StartLimitIntervalSec"]), int(unit["StartLimitBurst"])
    assert restart > 0 and interval > 0 and burst > 1
    # Kept out of the unit's keys: a dependency error is a failure, so it is restarted.
    assert str(EXIT_TEMPFAIL) not in svc.get("SuccessExitStatus", "").split()
    # An outage: each start waits connect_timeout, then exits 75; at the fixed RestartSec of
    # systemd < 254 those starts stay below the limit. A crash at start (~2 s) reaches it.
    outage = Settings().worker.connect_timeout + restart
    assert outage * burst > interval, "an outage of Kafka or InfluxDB would trip the limit"
    assert (2 + restart) * burst < interval, "a crash loop at start would never trip the limit"


def test_backoff_dropin_grows_the_wait_from_restart_sec() -> None:
    svc = _ini(DROPIN)["Service"]
    assert set(svc) == {"RestartSteps", "RestartMaxDelaySec"}
    assert int(svc["RestartSteps"]) > 0
    for name, u in _units().items():
        assert float(svc["RestartMaxDelaySec"]) > float(u["Service"]["RestartSec"]), name


def _systemd_version() -> int:
    out = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True).stdout
    m = re.match(r"systemd (\d+)", out)
    return int(m.group(1)) if m else 0


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verify_with_the_backoff_dropin(tmp_path: Path) -> None:
    """Each unit with the drop-in beside it (prefix drop-ins apply to every drainwatch-*
    unit); systemd < 254 may only say it ignores the two backoff keys."""
    shutil.copytree(DROPIN.parent, tmp_path / DROPIN.parent.name)
    allowed = ["is not executable"]
    if _systemd_version() < 254:
        allowed += ["Unknown key 'RestartSteps'", "Unknown key 'RestartMaxDelaySec'"]
    for p in sorted(UNITS.glob("*.service")):
        shutil.copy(p, tmp_path / p.name)
        r = subprocess.run(
            ["systemd-analyze", "verify", p.name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        out = (r.stdout + r.stderr).splitlines()
        assert any(DROPIN.name in line for line in out) or _systemd_version() >= 254, out
        problems = [ln for ln in out if ln.strip() and not any(a in ln for a in allowed)]
        assert not problems, (p.name, problems)


# --- real processes ----------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _drainwatch(
    args: list[str], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    full = {**base, "PYTHONPATH": str(REPO), "DRAINWATCH_STATE_DIR": str(cwd / "state"), **env}
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(r: subprocess.CompletedProcess[str], prefix: str) -> str:
    """The command's one answer on stderr (log records aside), with no traceback."""
    assert "Traceback" not in r.stderr, r.stderr
    answer = [ln for ln in r.stderr.splitlines() if ln.strip() and not LOG_LINE.match(ln)]
    assert len(answer) == 1 and answer[0].startswith(prefix), r.stderr
    return answer[0]


@pytest.mark.parametrize(
    "env",
    [
        {"DRAINWATCH_CONNECT_TIMEOUT": "soon"},
        {"DRAINWATCH_NO_SUCH_SETTING": "1"},
        {"DRAINWATCH_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"},
    ],
)
def test_worker_with_a_bad_configuration_exits_2(env: dict[str, str], tmp_path: Path) -> None:
    r = _drainwatch(["worker"], env, tmp_path)
    assert r.returncode == EXIT_CONFIG, r.stderr
    _one_line(r, "drainwatch worker: configuration error: DRAINWATCH_")
    assert len(r.stderr.splitlines()) == 1, r.stderr


def test_worker_with_kafka_unreachable_exits_75(tmp_path: Path) -> None:
    env = {
        "DRAINWATCH_KAFKA_BOOTSTRAP": f"127.0.0.1:{_closed_port()}",
        "DRAINWATCH_CONNECT_TIMEOUT": "2",
    }
    r = _drainwatch(["worker"], env, tmp_path)
    assert r.returncode == EXIT_TEMPFAIL, r.stderr
    line = _one_line(r, "drainwatch worker: Kafka at 127.0.0.1:")
    assert "unreachable for 2 s" in line


def _stack_env(stack: object, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in stack.env.items() if k.startswith("DRAINWATCH_")}  # type: ignore[attr-defined]
    env.pop("DRAINWATCH_STACK_LOGS", None)
    for k in [k for k in env if k.startswith("DRAINWATCH_GRAFANA_")]:
        env.pop(k)
    return {
        **env,
        "DRAINWATCH_TOPIC_PREFIX": "test-supervision.",
        "DRAINWATCH_CONNECT_TIMEOUT": "3",
        "DRAINWATCH_TZ": "UTC",
        **extra,
    }


def test_worker_with_influxdb_unreachable_exits_75(stack: object, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    r = _drainwatch(["worker"], _stack_env(stack, tmp_path, DRAINWATCH_INFLUX_URL=url), tmp_path)
    assert r.returncode == EXIT_TEMPFAIL, r.stderr
    assert "unreachable for 3 s" in _one_line(r, f"drainwatch worker: InfluxDB at {url}")


def test_worker_refused_by_influxdb_exits_2(stack: object, tmp_path: Path) -> None:
    """A ping does not check the token nor the bucket: an empty write does, before Faust."""
    bad_token = tmp_path / "token"
    bad_token.write_text("nobody:wrong\n")
    env = _stack_env(stack, tmp_path, DRAINWATCH_INFLUX_TOKEN_FILE=str(bad_token))
    r = _drainwatch(["worker"], env, tmp_path)
    assert r.returncode == EXIT_CONFIG, r.stderr
    assert "HTTP 401" in _one_line(r, "drainwatch worker: configuration error: influx_token")
    env = _stack_env(stack, tmp_path, DRAINWATCH_INFLUX_BUCKET="no_such_db_30/autogen")
    r = _drainwatch(["worker"], env, tmp_path)
    assert r.returncode == EXIT_CONFIG, r.stderr
    assert "no_such_db_30" in _one_line(r, "drainwatch worker: configuration error: influx_bucket")


def test_shipper_exit_codes_under_the_units(tmp_path: Path) -> None:
    """A shipper shares the settings and the Kafka wait: a bad setting exits 2 (not restarted),
    an absent Kafka is EX_TEMPFAIL, a failure the unit restarts."""
    log = tmp_path / "moab.log"
    log.write_text("")
    r = _drainwatch(
        ["ship", "moab", str(log), "--no-progress"],
        {"DRAINWATCH_CONNECT_TIMEOUT": "soon"},
        tmp_path,
    )
    assert r.returncode == EXIT_CONFIG, r.stderr
    _one_line(r, "drainwatch ship: DRAINWATCH_CONNECT_TIMEOUT")
    env = {
        "DRAINWATCH_KAFKA_BOOTSTRAP": f"127.0.0.1:{_closed_port()}",
        "DRAINWATCH_CONNECT_TIMEOUT": "2",
    }
    r = _drainwatch(["ship", "moab", str(log), "--no-progress"], env, tmp_path)
    assert r.returncode == EXIT_TEMPFAIL, r.stderr
    _one_line(r, "drainwatch ship moab: Kafka at 127.0.0.1:")
    prevent = _units()["drainwatch-ship-moab.service"]["Service"]["RestartPreventExitStatus"]
    assert str(r.returncode) not in prevent.split()
