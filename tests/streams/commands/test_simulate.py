"""`drainwatch simulate` end to end on a small machine."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from models.records.jobevent import parse_jobevent_line
from streams.cli import main
from tests.paths import SHARED_DATA

MOAB_RE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} \d+ INFO  Node '([^']+)' status: "
    r"state='(Idle|Busy|Running|Down|Drained|Draining)' rsvlist='([^']*)' joblist='([^']*)'$"
)
KTH = SHARED_DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


def _check(out: Path, log_lines: list[str], nodes: int, iters: int) -> None:
    assert len(log_lines) == nodes * iters
    states = set()
    for ln in log_lines:
        m = MOAB_RE.match(ln)
        assert m, ln
        states.add(m.group(2))
    assert "Busy" in states and "Idle" in states
    events = [parse_jobevent_line(x) for x in (out / "jobs.jsonl").read_bytes().splitlines()]
    submitted = {e.job for e in events if e.type == "submit"}
    started = {e.job for e in events if e.type == "start"}
    ended = {e.job for e in events if e.type == "end"}
    assert ended <= started <= submitted
    assert started


def test_lublin_run(tmp_path, capsys):
    out = tmp_path / "sim"
    rc = main(
        [
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            "32",
            "--days",
            "1",
            "--period",
            "120",
            "--out",
            str(out),
            "--seed",
            "5",
            "--outages",
            "2",
            "--drained",
            "1",
        ]
    )
    assert rc == 0
    msg = capsys.readouterr().out
    assert "on 32 nodes: 23040 Moab lines over 1.00 days" in msg
    lines = (out / "moab.log").read_text().splitlines()
    _check(out, lines, 32, 720)
    assert lines[0].startswith("2014-12-31T00:0") and "-0600 " in lines[0]


def test_gzip_tz_start(tmp_path, capsys):
    out = tmp_path / "g"
    rc = main(
        [
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            "16",
            "--days",
            "0.25",
            "--period",
            "90",
            "--out",
            str(out),
            "--gzip",
            "--tz",
            "Europe/Berlin",
            "--start",
            "2016-06-01T12:00:00",
        ]
    )
    assert rc == 0
    with gzip.open(out / "moab.log.gz", "rt") as f:
        lines = f.read().splitlines()
    _check(out, lines, 16, 240)
    assert lines[0].startswith("2016-06-01T12:00:0") and "+0200 " in lines[0]


@pytest.mark.data
def test_swf_replay(tmp_path, capsys):
    if not KTH.exists():
        pytest.skip(f"real SWF trace not available at {KTH} (../shared/data absent)")
    out = tmp_path / "kth"
    rc = main(
        [
            "simulate",
            "--swf",
            str(KTH),
            "--nodes",
            "100",
            "--days",
            "1",
            "--period",
            "60",
            "--out",
            str(out),
            "--swf-skip-days",
            "10",
        ]
    )
    assert rc == 0
    assert "on 100 nodes: 144000 Moab lines" in capsys.readouterr().out
    _check(out, (out / "moab.log").read_text().splitlines(), 100, 1440)


def test_bad_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:  # option types: argparse refuses it in one line
        main(
            ["simulate", "--model", "lublin", "--nodes", "0", "--days", "1", "--out", str(tmp_path)]
        )
    assert e.value.code == 2
    assert "--nodes: '0' is out of range" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", "--nodes", "4", "--days", "1", "--out", str(tmp_path)])
