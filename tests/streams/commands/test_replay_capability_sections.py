"""`replay` of job events with partitions: P_CUP's day term and the Red/Black section columns of
capability_daily.csv (seed 004), empty with the reason in the summary when unknown."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import orjson
import pytest

from streams.cli import main


def T(hms: str) -> str:
    return f"2024-01-01T{hms}.000Z"


def events_file(tmp_path: Path, partitions: bool = True) -> Path:
    """10 nodes (large >= 4): A 4 nodes x 2 h on 'red', B 2 nodes x 1 h on 'red2',
    C 1 node x 3 h on 'batch' (Black)."""
    jobs = [
        ("A", 4, "red", "00:00:00", "02:00:00"),
        ("B", 2, "red2", "01:00:00", "02:00:00"),
        ("C", 1, "batch", "00:00:00", "03:00:00"),
    ]
    lines = []
    for name, nodes, part, start, end in jobs:
        j: dict[str, object] = {"job": name, "user": "u", "nodes": nodes}
        if partitions:
            j["partition"] = part
        lines.append(orjson.dumps({"type": "start", "ts": T(start), **j}))
        lines.append(orjson.dumps({"type": "end", "ts": T(end), "state": "COMPLETED", **j}))
    lines.sort(key=lambda b: orjson.loads(b)["ts"])
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


def replay(
    tmp_path: Path, src: Path, *extra: str
) -> tuple[list[dict[str, str]], dict[str, object]]:
    out = tmp_path / "out"
    argv = ["replay", "--format", "jobevents", str(src), "--out", str(out), "--nodes", "10"]
    assert main([*argv, "--no-progress", *extra]) == 0
    with open(out / "capability_daily.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return rows, json.loads((out / "summary_jobs.json").read_text())["capability"]


def test_red_black_columns_with_red_partitions(tmp_path: Path) -> None:
    rows, s = replay(tmp_path, events_file(tmp_path), "--red-partitions", "red, red2")
    (r,) = rows
    assert (r["large_node_hours"], r["small_node_hours"], r["cup40"]) == (
        "8",
        "5",
        "0.615384615384615",
    )
    assert (r["red_node_hours"], r["black_node_hours"]) == ("10", "3")
    assert r["red_share"] == format(10 / 13, ".15g")
    assert r["p_cup_factor"] == format(0.8 - 8 / 13, ".15g")
    assert s["red_partitions"] == ["red", "red2"] and s["red_black_missing_reason"] is None
    assert s["red_share"] == pytest.approx(10 / 13)
    assert s["p_cup_factor"] == pytest.approx(0.8 - 8 / 13)


def test_red_black_empty_without_the_option(tmp_path: Path) -> None:
    rows, s = replay(tmp_path, events_file(tmp_path))
    (r,) = rows
    assert r["red_node_hours"] == r["black_node_hours"] == r["red_share"] == ""
    assert r["p_cup_factor"] == format(0.8 - 8 / 13, ".15g")  # P_CUP needs no partition
    reason = s["red_black_missing_reason"]
    assert isinstance(reason, str) and "--red-partitions" in reason
    assert "batch, red, red2" in reason


def test_red_black_empty_without_partitions(tmp_path: Path) -> None:
    rows, s = replay(tmp_path, events_file(tmp_path, partitions=False), "--red-partitions", "red")
    assert rows[0]["red_share"] == "" and s["red_share"] is None
    reason = s["red_black_missing_reason"]
    assert isinstance(reason, str) and "no partition" in reason


def test_p_cup_factor_empty_when_the_goal_is_met(tmp_path: Path) -> None:
    """Only A (large): CUP40 = 1 >= 0.80, the standard fair-share factor applies."""
    src = tmp_path / "a.jsonl"
    a = {"job": "A", "user": "u", "nodes": 4, "partition": "red"}
    src.write_bytes(
        orjson.dumps({"type": "start", "ts": T("00:00:00"), **a})
        + b"\n"
        + orjson.dumps({"type": "end", "ts": T("01:00:00"), **a})
        + b"\n"
    )
    rows, s = replay(tmp_path, src)
    assert rows[0]["cup40"] == "1" and rows[0]["p_cup_factor"] == ""
    assert s["p_cup_factor"] is None
