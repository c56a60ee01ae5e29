"""DirectorySink: nothing visible before commit, abort keeps the old files, the previous run's
stale files go."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.records.reject import Reject
from streams.atomic import atomic_file
from streams.contracts import Table, cols
from streams.sinks.files import DirectorySink, RejectFile

T = Table("t.csv", cols(("a", "int"), ("b", "number"), ("at", "instant_ms")), "test table")


def test_commit_makes_files_visible_and_formats_values(tmp_path: Path) -> None:
    s = DirectorySink(tmp_path)
    s.declare(T)
    s.write(T, [(1, 0.5, 1_425_780_000_668), (2, None, None)])
    assert not (tmp_path / "t.csv").exists()  # staged, not yet visible
    s.commit()
    assert (tmp_path / "t.csv").read_text() == ("a,b,at\n1,0.5,2015-03-08T02:00:00.668Z\n2,,\n")
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # staging removed


def test_abort_keeps_the_previous_file(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("old\n")
    s = DirectorySink(tmp_path)
    s.write(T, [(1, 1.0, 0)])
    s.abort()
    assert (tmp_path / "t.csv").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_stale_files_of_the_previous_run_are_removed_others_kept(tmp_path: Path) -> None:
    (tmp_path / "old.csv").write_text("x\n")
    (tmp_path / "foreign.csv").write_text("y\n")
    s = DirectorySink(tmp_path, stale=["t.csv", "old.csv"])
    s.declare(T)
    s.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign.csv", "t.csv"]


def test_a_row_of_the_wrong_width_is_a_programming_error(tmp_path: Path) -> None:
    s = DirectorySink(tmp_path)
    with pytest.raises(ValueError, match="2 values for 3 columns"):
        s.write(T, [(1, 2)])
    s.abort()


def test_reject_file_and_atomic_file(tmp_path: Path) -> None:
    rf = RejectFile(tmp_path / "rejects.tsv")
    rf.add(Reject("bad_json", "in.jsonl", 3, "{x\t"))
    assert not (tmp_path / "rejects.tsv").exists()
    rf.commit()
    assert (tmp_path / "rejects.tsv").read_text() == "in.jsonl\t3\tbad_json\t{x\\t\n"
    target = tmp_path / "f.bin"
    target.write_bytes(b"before")
    with pytest.raises(RuntimeError), atomic_file(target) as f:
        f.write(b"half")
        raise RuntimeError("interrupted")
    assert target.read_bytes() == b"before"
    with atomic_file(target) as f:
        f.write(b"after")
    assert target.read_bytes() == b"after"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin", "rejects.tsv"]
