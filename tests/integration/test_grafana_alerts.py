"""The provisioned alert rules in a real Grafana's alerting engine, on the real InfluxDB: every
rule is loaded from its file (provenance ``file``); on a quiet input none fires; on crafted data
each fires and notifies the on-call webhook (served here), and each resolves, notified again,
when the data clears. The test's provisioning copy evaluates every 10 s (production: 1 m)."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.grafana_server import Grafana, Webhook, grafana_server
from tests.paths import REPO

pytestmark = pytest.mark.integration
RULES = yaml.safe_load((REPO / "grafana/provisioning/alerting/rules.yaml").read_text())
TITLES = {r["title"] for g in RULES["groups"] for r in g["rules"]}
STALLED_AFTER_S = 30  # the test copy's window of the stalled rule (production: 300 s)


class Points:
    """Line protocol into the test's database (precision ms), times relative to now."""

    def __init__(self, influx: Any) -> None:
        self.influx = influx

    def write(self, *lines: str) -> None:
        q = urllib.parse.urlencode({"db": self.influx.database, "precision": "ms"})
        req = urllib.request.Request(
            f"{self.influx.url}/write?{q}", data="\n".join(lines).encode(), method="POST"
        )
        auth = base64.b64encode(self.influx.token.encode()).decode()
        req.add_header("Authorization", "Basic " + auth)
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 204


def ago(seconds: float) -> int:
    return int((time.time() - seconds) * 1000)


def minute(k: int) -> int:
    """The start of the k-th minute before the current one (ms)."""
    return (int(time.time()) // 60 - k) * 60_000


class Heartbeat:
    """A worker's pipeline points every 3 s, as the live worker writes them every 10 s."""

    def __init__(self, pts: Points) -> None:
        self.pts, self.on, self.stop = pts, threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(3):
            if self.on.is_set():
                self.pts.write(
                    f"pipeline,cluster=c,worker=w1 records=100i,records_per_s=10,"
                    f"consumer_lag=0i {ago(0)}"
                )


def quiet(pts: Points) -> None:
    pts.write(
        *[
            f"dfs,cluster=c write_mb_s=20,read_mb_s=5,jobs_writing=3i {minute(k)}"
            for k in range(1, 11)
        ],
        f"shortjobs,cluster=c,kind=user,holder=alice n_short=1i,penalty_seconds=600,adjust=100 "
        f"{ago(120)}",
        f"capability,cluster=c,day=today cup40=0.9,cup40_modified=0.95 {ago(7200)}",
        f"drain,cluster=c,window=hour basis_seconds_per_node=3600,length_seconds=3600,"
        f'provisional=false,data_quality="ok",drain_node_seconds=100 {ago(7200)}',
        f'drain_job,cluster=c job="J1",drain_node_seconds=180000,nodes_running=0i,'
        f"nodes_charged=8i {ago(3600)}",
        f'job,cluster=c job="F1",drain_node_seconds=7200,runtime=5,size=8i {ago(3600)}',
        f"alerts,cluster=c,kind=overrun,subject=J9,state=resolved,severity=warning firing=0i,"
        f'id="overrun:J9" {ago(600)}',
    )


def crafted(pts: Points, t0: int) -> None:
    """One firing condition per rule, the stalled one by the heartbeat stopping."""
    pts.write(
        *[
            f"dfs,cluster=c write_mb_s=150,read_mb_s=5,jobs_writing=9i {minute(k)}"
            for k in range(0, 6)
        ],
        f"shortjobs,cluster=c,kind=user,holder=alice n_short=40i,penalty_seconds=24000,"
        f"adjust=5000 {ago(10)}",
        f"capability,cluster=c,day=today cup40=0.5,cup40_modified=0.6 {ago(3600)}",
        f"drain,cluster=c,window=hour basis_seconds_per_node=3000,length_seconds=3600,"
        f'provisional=false,data_quality="short",drain_node_seconds=100 {ago(3600)}',
        f'drain_job,cluster=c job="J2",drain_node_seconds=540000,nodes_running=0i,'
        f"nodes_charged=30i {t0}",  # its first charge: the job's point, overwritten later
        f'job,cluster=c job="F2",drain_node_seconds=72000,runtime=5,size=30i {ago(3000)}',
        f"alerts,cluster=c,kind=overrun,subject=J9,state=firing,severity=warning firing=1i,"
        f'id="overrun:J9" {ago(10)}',
    )


def cleared(pts: Points, influx: Any, t0: int) -> None:
    influx.stack.influxql('DELETE FROM "job"', database=influx.database)
    pts.write(
        *[
            f"dfs,cluster=c write_mb_s=20,read_mb_s=5,jobs_writing=3i {minute(-k)}"
            for k in range(1, 7)
        ],
        f"shortjobs,cluster=c,kind=user,holder=alice n_short=0i,penalty_seconds=0,adjust=400 "
        f"{ago(0)}",
        f"capability,cluster=c,day=today cup40=0.95,cup40_modified=0.97 {ago(1800)}",
        f"drain,cluster=c,window=hour basis_seconds_per_node=3600,length_seconds=3600,"
        f'provisional=false,data_quality="ok",drain_node_seconds=100 {ago(1800)}',
        f'drain_job,cluster=c job="J2",drain_node_seconds=540000,nodes_running=30i,'
        f"nodes_charged=30i {t0}",  # now seen running
        f"alerts,cluster=c,kind=overrun,subject=J9,state=resolved,severity=warning firing=0i,"
        f'id="overrun:J9" {ago(0)}',
    )


def states(g: Grafana) -> dict[str, tuple[str, str, str]]:
    """Rule title -> (state, health, last evaluation) from the alerting engine."""
    doc = g.get("/api/prometheus/grafana/api/v1/rules")
    return {
        r["name"]: (r["state"], r["health"], r.get("lastEvaluation", ""))
        for grp in doc["data"]["groups"]
        for r in grp["rules"]
    }


def wait(what: str, cond: Callable[[], bool], timeout: float, show: Callable[[], Any]) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f} s: {show()}"
        time.sleep(1)


