"""Files and directories made whole or not at all: the one way every output file is written
(tables, reports, the scheduler hook's lookup table, the shippers' checkpoints)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


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


@contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A file written under a temporary name beside ``path`` and renamed onto it when the block
    ends without error; on any error (or SIGINT) the temporary file is removed and ``path``
    keeps what it had."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
