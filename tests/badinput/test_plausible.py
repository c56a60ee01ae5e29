"""One stray time can neither inflate totals nor grow memory: it is rejected with a reason."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from models.records.jobevent import JobEvent
from models.records.nodestatus import Codebook
from models.records.plausible import TimeBounds, keep_plausible
from models.records.reject import Reject
from streams.cli import main
from tests.golden.make_golden import INPUTS
from tests.paths import REPO

REPORTS = ("drain_daily.csv", "drain_hourly.csv", "node_states.csv", "drain_jobs.csv")
STRAY = (
    b"2400-01-01T00:00:00.000-0600 1 INFO  Node 'ghost' status: state='Idle' "
    b"rsvlist='999' joblist='none'\n"
)


def _lines() -> list[bytes]:
    return gzip.decompress((INPUTS / "moab.log.gz").read_bytes()).splitlines(keepends=True)


def test_a_moab_line_in_year_2400_is_rejected_and_changes_nothing_else(tmp_path: Path) -> None:
    lines = _lines()
    clean, dirty = tmp_path / "clean.log", tmp_path / "dirty.log"
    clean.write_bytes(b"".join(lines))
    dirty.write_bytes(b"".join([*lines[:1000], STRAY, *lines[1000:]]))
    for src, out in ((clean, "a"), (dirty, "b")):
        argv = [
            "replay",
            "--format",
            "moab",
            str(src),
            "--tz",
            "America/Chicago",
            "--out",
            str(tmp_path / out),
            "--no-progress",
            "--rejects",
            str(tmp_path / f"{out}.tsv"),
        ]
        assert main(argv) == 0
    for f in REPORTS:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    s = json.loads((tmp_path / "b" / "summary_drain.json").read_text())
    assert s["rejected_by_reason"] == {"implausible_time": 1}
    assert s["ignored"] == 0 and s["drain"]["nodes"] == 40  # no 'ghost' node in the basis
    assert (tmp_path / "b.tsv").read_text().split("\t")[:3] == [
        str(dirty),
        "1001",
        "implausible_time",
    ]


def test_the_stray_line_costs_no_memory(tmp_path: Path) -> None:
    log = tmp_path / "stray.log"
    log.write_bytes(b"".join([*_lines()[:400], STRAY]))
    code = (
        "import sys; from streams.cli import main;"
        f"rc=main(['replay','--format','moab',{str(log)!r},'--out',{str(tmp_path / 'o')!r},"
        "'--no-progress']);"
        # VmHWM: this process's own peak (ru_maxrss would carry pytest's size over the exec)
        "hwm=[l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1];"
        "print(rc, hwm)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    rc, rss_kb = map(int, r.stdout.split())
    assert rc == 0
    assert rss_kb < 250 * 1024, f"peak RSS {rss_kb / 1024:.0f} MB"
    hourly = (tmp_path / "o" / "drain_hourly.csv").read_text().splitlines()
    assert len(hourly) < 10


def test_bounds_and_rollback() -> None:
    b = TimeBounds()
    assert b.contains_s(0.0) and not b.contains_s(-1e6) and not b.contains_s(1e11)
    assert not b.contains_s(float("nan"))
    with pytest.raises(ValueError):
        TimeBounds(5, 5)
    book = Codebook()
    book.nodes.code("a")
    mark = book.mark()
    book.nodes.code("b"), book.states.code("Weird"), book.jobs.code("7")
    book.rollback(mark)
    assert book.nodes.names == ["a"] and book.jobs.names == [] and book.nodes.code("b") == 1
    assert "Weird" not in book.states.names


@pytest.mark.parametrize(
    ("ts", "kept"),
    [
        (-0.0005, False),  # truncated toward zero it was 0 ms, inside: kept before the fix
        (-1e-9, False),
        (-0.0, True),
        (0.0, True),
        (0.0005, True),
        (4102444799.9995, True),  # the last millisecond before 2100-01-01
        (4102444800.0, False),
        (float("nan"), False),
        (float("inf"), False),
        (float("-inf"), False),
        (-1e300, False),
        (1e300, False),
    ],
)
def test_keep_plausible_compares_fractions_of_a_millisecond_exactly(ts: float, kept: bool) -> None:
    """Times are floored to milliseconds, so a record a fraction of a millisecond before
    not_before is rejected as the bounds say (contains_s), negative times too."""
    bad: list[Reject] = []
    out = keep_plausible([JobEvent("start", ts, "1")], TimeBounds(), "x", lambda e: e.job, bad)
    assert (out != []) is kept
    assert [r.reason for r in bad] == ([] if kept else ["implausible_time"])
    assert kept == TimeBounds().contains_s(ts)


def test_keep_plausible_floors_negative_bounds_too() -> None:
    bounds = TimeBounds(not_before_ms=-1000, not_after_ms=1000, max_jump_ms=0)
    times = [-1.0005, -1.0, -0.9995, 0.9995, 1.0]
    bad: list[Reject] = []
    events = [JobEvent("start", t, str(i)) for i, t in enumerate(times)]
    out = keep_plausible(events, bounds, "x", lambda e: e.job, bad)
    assert [e.ts for e in out] == [-1.0, -0.9995, 0.9995]
    assert [(r.reason, r.text) for r in bad] == [
        ("implausible_time", "0"),
        ("implausible_time", "4"),
    ]


def test_job_events_far_out_of_time_are_rejected_not_charged(tmp_path: Path) -> None:
    good = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes())
    stray = (
        b'{"type":"start","ts":-1000000,"job":"x1","nodes":64,"cores":64}\n'
        b'{"type":"end","ts":13569465600,"job":"x1","nodes":64,"cores":64,"state":"COMPLETED"}\n'
    )
    (tmp_path / "good.jsonl").write_bytes(good)
    (tmp_path / "dirty.jsonl").write_bytes(good + stray)
    for name in ("good", "dirty"):
        argv = [
            "replay",
            "--format",
            "jobevents",
            str(tmp_path / f"{name}.jsonl"),
            "--tz",
            "America/Chicago",
            "--nodes",
            "40",
            "--resource",
            "r",
            "--out",
            str(tmp_path / name),
            "--no-progress",
        ]
        assert main(argv) == 0
    for f in ("usage_daily.csv", "capability_daily.csv", "fairshare_usage.csv"):
        assert (tmp_path / "good" / f).read_bytes() == (tmp_path / "dirty" / f).read_bytes(), f
    s = json.loads((tmp_path / "dirty" / "summary_jobs.json").read_text())
    assert s["rejected_by_reason"] == {"implausible_time": 2}


def test_a_sample_in_year_5138_is_rejected(tmp_path: Path) -> None:
    good = gzip.decompress((INPUTS / "samples.jsonl.gz").read_bytes())
    first = good.split(b"\n", 1)[0]
    stray = json.loads(first)
    stray["ts"] = 1e11
    (tmp_path / "s.jsonl").write_bytes(good + json.dumps(stray).encode() + b"\n")
    (tmp_path / "g.jsonl").write_bytes(good)
    for name in ("g", "s"):
        argv = [
            "replay",
            "--format",
            "samples",
            str(tmp_path / f"{name}.jsonl"),
            "--out",
            str(tmp_path / f"o{name}"),
            "--no-progress",
            "--mem-per-core",
            "6",
        ]
        assert main(argv) == 0
    for f in ("job_utilization.csv", "dfs_minutely.csv", "hot_zones.csv"):
        assert (tmp_path / "og" / f).read_bytes() == (tmp_path / "os" / f).read_bytes(), f
    s = json.loads((tmp_path / "os" / "summary_samples.json").read_text())
    assert s["rejected_by_reason"]["implausible_time"] == 1


def test_bounds_are_options(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "o")
    base = [
        "replay",
        "--format",
        "moab",
        str(INPUTS / "moab.log.gz"),
        "--out",
        out,
        "--no-progress",
    ]
    # a window that excludes every record: all implausible -> nothing usable, exit 3
    assert main([*base, "--not-after", "2001-01-01"]) == 3
    assert main([*base, "--not-before", "2015-03-08T06:00Z"]) == 0
    s = json.loads((tmp_path / "o" / "summary_drain.json").read_text())
    assert s["first"] >= "2015-03-08T06:00:00.000Z"
    assert s["rejected_by_reason"]["implausible_time"] > 0
    with pytest.raises(SystemExit) as e:
        main([*base, "--not-before", "soon"])
    assert e.value.code == 2