def seen_firing(g: Grafana, stack: Any, tmp: Path, hook: Webhook) -> None:
    """As on-call meets a firing alert: the alert list page of Grafana's real UI (when it is
    built here, else this part is skipped with the reason) shows the sliding-job and hot-zone
    rules as Firing; with ``$RENDER_DASHBOARDS_UI_TO`` set, its screenshot and a firing
    notification as the webhook received it (docs/grafana.md shows it) are written there."""
    from tests.integration.cdp import Browser
    from tests.integration.test_grafana_ui import (
        ALERT_TITLES,
        OUT_ENV,
        UI,
        _ui_problem,
        open_alert_list,
    )

    out = os.environ.get(OUT_ENV)
    if out:
        body = next(
            b
            for b in hook.bodies
            if any(
                a["status"] == "firing" and a["labels"].get("drainwatch_kind") == "sliding_job"
                for a in b.get("alerts", [])
            )
        )
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "webhook-firing.json").write_text(json.dumps(body, indent=2) + "\n")
    why = _ui_problem()
    if why is not None:
        warnings.warn(f"alert list in the UI not checked: {why}", stacklevel=1)
        return
    with Browser(tmp / "chromium") as browser:
        ui = UI(
            g=g,
            browser=browser,
            live=None,  # type: ignore[arg-type]  # open_alert_list needs no pipeline
            ranges={},
            user=stack.control.GRAFANA_ADMIN,
            password=g.password,
            tmp=tmp,
            out=Path(out) if out else None,
        )
        (tmp / "png").mkdir(exist_ok=True)
        with ui.page() as page:
            rows = open_alert_list(ui, page, "alerting-firing")
    for title in ALERT_TITLES:
        shown = [r for r in rows if title in r]
        assert shown and "Firing" in shown[0], (title, rows)


def test_every_rule_fires_notifies_and_resolves_and_none_on_a_quiet_input(
    influx: Any, stack: Any, tmp_path: Any
) -> None:
    pts, hook = Points(influx), Webhook()
    beat = Heartbeat(pts)
    beat.on.set()
    quiet(pts)
    time.sleep(3)
    try:
        with grafana_server(
            stack, influx.database, tmp_path, hook.url, fast=True, stalled_after_s=STALLED_AFTER_S
        ) as g:
            # every rule loaded from its file
            for grp in RULES["groups"]:
                for r in grp["rules"]:
                    got = g.get(f"/api/v1/provisioning/alert-rules/{r['uid']}")
                    assert got["provenance"] == "file" and got["title"] == r["title"]
            # quiet: two rounds of evaluations, every rule healthy and inactive, nothing sent
            wait(
                "every rule evaluated",
                lambda: (
                    set(states(g)) == TITLES
                    and all(e and not e.startswith("0001") for _, _, e in states(g).values())
                ),
                60,
                lambda: states(g),
            )
            first = {k: e for k, (_, _, e) in states(g).items()}
            wait(
                "a second evaluation",
                lambda: all(states(g)[k][2] != first[k] for k in TITLES),
                60,
                lambda: states(g),
            )
            s = states(g)
            assert all(st == "inactive" and h == "ok" for st, h, _ in s.values()), {
                k: v for k, v in s.items() if v[:2] != ("inactive", "ok")
            }
            assert hook.alerts() == []

            # crafted: each fires and reaches the webhook
            beat.on.clear()
            t0 = ago(3000)
            crafted(pts, t0)
            wait(
                "every rule firing",
                lambda: all(st == "firing" for st, _, _ in states(g).values()),
                150,
                lambda: states(g),
            )
            wait(
                "a firing notification per rule",
                lambda: {n for st, n in hook.alerts() if st == "firing"} == TITLES,
                90,
                lambda: hook.alerts(),
            )
            seen_firing(g, stack, tmp_path, hook)
            # each summary names the value that fired it (its template expanded without error)
            for b in hook.bodies:
                for a in b.get("alerts", []):
                    if a["status"] == "firing":
                        text = a["annotations"].get("summary", "")
                        assert text and "no value" not in text, a
                        assert "error" not in text.lower(), a

            # cleared: each resolves and the webhook hears it
            beat.on.set()
            cleared(pts, influx, t0)
            wait(
                "every rule back to normal",
                lambda: all(st == "inactive" for st, _, _ in states(g).values()),
                150,
                lambda: states(g),
            )
            wait(
                "a resolved notification per rule",
                lambda: {n for st, n in hook.alerts() if st == "resolved"} == TITLES,
                120,
                lambda: hook.alerts(),
            )
    finally:
        beat.stop.set()
        hook.close()
