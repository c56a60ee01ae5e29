"""Alerts end to end: crafted job events through Kafka make each job alert kind fire and
resolve exactly once per episode (overrun while the job still runs, a short-job flood of a user
and its group, a day below the CUP40 target), nothing else fires, and a worker killed with -9
between the firing and the resolution leaves a consumer that reads alerts by id the same
state changes. The second file's end-of-input markers close its last days as the replay's end
does (a second CUP40 episode)."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from models.records.jobevent import JobEvent
from streams.topics import TOPICS
from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live
from tests.integration.test_live_jobs import _ship_jobs

pytestmark = pytest.mark.integration
D = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
H = 3600.0


def _job(
    out: list[JobEvent],
    job: str,
    start: float,
    end: float,
    user: str,
    group: str,
    name: str,
    nodes: int,
    cores: int,
) -> None:
    kw: dict[str, Any] = {
        "user": user,
        "group": group,
        "name": name,
        "nodes": nodes,
        "cores": cores,
    }
    out += [
        JobEvent("submit", start, job, **kw),
        JobEvent("start", start, job, **kw),
        JobEvent("end", end, job, **kw),
    ]


def _events() -> list[JobEvent]:
    ev: list[JobEvent] = []
    _job(ev, "L1", D, D + 23 * H, "cap", "cg", "large", 100, 100)  # day 1: CUP40 ~ 1
    for i in range(6):  # a history of 100-second runs of (ov, sim)
        _job(ev, f"h{i}", D + H + 600 * i, D + H + 600 * i + 100, "ov", "og", "sim", 1, 1)
    _job(ev, "ov-big", D + 10 * H, D + 12 * H, "ov", "og", "sim", 1, 1)  # overruns
    for k in range(418):  # background: 700-second jobs every 10 minutes, done by day 4
        t = D + 2 * H + 600 * k
        _job(ev, f"bg{k}", t, t + 700, "bg", "bgg", "bgjob", 1, 1)
    for k in range(64):  # every partition well past the overrun's deadline
        _job(ev, f"f1-{k}", D + 11 * H, D + 11 * H + 700, "bg", "bgg", "bgjob", 1, 1)
    for k in range(10):  # day 2: a flood of 1-second 8-core jobs, and no large job all day
        _job(ev, f"flood{k}", D + 30 * H, D + 30 * H + 1, "flood", "fg", "x", 1, 8)
    _job(ev, "L3", D + 49 * H, D + 51 * H, "cap", "cg", "large", 100, 100)  # day 3: back up
    for k in range(64):  # day 5: every partition past the rest
        _job(ev, f"f2-{k}", D + 97 * H, D + 97 * H + 700, "bg", "bgg", "bgjob", 1, 1)
    return sorted(ev, key=lambda e: (e.ts, e.job))


def _write(path: Path, events: list[JobEvent]) -> str:
    path.write_bytes(b"".join(e.to_json() + b"\n" for e in events))
    return str(path)


def _alerts(live: Live) -> dict[str, list[dict[str, Any]]]:
    """The alerts topic by id: each id's distinct records in the order they first came."""
    out: dict[str, list[dict[str, Any]]] = {}
    for key, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "alerts"):
        d = orjson.loads(v)
        assert key == d["id"].encode()
        if d not in out.setdefault(d["id"], []):
            out[d["id"]].append(d)
    return out


