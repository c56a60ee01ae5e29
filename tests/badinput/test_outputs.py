"""A user's files are never destroyed and a run's outputs change as one set (issue classes 1, 2).

Every row runs the real command in a subprocess over a directory it prepares, and compares every
file under that directory (bytes, mode, link target) before and after, byte for byte:

- class 1, paths: a run whose write (or stale removal) would touch a path it reads is a user
  error (exit 2) and changes nothing; a rerun removes only files its previous summary listed;
- class 2, one commit: a failure or a stop at any step (a full disk, a rename refused, SIGINT,
  SIGTERM, SIGHUP) leaves the whole old set (tables, summary, rejects, report, ADJUST table),
  says so in one line, and leaves no staging; modes are kept; a killed run's staging is swept.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.badinput import inputs as IN
from tests.golden.make_golden import INPUTS
from tests.paths import REPO

MOAB = IN.MOAB
# tries at a moment a short run may outpace (a loaded machine schedules the watcher late)
ATTEMPTS = 12
STRAY = IN.MOAB_LINES[7].replace(b"2015-03-07", b"2400-03-07")  # one reject


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


def cli(tmp: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", *argv],
        cwd=tmp,
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return r.returncode, r.stderr


def snapshot(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Every entry under ``root``: kind, mode and content (a link's target)."""
    out: dict[str, tuple[str, int, bytes]] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        rel = str(p.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", 0, os.readlink(p).encode())
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir", stat.S_IMODE(st.st_mode), b"")
        else:
            out[rel] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
    return out


def one_line(err: str, code: int, expect: int, *words: str) -> str:
    lines = err.strip().splitlines()
    assert code == expect, err
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], err
    return lines[0]


def no_staging(root: Path) -> None:
    left = [str(p) for p in root.rglob(".*") if p.name.startswith((".staging-", ".old-"))]
    assert not left, left


