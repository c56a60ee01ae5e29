"""A Grafana server of one test's own (the stack's build, deploy/local/stack.py), provisioned with
the repo's files as the compose file mounts them, its datasource on the test's database; and a
webhook receiver for its contact point."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Grafana:
    def __init__(self, control: Any, port: int, password: str) -> None:
        self.control, self.port, self.password = control, port, password

    def get(self, path: str) -> Any:
        status, doc = self.control.grafana_request(self.port, path, password=self.password)
        assert status == 200, (path, status, doc)
        return doc

    def wait_dashboards(self, uids: set[str], timeout: float = 60.0) -> None:
        """Until every dashboard of ``uids`` is found: the provisioner loads the files after
        /api/health answers."""
        deadline = time.monotonic() + timeout
        while not uids <= {d["uid"] for d in self.get("/api/search?type=dash-db")}:
            assert time.monotonic() < deadline, self.get("/api/search?type=dash-db")
            time.sleep(0.5)

    def query(self, queries: list[dict[str, Any]], start_ms: int, end_ms: int) -> dict[str, Any]:
        """POST /api/ds/query: Grafana expands $timeFilter and $__interval and runs InfluxQL."""
        body = {"from": str(start_ms), "to": str(end_ms), "queries": queries}
        status, doc = self.control.grafana_request(
            self.port, "/api/ds/query", body, password=self.password, timeout=60.0
        )
        assert status == 200, (status, doc, queries)
        return dict(doc["results"])


class Webhook:
    """An HTTP listener collecting the JSON bodies Grafana's webhook contact point posts."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length", "0"))
                outer.bodies.append(json.loads(self.rfile.read(n) or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self) -> list[tuple[str, str]]:
        """(status, alertname) of every alert in every notification so far."""
        return [
            (a["status"], a["labels"]["alertname"])
            for b in self.bodies
            for a in b.get("alerts", [])
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def fast_alerting(prov: Path, stalled_after_s: int) -> None:
    """The test's copy only: rules every 10 s, the stalled rule's window shortened, the policy's
    group waits at 1 s, so a whole fire-and-resolve cycle takes a minute, not half an hour."""
    rules_path = prov / "alerting" / "rules.yaml"
    doc = yaml.safe_load(rules_path.read_text())
    for g in doc["groups"]:
        g["interval"] = "10s"
        for r in g["rules"]:
            if r["labels"]["drainwatch_kind"] == "stalled":
                r["data"][0]["relativeTimeRange"]["from"] = stalled_after_s
    rules_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    pol_path = prov / "alerting" / "policies.yaml"
    text = pol_path.read_text()
    text = re.sub(r"group_wait: .*", "group_wait: 1s", text)
    text = re.sub(r"group_interval: .*", "group_interval: 1s", text)
    pol_path.write_text(text)


@contextmanager
def grafana_server(
    stack: Any,
    database: str,
    tmp: Path,
    webhook_url: str = "http://127.0.0.1:9/",
    fast: bool = False,
    stalled_after_s: int = 30,
) -> Iterator[Grafana]:
    control, cfg = stack.control, stack.config
    run = tmp / "grafana"
    prov = control.grafana_provisioning(cfg, run / "provisioning")
    if fast:
        fast_alerting(prov, stalled_after_s)
    port = free_port()
    env = {
        "DRAINWATCH_GRAFANA_INFLUX_URL": stack.influx_url,
        "DRAINWATCH_GRAFANA_INFLUX_DB": database,
        "DRAINWATCH_GRAFANA_WEBHOOK_URL": webhook_url,
    }
    control.start_grafana_instance(cfg, run, port, free_port(), env, poll_interval="2s")
    try:
        yield Grafana(control, port, control.grafana_password(cfg))
    finally:
        control.stop_grafana_instance(run)
