"""`make demo-live`: the live pipeline on the local stack, next to the replay of the same log.

Starts the local stack (real Kafka and InfluxDB, deploy/local/stack.py) if it is not running,
simulates a day of 500 nodes, starts a worker, ships the log through Kafka, waits until the
worker has written the day to InfluxDB, and prints the live day rows beside the replay's.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "streams.cli", *args]


def _query(url: str, token: str, db: str, q: str) -> list[dict[str, object]]:
    import base64
    import json

    req = urllib.request.Request(
        f"{url}/query?" + urllib.parse.urlencode({"db": db, "q": q, "epoch": "ms"}),
        method="POST",
        headers={"Authorization": "Basic " + base64.b64encode(token.encode()).decode()},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        doc = json.loads(r.read())
    rows = []
    for res in doc.get("results", []):
        for s in res.get("series", []):
            tags = s.get("tags", {})
            rows += [{**tags, **dict(zip(s["columns"], v, strict=True))} for v in s["values"]]
    return rows


def main() -> int:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, str(REPO / "deploy" / "local" / "stack.py"), "start"], check=True
    )
    env_file = REPO / ".drainwatch" / "stack.env"
    stack = dict(
        line.split("=", 1)
        for line in env_file.read_text().splitlines()
        if line and not line.startswith("#")
    )
    token = Path(stack["DRAINWATCH_INFLUX_TOKEN_FILE"]).read_text().strip()
    tag = uuid.uuid4().hex[:6]
    db = f"demo_{tag}"
    _query(stack["DRAINWATCH_INFLUX_URL"], token, "", f'CREATE DATABASE "{db}"')
    work = Path(tempfile.mkdtemp(prefix="drainwatch-demo-live-"))
    env = {
        **os.environ,
        **stack,
        "DRAINWATCH_TOPIC_PREFIX": f"demo{tag}.",
        "DRAINWATCH_INFLUX_BUCKET": f"{db}/autogen",
        "DRAINWATCH_INFLUX_DATABASE": db,
        "DRAINWATCH_TZ": "UTC",
        "DRAINWATCH_WEB_PORT": "16099",
        "DRAINWATCH_BROKER_SESSION_TIMEOUT": "10",
        "DRAINWATCH_BROKER_REBALANCE_TIMEOUT": "10",
        "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL": "1",
        "DRAINWATCH_CHECKPOINT_INTERVAL": "1",
        "DRAINWATCH_FLUSH_INTERVAL": "1",
        "DRAINWATCH_LOG_LEVEL": "warning",
        "DRAINWATCH_STATE_DIR": str(work / "state"),
    }
    subprocess.run(
        _cli(
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            "500",
            "--days",
            "1",
            "--period",
            "60",
            "--seed",
            "0",
            "--out",
            str(work / "sim"),
        ),
        check=True,
        env=env,
    )
    log = work / "sim" / "moab.log"
    subprocess.run(
        _cli(
            "replay", "--format", "moab", str(log), "--out", str(work / "replay"), "--no-progress"
        ),
        check=True,
        env=env,
    )
    worker = subprocess.Popen(
        _cli("worker"),
        env=env,
        stdout=open(work / "worker.log", "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )
    try:
        subprocess.run(_cli("ship", "moab", str(log)), check=True, env=env)
        with open(work / "replay" / "drain_daily.csv", newline="") as f:
            expect = list(csv.DictReader(f))
        deadline = time.monotonic() + 120
        while True:
            live = _query(
                stack["DRAINWATCH_INFLUX_URL"],
                token,
                db,
                "SELECT * FROM drain WHERE \"window\"='day'",
            )
            done = len(live) == len(expect) and all(
                abs(float(r["drain_node_seconds"]) - float(e["drain_node_seconds"])) < 1e-6  # type: ignore[arg-type]
                for r, e in zip(live, expect, strict=True)
            )
            if done or time.monotonic() > deadline:
                break
            time.sleep(1)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    print("\nday          live drain node-s    replay drain node-s   live drain %   replay %")
    for r, e in zip(live, expect, strict=False):
        day = time.strftime("%Y-%m-%d", time.gmtime(int(r["time"]) / 1000))  # type: ignore[call-overload]
        print(
            f"{day}   {float(r['drain_node_seconds']):>18,.3f}  "  # type: ignore[arg-type]
            f"{float(e['drain_node_seconds']):>20,.3f}   "
            f"{float(r.get('drain_pct_dynamic') or 0):>11.4f}   "  # type: ignore[arg-type]
            f"{float(e['drain_pct_dynamic'] or 0):>7.4f}"
            f"{'   (provisional)' if r['provisional'] else ''}"
        )
    jobs = _query(
        stack["DRAINWATCH_INFLUX_URL"],
        token,
        db,
        'SELECT "job", "drain_node_seconds" AS drain, "nodes_charged" AS nodes FROM drain_job',
    )
    top = sorted(jobs, key=lambda j: -float(j["drain"]))[:5]  # type: ignore[arg-type]
    print(
        "top drain jobs (live): "
        + "; ".join(
            f"job {j.get('job')}: {float(j['drain']):,.0f} node-s on {j['nodes']} nodes"  # type: ignore[arg-type]
            for j in top
        )
    )
    print(
        f"\nlive rows in InfluxDB database {db}; replay reports in {work / 'replay'}; "
        f"{'equal' if done else 'NOT EQUAL'} ({time.perf_counter() - t0:.0f} s)"
    )
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
