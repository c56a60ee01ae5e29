"""`simulate` then `replay --format jobevents`: the simulator's EASY reservations reach
release_forecast.csv (``reserved_start`` on the start events, seed 001 Figure 9)."""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import orjson

from streams.cli import main


def test_simulated_reservations_fill_release_forecast(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    argv = ["simulate", "--model", "lublin", "--nodes", "16", "--days", "0.5", "--seed", "3"]
    assert main([*argv, "--out", str(sim)]) == 0
    events = [orjson.loads(x) for x in (sim / "jobs.jsonl").read_bytes().splitlines()]
    reserved = {d["job"]: d["reserved_start"] for d in events if "reserved_start" in d}
    assert reserved and all(d["type"] == "start" for d in events if "reserved_start" in d)

    out = tmp_path / "out"
    argv = ["replay", "--format", "jobevents", str(sim / "jobs.jsonl"), "--out", str(out)]
    assert main([*argv, "--nodes", "16", "--no-progress"]) == 0
    with open(out / "release_forecast.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    filled = {r["job"]: r for r in rows if r["reserved_start"]}
    assert filled and set(filled) <= set(reserved)
    submitted = {d["job"] for d in events if d["type"] == "submit"}
    assert set(reserved) & submitted <= set(filled)  # every reserved job submitted in the log
    starts = {d["job"]: d["ts"] for d in events if d["type"] == "start"}
    for job, r in filled.items():
        at = datetime.fromisoformat(r["reserved_start"]).timestamp()
        assert abs(at - reserved[job]) < 1e-3
        # actual_late_s is measured against the reservation, not the submit
        assert abs(float(r["actual_late_s"]) - (starts[job] - reserved[job])) < 1e-3
