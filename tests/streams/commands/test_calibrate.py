"""`drainwatch calibrate dfs PATH`: seed 003's bandwidth test (mean - sigma) on a directory."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from models.samples.dfs import parse_rate
from streams.cli import main
from streams.commands.calibrate import calibrate


def test_calibrate_on_a_temporary_directory_prints_threshold_and_option(tmp_path, capsys):
    argv = ["calibrate", "dfs", str(tmp_path), "--writers", "3", "--size", "0.05"]
    assert main([*argv, "--repeats", "3", "--name", "scratch"]) == 0
    out = capsys.readouterr().out
    rates = [float(x) for x in re.findall(r"repeat \d: ([\d.]+) MB/s", out)]
    assert len(rates) == 3 and all(r > 0 for r in rates)
    assert "3 writers x 0.05 MB, fsync each file, 3 repeats" in out
    mean, sigma = (float(x) for x in re.search(r"mean ([\d.]+) MB/s, sigma ([\d.]+)", out).groups())
    thr = float(re.search(r"mean - sigma\): ([\d.]+) MB/s", out).group(1))
    assert thr == pytest.approx(mean - sigma, abs=0.11)
    # the printed option is one replay accepts, with its unit
    option = re.search(r"--hot-zone-fs scratch=(\S+)", out).group(1)
    assert parse_rate(option).unit == "MB/s"
    assert parse_rate(option).value == pytest.approx(thr, rel=1e-3, abs=0.06)
    assert list(tmp_path.iterdir()) == []  # its files and scratch directory are gone


def test_calibrate_statistics_are_mean_population_sigma_and_mean_minus_sigma(tmp_path):
    seen = []
    c = calibrate(tmp_path, 2, 1000, 4, lambda r, rate, s: seen.append((r, rate)))
    assert [r for r, _ in seen] == [1, 2, 3, 4] and c.rates == [x for _, x in seen]
    assert c.mean == pytest.approx(statistics.fmean(c.rates))
    assert c.std == pytest.approx(statistics.pstdev(c.rates))
    assert c.threshold == pytest.approx(c.mean - c.std)
    assert list(tmp_path.iterdir()) == []


def test_calibrate_cleans_up_when_a_writer_fails(tmp_path, monkeypatch):
    import os

    real = os.fsync

    # a stand-in (named so) for a disk that fills while a writer thread syncs: the failure
    # must reach one writer mid-run, which a real full file system cannot time
    def failing(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match="No space"):
        calibrate(tmp_path, 2, 1000, 2)
    monkeypatch.setattr(os, "fsync", real)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("where", "extra", "message"),
    [
        ("missing", [], "no such directory: "),
        ("file", [], "is not a directory"),
        ("dir", ["--repeats", "1"], "--repeats: '1' is out of range"),
        ("dir", ["--writers", "0"], "--writers: '0' is out of range"),
        ("dir", ["--size", "0"], "--size: '0' is out of range"),
        ("dir", ["--size", "900000"], "the test needs"),
    ],
)
def test_calibrate_user_errors_are_one_line_exit_2(tmp_path, capsys, where, extra, message):
    target = {"missing": tmp_path / "nope", "file": tmp_path / "f", "dir": tmp_path}[where]
    if where == "file":
        target.write_text("x")
    try:
        rc = main(["calibrate", "dfs", str(target), *extra])
    except SystemExit as e:  # argparse refuses the option before the command runs
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["f"] if where == "file" else [])


def test_calibrate_unwritable_directory_is_a_user_error(capsys):
    # /sys: a real directory nobody can create files in, root included (no stand-in needed)
    if not Path("/sys").is_dir():
        pytest.skip("no /sys on this system to stand for an unwritable directory")
    assert main(["calibrate", "dfs", "/sys", "--size", "1", "--repeats", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("drainwatch calibrate: /sys is not writable (")
    assert err.count("\n") == 1 and "Traceback" not in err
