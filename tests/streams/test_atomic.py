"""OutputSet: a run's files change as one set, whatever step fails.

A rename that fails part-way cannot be made on demand on every machine (``chattr +i`` needs
root), so these tests inject the failure: ``os.replace`` is wrapped to raise at its k-th call
(an injected fault, named as such); tests/badinput/test_outputs.py does it for real.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.atomic import (
    LOCK_NAME,
    STAGING_PREFIX,
    CommitFailed,
    OutputSet,
    atomic_file,
    sweep_staging,
)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _old_set(root: Path) -> None:
    (root / "o").mkdir()
    for name in ("a.csv", "b.csv", "stale.csv", "summary.json"):
        (root / "o" / name).write_bytes(f"old {name}\n".encode())
    (root / "rejects.tsv").write_bytes(b"old rejects\n")


def _new_set(root: Path) -> OutputSet:
    s = OutputSet()
    for name in ("a.csv", "b.csv", "c.csv", "summary.json"):
        s.staged(root / "o" / name).write_bytes(f"new {name}\n".encode())
    s.staged(root / "rejects.tsv").write_bytes(b"new rejects\n")
    s.remove(root / "o" / "stale.csv")
    return s


def test_commit_replaces_the_set_and_leaves_no_staging(tmp_path: Path) -> None:
    _old_set(tmp_path)
    _new_set(tmp_path).commit(last=["summary.json"])
    assert _tree(tmp_path) == {
        "o/a.csv": b"new a.csv\n",
        "o/b.csv": b"new b.csv\n",
        "o/c.csv": b"new c.csv\n",
        "o/summary.json": b"new summary.json\n",
        "rejects.tsv": b"new rejects\n",
    }
    assert not list(tmp_path.rglob(f"{STAGING_PREFIX}*"))


@settings(max_examples=30, deadline=None)
@given(k=st.integers(min_value=1, max_value=6))  # 5 renames and 1 removal
def test_a_rename_failing_at_any_step_puts_the_whole_old_set_back(k: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        _old_set(root)
        before = _tree(root)
        s = _new_set(root)
        real_replace, real_unlink = os.replace, os.unlink
        calls = {"n": 0}

        def step() -> None:  # the injected fault: the k-th rename or removal fails
            calls["n"] += 1
            if calls["n"] == k:
                raise OSError(5, "Input/output error (injected)")

        def replace(src: str | Path, dst: str | Path) -> None:
            step()
            real_replace(src, dst)

        def unlink(path: str | Path, **kw: object) -> None:
            step()
            real_unlink(path, **kw)  # type: ignore[arg-type]

        os.replace, os.unlink = replace, unlink  # type: ignore[assignment]
        try:
            with pytest.raises(CommitFailed) as e:
                s.commit(last=["summary.json"])
        finally:
            os.replace, os.unlink = real_replace, real_unlink
        assert e.value.restored
        assert _tree(root) == before
        assert not list(root.rglob(f"{STAGING_PREFIX}*"))


def test_a_roll_back_that_fails_says_which_files_are_new(tmp_path: Path) -> None:
    _old_set(tmp_path)
    s = _new_set(tmp_path)
    real = os.replace
    calls = {"n": 0}

    def injected(src: str | Path, dst: str | Path) -> None:  # the injected fault
        calls["n"] += 1
        if calls["n"] >= 3:  # the third rename fails, and so does every roll-back rename
            raise OSError(5, "Input/output error (injected)", str(dst))
        real(src, dst)

    os.replace = injected  # type: ignore[assignment]
    try:
        with pytest.raises(CommitFailed) as e:
            s.commit(last=["summary.json"])
    finally:
        os.replace = real
    assert not e.value.restored
    assert "a.csv" in e.value.detail and "b.csv" in e.value.detail


def test_modes_are_kept_and_new_files_get_the_umask(tmp_path: Path) -> None:
    (tmp_path / "kept.tsv").write_bytes(b"x")
    os.chmod(tmp_path / "kept.tsv", 0o640)
    s = OutputSet()
    s.staged(tmp_path / "kept.tsv").write_bytes(b"y")
    s.staged(tmp_path / "new.tsv").write_bytes(b"z")
    old = os.umask(0o027)
    try:
        s.commit()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "kept.tsv").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "new.tsv").stat().st_mode) == 0o640  # 0o666 & ~0o027
    os.chmod(tmp_path / "kept.tsv", 0o604)
    with atomic_file(tmp_path / "kept.tsv") as f:
        f.write(b"again")
    assert stat.S_IMODE((tmp_path / "kept.tsv").stat().st_mode) == 0o604


def test_abort_touches_nothing_the_user_had(tmp_path: Path) -> None:
    _old_set(tmp_path)
    before = _tree(tmp_path)
    s = _new_set(tmp_path)
    s.abort()
    assert _tree(tmp_path) == before
    assert not list(tmp_path.rglob(f"{STAGING_PREFIX}*"))


def test_sweep_removes_a_dead_runs_staging_and_keeps_a_live_one(tmp_path: Path) -> None:
    dead = tmp_path / f"{STAGING_PREFIX}dead"
    dead.mkdir()
    (dead / LOCK_NAME).write_bytes(b"")
    (dead / "t.csv").write_bytes(b"half")
    live = tmp_path / f"{STAGING_PREFIX}live"
    live.mkdir()
    (live / LOCK_NAME).write_bytes(b"")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            str(live / LOCK_NAME),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert sweep_staging(tmp_path) == [dead]
        assert live.exists() and not dead.exists()
    finally:
        holder.communicate("")
    assert sweep_staging(tmp_path) == [live]  # its run has ended
