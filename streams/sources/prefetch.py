"""The first Moab file's first chunks, read and cut while a replay starts.

A replay spends its first ~0.1 s importing numpy and its stages, before the source opens its
file. When the compiled tokenizer is installed and the run has one input, :func:`start` opens it
as soon as the arguments are checked and cuts chunks on a read-ahead thread (reading and the
tokenizer release the GIL; neither needs numpy: the tokens stay as the tokenizer returns them
until the source turns them into :class:`~models.formats.moab.Tokens`), so the first chunks are
ready when the run asks for them. Nothing else changes: the same chunks, in the same order, with
the same errors (raised where the source reads them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from streams.sources.files import line_chunks, open_binary, raw_position
from streams.sources.readahead import ReadAhead

FIRST_CHUNK_BYTES = 1 << 20  # a small first chunk: the run starts on it while more are cut
DEPTH = 6  # chunks cut ahead while the run starts (then the run keeps up with the reader)
AHEAD_BYTES = 64 << 20  # ... and at most this many bytes of them (one chunk at least)


# a chunk in flight (its bytes, its tokens, its batch) takes up to about this many times its
# size while it is cut, waits or is accounted (1.2 to 1.6 in `replay --format moab`)
CHUNK_MEMORY = 2
MEMORY_SHARE = 0.25  # the chunks in flight take at most this share of the memory available
MIN_CHUNK_BYTES = 1 << 20


def depth(chunk_bytes: int) -> int:
    """Chunks cut ahead: ``DEPTH``, fewer for large chunks (at most ``AHEAD_BYTES``, one at
    least), so what waits is bounded in bytes, not only in chunks."""
    return max(1, min(DEPTH, AHEAD_BYTES // max(1, chunk_bytes)))


def memory_available() -> int | None:
    """Bytes this process may still take: MemAvailable of /proc/meminfo, less when its cgroup
    (v2) has a memory limit closer; None when neither is known (not Linux)."""
    found: list[int] = []
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/self/cgroup", "rb") as f:
            rel = next((ln[3:].strip() for ln in f if ln.startswith(b"0::")), None)
        if rel is not None:
            base = b"/sys/fs/cgroup" + rel.rstrip(b"/")
            with open(base + b"/memory.max", "rb") as f:
                limit = f.read().strip()
            if limit != b"max":
                with open(base + b"/memory.current", "rb") as f:
                    found.append(max(0, int(limit) - int(f.read().strip())))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def chunk_bytes_for_memory(requested: int, available: int | None) -> int:
    """The chunk size to read with: ``requested``, lowered (to 1 MiB at least) so that the
    chunks in flight (one accounted, one being cut, :func:`depth` waiting; ``CHUNK_MEMORY``
    times their size) take at most ``MEMORY_SHARE`` of ``available`` bytes (None: unknown,
    not lowered). Rule: chunk sizes are bounded by memory, not only by the option's maximum."""
    if available is None:
        return requested
    budget = int(available * MEMORY_SHARE)
    c = requested
    while c > MIN_CHUNK_BYTES and (depth(c) + 2) * c * CHUNK_MEMORY > budget:
        c = max(MIN_CHUNK_BYTES, min(c - 1, budget // ((depth(c) + 2) * CHUNK_MEMORY)))
    return c


@dataclass
class Prefetch:
    path: str
    file: BinaryIO
    chunks: ReadAhead[
        tuple[bytes | memoryview, Any, Any, int]
    ]  # (chunk, long lines, raw tokens, position)

    def close(self) -> None:
        self.chunks.close()
        self.file.close()


def cut(
    f: BinaryIO, chunk_bytes: int, max_line_bytes: int, tokenize: Any
) -> Iterator[tuple[bytes | memoryview, Any, Any, int]]:
    """Chunks of whole lines, each with ``tokenize(chunk)`` and the file position after it."""
    for chunk, longs in line_chunks(f, chunk_bytes, max_line_bytes, FIRST_CHUNK_BYTES, True):
        yield chunk, longs, tokenize(chunk), raw_position(f)


def chunk_mb_for_memory(mb: int) -> tuple[int, str | None]:
    """``--chunk-mb`` bounded by the memory available now (:func:`chunk_bytes_for_memory`,
    whole MB): the MB to read with and, when lowered, a one-line note that says so."""
    available = memory_available()
    got = max(1, chunk_bytes_for_memory(mb << 20, available) >> 20)
    if got >= mb or available is None:
        return mb, None
    share = f"{MEMORY_SHARE:.0%}"
    return got, (
        f"--chunk-mb {mb} lowered to {got}: the chunks in flight take at most {share} of the "
        f"{available >> 20:,} MB of memory available"
    )


def start(path: str, chunk_bytes: int, max_line_bytes: int) -> Prefetch | None:
    """The file's chunks cut on a thread from now on; None without the compiled tokenizer or
    when the file does not open (the source then opens it, and reports why it cannot)."""
    try:
        from drainwatch_native import tokenize_moab
    except ImportError:
        return None
    try:
        f = open_binary(path)
    except Exception:  # noqa: BLE001 - the source opens it again and reports the error
        return None
    return Prefetch(
        path,
        f,
        ReadAhead(lambda: cut(f, chunk_bytes, max_line_bytes, tokenize_moab), depth(chunk_bytes)),
    )
