"""Fixtures for tests that need the real local stack (Kafka + InfluxDB + Grafana,
deploy/local/stack.py).

* `stack` (session): uses a running stack (stack.env in the state dir), else starts one with
  deploy/local/stack.py. If the stack cannot come up:
    - with DRAINWATCH_REQUIRE_STACK=1 (set by `make test`, hence CI) the tests that need it FAIL;
    - otherwise those tests, and only those, are skipped with the reason, repeated in a banner at
      the end of the run.
  The fixture stops at the end of the session only the servers it started itself (unless
  DRAINWATCH_KEEP_STACK=1, handy when re-running tests by hand). `make test` starts the stack
  before pytest and stops it afterwards, so under `make test` the fixture never stops anything.
* `kafka_bootstrap` (session): "127.0.0.1:PORT".
* `topic_name` (function): a topic name unique to the test.
* `influx` (function): a fresh database for the test (dropped afterwards) and the settings an
  influxdb-client needs to write to it through /api/v2/write.

Every test under tests/integration/, and every test using one of these stack fixtures, is marked
`integration` (`make test-unit` deselects them).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
STACK_SCRIPT = REPO / "deploy" / "local" / "stack.py"
INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"
STACK_FIXTURES = frozenset({"stack", "kafka_bootstrap", "influx"})

_stack_problem: list[str] = []  # why the stack could not come up, for the end-of-run banner


def load_stack_control() -> ModuleType:
    """Import deploy/local/stack.py (not a package) as a module."""
    name = "drainwatch_local_stack"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, STACK_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True, slots=True)
class Stack:
    """The running local stack, as the tests see it."""

    kafka_bootstrap: str
    influx_url: str
    influx_token: str  # admin "user:password": the v2-compat token of InfluxDB 1.8
    influx_org: str
    influx_bucket: str  # "database/retention-policy"
    influx_database: str
    env: dict[str, str]
    control: ModuleType
    config: Any

    def restart_kafka(self) -> None:
        """Stop the broker cleanly (SIGTERM) and start it again on the same data directory."""
        self.control.restart_kafka(self.config)

    def influxql(self, q: str, database: str | None = None) -> dict:
        """Run InfluxQL through /query with the admin credentials; raises on any error."""
        return self.control.influx_query(self.config, q, db=database)


@dataclass(frozen=True, slots=True)
class InfluxTarget:
    """One test's own database, with what influxdb-client needs to reach it."""

    url: str
    token: str
    org: str
    bucket: str
    database: str
    stack: Stack

    def influxql(self, q: str) -> list[dict[str, Any]]:
        """Run InfluxQL on this database; return the rows of every series as dicts."""
        doc = self.stack.influxql(q, database=self.database)
        rows = []
        for result in doc.get("results", []):
            for series in result.get("series", []):
                for values in series["values"]:
                    row = dict(zip(series["columns"], values, strict=True))
                    row.update(series.get("tags", {}))
                    rows.append(row)
        return rows

    def influxql_until(
        self, q: str, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 30
    ) -> list[dict[str, Any]]:
        """The rows of ``q`` once ``done(rows)``, or as they are at ``timeout`` (the worker
        writes its points at its next flush, after the topic records a test may have waited
        for)."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.influxql(q)
            if done(rows) or time.monotonic() > deadline:
                return rows
            time.sleep(0.5)


def _safe_name(text: str, allowed: str, limit: int) -> str:
    return re.sub(f"[^{allowed}]+", "-" if "-" in allowed else "_", text)[:limit].strip("-_")


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest) -> Stack:
    control = load_stack_control()
    cfg = control.Config.from_env()
    required = os.environ.get("DRAINWATCH_REQUIRE_STACK") == "1"
    try:
        was_up = control.health(cfg)
        if not all(was_up.values()):
            control.start(cfg)
            if os.environ.get("DRAINWATCH_KEEP_STACK") != "1":
                request.addfinalizer(lambda: _stop_started(control, cfg, was_up))
        env = control.read_stack_env(cfg)
        token = Path(env["DRAINWATCH_INFLUX_TOKEN_FILE"]).read_text().strip()
    except Exception as exc:  # any failure to come up has one outcome: fail or skip, loudly
        msg = (
            f"the local stack (Kafka + InfluxDB, {STACK_SCRIPT.relative_to(REPO)}) did not come "
            f"up: {exc}\nserver and build logs: {cfg.logs}"
        )
        _stack_problem.append(msg)
        if required:
            pytest.fail(f"DRAINWATCH_REQUIRE_STACK=1 and {msg}", pytrace=False)
        pytest.skip(f"INTEGRATION TEST SKIPPED: {msg}")
    return Stack(
        kafka_bootstrap=env["DRAINWATCH_KAFKA_BOOTSTRAP"],
        influx_url=env["DRAINWATCH_INFLUX_URL"],
        influx_token=token,
        influx_org=env["DRAINWATCH_INFLUX_ORG"],
        influx_bucket=env["DRAINWATCH_INFLUX_BUCKET"],
        influx_database=env["DRAINWATCH_INFLUX_DATABASE"],
        env=env,
        control=control,
        config=cfg,
    )


def _stop_started(control: ModuleType, cfg: Any, was_up: dict[str, bool]) -> None:
    """Stop the servers this session started; leave alone those that were already running."""
    if not was_up["kafka"]:
        control.stop_kafka(cfg)
    if not was_up["influxdb"]:
        control.stop_influx(cfg)
    if not was_up.get("grafana", True):
        control.stop_grafana(cfg)


@pytest.fixture(scope="session")
def kafka_bootstrap(stack: Stack) -> str:
    return stack.kafka_bootstrap


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A Kafka topic name of this test's own: t-<test name>-<8 hex digits>."""
    return f"t-{_safe_name(request.node.name, 'A-Za-z0-9._-', 150)}-{uuid.uuid4().hex[:8]}"


@contextmanager
def influx_database(stack: Stack, name: str) -> Iterator[InfluxTarget]:
    """A fresh InfluxDB database ``t_<name>_<8 hex digits>`` (retention policy autogen), dropped
    afterwards."""
    database = f"t_{name}_{uuid.uuid4().hex[:8]}"
    stack.influxql(f'CREATE DATABASE "{database}"')
    try:
        yield InfluxTarget(
            url=stack.influx_url,
            token=stack.influx_token,
            org=stack.influx_org,
            bucket=f"{database}/autogen",
            database=database,
            stack=stack,
        )
    finally:
        stack.influxql(f'DROP DATABASE "{database}"')


@pytest.fixture
def influx(stack: Stack, request: pytest.FixtureRequest) -> Iterator[InfluxTarget]:
    """A fresh InfluxDB database for this test (:func:`influx_database`)."""
    with influx_database(stack, _safe_name(request.node.name, "A-Za-z0-9_", 100)) as target:
        yield target


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        in_dir = INTEGRATION_DIR in Path(str(item.path)).resolve().parents
        uses_stack = bool(STACK_FIXTURES.intersection(getattr(item, "fixturenames", ())))
        if in_dir or uses_stack:
            item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _stack_problem:
        terminalreporter.section("LOCAL STACK DID NOT COME UP", sep="!", red=True, bold=True)
        terminalreporter.write_line(_stack_problem[0])
        terminalreporter.write_line(
            "integration tests were not run against real servers; `make test` requires them"
        )
