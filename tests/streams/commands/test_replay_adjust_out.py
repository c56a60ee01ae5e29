"""`replay --adjust-out FILE`: seed 002's ADJUST table rewritten at each tick (its staged copy;
FILE is replaced in the run's one commit, with the last tick's table)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import orjson
import pytest

import streams.sinks.adjust as adjust_sink
from models.jobs.shortjobs import ShortJobPenalty, adjust_table_tsv
from streams.cli import main


def T(hms: str) -> str:
    return f"2024-01-01T{hms}.000Z"


def ts(hms: str) -> float:
    return datetime.fromisoformat(f"2024-01-01T{hms}+00:00").timestamp()


def events_file(tmp_path: Path) -> Path:
    """Short jobs of two users ending in four different ticks, then a long job ending an hour
    later (the table decays over the ticks in between)."""
    jobs = [
        ("j1", "alice", "g1", "00:00:00", "00:00:30"),
        ("j2", "bob", "g2", "00:04:00", "00:04:10"),
        ("j3", "alice", "g1", "00:10:00", "00:10:05"),
        ("j4", "carol", "g1", "00:20:00", "00:21:00"),
        ("long", "dave", "g3", "00:00:00", "01:30:00"),
    ]
    lines = []
    for job, user, group, start, end in jobs:
        j = {"job": job, "user": user, "group": group, "nodes": 1, "cores": 2}
        lines.append(orjson.dumps({"type": "start", "ts": T(start), **j}))
        lines.append(orjson.dumps({"type": "end", "ts": T(end), "state": "COMPLETED", **j}))
    lines.sort(key=lambda b: orjson.loads(b)["ts"])
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


def replay(tmp_path: Path, *extra: str) -> int:
    return main(
        [
            "replay",
            "--format",
            "jobevents",
            str(events_file(tmp_path)),
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
            *extra,
        ]
    )


def test_adjust_out_ends_as_the_end_of_replay_table(tmp_path: Path) -> None:
    adj = tmp_path / "sched" / "adjust.tsv"  # its directory is made
    assert replay(tmp_path, "--adjust-out", str(adj)) == 0
    final = (tmp_path / "out" / "fairshare_adjust.tsv").read_text()
    assert final and adj.read_text() == final
    assert final.splitlines()[0].startswith("group\tg1\t")
    # no temporary file left beside it
    assert sorted(p.name for p in adj.parent.iterdir()) == ["adjust.tsv"]


def test_adjust_out_changes_no_other_output(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert replay(a) == 0
    assert replay(b, "--adjust-out", str(b / "adjust.tsv")) == 0
    for name in ("shortjobs.csv", "fairshare_adjust.tsv", "fairshare_adjust.json"):
        assert (a / "out" / name).read_bytes() == (b / "out" / name).read_bytes(), name


def test_adjust_out_is_rewritten_at_each_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[float | None, str]] = []
    real = adjust_sink.write_adjust_table

    def spy(path: str | Path, model: ShortJobPenalty) -> None:
        real(path, model)
        calls.append((model.last_tick_ts, Path(path).read_text()))
        assert Path(path).read_text() == adjust_table_tsv(model.tables())

    monkeypatch.setattr(adjust_sink, "write_adjust_table", spy)
    adj = tmp_path / "adjust.tsv"
    assert replay(tmp_path, "--adjust-out", str(adj)) == 0
    ticks = [t for t, _ in calls]
    # one write each time event time closes ticks: j2's end closes 00:03, j3's 00:06 (and
    # 00:09, written once), j4's 00:18, the long job's end 01:27; then the end of the replay
    assert ticks == [ts(h) for h in ("00:03:00", "00:09:00", "00:18:00", "01:27:00", "01:30:00")]
    # alice (j1, tick 00:03) is in every table; bob (j2, tick 00:06) from the 00:09 write on
    assert all("user\talice\t" in text for _, text in calls)
    assert "user\tbob\t" not in calls[0][1] and "user\tbob\t" in calls[1][1]
    # the table decays between writes
    assert calls[2][1] != calls[3][1]
    assert calls[-1][1] == (tmp_path / "out" / "fairshare_adjust.tsv").read_text()


def test_adjust_out_needs_a_job_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "moab.log"
    log.write_text("")
    rc = main(
        [
            "replay",
            "--format",
            "moab",
            str(log),
            "--out",
            str(tmp_path / "o"),
            "--adjust-out",
            str(tmp_path / "a.tsv"),
        ]
    )
    assert rc == 2 and "--adjust-out" in capsys.readouterr().err


def test_adjust_out_is_checked_like_rejects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "adir"
    d.mkdir()
    assert replay(tmp_path, "--adjust-out", str(d)) == 2
    assert "--adjust-out" in capsys.readouterr().err and not (tmp_path / "out").exists()
    same = tmp_path / "r.tsv"
    assert replay(tmp_path, "--adjust-out", str(same), "--rejects", str(same)) == 2
    assert replay(tmp_path, "--adjust-out", str(tmp_path / "events.jsonl")) == 2
