"""Reading input files: gzip detected by its magic bytes, whole-line chunks for streaming parsers
(memory flat in the file size), and a plain progress line on stderr."""

from __future__ import annotations

import gzip
import io
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, BinaryIO

from streams.errors import UserError

GZIP_MAGIC = b"\x1f\x8b"


def open_binary(path: str | Path) -> BinaryIO:
    """Open a file for binary reading, decompressing gzip transparently."""
    f = open(path, "rb")  # noqa: SIM115 - returned to the caller
    if f.read(2) == GZIP_MAGIC:
        f.seek(0)
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    f.seek(0)
    return f


def open_text(path: str | Path) -> IO[str]:
    """Open a possibly gzip-compressed file as UTF-8 text (bad bytes replaced, never fatal)."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors="replace")


def read_text(path: str | Path) -> str:
    """The whole (possibly gzip-compressed) file as text, bad bytes replaced."""
    with open_binary(path) as f:
        return f.read().decode("utf-8", "replace")


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Turn a damaged input (a truncated or corrupt gzip stream) into a one-line user error that
    names the file; the run's outputs are not written."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise UserError(f"{path}: damaged compressed input ({e}); nothing written") from None


def raw_position(f: BinaryIO) -> int:
    """Bytes consumed from the file on disk (compressed position for gzip), for progress."""
    inner = getattr(f, "fileobj", None)
    return inner.tell() if inner is not None else f.tell()


def line_chunks(f: BinaryIO, chunk_bytes: int = 32 << 20) -> Iterator[bytes]:
    """Chunks of whole lines: a block, completed up to the end of its last line (each chunk
    ends with a newline except possibly the very last)."""
    while True:
        block = f.read(chunk_bytes)
        if not block:
            return
        if not block.endswith(b"\n"):
            block += f.readline()
        yield block


class Progress:
    """'replay: 123.4/567.8 MB  1.23 M lines/s' on stderr, at most every half second."""

    def __init__(self, total_bytes: int, label: str = "replay", enabled: bool = True) -> None:
        self.total = max(total_bytes, 1)
        self.label = label
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self._last = 0.0

    def update(self, done_bytes: int, lines: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.5:
            return
        self._last = now
        rate = lines / max(now - self.t0, 1e-9)
        pct = 100.0 * min(done_bytes, self.total) / self.total
        sys.stderr.write(
            f"\r{self.label}: {done_bytes / 1e6:,.1f}/{self.total / 1e6:,.1f} MB "
            f"({pct:5.1f}%)  {lines:,} lines  {rate / 1e6:.2f} M lines/s "
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()