def replay(*rest: str) -> list[str]:
    return ["replay", "--no-progress", *rest]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A log and an earlier run's complete set in ``o`` (with --jobs: failure_to_launch.csv,
    and a rejects file)."""
    (tmp_path / "moab.log").write_bytes(MOAB[: len(MOAB) // 2] + STRAY + MOAB[len(MOAB) // 2 :])
    (tmp_path / "jobs.jsonl").write_bytes(IN.JOBS)
    code, err = cli(
        tmp_path,
        *replay(
            "--format",
            "moab",
            "moab.log",
            "--jobs",
            "jobs.jsonl",
            "--out",
            "o",
            "--rejects",
            "r.tsv",
        ),
    )
    assert code == 0, err
    assert (tmp_path / "o" / "failure_to_launch.csv").exists()
    return tmp_path


# -- class 1: no run writes to a path it reads -------------------------------------------------

OVERLAPS: list[tuple[str, Callable[[Path], None], list[str], str]] = [
    (
        "input in --out under the name of a file the engine no longer writes",
        lambda t: shutil.copy(t / "moab.log", t / "o" / "failure_to_launch.csv"),
        replay("--format", "moab", "o/failure_to_launch.csv", "--out", "o"),
        "the input o/failure_to_launch.csv is also the output o/failure_to_launch.csv",
    ),
    (
        "input named like an output it writes",
        lambda t: shutil.copy(t / "moab.log", t / "o" / "drain_daily.csv"),
        replay("--format", "moab", "o/drain_daily.csv", "--out", "o"),
        "the input o/drain_daily.csv is also the output o/drain_daily.csv",
    ),
    (
        "--jobs named like an output",
        lambda t: shutil.copy(t / "jobs.jsonl", t / "o" / "drain_jobs.csv"),
        replay("--format", "moab", "moab.log", "--jobs", "o/drain_jobs.csv", "--out", "o"),
        "--jobs o/drain_jobs.csv is also the output o/drain_jobs.csv",
    ),
    (
        "--rejects is one of the run's own outputs",
        lambda t: None,
        replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "o/drain_daily.csv"),
        "--rejects o/drain_daily.csv and the output o/drain_daily.csv are one file",
    ),
    (
        "--rejects is a link to one of the run's own outputs",
        lambda t: os.symlink("o/node_states.csv", t / "r.link"),
        replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "r.link"),
        "are one file",
    ),
    (
        "--rejects is a symbolic link to the input",
        lambda t: os.symlink("moab.log", t / "r.link"),
        replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "r.link"),
        "would be replaced",
    ),
    (
        "--rejects is a hard link of the input",
        lambda t: os.link(t / "moab.log", t / "r.hard"),
        replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "r.hard"),
        "would be replaced",
    ),
    (
        "an output in --out is a hard link of the input",
        lambda t: (
            (t / "o" / "size_groups.csv").unlink()
            or os.link(t / "moab.log", t / "o" / "size_groups.csv")
        ),
        replay("--format", "moab", "moab.log", "--out", "o"),
        "the input moab.log is also the output o/size_groups.csv",
    ),
    (
        "--rejects is the settings file",
        lambda t: (t / "c.toml").write_text("[accounting]\n"),
        [
            "--config",
            "c.toml",
            *replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "c.toml"),
        ],
        "the settings file c.toml is also --rejects c.toml",
    ),
    (
        "--rejects replaces a series file of an LLview input directory",
        lambda t: _write(t, IN.llview_dir()),
        replay("--format", "llview", "lv", "--out", "o", "--rejects", "lv/LoadMem_77_node.dat"),
        "lv/LoadMem_77_node.dat (in the input lv) is also --rejects lv/LoadMem_77_node.dat",
    ),
    (
        "--rejects is a new file inside an LLview input directory",
        lambda t: _write(t, IN.llview_dir()),
        replay("--format", "llview", "lv", "--out", "o", "--rejects", "lv/rejects.tsv"),
        "--rejects lv/rejects.tsv is inside the input lv",
    ),
    (
        "--out inside an LLview input directory",
        lambda t: _write(t, IN.llview_dir()),
        replay("--format", "llview", "lv", "--out", "lv/o"),
        "is inside the input lv",
    ),
    (
        "--adjust-out is one of the run's own outputs",
        lambda t: None,
        replay(
            "--format",
            "jobevents",
            "jobs.jsonl",
            "--out",
            "o2",
            "--adjust-out",
            "o2/fairshare_adjust.tsv",
        ),
        "--adjust-out o2/fairshare_adjust.tsv and the output o2/fairshare_adjust.tsv are one",
    ),
    (
        "--adjust-out is the input",
        lambda t: None,
        replay("--format", "jobevents", "jobs.jsonl", "--out", "o2", "--adjust-out", "jobs.jsonl"),
        "jobs.jsonl",
    ),
]


def _write(tmp: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(data)


@pytest.mark.parametrize(
    ("prepare", "argv", "message"),
    [pytest.param(p, a, m, id=n) for n, p, a, m in OVERLAPS],
)
def test_a_run_that_would_write_what_it_reads_changes_nothing(
    site: Path, prepare: Callable[[Path], None], argv: list[str], message: str
) -> None:
    prepare(site)
    before = snapshot(site)
    code, err = cli(site, *argv)
    one_line(err, code, 2, message)
    assert snapshot(site) == before


def test_stale_removal_takes_only_what_the_previous_summary_listed(site: Path) -> None:
    """A rerun without --jobs removes the failure_to_launch.csv its previous run wrote; a file
    of the same name the user put there later, with no summary listing it, is kept."""
    code, err = cli(site, *replay("--format", "moab", "moab.log", "--out", "o"))
    assert code == 0, err
    assert not (site / "o" / "failure_to_launch.csv").exists()
    (site / "o" / "failure_to_launch.csv").write_bytes(b"the user's own notes\n")
    (site / "o" / "notes.txt").write_bytes(b"x\n")
    code, err = cli(site, *replay("--format", "moab", "moab.log", "--out", "o"))
    assert code == 0, err
    assert (site / "o" / "failure_to_launch.csv").read_bytes() == b"the user's own notes\n"
    assert (site / "o" / "notes.txt").read_bytes() == b"x\n"


# -- class 2: one commit -----------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(path: Path, size: str) -> Iterator[None]:
    path.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(
            "cannot mount a small file system here (needs root): the injected full "
            "disk below covers the same commit"
        )
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_under_the_rejects_leaves_the_whole_old_set(site: Path) -> None:
    """The rejects are written to a file system with no room: exit 1, and the tables, the
    summary and the old rejects file are all as they were."""
    with small_disk(site / "small", "64k"):
        shutil.copy(site / "r.tsv", site / "small" / "r.tsv")
        bad = b"".join(STRAY.replace(b"Node '", b"Node 'x%d" % i) for i in range(2000))
        (site / "dirty.log").write_bytes(MOAB + bad)
        before = snapshot(site)
        code, err = cli(
            site,
            *replay(
                "--format",
                "moab",
                "dirty.log",
                "--out",
                "o",
                "--max-reject-share",
                "1",
                "--rejects",
                "small/r.tsv",
            ),
        )
        one_line(err, code, 1, "No space left on device", "the previous outputs are unchanged")
        assert snapshot(site) == before
        no_staging(site)


def test_a_rename_refused_part_way_puts_the_old_set_back(site: Path) -> None:
    """node_states.csv is immutable (chattr +i): the commit cannot keep it aside, so it stops
    before any rename; every file is as it was."""
    target = site / "o" / "node_states.csv"
    r = subprocess.run(["chattr", "+i", str(target)], capture_output=True, check=False)
    if r.returncode != 0:
        pytest.skip(
            "chattr +i needs root on ext4/xfs: the injected rename failures in "
            "tests/streams/test_atomic.py cover the same commit"
        )
    try:
        before = snapshot(site)
        code, err = cli(
            site,
            *replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "r.tsv", "--report"),
        )
        one_line(err, code, 1, "node_states.csv", "the previous outputs are unchanged")
        assert snapshot(site) == before
        no_staging(site)
    finally:
        subprocess.run(["chattr", "-i", str(target)], check=False)


def test_modes_are_kept(site: Path) -> None:
    os.chmod(site / "o" / "drain_daily.csv", 0o640)
    os.chmod(site / "r.tsv", 0o604)
    (site / "adjust.tsv").write_bytes(b"old\n")
    os.chmod(site / "adjust.tsv", 0o644)
    for _ in range(2):
        code, err = cli(
            site, *replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "r.tsv")
        )
        assert code == 0, err
        code, err = cli(
            site,
            *replay(
                "--format", "jobevents", "jobs.jsonl", "--out", "o2", "--adjust-out", "adjust.tsv"
            ),
        )
        assert code == 0, err
    assert stat.S_IMODE((site / "o" / "drain_daily.csv").stat().st_mode) == 0o640
    assert stat.S_IMODE((site / "r.tsv").stat().st_mode) == 0o604
    assert stat.S_IMODE((site / "adjust.tsv").stat().st_mode) == 0o644
    assert (site / "adjust.tsv").read_bytes() == (site / "o2" / "fairshare_adjust.tsv").read_bytes()


def test_a_killed_runs_staging_is_swept_by_the_next_run(site: Path) -> None:
    """SIGKILL leaves a staging directory (no handler runs); the next run into the same place
    removes it, and commits its own set."""
    big = site / "big.log"
    big.write_bytes(MOAB * 40)
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streams.cli",
            *replay("--format", "moab", "big.log", "--out", "o", "--rejects", "r.tsv"),
        ],
        cwd=site,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while p.poll() is None and not list((site / "o").glob(".staging-*")):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    p.kill()
    p.wait()
    assert list((site / "o").glob(".staging-*")), "the run ended before it staged anything"
    code, err = cli(
        site, *replay("--format", "moab", "moab.log", "--out", "o", "--rejects", "r.tsv")
    )
    assert code == 0, err
    no_staging(site)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_stop_a_run_like_sigint(site: Path, sig: signal.Signals) -> None:
    big = site / "big.log"
    big.write_bytes(gzip.decompress((INPUTS / "moab.log.gz").read_bytes()) * 3)
    before = snapshot(site)
    writing = lambda: bool(list((site / "o").glob(".staging-*/node_states.csv")))  # noqa: E731
    argv = replay("--format", "moab", "big.log", "--out", "o", "--rejects", "r.tsv", "--report")
    for _ in range(ATTEMPTS):
        code, err = _stop_when(site, argv, writing, sig)
        if code != 0:
            break
        shutil.rmtree(site / "o")  # it finished first: put the old set back and try again
        _restore(site, before)
    one_line(err, code, 128 + sig, f"stopped by {sig.name}", "previous outputs are unchanged")
    assert snapshot(site) == before
    no_staging(site)


def _stop_when(
    site: Path, argv: list[str], moment: Callable[[], bool], sig: signal.Signals
) -> tuple[int, str]:
    """Run ``argv``, send ``sig`` when ``moment()`` holds; (exit code, stderr). A run that ends
    before the moment exits 0; the caller tries again."""
    p = subprocess.Popen(
        [sys.executable, "-m", "streams.cli", *argv],
        cwd=site,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while p.poll() is None and not moment():
        assert time.monotonic() < deadline
        time.sleep(0.002)
    if p.poll() is None:
        p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    return p.returncode, err


@pytest.fixture(scope="module")
def many_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Job events of ~100 simulated days (a replay of a few seconds)."""
    d = tmp_path_factory.mktemp("sim")
    code, err = cli(
        d,
        "simulate",
        "--model",
        "lublin",
        "--nodes",
        "64",
        "--days",
        "100",
        "--period",
        "3600",
        "--out",
        str(d),
    )
    assert code == 0, err
    return d / "jobs.jsonl"


