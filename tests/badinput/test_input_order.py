"""Input order: rotated files in any order give the numbers of the whole log; overlapping files
are refused unless --allow-overlap; a reversed file is refused, never half accounted."""

from __future__ import annotations

import gzip
from pathlib import Path

from streams.cli import main
from tests.golden.make_golden import INPUTS

REPORTS = ("drain_daily.csv", "drain_hourly.csv", "node_states.csv", "drain_jobs.csv")


def _lines() -> list[bytes]:
    return gzip.decompress((INPUTS / "moab.log.gz").read_bytes()).splitlines(keepends=True)


def _replay(paths: list[Path], out: Path, *extra: str) -> int:
    return main(
        [
            "replay",
            "--format",
            "moab",
            *map(str, paths),
            "--tz",
            "America/Chicago",
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ]
    )


def test_rotated_files_in_glob_order_equal_the_whole_log(tmp_path: Path) -> None:
    lines = _lines()
    cut = len(lines) // 2
    cut -= cut % 40  # whole iterations: 40 nodes
    (tmp_path / "moab.log.1").write_bytes(b"".join(lines[:cut]))  # older
    (tmp_path / "moab.log.0").write_bytes(b"".join(lines[cut:]))  # newer
    whole = tmp_path / "moab.log"
    whole.write_bytes(b"".join(lines))
    assert _replay([whole], tmp_path / "a") == 0
    glob_order = [tmp_path / "moab.log.0", tmp_path / "moab.log.1"]  # newest first
    assert _replay(glob_order, tmp_path / "b") == 0
    for f in REPORTS:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_overlapping_files_are_refused_unless_allowed(tmp_path: Path, capsys) -> None:
    lines = _lines()
    (tmp_path / "x.log").write_bytes(b"".join(lines[: 40 * 300]))
    (tmp_path / "y.log").write_bytes(b"".join(lines[40 * 200 : 40 * 400]))
    paths = [tmp_path / "x.log", tmp_path / "y.log"]
    assert _replay(paths, tmp_path / "o") == 2
    assert "overlap in time" in capsys.readouterr().err
    assert not (tmp_path / "o" / "drain_daily.csv").exists()  # nothing half-written
    assert _replay(paths, tmp_path / "o", "--allow-overlap") == 0


def test_a_reversed_file_is_refused_not_half_accounted(tmp_path: Path, capsys) -> None:
    (tmp_path / "rev.log").write_bytes(b"".join(reversed(_lines())))
    assert _replay([tmp_path / "rev.log"], tmp_path / "o") == 3
    assert "out of time order" in capsys.readouterr().err
