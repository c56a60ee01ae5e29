"""Drain alerts end to end: a crafted Moab log through the shipper, Kafka and the worker makes a
sliding job fire and resolve when it starts running, another resolve when nothing has been held
for it for an hour, and an hour with a 30-minute hole in the log raise data-quality, each
exactly once; nothing else fires."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live

pytestmark = pytest.mark.integration
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _line(t: datetime, node: str, state: str, rsv: str, job: str) -> str:
    ts = t.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    return f"{ts} 1 INFO  Node '{node}' status: state='{state}' rsvlist='{rsv}' joblist='{job}'\n"


def _log(path: Path) -> Path:
    lines = []
    for k in range(10 * 60):  # one iteration a minute, 00:00 to 09:59
        t = T0 + timedelta(minutes=k)
        if t.hour == 7 and 10 <= t.minute < 40:
            continue  # a 30-minute hole: hour 07's basis is short
        for i in range(40):
            node = f"n{i:02d}"
            if i < 20:  # J1 held on 20 nodes for 6 hours (120 node-hours), then it runs
                state, rsv, job = ("Idle", "J1", "none") if k < 360 else ("Running", "none", "J1")
            elif k < 330:  # J2 held on 20 nodes for 5.5 hours (110 node-hours), then let go
                state, rsv, job = "Idle", "J2", "none"
            else:
                state, rsv, job = "Idle", "none", "none"
            lines.append(_line(t, node, state, rsv, job))
    path.write_text("".join(lines))
    return path


def test_sliding_jobs_and_data_quality_alerts(live: Live) -> None:
    live.worker()
    live.ship(str(_log(live.tmp / "moab.log")), "--no-progress")
    deadline = time.monotonic() + 90
    got: dict[str, list[dict[str, Any]]] = {}
    while time.monotonic() < deadline:
        got = {}
        for key, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "alerts"):
            d = orjson.loads(v)
            assert key == d["id"].encode()
            if d not in got.setdefault(d["id"], []):
                got[d["id"]].append(d)
        if len(got) >= 3 and all(len(r) == 2 for r in got.values()):
            break
        time.sleep(2)
    assert set(got) == {"sliding_job:J1", "sliding_job:J2", "data_quality:hour"}
    for aid, recs in got.items():  # one episode each
        assert [r["state"] for r in recs] == ["firing", "resolved"], aid
        assert recs[0]["since"] == recs[1]["since"], aid
    t0 = T0.timestamp()
    # J2: 20 nodes held 5.5 hours for a job that never ran: fired once its drain passed 100
    # node-hours, resolved an hour after the last node was held for it
    on, off = got["sliding_job:J2"]
    assert on["since"] == t0 and t0 + 5 * 3600 <= on["at"] <= t0 + 5.5 * 3600
    assert on["threshold"] == 100.0 and on["severity"] == "critical"
    assert off["at"] == t0 + 6.5 * 3600 and off["value"] == 110.0
    # J1: 120 node-hours before it started; the worker caught up after it had started, so
    # both records come at its last charge
    on, off = got["sliding_job:J1"]
    assert (on["since"], on["at"], off["at"]) == (t0, t0 + 6 * 3600, t0 + 6 * 3600)
    assert on["value"] == off["value"] == 120.0
    # the hole: hour 07's basis is short (29 minutes of it), hour 08 is whole again
    on, off = got["data_quality:hour"]
    assert (on["since"], on["at"], off["at"]) == (t0 + 7 * 3600, t0 + 8 * 3600, t0 + 9 * 3600)
    assert on["value"] < 0.95 * 3600 and off["value"] == 3600.0
    want_points = sorted((aid, st) for aid in got for st in ("firing", "resolved"))
    points = live.influx.influxql_until(
        'SELECT "id", "state" FROM "alerts"', lambda rows: len(rows) >= len(want_points)
    )
    assert sorted((p["id"], p["state"]) for p in points) == want_points


def test_a_stalled_topic_fires_on_the_worker_clock_and_resolves_on_input(live: Live) -> None:
    live.env["DRAINWATCH_ALERT_STALLED_AFTER"] = "3"
    live.worker()
    log = live.tmp / "one.log"
    log.write_text(_line(T0, "n00", "Idle", "none", "none"))
    live.ship(str(log), "--no-progress")
    topic = live.prefix + "node-status"

    def alerts() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "alerts"):
            d = orjson.loads(v)
            if d not in out:
                out.append(d)
        return out

    deadline = time.monotonic() + 60
    while not alerts() and time.monotonic() < deadline:
        time.sleep(1)
    (on,) = alerts()
    assert (on["kind"], on["state"], on["details"]["topic"]) == ("stalled", "firing", topic)
    assert on["subject"].startswith(topic + "@") and on["severity"] == "critical"
    assert on["value"] > 3.0 and on["threshold"] == 3.0 and on["at"] - on["since"] > 3.0
    log.write_text(_line(T0 + timedelta(minutes=1), "n00", "Idle", "none", "none"))
    live.ship(str(log), "--no-progress")  # input again: resolved
    deadline = time.monotonic() + 60
    while len(alerts()) < 2 and time.monotonic() < deadline:
        time.sleep(1)
    on2, off = alerts()[:2]
    assert on2 == on and (off["id"], off["state"], off["since"]) == (
        on["id"],
        "resolved",
        on["since"],
    )
