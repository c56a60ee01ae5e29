"""streams/logs.py: one line format (text, JSON) for drainwatch's, Faust's and aiokafka's
loggers, levels, the rate limit of repeats, and credentials masked wherever a URL is shown."""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams import logs
from streams.cli import main
from streams.config import InfluxSettings, Settings, setup_logging
from streams.kafka import Backoff
from tests.paths import REPO

TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) ")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _lines(buf: io.StringIO) -> list[str]:
    return buf.getvalue().splitlines()


# --- formats ---------------------------------------------------------------------------------


def test_text_line_time_level_component_message() -> None:
    buf = io.StringIO()
    logs.setup("info", "text", buf)
    logs.get("worker").info("started %d agents", 3)
    logs.get("ship.moab").warning("slow")
    a, b = _lines(buf)
    assert TEXT_LINE.match(a) and a.endswith(" INFO worker: started 3 agents"), a
    assert TEXT_LINE.match(b) and b.endswith(" WARNING ship.moab: slow"), b


def test_iso_time_is_utc_with_milliseconds() -> None:
    assert logs.iso_time(1_795_716_126.125) == "2026-11-26T18:02:06.125Z"
    assert logs.iso_time(0.0) == "1970-01-01T00:00:00.000Z"


def test_json_line_fields_and_exception() -> None:
    buf = io.StringIO()
    logs.setup("info", "json", buf)
    logs.get("worker").info("hello %s", "world")
    try:
        raise ValueError("bad value")
    except ValueError:
        logs.get("worker").exception("flush failed")
    first, second = (json.loads(x) for x in _lines(buf))
    assert set(first) == {"time", "level", "component", "message"}
    assert first["level"] == "INFO" and first["component"] == "worker"
    assert first["message"] == "hello world"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["time"])
    assert second["level"] == "ERROR" and second["message"] == "flush failed"
    assert "Traceback" in second["exc"] and "ValueError: bad value" in second["exc"]


def test_levels() -> None:
    buf = io.StringIO()
    logs.setup("warning", "text", buf)
    log = logs.get("worker")
    log.debug("d")
    log.info("i")
    log.warning("w")
    log.error("e")
    assert [line.split(" ", 2)[1] for line in _lines(buf)] == ["WARNING", "ERROR"]
    buf = io.StringIO()
    logs.setup("debug", "text", buf)
    log.debug("d")
    assert _lines(buf)[0].endswith(" DEBUG worker: d")
    with pytest.raises(ValueError, match="not one of"):
        logs.setup("verbose")
    with pytest.raises(ValueError, match="not one of"):
        logs.setup("info", "xml")


def test_setup_again_replaces_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    logs.setup("info", "text", first)
    logs.setup("info", "json", second)
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_drainwatch", False)]
    assert ours == [logs.handler()]
    logs.get("worker").info("once")
    assert first.getvalue() == ""
    assert [json.loads(x)["message"] for x in _lines(second)] == ["once"]


def test_default_stream_is_the_current_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup("info", "text")
    logs.get("ship.jobs").info("300 events")
    err = capsys.readouterr().err
    assert err.endswith(" INFO ship.jobs: 300 events\n") and TEXT_LINE.match(err)


# --- rate limit ------------------------------------------------------------------------------


def test_repeats_pass_once_per_interval_then_say_how_many_were_held() -> None:
    buf, clock = io.StringIO(), Clock()
    logs.setup("info", "text", buf, clock=clock)
    log = logs.get("worker")
    for i in range(100):  # a broker outage: 100 identical warnings in one second
        clock.t = 1000.0 + i / 100
        log.warning("Kafka at %s not reachable (attempt %d)", "h:9092", i + 1)
    assert len(_lines(buf)) == 1
    assert _lines(buf)[0].endswith("not reachable (attempt 1)")
    clock.t = 1009.9
    log.warning("Kafka at %s not reachable (attempt %d)", "h:9092", 101)
    assert len(_lines(buf)) == 1
    clock.t = 1011.0
    log.warning("Kafka at %s not reachable (attempt %d)", "h:9092", 102)
    lines = _lines(buf)
    assert len(lines) == 2
    assert lines[1].endswith("not reachable (attempt 102) (repeated 100 times)"), lines[1]
    clock.t = 1030.0  # nothing held back since: no count
    log.warning("Kafka at %s not reachable (attempt %d)", "h:9092", 103)
    assert _lines(buf)[2].endswith("(attempt 103)")


def test_rate_limit_counts_exactly_the_held_lines() -> None:
    buf, clock = io.StringIO(), Clock()
    logs.setup("info", "json", buf, clock=clock)
    for _ in range(100):
        logs.get("worker").warning("same")
    clock.t += 10.0
    logs.get("worker").warning("same")
    messages = [json.loads(x)["message"] for x in _lines(buf)]
    assert messages == ["same", "same (repeated 99 times)"]


