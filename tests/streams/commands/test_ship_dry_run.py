"""`--dry-run` of the file shippers: what would be sent, as JSON lines, without Kafka (the
bootstrap points at a port nothing listens on): every record the replay reads, once."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import orjson

from models.records.nodestatus import Codebook
from models.records.plausible import TimeBounds
from streams.contracts import RejectLog
from streams.sources.jobevents import read_job_events
from streams.sources.moab import parse_plausible
from tests.golden.make_golden import INPUTS
from tests.paths import REPO


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env.update(
        {"DRAINWATCH_KAFKA_BOOTSTRAP": "127.0.0.1:1", "DRAINWATCH_STATE_DIR": str(tmp / "state")}
    )
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", "ship", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        timeout=300,
    )


def test_ship_moab_dry_run_prints_every_record(tmp_path: Path) -> None:
    log = tmp_path / "moab.log"
    lines = gzip.decompress((INPUTS / "moab.log.gz").read_bytes()).splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:3000]) + b"garbage 12:00:00 node status\n")
    r = _run(tmp_path, "moab", str(log), "--dry-run", "--no-progress")
    assert r.returncode == 0, r.stderr
    book = Codebook()
    parsed = parse_plausible(log.read_bytes(), book, TimeBounds(), str(log), 1)
    out = [orjson.loads(x) for x in r.stdout.splitlines()]
    assert len(out) == len(parsed.batch) > 1000
    b = parsed.batch
    want = sorted(
        (int(b.ts_ms[i]), book.nodes.names[int(b.node[i])], book.states.names[int(b.state[i])])
        for i in range(len(b))
    )
    from datetime import datetime

    def ms(iso: str) -> int:
        return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)

    assert sorted((ms(o["ts"]), o["node"], o["state"]) for o in out) == want
    assert {(o["rsv"] is None) for o in out} == {True, False}


def test_ship_jobs_dry_run_prints_every_event_and_dead_letters_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "jobs.jsonl"
    good = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes()).splitlines(keepends=True)
    path.write_bytes(b"".join(good[:300]) + b"not json\n")
    r = _run(tmp_path, "jobs", "--format", "jobevents", str(path), "--dry-run", "--no-progress")
    assert r.returncode == 0, r.stderr
    expect, _ = read_job_events("jobevents", [str(path)], RejectLog())
    assert sorted(r.stdout.splitlines()) == sorted(e.to_json() for e in expect)
    dead = [orjson.loads(x) for x in r.stderr.splitlines() if x.startswith(b"{")]
    assert [d["reason"] for d in dead] == ["bad_json"]
    assert b"300 events" in r.stderr


def test_ship_moab_dry_run_refuses_follow(tmp_path: Path) -> None:
    log = tmp_path / "moab.log"
    log.write_bytes(b"")
    r = _run(tmp_path, "moab", str(log), "--dry-run", "--follow")
    assert r.returncode == 2
    assert r.stderr.decode().strip() == (
        "drainwatch ship: --dry-run reads whole files: give no --follow"
    )
