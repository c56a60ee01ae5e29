"""Every panel query of every generated dashboard, run by a real Grafana (``/api/ds/query``, so
Grafana expands ``$timeFilter`` and ``$__interval``) on a simulated week that the live pipeline
wrote into the real InfluxDB: each returns data, and the key panels are the replay's numbers
(daily drain %, top drain jobs, CUP40 per day)."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.grafana.render import frames, render, table_rows
from tests.integration.grafana_server import Grafana, grafana_server
from tests.integration.test_live_drain import Live, _cli
from tests.integration.test_live_jobs import _ship_jobs
from tests.integration.test_live_samples import _trace
from tests.paths import REPO

pytestmark = pytest.mark.integration
DASHBOARDS = REPO / "grafana" / "dashboards"
START = datetime(2023, 11, 14, tzinfo=UTC)  # the samples trace's day (test_live_samples.T0)
# What a dashboard opened with its defaults sends: All (allValue .*) and an empty job box.
DEFAULTS = {"cluster": ".*", "user": ".*", "partition": ".*", "worker": ".*", "job": ""}


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def interpolate(query: str, **chosen: str) -> str:
    """The frontend's part: template variables at their defaults (or as ``chosen``); Grafana's
    macros stay."""
    values = DEFAULTS | chosen
    return re.sub(r"\$(cluster|user|partition|worker|job)\b", lambda m: values[m.group(1)], query)


def series(result: dict[str, Any]) -> dict[str, dict[int, float]]:
    """time_series frames by display name -> {time ms: value}."""
    out = {}
    for f in frames(result):
        field = f["schema"]["fields"][1]
        name = (field.get("config") or {}).get("displayNameFromDS") or f["schema"].get("name")
        out[name] = dict(zip(f["data"]["values"][0], f["data"]["values"][1], strict=True))
    return out


def run_panel(
    g: Grafana, panel: dict[str, Any], start_ms: int, end_ms: int, **chosen: str
) -> dict[str, Any]:
    queries = [
        {
            **t,
            "query": interpolate(t["query"], **chosen),
            "intervalMs": 60_000,
            "maxDataPoints": 2000,
        }
        for t in panel["targets"]
    ]
    return g.query(queries, start_ms, end_ms)


def _load_week(live: Live, findings: bool = False) -> tuple[Path, Path]:
    """A simulated week of 64 nodes (its jobs) and a 2-hour samples trace through the live
    pipeline into the test's database; the replay's reports of the same inputs. With
    ``findings`` the simulation adds one job of each finding (``simulate --findings``: a
    sliding job, a failure to launch, an overrun, a short-job flood)."""
    sim, rep, repj = live.tmp / "sim", live.tmp / "replay", live.tmp / "replay-jobs"
    subprocess.run(
        _cli(
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            "64",
            "--days",
            "7",
            "--period",
            "300",
            "--seed",
            "1",
            "--tz",
            "UTC",
            "--start",
            START.strftime("%Y-%m-%dT%H:%M:%S"),
            "--outages",
            "2",
            "--drained",
            "1",
            *(("--findings",) if findings else ()),
            "--out",
            str(sim),
        ),
        check=True,
        capture_output=True,
    )
    # the simulator names users only: give them groups, for the per-group penalties, and
    # every fifth job the partition "debug" (the others "batch"), for the partition variable
    events = [orjson.loads(line) for line in (sim / "jobs.jsonl").read_bytes().splitlines()]
    (sim / "jobs.jsonl").write_bytes(
        b"".join(
            orjson.dumps(
                {
                    **e,
                    "group": f"grp{int(e['user'][-1]) % 3}",
                    "partition": "debug" if int(e["job"]) % 5 == 0 else "batch",
                }
            )
            + b"\n"
            for e in events
        )
    )
    subprocess.run(
        _cli(
            "replay",
            "--format",
            "moab",
            str(sim / "moab.log"),
            "--tz",
            "UTC",
            "--jobs",
            str(sim / "jobs.jsonl"),
            "--jobs-format",
            "jobevents",
            "--out",
            str(rep),
            "--no-progress",
        ),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        _cli(
            "replay",
            "--format",
            "jobevents",
            str(sim / "jobs.jsonl"),
            "--tz",
            "UTC",
            "--section-nodes",
            "64",
            "--out",
            str(repj),
            "--no-progress",
        ),
        check=True,
        capture_output=True,
    )
    trace = _trace(live.tmp / "samples.jsonl")
    live.env.update(
        {
            "DRAINWATCH_LIVE_JOBS": "on",
            "DRAINWATCH_LIVE_SAMPLES": "on",
            "DRAINWATCH_SECTION_NODES": "64",
            "DRAINWATCH_MEM_PER_CORE": "6",
            "DRAINWATCH_LATENESS": "120",
        }
    )
    w = live.worker()
    # day by day, node status and job events side by side, as they flow in production (the
    # join forgets a job's drain two days after its last charge)
    lines = (sim / "moab.log").read_bytes().splitlines(keepends=True)
    events = [orjson.loads(line) for line in (sim / "jobs.jsonl").read_bytes().splitlines()]
    for k in range(7):
        lo = (START + timedelta(days=k)).timestamp()
        day = (START + timedelta(days=k)).strftime("%Y-%m-%d").encode()
        (live.tmp / "day.log").write_bytes(b"".join(x for x in lines if x.startswith(day)))
        (live.tmp / "day.jsonl").write_bytes(
            b"".join(
                orjson.dumps(e) + b"\n"
                for e in events
                if (k == 0 or e["ts"] >= lo) and (k == 6 or e["ts"] < lo + 86400)
            )
        )
        live.ship(str(live.tmp / "day.log"), "--no-progress")
        # markers on the last day only: its end of input releases every event and finishes
        # the stages (a day's end would finish them before the next day's events, and a new
        # shipper's first round would release what it has not yet sent everywhere:
        # tests/models/jobs/test_merge_new_shipper.py)
        more = () if k == 6 else ("--no-markers",)
        argv = ("--format", "jobevents", str(live.tmp / "day.jsonl"), "--no-progress", *more)
        assert _ship_jobs(live, *argv).wait(120) == 0
    p = subprocess.run(
        _cli("ship", "sample-files", str(trace)), env=live.env, capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    # until the worker has it all: the replay's day rows, its failures to launch, every table
    want_days = [float(r["drain_node_seconds"]) for r in _csv(rep / "drain_daily.csv")]
    want_ftl = sorted(r["job"] for r in _csv(rep / "failure_to_launch.csv"))
    want_jobs = sorted(
        (r["job"], float(r["drain_node_seconds"])) for r in _csv(rep / "drain_jobs.csv")
    )
    deadline = time.monotonic() + 120
    while True:
        counts = {
            m: live.influx.influxql(f'SELECT count(*) FROM "{m}"')
            for m in (
                "capability",
                "dfs",
                "job_util",
                "runtime_prediction",
                "pipeline",
                "alerts",
                "hot_zone",
                "fairshare",
                "turnover",
                "usage",
            )
        }
        days = [
            r["drain_node_seconds"]
            for r in live.influx.influxql('SELECT * FROM "drain" WHERE "window" = \'day\'')
        ]
        ftl = sorted(
            r["job"] for r in live.influx.influxql('SELECT * FROM "job" WHERE "runtime" < 30')
        )
        q = 'SELECT "job", "drain_node_seconds" FROM "job"'
        jobs = sorted((r["job"], r["drain_node_seconds"]) for r in live.influx.influxql(q))
        if days == want_days and ftl == want_ftl and jobs == want_jobs and all(counts.values()):
            break
        assert w.poll() is None, "the worker stopped"
        assert time.monotonic() < deadline, (
            [(i, a, b) for i, (a, b) in enumerate(zip(days, want_days, strict=False)) if a != b],
            len(days),
            ftl,
            want_ftl,
            [m for m, c in counts.items() if not c],
            sorted(set(jobs) ^ set(want_jobs)),
        )
        time.sleep(2)
    return rep, repj


def test_every_panel_query_returns_data_and_key_panels_equal_the_replay(live: Live) -> None:
    rep, repj = _load_week(live)
    boards = {p.stem: json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))}
    week = (
        int(START.timestamp() * 1000) - 86_400_000,
        int(START.timestamp() * 1000) + 8 * 86_400_000,
    )
    now = int(time.time() * 1000)
    ranges = {name: week for name in boards} | {"pipeline": (now - 3_600_000, now)}
    with grafana_server(live.stack, live.influx.database, live.tmp) as g:
        g.wait_dashboards({b["uid"] for b in boards.values()})
        for b in boards.values():  # file-provisioned, as in production
            assert g.get(f"/api/dashboards/uid/{b['uid']}")["meta"]["provisioned"] is True
        results: dict[tuple[str, str], dict[str, Any]] = {}
        empty = []
        for name, b in boards.items():
            start, end = ranges[name]
            for v in b["templating"]["list"]:  # the variables' own queries
                if v["type"] == "query":
                    r = g.query(
                        [
                            {
                                "refId": "V",
                                "datasource": v["datasource"],
                                "query": v["query"],
                                "rawQuery": True,
                                "resultFormat": "table",
                            }
                        ],
                        start,
                        end,
                    )["V"]
                    if not frames(r):
                        empty.append((name, f"variable {v['name']}"))
            for p in b["panels"]:
                res = run_panel(g, p, start, end)
                results[(name, p["title"])] = res
                if not any(frames(r) for r in res.values()):
                    empty.append((name, p["title"]))
        assert not empty, f"panels without data: {empty}"
        # the partition variable: one partition chosen, the run-time table keeps its jobs
        runtime = "Run-time predictions vs actual"
        panel = next(p for p in boards["jobs"]["panels"] if p["title"] == runtime)
        debug = run_panel(g, panel, *ranges["jobs"], partition="debug")
        values = g.query(
            [
                {
                    "refId": "V",
                    "datasource": v["datasource"],
                    "query": v["query"],
                    "rawQuery": True,
                    "resultFormat": "table",
                }
                for v in boards["jobs"]["templating"]["list"]
                if v["name"] == "partition"
            ],
            *ranges["jobs"],
        )["V"]
    assert sorted(x for f in frames(values) for x in f["data"]["values"][-1]) == ["batch", "debug"]
    every = {r["job"] for r in table_rows(results[("jobs", runtime)]["A"])}
    debug_jobs = {r["job"] for r in table_rows(debug["A"])}
    replay_debug = {
        r["job"] for r in _csv(repj / "runtime_predictions.csv") if r["partition"] == "debug"
    }
    assert debug_jobs == every & replay_debug and len(debug_jobs) > 50, (
        len(debug_jobs),
        len(every),
        len(replay_debug),
    )

    # the same answers drawn as PNG (docs/dashboards/ is made with RENDER_DASHBOARDS_TO=...)
    out = Path(os.environ.get("RENDER_DASHBOARDS_TO") or live.tmp / "png")
    for name, b in boards.items():
        png = render(b, {t: r for (n, t), r in results.items() if n == name}, out / f"{name}.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000

    # daily drain %, both bases: the replay's drain_daily.csv
    got = series(results[("drain", "Drain % per day")]["A"])
    assert sorted(got) == ["dynamic basis", "static basis"]  # the column names ($col)
    for e in _csv(rep / "drain_daily.csv"):
        t = int(datetime.fromisoformat(e["day"]).replace(tzinfo=UTC).timestamp() * 1000)
        for col, name in (
            ("drain_pct_static", "static basis"),
            ("drain_pct_dynamic", "dynamic basis"),
        ):
            assert math.isclose(got[name][t], float(e[col]), rel_tol=1e-9), (e["day"], col)
    # top drain jobs: the 20 largest of drain_jobs.csv, in node-hours
    rows = table_rows(results[("jobs", "Top drain jobs")]["A"])
    want = sorted(
        _csv(rep / "drain_jobs.csv"), key=lambda r: (-float(r["drain_node_seconds"]), r["job"])
    )
    got_top = sorted(((r["job"], r["drain_node_hours"]) for r in rows), key=lambda x: (-x[1], x[0]))
    # every job of the replay, once (a job's row is one point, whatever its totals were)
    assert sorted(j for j, _ in got_top) == sorted(w["job"] for w in want), (got_top, want)
    for (job, hours), w in zip(got_top, want, strict=True):
        assert job == w["job"] and math.isclose(
            hours, float(w["drain_node_seconds"]) / 3600, rel_tol=1e-9
        ), (job, w)
    # failure to launch: the replay's failure_to_launch.csv
    ftl = {
        r["job"]
        for r in table_rows(results[("jobs", "Failure to launch (drained, then ran < 30 s)")]["A"])
    }
    assert ftl == {r["job"] for r in _csv(rep / "failure_to_launch.csv")} != set()

    # node-release forecast: the replay's release_forecast.csv, step by step, for every job
    # (the last day's end of input released every event and wrote the jobs still pending)
    def forecast_key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (
            r["job"],
            int(r["step"]),
            int(r["need"]),
            int(r["missing"]),
            int(r["need_after"]) if r["need_after"] not in ("", None) else None,
        )

    fc = table_rows(results[("jobs", "Node-release forecast (seed 001 Fig. 9)")]["A"])
    want_fc = _csv(repj / "release_forecast.csv")
    assert len(fc) == len({(r["job"], r["step"]) for r in fc})  # a point per job and step
    assert {forecast_key(r) for r in fc} == {forecast_key(r) for r in want_fc} != set()
    # CUP40 per day: capability_daily.csv for every day the live pipeline has closed
    cup = series(results[("capability", "CUP40 and modified CUP per day vs target")]["A"])
    want_cup = {
        int(datetime.fromisoformat(r["day"]).replace(tzinfo=UTC).timestamp() * 1000): float(
            r["cup40"]
        )
        for r in _csv(repj / "capability_daily.csv")
    }
    assert len(cup["CUP40"]) >= 5
    for t, v in cup["CUP40"].items():
        assert math.isclose(v, want_cup[t], rel_tol=1e-9, abs_tol=1e-12), t
