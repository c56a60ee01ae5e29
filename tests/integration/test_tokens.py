"""The local stack's scoped InfluxDB tokens against the real InfluxDB (issue 31, class 8): the
worker's write token writes the pipeline's database and reads nothing; Grafana's read token
reads it and writes nothing; neither administers; the stack's Grafana uses the read one."""

from __future__ import annotations

import json
import stat
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streams.config import ConfigError, load_settings

PROBE = "t_token_probe"  # the measurement this test writes, dropped at the end


def _request(
    url: str, token: str, body: bytes, content_type: str = "text/plain"
) -> tuple[int, str]:
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Authorization", f"Token {token}")
    req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


class Influx:
    """The stack's InfluxDB as one token sees it."""

    def __init__(self, stack: Any, token: str) -> None:
        self.url, self.token, self.db = stack.influx_url, token, stack.influx_database

    def write(self, line: str, bucket: str | None = None) -> tuple[int, str]:
        q = urllib.parse.urlencode({"bucket": bucket or f"{self.db}/autogen", "org": "-"})
        return _request(f"{self.url}/api/v2/write?{q}", self.token, line.encode())

    def influxql(self, q: str) -> tuple[int, str]:
        body = urllib.parse.urlencode({"q": q}).encode()
        url = f"{self.url}/query?{urllib.parse.urlencode({'db': self.db})}"
        return _request(url, self.token, body, "application/x-www-form-urlencoded")

    def flux(self, q: str) -> tuple[int, str]:
        return _request(f"{self.url}/api/v2/query", self.token, q.encode(), "application/vnd.flux")


@pytest.fixture(scope="module")
def tokens(stack: Any) -> Iterator[dict[str, Path]]:
    """The token files (the stack is brought up to date first when it predates them)."""
    cfg, control = stack.config, stack.control
    files = {
        "admin": cfg.influx_token_file,
        "write": cfg.influx_write_token_file,
        "read": cfg.influx_read_token_file,
    }
    if not all(p.is_file() for p in files.values()):
        control.start(cfg)  # a stack started before the tokens: the bootstrap makes them
    yield files
    stack.influxql(f'DROP MEASUREMENT "{PROBE}"', database=stack.influx_database)


def test_token_files_are_private_distinct_and_in_stack_env(
    stack: Any, tokens: dict[str, Path]
) -> None:
    texts = {name: p.read_text().strip() for name, p in tokens.items()}
    assert len(set(texts.values())) == 3
    for name, p in tokens.items():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, name
        user, _, password = texts[name].partition(":")
        assert user and len(password) >= 24, name
    env = stack.control.read_stack_env(stack.config)
    assert env["DRAINWATCH_STACK_INFLUX_WRITE_TOKEN_FILE"] == str(tokens["write"])
    assert env["DRAINWATCH_STACK_INFLUX_READ_TOKEN_FILE"] == str(tokens["read"])
    assert env["DRAINWATCH_STACK_INFLUX_ADMIN_TOKEN_FILE"] == str(tokens["admin"])


def test_write_token_writes_and_cannot_read_or_administer(
    stack: Any, tokens: dict[str, Path]
) -> None:
    w = Influx(stack, tokens["write"].read_text().strip())
    status, body = w.write(f"{PROBE},t=w v=1")
    assert status == 204, body
    status, body = w.influxql(f'SELECT * FROM "{PROBE}"')
    assert status == 403 and "requires READ" in body, (status, body)
    status, body = w.flux(f'from(bucket: "{w.db}/autogen") |> range(start: -100y)')
    assert status != 200 and "requires READ" in body, (status, body)
    for q in ("CREATE DATABASE t_token_nope", f'DROP MEASUREMENT "{PROBE}"', "SHOW USERS"):
        status, body = w.influxql(q)
        assert status == 403, (q, status, body)
    # another database: refused (the write privilege is on the pipeline's database only)
    stack.influxql('CREATE DATABASE "t_token_other"')
    try:
        status, body = w.write(f"{PROBE} v=1", bucket="t_token_other/autogen")
        assert status == 403, (status, body)
    finally:
        stack.influxql('DROP DATABASE "t_token_other"')


def test_read_token_reads_and_cannot_write_or_administer(
    stack: Any, tokens: dict[str, Path]
) -> None:
    Influx(stack, tokens["write"].read_text().strip()).write(f"{PROBE},t=r v=2")
    r = Influx(stack, tokens["read"].read_text().strip())
    status, body = r.influxql(f'SELECT * FROM "{PROBE}" WHERE "t" = \'r\'')
    assert status == 200 and json.loads(body)["results"][0]["series"], body
    status, body = r.write(f"{PROBE},t=r v=3")
    assert status in (401, 403) and "not authorized to write" in body, (status, body)
    for q in ("CREATE DATABASE t_token_nope", f'DROP MEASUREMENT "{PROBE}"', "SHOW USERS"):
        status, body = r.influxql(q)
        assert status == 403, (q, status, body)


def test_worker_starts_its_sink_with_the_write_token(stack: Any, tokens: dict[str, Path]) -> None:
    """The worker's own path: the ping, the empty write that checks the token and bucket, then
    points written, all with the write-only token."""
    from streams.commands.worker import influx_sink

    def settings(token: Path) -> Any:
        return load_settings(
            env={
                "DRAINWATCH_INFLUX_URL": stack.influx_url,
                "DRAINWATCH_INFLUX_TOKEN_FILE": str(token),
                "DRAINWATCH_INFLUX_ORG": "-",
                "DRAINWATCH_INFLUX_BUCKET": f"{stack.influx_database}/autogen",
                "DRAINWATCH_CONNECT_TIMEOUT": "10",
            }
        )

    with pytest.raises(ConfigError, match=r"influx_token.*HTTP 403"):
        influx_sink(settings(tokens["read"]), "test")  # Grafana's token: refused at start
    sink = influx_sink(settings(tokens["write"]), "test")
    try:
        sink.write_lines([f"{PROBE},t=worker v=4 1700000000000000000"])
    finally:
        sink.close()
    rows = stack.influxql(
        f'SELECT "v" FROM "{PROBE}" WHERE "t" = \'worker\'', stack.influx_database
    )
    assert rows["results"][0]["series"][0]["values"][0][1] == 4


def test_stack_grafana_queries_with_the_read_token(stack: Any, tokens: dict[str, Path]) -> None:
    """The stack's Grafana is provisioned with the read-only token (restarted once when it ran
    with an older provisioning), and its datasource answers through it."""
    cfg, control = stack.config, stack.control
    ds = cfg.grafana_run / "provisioning" / "datasources" / "influxdb.yaml"
    if str(tokens["read"]) not in ds.read_text():
        control.stop_grafana(cfg)  # nothing else uses the stack's own Grafana
        control.start(cfg)
    text = ds.read_text()
    assert f"Token $__file{{{tokens['read']}}}" in text
    assert str(tokens["admin"]) not in text and str(tokens["write"]) not in text
    status, doc = control.grafana_request(
        cfg.grafana_port,
        "/api/datasources/uid/drainwatch-influxdb/health",
        password=control.grafana_password(cfg),
    )
    assert status == 200 and doc["status"] == "OK", doc
