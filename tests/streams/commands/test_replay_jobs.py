"""`drainwatch replay --format jobevents|sacct|swf` end to end through streams.cli.main."""

from __future__ import annotations

import csv
import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from models.jobs.fairshare import decayed_charge
from streams.cli import main
from tests.paths import SHARED_DATA

DATA = SHARED_DATA


def T(hms: str) -> str:
    return f"2024-01-01T{hms}.000Z"


def ts(hms: str) -> float:
    return datetime.fromisoformat(f"2024-01-01T{hms}+00:00").timestamp()


def jobs_lines() -> list[bytes]:
    """A (10 nodes, 40 % = 4 nodes): 4 nodes x 2 h, large. B: 30-s backfilled short job on
    n5,n6 (2 cores). D: carol's 'sim' on n5, 10 s after B freed it; E1, E2: two earlier 'sim'
    runs of 600 s (no node list: machine pool)."""
    jobs = [
        dict(
            job="A",
            user="alice",
            group="g1",
            account="acctA",
            nodes=4,
            cores=16,
            node_list=["n1", "n2", "n3", "n4"],
            start=T("00:00:00"),
            end=T("02:00:00"),
        ),
        dict(
            job="B",
            user="bob",
            group="g2",
            account="acctB",
            nodes=2,
            cores=2,
            node_list=["n5", "n6"],
            backfill=True,
            start=T("01:00:00"),
            end=T("01:00:30"),
        ),
        dict(
            job="E1",
            user="carol",
            group="g2",
            account="acctB",
            name="sim",
            nodes=1,
            cores=1,
            start=T("00:00:00"),
            end=T("00:10:00"),
        ),
        dict(
            job="E2",
            user="carol",
            group="g2",
            account="acctB",
            name="sim",
            nodes=1,
            cores=1,
            start=T("00:10:00"),
            end=T("00:20:00"),
        ),
        dict(
            job="D",
            user="carol",
            group="g2",
            account="acctB",
            name="sim",
            nodes=1,
            cores=1,
            node_list=["n5"],
            start=T("01:00:40"),
            end=T("01:30:40"),
        ),
    ]
    lines = []
    for j in jobs:
        start, end = j.pop("start"), j.pop("end")
        lines.append(orjson.dumps({"type": "submit", "ts": start, **j}))
        lines.append(orjson.dumps({"type": "start", "ts": start, **j}))
        lines.append(orjson.dumps({"type": "end", "ts": end, "state": "COMPLETED", **j}))
    return lines


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_jobevents_end_to_end(tmp_path: Path) -> None:
    lines = jobs_lines()
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(b"\n".join(lines[:6]) + b"\n{not json\n")
    gz = tmp_path / "b.log"  # gzip without a .gz name: detected by magic bytes
    gz.write_bytes(gzip.compress(b"\n".join(lines[6:]) + b"\n"))
    out = tmp_path / "out"
    rej = tmp_path / "rejects.tsv"
    rc = main(
        [
            "replay",
            "--format",
            "jobevents",
            str(plain),
            str(gz),
            "--out",
            str(out),
            "--nodes",
            "10",
            "--rejects",
            str(rej),
            "--no-progress",
            "--resource",
            "toy",
        ]
    )
    assert rc == 0
    summary = json.loads((out / "summary_jobs.json").read_text())
    assert summary["records"] == 15 and summary["rejected_by_reason"] == {"bad_json": 1}
    assert rej.read_text().split("\t")[:3] == [str(plain), "7", "bad_json"]

    usage = read_csv(out / "usage_daily.csv")
    assert usage == [
        {
            "day": "2024-01-01",
            "resource": "toy",
            "cpu_hours": "32.85",
            "node_hours": "8.85",
            "wall_hours": format(10230 / 3600, ".15g"),  # 2.8417 h
            "jobs_started": "5",
            "jobs_ended": "5",
        }
    ]

    cap = read_csv(out / "capability_daily.csv")
    assert cap == [
        {
            "day": "2024-01-01",
            "large_node_hours": "8",
            "small_node_hours": "0.85",
            "backfill_node_hours": format(1 / 60, ".15g"),
            "cup40": format(8 / 8.85, ".15g"),
            "cup40_modified": format(8 / (8.85 - 1 / 60), ".15g"),
            # no partition in the events: Red/Black unknown; CUP40 >= 0.80: no P_CUP term
            "red_node_hours": "",
            "black_node_hours": "",
            "red_share": "",
            "p_cup_factor": "",
        }
    ]

    short = read_csv(out / "shortjobs.csv")
    assert short == [
        {
            "ts": T("01:03:00"),
            "holder_kind": "group",
            "holder": "g2",
            "n_short": "1",
            "penalty_seconds": "1140",
            "adjust": "114",
        },
        {
            "ts": T("01:03:00"),
            "holder_kind": "user",
            "holder": "bob",
            "n_short": "1",
            "penalty_seconds": "1140",
            "adjust": "114",
        },
    ]
    # the lookup table as of the last tick when the log ends (02:00, A's end): 19 ticks of decay
    a = f"{114 * 0.9**19:.3f}"
    assert (out / "fairshare_adjust.tsv").read_text() == f"group\tg2\t{a}\nuser\tbob\t{a}\n"
    adj = json.loads((out / "fairshare_adjust.json").read_text())
    assert adj["user"] == {"bob": pytest.approx(114 * 0.9**19)}

    turn = [r for r in read_csv(out / "turnover.csv") if r["n_gaps"] != "0"]
    # D was submitted when it started: its slot's 10 s gap had an empty queue, so it is idle
    assert [
        (r["window_start"], r["n_gaps"], r["turnover_seconds"], r["idle_seconds"]) for r in turn
    ] == [
        (T("00:00:00"), "1", "0", "0"),
        (T("01:00:00"), "1", "0", "10"),
    ]

    pred = {r["job"]: r for r in read_csv(out / "runtime_predictions.csv")}
    # E2 starts at the instant E1 ends (starts sort before ends): no history yet
    assert pred["E2"]["history_runs"] == "0" and pred["E2"]["predicted_s"] == ""
    assert (
        pred["D"]["history_runs"],
        pred["D"]["predicted_s"],
        pred["D"]["upper_s"],
        pred["D"]["actual_s"],
        pred["D"]["overran"],
    ) == ("2", "600", "600", "1800", "1")

    fs = {(r["holder_kind"], r["holder"]): r for r in read_csv(out / "fairshare_usage.csv")}
    day_end = datetime(2024, 1, 2, tzinfo=UTC).timestamp()
    alice = decayed_charge(4, ts("00:00:00"), ts("02:00:00"), 7 * 86400) * 2 ** (
        -(day_end - ts("02:00:00")) / (7 * 86400)
    )
    assert float(fs[("user", "alice")]["usage_node_hours"]) == pytest.approx(alice, abs=1e-4)
    assert fs[("user", "alice")]["ts"] == "2024-01-02T00:00:00.000Z"
    assert float(fs[("account", "acctB")]["charged_node_hours"]) == pytest.approx(0.85)


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    rc = main(
        [
            "replay",
            "--format",
            "jobevents",
            str(tmp_path / "nope"),
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ]
    )
    assert rc == 2


