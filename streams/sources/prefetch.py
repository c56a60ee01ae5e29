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


def cut(f: BinaryIO, chunk_bytes: int, max_line_bytes: int,
        tokenize: Any) -> Iterator[tuple[bytes | memoryview, Any, Any, int]]:  # fmt: skip
    """Chunks of whole lines, each with ``tokenize(chunk)`` and the file position after it."""
    for chunk, longs in line_chunks(f, chunk_bytes, max_line_bytes, FIRST_CHUNK_BYTES, True):
        yield chunk, longs, tokenize(chunk), raw_position(f)


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
    return Prefetch(path, f, ReadAhead(lambda: cut(f, chunk_bytes, max_line_bytes, tokenize_moab),
                                       DEPTH))  # fmt: skip
