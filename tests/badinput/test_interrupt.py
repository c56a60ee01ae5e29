"""Ctrl-C at any moment of a replay: exit 130, one line, no traceback, and the output directory
and the rejects file hold exactly the previous complete set, with no staging left behind.

A real SIGINT is sent to a real `drainwatch replay` of a simulated Moab log (20,000 nodes, 4.3 M
lines: about a second of parsing, then ~0.2 s of writing a large node_states.csv) into an --out
that holds the output set of an earlier run. The moments are found by watching the directory:
the DirectorySink stages its files in ``--out/.staging-*`` from the first declared table, and
node_states.csv is written only when the stages finish, so a non-empty staged node_states.csv
means the run is writing its reports. A moment the run outpaces is tried again (the previous
set restored); one never caught fails the test.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.golden.make_golden import INPUTS
from tests.paths import REPO

ATTEMPTS = 4


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return env


def _sigint_default() -> None:
    # a test run started as a background job inherits SIGINT ignored (as sh starts them), and
    # Python then installs no KeyboardInterrupt handler: the CLI gets the disposition a user's
    # terminal gives it
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(*argv: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "streams.cli", *argv],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_default,  # noqa: PLW1509 (no threads are started before it)
    )


def _snapshot(*paths: Path) -> dict[str, bytes]:
    """Every file under the paths (directories recursively, dot files included)."""
    out: dict[str, bytes] = {}
    for p in paths:
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        out.update({str(f): f.read_bytes() for f in files})
    return out


def _restore(snapshot: dict[str, bytes], *dirs: Path) -> None:
    for d in dirs:
        for f in d.iterdir():
            if f.is_file() and str(f) not in snapshot:
                f.unlink()
    for name, data in snapshot.items():
        Path(name).write_bytes(data)


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sim")
    p = _cli(
        "simulate", "--model", "lublin", "--nodes", "20000", "--days", "0.3", "--out", str(d), cwd=d
    )
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return d / "moab.log"


def _staged(out: Path) -> list[Path]:
    return list(out.glob(".staging-*"))


def _writing(out: Path) -> bool:
    for stage in _staged(out):
        try:
            if (stage / "node_states.csv").stat().st_size > 0:
                return True
        except OSError:
            pass
    return False


def _importing(pid: int) -> bool:
    """numpy's extension is mapped: the CLI is importing its commands (build_parser), past the
    interpreter's start, where Python has not yet its SIGINT handler."""
    try:
        return "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


MOMENTS = {
    # while the CLI imports the commands, before any option is read
    "start-up": lambda out, pid, t0: _importing(pid),
    # the sink has staged its tables: the log is being parsed
    "parsing": lambda out, pid, t0: bool(_staged(out)) and time.monotonic() - t0 > 0.6,
    # the stages finish: the reports are being written into the staging directory
    "writing": lambda out, pid, t0: _writing(out),
}


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_sigint_leaves_the_previous_outputs(moment: str, big_log: Path, tmp_path: Path) -> None:
    out, rejects = tmp_path / "out", tmp_path / "rejects.tsv"
    # the previous complete set: another log (with one stray line, so a rejects file too)
    lines = gzip.decompress((INPUTS / "moab.log.gz").read_bytes()).splitlines(keepends=True)
    stray = lines[5].replace(b"2015-03-07", b"2400-03-07")
    (tmp_path / "previous.log").write_bytes(b"".join([*lines[:1000], stray, *lines[1000:]]))
    first = _cli(
        "replay",
        "--format",
        "moab",
        str(tmp_path / "previous.log"),
        "--out",
        str(out),
        "--rejects",
        str(rejects),
        "--no-progress",
        cwd=tmp_path,
    )
    assert first.wait(timeout=120) == 0, first.communicate()[1]
    before = _snapshot(out, rejects)
    assert any(n.endswith("summary_drain.json") for n in before) and rejects.read_bytes()

    done = False
    for _ in range(ATTEMPTS):
        p = _cli(
            "replay",
            "--format",
            "moab",
            str(big_log),
            "--out",
            str(out),
            "--rejects",
            str(rejects),
            "--no-progress",
            cwd=tmp_path,
        )
        t0, reached = time.monotonic(), MOMENTS[moment]
        while p.poll() is None and not reached(out, p.pid, t0):
            time.sleep(0.002)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
        if p.returncode == 0:  # the run ended before the moment came: try again
            _restore(before, out, tmp_path)
            continue
        done = True
        assert p.returncode == 130, err
        assert "Traceback" not in err, err
        lines_err = err.strip().splitlines()
        assert len(lines_err) == 1 and "interrupted" in lines_err[0], err
        assert _snapshot(out, rejects) == before, "the previous outputs changed"
        leftovers = [f.name for f in tmp_path.iterdir() if f.name.startswith(".")]
        assert not leftovers, leftovers  # no temporary rejects file
        break
    assert done, f"no run was still {moment} after {ATTEMPTS} attempts"