@pytest.mark.data
def test_phillips_sacct(tmp_path: Path) -> None:
    path = DATA / "sacct" / "phillips.log"
    if not path.exists():
        pytest.skip(f"{path} absent (../shared/data not mounted)")
    out = tmp_path / "out"
    assert main(["replay", "--format", "sacct", str(path), "--out", str(out), "--no-progress"]) == 0
    s = json.loads((out / "summary_jobs.json").read_text())
    # Open XDMoD's own expectations for phillips (2016-12-22 .. 2017-01-01 UTC)
    assert round(s["usage"]["cpu_hours"], 4) == 11767.9883
    assert round(s["usage"]["node_hours"], 4) == 1344.8686
    assert round(s["usage"]["wall_hours"], 4) == 438.8203
    assert s["rejected"] == 0
    assert len(read_csv(out / "runtime_predictions.csv")) == 4046
    assert s["shortjobs"]["short_jobs"] > 0 and s["turnover"]["gaps"] > 0
    cap = read_csv(out / "capability_daily.csv")
    assert [r["day"] for r in cap][0] == "2016-12-22"


@pytest.mark.data
def test_kth_swf(tmp_path: Path) -> None:
    path = DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not path.exists():
        pytest.skip(f"{path} absent (../shared/data not mounted)")
    out = tmp_path / "out"
    assert main(["replay", "--format", "swf", str(path), "--out", str(out), "--no-progress"]) == 0
    s = json.loads((out / "summary_jobs.json").read_text())
    assert s["records"] == 3 * 28476
    assert (
        s["capability"]["section_nodes"] == 100
        and s["capability"]["section_nodes_from"] == "swf MaxNodes"
    )
    r = s["runtime"]
    assert r["mae_predicted_s"] < r["mae_request_same_jobs_s"]
    assert r["mae_hybrid_s"] < r["mae_request_s"]
