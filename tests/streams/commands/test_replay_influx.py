"""`replay --format moab --influx` goes through the driver: the InfluxSink is one of the run's
sinks, and the points it writes (to a stand-in for InfluxDB) are the ones the command wrote
before, by hand after the run, from the drain stage's live rows; --out holds the reports only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import streams.commands.worker as worker
from streams import driver
from streams.cli import main
from streams.sinks.influx import InfluxSink, job_point, state_points, window_point
from streams.tables.drain import LIVE_JOBS, LIVE_TABLES, LIVE_WINDOWS
from tests.golden.make_golden import argv
from tests.streams.sinks.test_influx_sink import StandInInflux


@pytest.fixture
def influx(monkeypatch: Any) -> tuple[InfluxSink, StandInInflux, dict[str, Any]]:
    """An InfluxSink on a stand-in for the settings' InfluxDB, and what the driver was given."""
    stand_in = StandInInflux()
    sink = InfluxSink("http://influx.invalid:8086", "t", "o", "bucket", "c", post=stand_in.post)
    monkeypatch.setattr(worker, "influx_sink", lambda settings, log_prefix="": sink)
    seen: dict[str, Any] = {}
    real_run = driver.run

    def run(r: driver.Run, sinks: Any, rejects: driver.RejectLog) -> dict[str, Any]:
        seen["run"], seen["sinks"] = r, list(sinks)
        return real_run(r, sinks, rejects)

    monkeypatch.setattr(driver, "run", run)
    return sink, stand_in, seen


def test_replay_influx_writes_the_old_points_through_the_driver(
    influx: Any, tmp_path: Path, capsys: Any
) -> None:
    sink, stand_in, seen = influx
    out = tmp_path / "out"
    args = [a for a in argv("moab", out) if a != "--no-progress"]
    assert main([*args, "--influx"]) == 0
    assert sink in seen["sinks"]
    assert sink.zone.key == "America/Chicago"

    # the old path: the drain stage's live rows, written by hand after the run
    stage = next(st for f in seen["run"].feeds for st in f.stages if st.name == "drain")
    windows, jobs = stage.live_rows()
    old = []
    for w in windows:
        old += [window_point("c", w), *state_points("c", w)]
    old += [job_point("c", j) for j in jobs]
    assert len(old) > 1000 and {w.unit for w in windows} == {"minute", "hour", "day"}
    assert sorted(stand_in.lines) == sorted(old)

    err = capsys.readouterr().err
    assert (
        f"replay moab: {len(windows):,} window rows and {len(jobs):,} job rows written to "
        "InfluxDB bucket" in err
    )
    names = {p.name for p in out.iterdir()}
    assert not names & {t.file for t in LIVE_TABLES}
    summary = orjson.loads((out / "summary_drain.json").read_bytes())
    assert summary["outputs"][LIVE_WINDOWS.file] == len(windows)
    assert summary["outputs"][LIVE_JOBS.file] == len(jobs)


def test_the_reports_are_those_of_a_replay_without_influx(influx: Any, tmp_path: Path) -> None:
    with_influx, without = tmp_path / "a", tmp_path / "b"
    assert main([*argv("moab", with_influx), "--influx"]) == 0
    assert main(argv("moab", without)) == 0
    names = sorted(p.name for p in without.iterdir())
    assert names == sorted(p.name for p in with_influx.iterdir())
    for name in names:
        if name.endswith(".csv"):
            assert (with_influx / name).read_bytes() == (without / name).read_bytes(), name


def test_influx_needs_the_moab_format(influx: Any, tmp_path: Path, capsys: Any) -> None:
    sink, stand_in, seen = influx
    code = main([*argv("jobevents", tmp_path / "out"), "--influx"])
    assert code == 2
    assert "--influx writes the drain measurements: it needs --format moab" in (
        capsys.readouterr().err
    )
    assert "run" not in seen and stand_in.bodies == []


def test_an_aborted_run_writes_no_point(influx: Any, tmp_path: Path, monkeypatch: Any) -> None:
    sink, stand_in, seen = influx
    from streams.sinks.files import DirectorySink

    def full_disk(self: DirectorySink) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(DirectorySink, "commit", full_disk)
    assert main([*argv("moab", tmp_path / "out"), "--influx"]) != 0
    assert sink in seen["sinks"]
    assert stand_in.bodies == []