def test_rate_limit_keys_on_logger_level_and_template() -> None:
    buf = io.StringIO()
    logs.setup("info", "text", buf, clock=Clock())
    logs.get("worker").warning("x")
    logs.get("worker").warning("x")  # held
    logs.get("worker").error("x")  # another level
    logs.get("ship.moab").warning("x")  # another logger
    logs.get("worker").warning("y")  # another template
    assert [line.split(" ", 1)[1] for line in _lines(buf)] == [
        "WARNING worker: x",
        "ERROR worker: x",
        "WARNING ship.moab: x",
        "WARNING worker: y",
    ]


def test_rate_limit_forgets_old_templates_past_its_cap() -> None:
    clock = Clock()
    f = logs.RateLimit(10.0, clock)
    f.MAX_KEYS = 10
    rec = logging.LogRecord("drainwatch.w", logging.INFO, "", 0, "", None, None)
    for i in range(50):
        rec.msg = f"line {i}"
        clock.t += 11
        assert f.filter(rec)
    assert len(f._seen) <= 11


# --- masking ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("http://user:pass@host:8086/x", "http://user:***@host:8086/x"),
        ("https://admin:p%40ss@influx.example.org", "https://admin:***@influx.example.org"),
        ("http://token123@host:8086", "http://***@host:8086"),
        ("http://host:8086/api?token=abc123&org=x", "http://host:8086/api?token=***&org=x"),
        ("http://host/query?u=admin&p=secret&db=d", "http://host/query?u=admin&p=***&db=d"),
        ("http://host/?password=hunter2", "http://host/?password=***"),
        ("kafka://u:pw@broker:9093", "kafka://u:***@broker:9093"),
        ("http://127.0.0.1:18086", "http://127.0.0.1:18086"),
        # userinfo runs to the URL's last "@": a password with "/", "?", "#" or "@" unencoded
        # is masked whole; a path with an "@" loses its host instead (never a password shown)
        ("http://u:s3c/ret@127.0.0.1:1", "http://u:***@127.0.0.1:1"),
        ("http://u:s3c@ret@127.0.0.1:1", "http://u:***@127.0.0.1:1"),
        ("http://u:s3c?r#t@h:1/p", "http://u:***@h:1/p"),
        ("http://host:8086/a@b", "http://host:***@b"),
        ("http://h/?e=a@b.c", "http://***@b.c"),
        ("http://a:b@h1/x http://c:d@h2/y", "http://a:***@h1/x http://c:***@h2/y"),
        ("'kafka://u:p@h1:1,kafka://v:q@h2:2'", "'kafka://u:***@h1:1,kafka://v:***@h2:2'"),
        # host lists without a scheme (a Kafka bootstrap, aiokafka's repr of an address)
        ("u:pw@b1:9092,b2:9092", "u:***@b1:9092,b2:9092"),
        ("u:p@ss@h1:9092,v:q@h2:9092", "u:***@h1:9092,v:***@h2:9092"),
        (
            "Unable to bootstrap from [('u:pw@10.0.0.1', 1)]",
            "Unable to bootstrap from [('u:***@10.0.0.1', 1)]",
        ),
        ("127.0.0.1:19092", "127.0.0.1:19092"),
        # query secrets by name, Authorization values
        (
            "https://s3/x?X-Amz-Signature=ab&X-Amz-Credential=AK/2&a=1",
            "https://s3/x?X-Amz-Signature=***&X-Amz-Credential=***&a=1",
        ),
        (
            "?access_token=1&client_secret=2&api_key=3&key=4&author=5&design=6",
            "?access_token=***&client_secret=***&api_key=***&key=***&author=5&design=6",
        ),
        ("{'Authorization': 'Token dw:s3cret'}", "{'Authorization': 'Token ***'}"),
        ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
        # what is not a credential stays
        (
            "2026-11-26T18:02:06.123Z INFO worker: ready at 10:00",
            "2026-11-26T18:02:06.123Z INFO worker: ready at 10:00",
        ),
        ("mail bob@example.org", "mail bob@example.org"),
        ("", ""),
    ],
)
def test_mask(url: str, masked: str) -> None:
    assert logs.mask(url) == masked


def test_no_credential_reaches_a_log_line() -> None:
    buf = io.StringIO()
    logs.setup("info", "json", buf)
    log = logs.get("worker")
    log.warning("InfluxDB at http://dw:s3cret@influx:8086 not reachable")
    log.warning("writing to %s", "https://x:s3cret@h/api/v2/write?token=s3cret")
    try:
        raise ConnectionError("cannot connect to http://dw:s3cret@influx:8086")
    except ConnectionError:
        log.exception("failed")
    out = buf.getvalue()
    assert "s3cret" not in out
    first, second, third = (json.loads(x) for x in _lines(buf))
    assert first["message"] == "InfluxDB at http://dw:***@influx:8086 not reachable"
    assert second["message"] == "writing to https://x:***@h/api/v2/write?token=***"
    assert "http://dw:***@influx:8086" in third["exc"]


def test_describe_masks_url_credentials() -> None:
    d = Settings(influx=InfluxSettings(url="http://user:secret@host:8086")).describe()
    assert d["influx_url"] == "http://user:***@host:8086"
    assert "secret" not in str(d)


