"""A Slurm client's output is read with a cap (issue 31, class 6): ``scontrol``, ``squeue`` and
``sacct`` are read as they print, and one that prints more than ``bounds.max_snapshot_bytes``
is killed and its snapshot or poll refused and counted; the shippers keep running, in bounded
memory. The clients are stand-in executables (real child processes) that print without end."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from streams.ship.sacct import SacctPoller
from streams.ship.slurm import (
    SlurmCommands,
    SlurmShipper,
    SnapshotFailed,
    SnapshotTooLarge,
    run_capped,
)
from tests.paths import REPO

NODE = "NodeName=n1 Arch=x86_64 CoresPerSocket=8 CPUAlloc=0 State=IDLE Partitions=batch"
VERSION = '[ "$1" = --version ] && { echo "slurm 22.05.8"; exit 0; }'


def _tool(d: Path, name: str, body: str) -> str:
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def _endless(d: Path, name: str = "scontrol") -> str:
    """A client that answers ``--version`` and then prints node lines without end."""
    return _tool(d, name, f'{VERSION}\nexec yes "{NODE}"\n')


def test_an_endless_child_is_killed_at_the_cap(tmp_path: Path) -> None:
    t = time.monotonic()
    with pytest.raises(SnapshotTooLarge, match="printed more than 1,048,576 bytes"):
        run_capped([_endless(tmp_path), "show", "node"], 60.0, 1 << 20)
    assert time.monotonic() - t < 30  # stopped at the cap, not at the timeout
    f = io.BytesIO()
    with pytest.raises(SnapshotTooLarge):
        run_capped([_endless(tmp_path), "show", "node"], 60.0, 1 << 20, into=f)
    assert len(f.getvalue()) <= 1 << 20  # never more than the cap written either


def test_output_under_the_cap_and_an_endless_stderr(tmp_path: Path) -> None:
    """stdout up to the cap is whole; stderr is read alongside (a child blocked on a full
    stderr pipe never hangs it) and only its end kept for the message."""
    ok = _tool(tmp_path, "ok", "head -c 1048576 /dev/zero\n")
    assert run_capped([ok], 30.0, 1 << 20) == bytes(1 << 20)
    body = "head -c 8000000 /dev/zero | tr '\\0' e >&2\necho >&2; echo 'last words' >&2; exit 4\n"
    noisy = _tool(tmp_path, "noisy", body)
    with pytest.raises(SnapshotFailed) as e:
        run_capped([noisy], 30.0, 1 << 20)
    assert str(e.value).endswith("exited 4: last words")


def test_the_slurm_shipper_refuses_counts_and_keeps_running_in_bounded_memory(
    tmp_path: Path,
) -> None:
    """Three iterations with an ``scontrol`` that never stops printing, run in a fresh process
    so that its peak RSS is its own: each is refused once (not taken again: it would print as
    much), counted, and skipped; the process's peak RSS grows by well under 64 MiB with an
    8 MiB cap (before: all of the output, 2.8 GB in 4 s)."""
    sc, sq = _endless(tmp_path), _tool(tmp_path, "squeue", "exit 0\n")
    code = f"""
import asyncio, io, json, resource, sys
sys.path.insert(0, {str(REPO)!r})
from streams.ship.slurm import SlurmCommands, SlurmShipper
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cmds = SlurmCommands({sc!r}, {sq!r}, timeout=60.0, max_bytes=8 << 20)
sh = SlurmShipper(cmds, None, io.BytesIO(), retries=2, retry_wait=0.01)
asyncio.run(sh.run(period=0.01, count=3))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
s = sh.stats
print(json.dumps([before, after, s.refused_snapshots, s.skipped_iterations,
                  s.failed_attempts, s.iterations, s.last_error]))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    before, after, refused, skipped, failed, iterations, err = json.loads(r.stdout)
    assert (refused, skipped, failed, iterations) == (3, 3, 0, 0)
    assert "printed more than 8,388,608 bytes" in err
    assert (after - before) * 1024 < 64 << 20  # ru_maxrss is in KiB
    warnings = [ln for ln in r.stderr.decode().splitlines() if "snapshot refused" in ln]
    assert len(warnings) == 3  # one line each


def test_a_refused_iteration_is_logged_once_and_the_next_taken(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    flag = tmp_path / "printed_once"
    body = (
        f'{VERSION}\nif [ ! -e {flag} ]; then touch {flag}; exec yes "{NODE}"; fi\necho "{NODE}"\n'
    )
    sc = _tool(tmp_path, "scontrol", body)
    sq = _tool(tmp_path, "squeue", "echo 'JOBID|STATE|START_TIME|SCHEDNODES|NODELIST'\n")
    out = io.BytesIO()
    cmds = SlurmCommands(sc, sq, timeout=30.0, reservations=False, max_bytes=1 << 20)
    sh = SlurmShipper(cmds, None, out, retries=2, retry_wait=0.01, clock=lambda: 100.0)
    with caplog.at_level(logging.WARNING):
        asyncio.run(sh.run(period=0.01, count=2))
    s = sh.stats
    assert (s.refused_snapshots, s.skipped_iterations, s.iterations) == (1, 1, 1)
    assert len(out.getvalue().splitlines()) == 1  # the second iteration's one node
    assert sum("snapshot refused" in r.getMessage() for r in caplog.records) == 1


def test_a_sacct_poll_over_the_cap_is_refused_and_the_window_halved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endless sacct: the poll is refused and counted, the checkpoint untouched, no
    temporary file left behind, and the next window half as long; a poll that succeeds lets
    the windows grow back."""
    flag = tmp_path / "endless"
    flag.touch()
    sacct = _tool(tmp_path, "sacct", f'[ -e {flag} ] && exec yes "1|2|3"\nexit 0\n')
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    cp = tmp_path / "cp.json"
    p = SacctPoller(sacct, cp, since=0.0, overlap=0.0, max_window=8 * 3600.0, max_bytes=1 << 20)
    with pytest.raises(SnapshotTooLarge, match="sacct printed more than"):
        p.poll(1e6)
    assert (p.refused, p.window, p.polls) == (1, 4 * 3600.0, 0)
    with pytest.raises(SnapshotTooLarge):
        p.poll(1e6)
    assert (p.refused, p.window) == (2, 2 * 3600.0)
    assert not cp.exists() and list(tmpdir.iterdir()) == []
    flag.unlink()
    poll = p.poll(1e6)
    assert poll.end == 2 * 3600.0 and poll.behind  # the short window, then at once more
    assert p.window == 4 * 3600.0