def test_sigint_while_the_report_is_drawn_leaves_the_old_report_and_tables(site: Path) -> None:
    code, err = cli(site, *replay("--format", "moab", "moab.log", "--out", "o", "--report"))
    assert code == 0, err
    (site / "big.log").write_bytes(gzip.decompress((INPUTS / "moab.log.gz").read_bytes()))
    before = snapshot(site)
    drawing = lambda: bool(list((site / "o").glob(".staging-*/summary_drain.json")))  # noqa: E731
    argv = replay("--format", "moab", "big.log", "--out", "o", "--rejects", "r.tsv", "--report")
    for _ in range(ATTEMPTS):
        code, err = _stop_when(site, argv, drawing, signal.SIGINT)
        if code != 0:
            break
        shutil.rmtree(site / "o")  # the run outpaced the watcher: put the old set back
        _restore(site, before)
    one_line(err, code, 130, "interrupted", "the previous outputs are unchanged")
    assert snapshot(site) == before
    no_staging(site)


def _restore(site: Path, before: dict[str, tuple[str, int, bytes]]) -> None:
    for rel, (kind, mode, data) in before.items():
        if kind == "file":
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_bytes(data)
            os.chmod(site / rel, mode)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_adjust_table_is_never_left_mid_replay(
    tmp_path: Path, many_jobs: Path, sig: signal.Signals
) -> None:
    """A scheduler's fair-share hook reads --adjust-out: a stopped replay leaves the table it
    had (content and mode), though the replay had staged a mid-replay table."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "adjust.tsv").write_bytes(b"user\talice\t100\n")
    os.chmod(hook / "adjust.tsv", 0o644)
    before = snapshot(tmp_path)
    staged = lambda: bool(list(hook.glob(".staging-*/adjust.tsv")))  # noqa: E731
    argv = replay(
        "--format", "jobevents", str(many_jobs), "--out", "o", "--adjust-out", "hook/adjust.tsv"
    )
    for _ in range(ATTEMPTS):
        code, err = _stop_when(tmp_path, argv, staged, sig)
        if code != 0:
            break
        shutil.rmtree(tmp_path / "o")
        _restore(tmp_path, before)
    assert code == 128 + sig, err
    assert snapshot(tmp_path) == before
    no_staging(tmp_path)