def test_print_settings_does_not_show_the_influx_password() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["DRAINWATCH_INFLUX_URL"] = "http://user:secret@host:8086"
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", "worker", "--print-settings"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "influx_url = http://user:***@host:8086" in r.stdout
    assert "secret" not in r.stdout + r.stderr


def test_backoff_logs_each_attempt_masked_and_rate_limited() -> None:
    buf = io.StringIO()
    logs.setup("info", "text", buf)
    b = Backoff("drainwatch worker", "InfluxDB at http://dw:s3cret@influx:8086", 60.0)
    assert b.failed("no answer to ping") == 0.5
    assert b.failed("no answer to ping") == 1.0  # within 10 s: held back
    (line,) = _lines(buf)
    assert line.endswith(
        " WARNING worker: InfluxDB at http://dw:***@influx:8086 not reachable (attempt 1: "
        "no answer to ping); retrying in 0.5 s"
    ), line
    assert b.attempt == 3


# --- Faust, mode and aiokafka ----------------------------------------------------------------


def test_library_loggers_go_through_the_same_handler() -> None:
    own = logging.StreamHandler(io.StringIO())
    logging.getLogger("faust").addHandler(own)  # a handler a library installed by itself
    logging.getLogger("aiokafka").propagate = False
    buf = io.StringIO()
    logs.setup("info", "json", buf)
    assert own not in logging.getLogger("faust").handlers
    logging.getLogger("faust.worker").info("[^Worker]: Ready")
    logging.getLogger("mode.services").warning("slow start")
    logging.getLogger("aiokafka.conn").error("Unable connect to %r", "127.0.0.1:1")
    logging.getLogger("kafka.client").warning("metadata")
    got = [(d["component"], d["level"], d["message"]) for d in map(json.loads, _lines(buf))]
    assert got == [
        ("faust", "INFO", "[^Worker]: Ready"),
        ("mode", "WARNING", "slow start"),
        ("aiokafka", "ERROR", "Unable connect to '127.0.0.1:1'"),
        ("kafka", "WARNING", "metadata"),
    ]


def test_faust_worker_keeps_our_logging() -> None:
    """What mode's Worker runs first when it starts (logging set up, stdout/stderr redirected
    into a logger) leaves drainwatch's handler alone with faust_worker_kwargs()."""
    import asyncio
    import signal

    faust = pytest.importorskip("faust")
    buf = io.StringIO()
    logs.setup("info", "text", buf)
    stderr = sys.stderr

    async def first_start() -> None:
        app = faust.App("drainwatch-test-logs", broker="kafka://127.0.0.1:1", store="memory://")
        worker = logs.faust_worker(app)
        assert worker.spinner is None and worker.quiet
        try:
            await worker.default_on_first_start()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                worker.loop.remove_signal_handler(sig)

    asyncio.run(first_start())
    assert sys.stderr is stderr
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_drainwatch", False)]
    assert ours == [logs.handler()]
    assert not logging.getLogger("faust").handlers and logging.getLogger().level == logging.INFO
    logging.getLogger("faust.worker").info("Ready")
    assert _lines(buf)[-1].endswith(" INFO faust: Ready")


# --- command line ----------------------------------------------------------------------------


def test_setup_logging_defaults_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("DRAINWATCH_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("DRAINWATCH_LOG_FORMAT", "json")
    monkeypatch.setenv("DRAINWATCH_LOG_LEVEL", "warning")
    buf = io.StringIO()
    setup_logging(argparse.Namespace(), buf)
    logs.get("worker").info("hidden")
    logs.get("worker").warning("shown")
    assert [json.loads(x)["message"] for x in _lines(buf)] == ["shown"]
    buf = io.StringIO()  # the options win over the settings
    setup_logging(argparse.Namespace(log_level="info", log_format="text"), buf)
    logs.get("worker").info("now shown")
    assert _lines(buf)[0].endswith(" INFO worker: now shown")


def test_add_arguments() -> None:
    p = argparse.ArgumentParser()
    logs.add_arguments(p)
    a = p.parse_args(["--log-level", "debug", "--log-format", "json"])
    assert (a.log_level, a.log_format) == ("debug", "json")
    assert (p.parse_args([]).log_level, p.parse_args([]).log_format) == (None, None)


@pytest.mark.parametrize(
    "where",
    [["--log-format", "json"], []],
    ids=["before the command", "after it"],
)
def test_ship_samples_logs_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: list[str]
) -> None:
    out = tmp_path / "s.jsonl"
    cmd = ["ship", "samples", "--count", "1", "--period", "0.05", "--resolver", "cgroup"]
    cmd += ["--node", "n1", "--out", str(out)]
    argv = where + cmd if where else [*cmd, "--log-format", "json", "--log-level", "info"]
    assert main(argv) == 0
    (line,) = capsys.readouterr().err.splitlines()
    doc = json.loads(line)
    assert doc["component"] == "ship.samples" and doc["level"] == "INFO"
    assert doc["message"].startswith("1 sweeps, ")


def test_user_errors_stay_one_plain_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["ship", "moab", "--follow", "a.log", "b.log", "--log-format", "json"])
    assert rc == 2
    assert capsys.readouterr().err == (
        "drainwatch ship: --follow takes exactly one log (the live one)\n"
    )
