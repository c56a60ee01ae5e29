"""The drain stream joined with job events, live: a crafted Moab log (six jobs held idle on
six nodes each for 30 minutes, then run for 5 s to 2 h) and its job events shipped through
Kafka give in InfluxDB (`job`) exactly the per-job rows of
``drainwatch replay --format moab --jobs`` (size, run time, drain per node, drain / run time)
for the events the worker has released, and one failure-to-launch alert per job the replay
lists as one (seed 000 §V-C)."""

from __future__ import annotations

import csv
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from models.formats.jobsource import iter_job_events, sort_events
from models.records.jobevent import JobEvent
from streams.format import format_rows
from streams.sinks.points import MEASUREMENTS
from streams.tables.drain import DRAIN_JOBS_WITH_EVENTS, SIZE_GROUPS
from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live, _cli
from tests.integration.test_live_jobs import _influx_rows, _ship_jobs, _watermark

pytestmark = pytest.mark.integration
FTL_NODE_HOURS = 1.0  # each job is held for 3 node-hours


RUNTIMES = (10, 20, 600, 3600, 5, 7200)  # three fail to launch (< 30 s)


def _workload(d: Path) -> tuple[Path, Path]:
    t0 = datetime(2024, 3, 1, tzinfo=UTC)
    lines, events = [], []
    starts = [t0 + timedelta(minutes=30 + 40 * i) for i in range(len(RUNTIMES))]
    for i, run in enumerate(RUNTIMES):
        held, start = starts[i] - timedelta(minutes=30), starts[i]
        end = start + timedelta(seconds=run)
        kw = {"nodes": 6, "user": "u", "name": "app"}
        events += [
            JobEvent("submit", held.timestamp() - 60, f"J{i}", **kw),
            JobEvent("start", start.timestamp(), f"J{i}", **kw),
            JobEvent("end", end.timestamp(), f"J{i}", **kw),
        ]
    for k in range(64):  # every job-events partition well past the rest
        t = (t0 + timedelta(hours=7)).timestamp()
        events += [
            JobEvent("start", t, f"f{k}", nodes=1),
            JobEvent("end", t + 900, f"f{k}", nodes=1),
        ]
    for m in range(6 * 60):
        t = t0 + timedelta(minutes=m)
        for n in range(40):
            i = n // 6
            state, rsv, job = "Idle", "none", "none"
            if i < len(RUNTIMES):
                held, start = starts[i] - timedelta(minutes=30), starts[i]
                end = start + timedelta(seconds=RUNTIMES[i])
                if held <= t < start:
                    rsv = f"J{i}"
                elif start <= t < end:
                    state, job = "Running", f"J{i}"
            lines.append(
                f"{t.strftime('%Y-%m-%dT%H:%M:%S.000+0000')} 1 INFO  Node 'n{n:02d}' "
                f"status: state='{state}' rsvlist='{rsv}' joblist='{job}'\n"
            )
    log, jobs = d / "moab.log", d / "jobs.jsonl"
    log.write_text("".join(lines))
    jobs.write_bytes(b"".join(e.to_json() + b"\n" for e in sort_events(events)))
    return log, jobs


def test_live_join_equals_the_replay_with_jobs(live: Live) -> None:
    log, jobs = _workload(live.tmp)
    live.env.update(
        {
            "DRAINWATCH_LIVE_JOBS": "on",
            "DRAINWATCH_NODES": "40",
            "DRAINWATCH_ALERT_FTL_NODE_HOURS": str(FTL_NODE_HOURS),
        }
    )
    w = live.worker()
    live.ship(str(log), "--no-progress")
    assert _ship_jobs(live, "--format", "jobevents", str(jobs), "--no-progress").wait(120) == 0

    # the replay over the events the worker can have released
    wm = _watermark(live)
    with open(jobs, "rb") as f:
        events = sort_events(iter_job_events("jobevents", f))
    released = live.tmp / "released.jsonl"
    released.write_bytes(b"".join(e.to_json() + b"\n" for e in events if e.ts <= wm))
    out = live.tmp / "replay"
    subprocess.run(
        _cli(
            "replay",
            "--format",
            "moab",
            str(log),
            "--tz",
            "UTC",
            "--nodes",
            "40",
            "--jobs",
            str(released),
            "--jobs-format",
            "jobevents",
            "--out",
            str(out),
            "--no-progress",
        ),
        check=True,
        capture_output=True,
    )
    want = sorted(list(csv.reader((out / "drain_jobs.csv").open()))[1:])
    assert len(want) == len(RUNTIMES)
    deadline = time.monotonic() + 120
    while True:
        got = _influx_rows(live, DRAIN_JOBS_WITH_EVENTS)
        if got == want or time.monotonic() > deadline:
            break
        assert w.poll() is None, "the worker stopped"
        time.sleep(3)
    assert got == want
    assert all(r[5] == "6" and r[6] for r in want)  # size and run time from the job events

    # drain by size group (seed 000 §V-D): the gauge's last point per group is size_groups.csv
    latest = {}
    m = MEASUREMENTS[SIZE_GROUPS.file]
    for p in live.influx.influxql(f'SELECT * FROM "{m.name}"'):  # in time order
        latest[p["group"]] = [p.get(c.name) for c in SIZE_GROUPS.columns]
    want_groups = list(csv.reader((out / "size_groups.csv").open()))[1:]
    assert want_groups and list(format_rows(SIZE_GROUPS, list(latest.values()))) == want_groups

    ftl = {
        r[0]
        for r in list(csv.reader((out / "failure_to_launch.csv").open()))[1:]
        if float(r[1]) >= FTL_NODE_HOURS * 3600
    }
    alerts = {}
    for _, v, _ in read_topic(live.stack.kafka_bootstrap, live.prefix + "alerts"):
        a = orjson.loads(v)
        if a["kind"] == "failure_to_launch":
            alerts.setdefault(a["subject"], set()).add(a["state"])
    assert ftl == {"J0", "J1", "J4"}
    assert alerts == {job: {"firing", "resolved"} for job in ftl}
