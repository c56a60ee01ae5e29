"""Files and directories made whole or not at all: the one way every output file is written
(tables, reports, the scheduler hook's lookup table, the shippers' checkpoints).

:func:`atomic_file` replaces one file. :class:`OutputSet` replaces a run's whole set of files
(tables, summary, rejects, report, the ADJUST table) as one: every file is staged beside its
target, and only when all are written are they renamed into place, the old files kept as hard
links until the last rename, so a failure at any step leaves the whole old set or the whole new
set. A replaced file keeps its mode; a new one gets the mode the umask gives.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

STAGING_PREFIX = ".staging-"
LOCK_NAME = ".lock"
# a staging directory without its lock file is being made (mkdtemp, then the lock): one that
# stays so longer than this was left by a killed run
UNLOCKED_GRACE_S = 60.0


def make_dirs(path: Path) -> list[Path]:
    """``mkdir -p path``; the directories it made, outermost first."""
    missing = [p for p in (path, *path.parents) if not p.exists()][::-1]
    path.mkdir(parents=True, exist_ok=True)
    return missing


def remove_dirs(created: list[Path]) -> None:
    """Remove directories :func:`make_dirs` made, innermost first, as far as they are empty."""
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:
            return


def _mode_for(target: Path) -> int:
    """The mode the new content of ``target`` gets: the old file's, else the umask's
    (``0o666 & ~umask``)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A file written under a temporary name beside ``path`` and renamed onto it when the block
    ends without error; on any error (or SIGINT) the temporary file is removed and ``path``
    keeps what it had. The file keeps its mode (a new one gets the umask's)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), _mode_for(path))
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sweep_staging(directory: Path) -> list[Path]:
    """Remove the staging directories killed runs left in ``directory`` (their lock is free);
    those of live runs stay. Returns what was removed."""
    removed: list[Path] = []
    try:
        candidates = [p for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]
    except OSError:
        return removed
    for d in candidates:
        if not d.is_dir() or d.is_symlink():
            continue
        lock = d / LOCK_NAME
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            try:
                young = time.time() - d.stat().st_mtime < UNLOCKED_GRACE_S
            except OSError:
                continue
            if young:
                continue
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a live run holds it
            continue
        try:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
        finally:
            os.close(fd)
    return removed


class CommitFailed(OSError):
    """The set could not be committed. ``restored`` says whether the whole old set is back
    (else the message lists the files left new)."""

    def __init__(self, cause: OSError, restored: bool, detail: str = "") -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), cause.filename)
        self.restored = restored
        self.detail = detail


class _Stage:
    """One staging directory beside a set of targets, locked (``flock``) while its run lives,
    so :func:`sweep_staging` tells a killed run's leftovers from a live run's files."""

    def __init__(self, parent: Path) -> None:
        self.created = make_dirs(parent)
        self.path = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent))
        self._lock = os.open(self.path / LOCK_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.close(self._lock)
        remove_dirs(self.created)


class OutputSet:
    """Every file one run writes, committed as one set.

    ``staged(target)`` gives the path to write ``target``'s new content to (in a staging
    directory beside it, made on first use); ``remove(target)`` marks a file the set no longer
    holds. :meth:`commit`: every target that exists is hard-linked into the staging directory
    (a file that cannot be linked fails the commit before anything changed), then the staged
    files are renamed onto their targets in the order given (``last`` names go last: a reader
    that sees the new summary sees the new tables), then the removed files go. A failure
    during the renames puts every old file back from its link. :meth:`abort` removes the
    staging directories; nothing the user had is touched."""

    def __init__(self) -> None:
        self._stages: dict[Path, _Stage] = {}
        self._targets: dict[Path, Path] = {}  # target -> staged file
        self._removed: list[Path] = []

    def stage_dir(self, parent: str | Path) -> Path:
        """The staging directory beside targets in ``parent`` (made and locked on first use,
        leftovers of killed runs swept first)."""
        parent = Path(os.path.abspath(parent))
        st = self._stages.get(parent)
        if st is None:
            if parent.is_dir():
                sweep_staging(parent)
            st = self._stages[parent] = _Stage(parent)
        return st.path

    def staged(self, target: str | Path) -> Path:
        target = Path(os.path.abspath(target))
        path = self._targets.get(target)
        if path is None:
            path = self.stage_dir(target.parent) / target.name
            self._targets[target] = path
        return path

    def remove(self, target: str | Path) -> None:
        self._removed.append(Path(os.path.abspath(target)))

    def commit(self, last: Iterable[str] = ()) -> None:
        last_names = set(last)
        order = sorted(self._targets, key=lambda t: t.name in last_names)
        backups: dict[Path, Path] = {}
        try:
            for target in order:
                staged = self._targets[target]
                if not staged.exists():
                    staged.touch()
                os.chmod(staged, _mode_for(target))
            for i, target in enumerate([*order, *self._removed]):
                if os.path.lexists(target):
                    link = self.stage_dir(target.parent) / f".old-{i}"
                    os.link(target, link, follow_symlinks=False)
                    backups[target] = link
        except OSError as e:
            self.abort()
            raise CommitFailed(e, restored=True) from e
        done: list[tuple[Path, bool]] = []  # (target, replaced: else removed)
        try:
            for target in [t for t in order if t.name not in last_names]:
                os.replace(self._targets[target], target)
                done.append((target, True))
            for target in self._removed:
                if target in backups:
                    os.unlink(target)
                    done.append((target, False))
            for target in [t for t in order if t.name in last_names]:
                os.replace(self._targets[target], target)
                done.append((target, True))
        except OSError as e:
            restored, left = self._roll_back(done, backups)
            self.abort()
            detail = "" if restored else "; left new: " + ", ".join(str(p) for p in left)
            raise CommitFailed(e, restored, detail) from e
        for parent in {t.parent for t in self._targets} | {t.parent for t in self._removed}:
            _fsync_dir(parent)
        self.abort()

    @staticmethod
    def _roll_back(
        done: list[tuple[Path, bool]], backups: dict[Path, Path]
    ) -> tuple[bool, list[Path]]:
        left: list[Path] = []
        for target, _replaced in reversed(done):
            try:
                if target in backups:
                    os.replace(backups[target], target)
                else:
                    os.unlink(target)
            except OSError:
                left.append(target)
        return not left, left

    def abort(self) -> None:
        for st in self._stages.values():
            st.remove()
        self._stages.clear()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
