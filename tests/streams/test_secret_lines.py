"""No credential reaches a printed or logged line (issue 31, class 8): ``worker --print-settings``,
every retry line and the one-line error at the end, in text and JSON logs, for URLs whose
password holds characters a URL does not allow unencoded (``/``, ``?``, ``@``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from streams.config import ConfigError, InfluxSettings, Settings, load_settings
from tests.paths import REPO

SECRET = "s3cret"
MOAB_LOG = REPO / "tests" / "golden" / "inputs" / "moab.log.gz"
# passwords as users write them: plain, and with characters a URL wants percent-encoded
PASSWORDS = [SECRET, f"{SECRET}/x", f"a@{SECRET}", f"{SECRET}?#"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str], tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        cwd=tmp,
        env={**base, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("password", PASSWORDS)
def test_print_settings_never_shows_the_url_password(password: str, tmp_path: Path) -> None:
    r = _run(
        ["worker", "--print-settings"],
        tmp_path,
        DRAINWATCH_INFLUX_URL=f"http://u:{password}@127.0.0.1:1",
        DRAINWATCH_INFLUX_TOKEN="tok-" + SECRET,
    )
    assert r.returncode == 0, r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert "influx_url = http://u:***@127.0.0.1:1" in r.stdout.splitlines()
    assert "influx_token = '***'" in r.stdout.splitlines()


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("password", [SECRET, f"{SECRET}/x"])
def test_influx_retry_lines_and_final_error_never_show_the_password(
    fmt: str, password: str, tmp_path: Path
) -> None:
    """``replay --influx`` against an InfluxDB that is not there: one retry line per attempt,
    then the one-line error; the URL in each with its password masked."""
    url = f"http://dw:{password}@127.0.0.1:{_closed_port()}"
    r = _run(
        ["replay", "--format", "moab", "--influx", str(MOAB_LOG), "--out", "o", "--no-progress"],
        tmp_path,
        DRAINWATCH_INFLUX_URL=url,
        DRAINWATCH_CONNECT_TIMEOUT="1",
        DRAINWATCH_LOG_FORMAT=fmt,
    )
    assert r.returncode == 2, r.stderr
    assert SECRET not in r.stdout + r.stderr
    retries = [line for line in r.stderr.splitlines() if "not reachable (attempt" in line]
    assert retries and all("dw:***@127.0.0.1" in line for line in retries), r.stderr
    assert "unreachable for 1 s" in r.stderr.splitlines()[-1]
    assert "dw:***@127.0.0.1" in r.stderr.splitlines()[-1]


def test_kafka_retry_line_masks_a_password_in_an_error(tmp_path: Path) -> None:
    """aiokafka's reasons go through the same mask (a SASL password never is in them, but an
    address is): the Kafka retry lines of a shipper that cannot reach its broker."""
    r = _run(
        ["ship", "moab", str(MOAB_LOG), "--no-progress"],
        tmp_path,
        DRAINWATCH_KAFKA_BOOTSTRAP=f"127.0.0.1:{_closed_port()}",
        DRAINWATCH_KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
        DRAINWATCH_KAFKA_SASL_USERNAME="shipper",
        DRAINWATCH_KAFKA_SASL_PASSWORD=SECRET,
        DRAINWATCH_CONNECT_TIMEOUT="1",
    )
    assert r.returncode == 75, r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert "not reachable (attempt 1" in r.stderr


@pytest.mark.parametrize("value", [f"u:{SECRET}@127.0.0.1:9092", f"kafka://u:{SECRET}@h:9092"])
def test_bootstrap_with_credentials_is_refused_without_echoing_them(
    value: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as e:
        load_settings(env={"DRAINWATCH_KAFKA_BOOTSTRAP": value})
    assert SECRET not in str(e.value) and "u:***@" in str(e.value)
    r = _run(["worker", "--print-settings"], tmp_path, DRAINWATCH_KAFKA_BOOTSTRAP=value)
    assert r.returncode == 2
    assert SECRET not in r.stdout + r.stderr
    assert "without credentials" in r.stderr


def test_settings_repr_masks_url_credentials() -> None:
    s = Settings(influx=InfluxSettings(url=f"http://u:{SECRET}/x@h:8086"))
    assert SECRET not in repr(s) and SECRET not in str(s)
    assert "influx_url='http://u:***@h:8086'" in repr(s)
    assert "nodes=None" in repr(s)  # values keep their type in the repr
