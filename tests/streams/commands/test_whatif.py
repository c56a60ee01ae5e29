"""`drainwatch whatif` end to end: a hand-made trace whose every number is worked out below, the
report, the user errors, and the KTH SP2 trace."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from models.records.jobevent import JobEvent
from models.sim.policies import POLICIES
from models.sim.whatif import PREDICTORS, policy_runs
from streams.cli import main
from streams.report import build_report
from tests.paths import SHARED_DATA

KTH = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
PHILLIPS = SHARED_DATA / "sacct" / "phillips.log"
T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def _events() -> list[JobEvent]:
    """4 nodes. a (2 nodes) ran 0-100; b (4 nodes, submitted at 10) 100-150; c (2 nodes, asked
    for 200 s, ran 20 s, submitted at 20) 150-170, as recorded."""
    rows = [
        ("a", "u", 2, 0, 0, 100, 100),
        ("b", "v", 4, 10, 100, 150, 50),
        ("c", "v", 2, 20, 150, 170, 200),
    ]
    out = []
    for job, user, nodes, sub, start, end, req in rows:
        kw = dict(job=job, user=user, nodes=nodes, req_walltime=float(req))
        out += [
            JobEvent("submit", T0 + sub, **kw),
            JobEvent("start", T0 + start, **kw),
            JobEvent("end", T0 + end, state="COMPLETED", **kw),
        ]
    return out


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    p = tmp_path / "jobs.jsonl"
    p.write_bytes(b"".join(e.to_json() + b"\n" for e in _events()))
    return p


def _rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {(r["policy"], r["estimate"]): r for r in csv.DictReader(f)}


def test_every_number_of_a_small_trace(trace, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["whatif", "--format", "jobevents", str(trace), "--nodes", "4", "--out", str(out)])
    assert rc == 0
    err = capsys.readouterr().err
    assert "whatif jobevents: 3 jobs on 4 nodes (0 left out, 0 rejected)" in err
    rows = _rows(out / "whatif.csv")
    # every policy, easy-predicted once per predictor (tests/models/sim/test_whatif.py)
    assert list(rows) == policy_runs(POLICIES, list(PREDICTORS))
    run = rows[("as-run", "recorded")]
    # waits 0, 90, 130; no drain as run
    assert run["mean_wait_seconds"] == "73.3333333333333"
    assert run["drain_node_hours"] == run["drain_pct_static"] == ""
    assert run["span_start"] == "2023-11-14T22:13:20.000Z"
    assert run["span_end"] == "2023-11-14T22:16:10.000Z"
    # node-seconds 200 + 200 + 40 over 4 x 170
    assert run["utilisation_pct"] == "64.7058823529412"
    # EASY plans c with its 200 s request: it cannot backfill before b's reservation at 100, so
    # the schedule is the recorded one; nodes 2-3 idle and reserved for b over 10-100: 180
    # node-s = 0.05 node-h of 4 x 170 node-s
    easy = rows[("easy", "request")]
    assert easy["mean_wait_seconds"] == "73.3333333333333"
    assert easy["drain_node_hours"] == "0.05"
    assert easy["drain_pct_static"] == "26.4705882352941"
    assert easy["started_late"] == "0"
    assert easy["mean_wait_change_seconds"] == "0"
    # with the actual run times c (20 s) backfills at 20 on nodes 2-3, ending before 100:
    # drain 2 x 10 + 2 x 60 = 140 node-s over 4 x 150; waits 0, 90, 0
    perfect = rows[("easy-perfect", "actual")]
    assert perfect["drain_node_hours"] == "0.0388888888888889"
    assert perfect["drain_pct_static"] == "23.3333333333333"
    assert perfect["mean_wait_seconds"] == "30"
    assert perfect["mean_wait_change_seconds"] == "-43.3333333333333"
    assert perfect["span_end"] == "2023-11-14T22:15:50.000Z"
    # bounded slowdown: a 1, b (90 + 50) / 50 = 2.8, c 1
    assert perfect["mean_bounded_slowdown"] == "1.6"
    # no user has two earlier jobs: the predictions are the requests, as easy
    assert rows[("easy-predicted", "last-two")]["drain_node_hours"] == "0.05"
    users = list(csv.DictReader(open(out / "whatif_users.csv", encoding="utf-8")))
    v = next(r for r in users if r["policy"] == "easy-perfect" and r["user"] == "v")
    assert (v["jobs"], v["mean_wait_seconds"], v["as_run_mean_wait_seconds"]) == ("2", "45", "110")
    assert (v["mean_wait_change_seconds"], v["jobs_waiting_shorter"]) == ("-65", "1")
    summary = json.loads((out / "summary_whatif.json").read_text())
    assert summary["engine"] == "whatif"
    assert summary["jobs"] == 3 and summary["nodes"] == 4
    assert summary["policies"][4]["drain_pct_static"] == "23.3333333333333"
    assert summary["outputs"] == {"whatif.csv": 6, "whatif_users.csv": 12}
    assert summary["limits"]


def test_a_rerun_writes_the_same_bytes_and_the_report_shows_it(trace, tmp_path):
    out = tmp_path / "out"
    argv = ["whatif", "--format", "jobevents", str(trace), "--nodes", "4", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0

    def files():
        got = {p.name: p.read_bytes() for p in out.iterdir() if p.name != "report.html"}
        summary = json.loads(got.pop("summary_whatif.json"))
        del summary["timings_s"]  # the one thing that differs: how long it took
        return got, summary

    first = files()
    assert main([*argv, "--no-progress", "--policy", "easy", "--report"]) == 0
    assert _rows(out / "whatif.csv").keys() == {("easy", "request")}
    assert main([*argv, "--no-progress"]) == 0
    assert files() == first
    rep = build_report([str(out)])
    assert rep.shown == ["whatif"]
    html = rep.html
    assert "What if: other scheduling policies" in html
    assert "easy-predicted (last-two)" in html


def test_policies_and_predictors_chosen(trace, tmp_path):
    out = tmp_path / "out"
    argv = ["whatif", "--format", "jobevents", str(trace), "--nodes", "4", "--out", str(out)]
    argv += ["--policy", "easy-predicted", "--predictor", "trimmed-upper", "--policy", "easy"]
    assert main([*argv, "--no-progress"]) == 0
    assert list(_rows(out / "whatif.csv")) == [
        ("easy-predicted", "trimmed-upper"),
        ("easy", "request"),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--nodes is needed"),
        (["--nodes", "0"], "--nodes"),
        (["--nodes", "4", "--policy", "fifo"], "invalid choice: 'fifo'"),
    ],
)
def test_user_errors_are_one_line_exit_2(trace, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.delenv("DRAINWATCH_NODES", raising=False)
    argv = ["whatif", "--format", "jobevents", str(trace), "--out", str(tmp_path / "o"), *extra]
    with pytest.raises(SystemExit) as e:
        rc = main(argv)
        raise SystemExit(rc)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_no_job_that_fits_is_exit_3_and_nothing_written(trace, tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["whatif", "--format", "jobevents", str(trace), "--nodes", "1", "--out", str(out)])
    assert rc == 3
    err = capsys.readouterr().err
    assert "no job of" in err and "'larger_than_machine': 3" in err
    assert not (out / "whatif.csv").exists()


def test_the_parser_names_the_models_policies_and_predictors():
    from models.sim import policies, whatif
    from streams.commands import whatif as command

    assert command.POLICIES == policies.POLICIES
    assert command.PREDICTORS == tuple(whatif.PREDICTORS)


@pytest.mark.skipif(not KTH.exists(), reason=f"public trace not here: {KTH}")
def test_kth_through_the_command(tmp_path):
    out = tmp_path / "kth"
    argv = ["whatif", "--format", "swf", str(KTH), "--nodes", "100", "--out", str(out)]
    assert main([*argv, "--policy", "as-run", "--policy", "easy", "--no-progress"]) == 0
    rows = _rows(out / "whatif.csv")
    run, easy = rows[("as-run", "recorded")], rows[("easy", "request")]
    assert run["jobs"] == easy["jobs"] == "28475"
    # the recorded mean wait of the trace's 28,475 jobs with a size
    assert float(run["mean_wait_seconds"]) == pytest.approx(15296.395, abs=1e-3)
    # EASY's simulation waits less than the real machine did (docs/whatif.md says why)
    assert float(easy["mean_wait_seconds"]) < float(run["mean_wait_seconds"])
    assert 0 < float(easy["drain_pct_static"]) < 100
    summary = json.loads((out / "summary_whatif.json").read_text())
    assert summary["left_out"] == {"no_size": 1}
    assert summary["filled_in"] == {"request_raised_to_run": 475}


@pytest.mark.skipif(not PHILLIPS.exists(), reason=f"public dump not here: {PHILLIPS}")
def test_a_real_sacct_dump(tmp_path):
    out = tmp_path / "phillips"
    argv = ["whatif", "--format", "sacct", str(PHILLIPS), "--nodes", "100", "--out", str(out)]
    assert main([*argv, "--policy", "as-run", "--policy", "easy", "--no-progress"]) == 0
    summary = json.loads((out / "summary_whatif.json").read_text())
    # 4,285 jobs in the dump: 239 were cancelled before they started
    assert summary["jobs"] == 4_046
    assert summary["left_out"] == {"never_started": 239}
    run = _rows(out / "whatif.csv")[("as-run", "recorded")]
    assert float(run["mean_wait_seconds"]) == pytest.approx(16754.262, abs=1e-3)