def _wait(live: Live, worker: Any, done: Any, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got = _alerts(live)
        if done(got) or time.monotonic() > deadline:
            return got
        assert worker.poll() is None, "the worker stopped"
        time.sleep(2)


def test_each_job_alert_fires_and_resolves_once_through_a_kill(live: Live) -> None:
    live.env["DRAINWATCH_LIVE_JOBS"] = "on"
    live.env["DRAINWATCH_SECTION_NODES"] = "100"
    events = _events()
    cut = D + 11 * H + 700  # phase 1 ends while ov-big runs, past its deadline
    first = _write(live.tmp / "phase1.jsonl", [e for e in events if e.ts <= cut])
    rest = _write(live.tmp / "phase2.jsonl", [e for e in events if e.ts > cut])
    w = live.worker()
    # phase 1 without markers: its end of input would release every event and finish the
    # stages, and phase 2's first marker round would release what that shipper has not yet
    # sent on the other partitions (tests/models/jobs/test_merge_new_shipper.py)
    argv = ("--format", "jobevents", first, "--no-progress", "--no-markers")
    assert _ship_jobs(live, *argv).wait(60) == 0

    # the overrun fires while the job runs: its end has not even been shipped
    got = _wait(live, w, lambda a: "overrun:ov-big" in a)
    assert [a["state"] for a in got["overrun:ov-big"]] == ["firing"]
    fired = got["overrun:ov-big"][0]
    upper = fired["details"]["expected_end"] - (D + 10 * H)
    assert 100 <= upper < 200  # the history's 100-second runs
    assert fired["since"] == fired["at"] == D + 10 * H + upper + 60
    assert fired["threshold"] == upper + 60

    time.sleep(3)  # a flush or two, then kill -9 and restart from the saved state
    w.send_signal(signal.SIGKILL)
    w.wait(10)
    w = live.worker()
    assert _ship_jobs(live, "--format", "jobevents", rest, "--no-progress").wait(60) == 0
    want = {
        "overrun:ov-big",
        "shortjob_flood:user:flood",
        "shortjob_flood:group:fg",
        "capability:cup40",
    }
    # phase 2's end of input finishes the stages as the replay's end does: day 5 (only the
    # fillers; day 4 has no job) closes, and capability fires again, a second episode
    n = {"capability:cup40": 3}
    got = _wait(
        live, w, lambda a: set(a) == want and all(len(v) == n.get(k, 2) for k, v in a.items())
    )
    assert set(got) == want  # nothing else fired: not the background, not the fillers
    for aid, recs in got.items():  # one episode each: one firing, one resolved, same since
        assert [r["state"] for r in recs[:2]] == ["firing", "resolved"], aid
        assert recs[0]["since"] == recs[1]["since"], aid
        assert len(recs) == n.get(aid, 2), aid
    again = got["capability:cup40"][2]
    assert again["state"] == "firing" and again["details"]["day"] == "2024-01-05"
    assert again["since"] == again["at"] == D + 120 * H and again["value"] == 0.0
    assert got["overrun:ov-big"][0] == fired  # the same record after the restart
    assert got["overrun:ov-big"][1]["at"] == D + 12 * H
    assert got["overrun:ov-big"][1]["value"] == 2 * H

    # flood: ten 1-second 8-core jobs, T_s = 10 x 599 x 8 = 47,920 slot-seconds, A = 4,792
    # at the tick after them, then x 0.9 a tick: 4,312.8, 3,881.52, 3,493.37 (below 3,600)
    tick = D + 30 * H + 180
    for holder in ("user:flood", "group:fg"):
        on, off = got[f"shortjob_flood:{holder}"]
        assert (on["at"], off["at"]) == (tick, tick + 3 * 180)
        assert on["value"] == pytest.approx(4792.0) and off["value"] == pytest.approx(
            4792.0 * 0.9**3
        )
        assert on["threshold"] == 3600.0
    # capability: day 2 has no large job (fires at its end), day 3 has L3 (resolves at its end)
    on, off = got["capability:cup40"][:2]
    assert (on["at"], on["value"], on["details"]["day"]) == (D + 48 * H, 0.0, "2024-01-02")
    # day 3: L3's 200 node-hours; small: 142 background jobs of 700 s and 100 s of the one
    # that started on day 2
    assert off["at"] == D + 72 * H
    assert off["value"] == pytest.approx(200 / (200 + (142 * 700 + 100) / 3600), rel=1e-12)

    schema = jsonschema.Draft202012Validator(next(t.schema for t in TOPICS if t.name == "alerts"))
    for recs in got.values():
        for r in recs:
            schema.validate(r)
    want_points = sorted((aid, s) for aid in want for s in ("firing", "resolved"))
    want_points = sorted([*want_points, ("capability:cup40", "firing")])
    points = live.influx.influxql_until(
        'SELECT "id", "firing", "value", "state" FROM "alerts"',
        lambda rows: len(rows) >= len(want_points),
    )
    assert sorted((p["id"], p["state"]) for p in points) == want_points  # re-sent: overwritten
