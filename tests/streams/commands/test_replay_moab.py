"""`drainwatch replay --format moab` end to end: the CSV contract, node-seconds adding up,
rejects with reasons, gzip input, job-aware reports, and a simulated log."""

from __future__ import annotations

import csv
import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest

from streams.cli import main

L = "{ts} 21166 INFO  Node '{node}' status: state='{state}' rsvlist='{rsv}' joblist='{job}'"


def read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_log(path: Path, rows: list[tuple], gz: bool = False) -> None:
    text = "".join(
        (L.format(ts=ts, node=n, state=s, rsv=r, job=j) if n is not None else ts) + "\n"
        for ts, n, s, r, j in rows
    )
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)


ROWS = [
    ("2014-12-31T23:58:00.000-0600", "1", "Idle", "1292428,1292433", "none"),
    ("2014-12-31T23:58:00.000-0600", "2", "Busy", "none", "55"),
    ("this is not a node status line", None, None, None, None),
    (
        "2014-12-31T24:00:00.000-0600 1 INFO  Node '1' status: state='Idle' rsvlist='none' "
        "joblist='none'",
        None,
        None,
        None,
        None,
    ),  # bad hour
    ("2015-01-01T00:01:00.000-0600", "1", "Idle", "1292428", "none"),
    ("2015-01-01T00:01:00.000-0600", "2", "Busy", "none", "55"),
    ("2015-01-01T00:03:00.500-0600", "1", "Busy", "none", "1292428"),
    ("2015-01-01T00:03:00.500-0600", "2", "Idle", "none", "none"),
]


@pytest.mark.parametrize("gz", [False, True])
def test_replay_contract(tmp_path: Path, gz: bool) -> None:
    log = tmp_path / ("moab.log.gz" if gz else "moab.log")
    write_log(log, ROWS, gz=gz)
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        '{"type":"submit","job":"1292428","ts":"2015-01-01T05:00:00Z","nodes":1}\n'
        '{"type":"start","job":"1292428","ts":"2015-01-01T06:03:00.5Z","nodes":1}\n'
        '{"type":"end","job":"1292428","ts":"2015-01-01T06:03:10.5Z"}\n'
        "not json\n"
    )
    out = tmp_path / "out"
    rej = tmp_path / "rejects.tsv"
    rc = main(
        [
            "replay",
            "--format",
            "moab",
            str(log),
            "--out",
            str(out),
            "--tz",
            "America/Chicago",
            "--nodes",
            "2",
            "--jobs",
            str(jobs),
            "--rejects",
            str(rej),
            "--no-progress",
        ]
    )
    assert rc == 0
    daily = read(out / "drain_daily.csv")
    assert list(daily[0]) == [
        "day",
        "accounted_node_seconds",
        "drain_node_seconds",
        "unallocated_idle_node_seconds",
        "down_node_seconds",
        "unaccounted_node_seconds",
        "drain_pct_static",
        "drain_pct_dynamic",
        "basis_seconds_per_node",
        "data_quality",
    ]
    # node 1: Idle+rsv 23:58 -> 00:03:00.5 local: 120 s on Dec 31, 180.5 s on Jan 1
    assert [(d["day"], d["drain_node_seconds"]) for d in daily] == [
        ("2014-12-31", "120"),
        ("2015-01-01", "180.5"),
    ]
    assert daily[0]["data_quality"] == "short"  # 2 minutes of a day
    # static basis: 2 nodes x 86,400 s
    # 180.5 / (2 x 86,400) x 100, to 15 significant digits
    assert daily[1]["drain_pct_static"] == format(180.5 / (2 * 86_400) * 100, ".15g")
    # node-seconds add up: both nodes, 300.5 s each
    total = sum(Decimal(d["accounted_node_seconds"]) for d in daily)
    assert total == Decimal("601.000")
    hourly = read(out / "drain_hourly.csv")
    assert [h["hour"] for h in hourly] == [
        "2015-01-01T05:00:00.000Z",
        "2015-01-01T06:00:00.000Z",
    ]
    assert sum(Decimal(h["accounted_node_seconds"]) for h in hourly) == total

    ns = read(out / "node_states.csv")
    assert {(r["node"], r["state"], r["has_rsv"], r["has_job"]): r["seconds"] for r in ns} == {
        ("1", "Idle", "1", "0"): "300.5",
        ("2", "Busy", "0", "1"): "300.5",
    }

    jobs_csv = read(out / "drain_jobs.csv")
    assert jobs_csv == [
        {
            "job": "1292428",
            "drain_node_seconds": "300.5",
            "nodes_charged": "1",
            "first_charged": "2015-01-01T05:58:00.000Z",
            "last_charged": "2015-01-01T06:03:00.500Z",
            "size": "1",
            "runtime": "10",
            "drain_per_node": "300.5",
            "drain_runtime_ratio": "30.05",
        }
    ]
    ftl = read(out / "failure_to_launch.csv")
    assert [r["job"] for r in ftl] == ["1292428"]  # drained 300 s, then ran 10 s

    summary = json.loads((out / "summary_drain.json").read_text())
    assert summary["lines"] == 8 + 4  # every input's lines: the Moab log's and the --jobs file's
    assert [i["lines"] for i in summary["inputs"]] == [8, 4]
    assert summary["ignored"] == 1
    assert summary["rejected_by_reason"] == {"bad_json": 1, "bad_timestamp": 1}
    assert summary["drain"]["nodes"] == 2
    drain = summary["drain"]
    assert drain["records_by_state"]["Idle"] == 3 and drain["unknown_states"] == {}
    assert drain["first_record"] == "2015-01-01T05:58:00.000Z"
    assert [i["rejected"] for i in summary["inputs"]] == [1, 1]
    lines = rej.read_text().splitlines()
    assert lines[0].split("\t")[1:3] == ["4", "bad_timestamp"]
    assert lines[1].split("\t")[2] == "bad_json"


def test_replay_simulated_log(tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    assert (
        main(
            [
                "simulate",
                "--model",
                "lublin",
                "--nodes",
                "64",
                "--days",
                "1",
                "--period",
                "120",
                "--seed",
                "5",
                "--out",
                str(sim),
                "--tz",
                "UTC",
            ]
        )
        == 0
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "replay",
                "--format",
                "moab",
                str(sim / "moab.log"),
                "--jobs",
                str(sim / "jobs.jsonl"),
                "--out",
                str(out),
                "--nodes",
                "64",
                "--no-progress",
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary_drain.json").read_text())
    assert summary["rejected"] == 0 and summary["drain"]["nodes"] == 64
    daily = read(out / "drain_daily.csv")
    ns = read(out / "node_states.csv")
    # the per-node accumulators and the daily windows are two views of the same node-seconds
    assert sum(Decimal(r["seconds"]) for r in ns) == sum(
        Decimal(d["accounted_node_seconds"]) for d in daily
    )
    # drain in the job table sums to drain in the windows
    jobs = read(out / "drain_jobs.csv")
    assert sum(Decimal(j["drain_node_seconds"]) for j in jobs) == sum(
        Decimal(d["drain_node_seconds"]) for d in daily
    )
