"""Moab log files -> NodeStatusBatch, one batch per whole-line chunk (memory flat in the size).

Files are read in the order of their first record's time, whatever order they were given in
(``moab.log.1 moab.log.0`` from a glob reads .0 after .1 if .1 is older). Files that overlap in
time are refused unless ``allow_overlap`` (their records would be out of order and accrue
nothing). Bad node-status lines go to the run's reject log with their reason; lines that are
other Moab messages are counted as ignored; a line longer than ``max_line_bytes`` is rejected as
``line_too_long`` without being held whole. A line ends at LF, CRLF or a bare CR (universal
newlines: ``streams.sources.files.line_chunks``): every record is read and counted as one, and
line numbers are those of ``bytes.splitlines``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from typing import BinaryIO

import numpy as np

from models.formats.moab import (
    ParsedChunk,
    Tokens,
    classify_line,
    parse_moab_chunk,
    tokenize,
    tokens_from_raw,
)
from models.records.nodestatus import Codebook, NodeStatus, NodeStatusBatch
from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams.contracts import InputStats, RejectLog
from streams.errors import UserError
from streams.format import instant_ms
from streams.sources.files import (
    MAX_LINE_BYTES,
    LongLine,
    Progress,
    bare_cr_to_lf,
    line_chunks,
    open_binary,
    raw_position,
    reading,
)
from streams.sources.prefetch import FIRST_CHUNK_BYTES, Prefetch
from streams.sources.readahead import read_ahead

PEEK_BYTES = 1 << 20  # enough lines to find a file's first record time
# a chunk of whole lines, its overlong lines, its tokens (None: the line path) and the file
# position after it
_Cut = tuple[bytes | memoryview, list[LongLine], Tokens | None, int]


def first_record_ms(path: str) -> int | None:
    """Time of the earliest record in the first MiB of a Moab log (None: none there). Its lines
    end at LF, CRLF or a bare CR, as the replay reads them (a CR that ends the MiB ends a line
    whichever it is)."""
    with reading(path), open_binary(path) as f:
        head = bare_cr_to_lf(f.read(PEEK_BYTES))
    if len(head) == PEEK_BYTES and b"\n" in head:
        head = head[: head.rindex(b"\n") + 1]
    b = parse_moab_chunk(head, Codebook(), source=path).batch
    return int(b.ts_ms.min()) if len(b) else None


def in_time_order(paths: list[str]) -> list[str]:
    """Files ordered by their first record's time (files without one last, in given order)."""
    firsts = [first_record_ms(p) for p in paths]
    order = sorted(range(len(paths)), key=lambda i: (firsts[i] is None, firsts[i] or 0, i))
    return [paths[i] for i in order]


class MoabFiles:
    def __init__(
        self,
        paths: list[str],
        book: Codebook,
        chunk_bytes: int = 32 << 20,
        progress: bool = True,
        allow_overlap: bool = False,
        bounds: TimeBounds | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        early: Prefetch | None = None,
    ) -> None:
        self.bounds = bounds or TimeBounds()
        self.early = early  # the first file's chunks, cut since the run started (prefetch.py)
        self.max_line_bytes = max_line_bytes
        self.paths = in_time_order(paths)
        self.allow_overlap = allow_overlap
        self.book = book
        self.chunk_bytes = chunk_bytes
        self.inputs = [InputStats(p, bytes=os.path.getsize(p)) for p in self.paths]
        self.lines = 0
        self.ignored = 0
        self.progress = Progress(sum(i.bytes for i in self.inputs), enabled=progress)

    def batches(self, rejects: RejectLog) -> Iterator[NodeStatusBatch]:
        done_before = 0
        previous: InputStats | None = None
        early, self.early = self.early, None
        for path, stats in zip(self.paths, self.inputs, strict=True):
            with reading(path), ExitStack() as stack:
                cut: Iterator[_Cut]
                if early is not None and early.path == path:  # cut since the run started
                    stack.callback(early.close)
                    cut, raw, early = early.chunks, True, None
                else:
                    f = stack.enter_context(open_binary(path))
                    cut = stack.enter_context(closing(read_ahead(self._cut(f))))
                    raw = False
                lineno = 1
                stats.lines = 0
                for chunk, longs, tokens, position in cut:
                    if raw:
                        tokens = tokens_from_raw(chunk, tokens)
                    parsed = parse_plausible(
                        chunk, self.book, self.bounds, path, lineno, longs, tokens
                    )
                    lineno += parsed.lines
                    stats.lines += parsed.lines
                    stats.ignored += parsed.ignored
                    self.lines += parsed.lines
                    self.ignored += parsed.ignored
                    rejects.extend(parsed.rejects)
                    stats.rejected += len(parsed.rejects)
                    stats.rejected_lines += len({r.lineno for r in parsed.rejects})
                    b = parsed.batch
                    stats.records += len(b)
                    if len(b):
                        stats.seen(int(b.ts_ms.min()), int(b.ts_ms.max()))
                        self._check_overlap(previous, stats)
                        yield b
                    self.progress.update(done_before + position, self.lines)
            done_before += stats.bytes
            if stats.last_ms is not None:
                previous = stats
        self.progress.update(done_before, self.lines, force=True)
        self.progress.close()

    def _cut(self, f: BinaryIO) -> Callable[[], Iterator[_Cut]]:
        """Chunks of whole lines, each with its tokens and the file position after it: made on
        the read-ahead thread (reading and the compiled tokenizer release the GIL), so the next
        chunk is read and cut while this one is interned and accounted."""

        def cut() -> Iterator[_Cut]:
            first = FIRST_CHUNK_BYTES
            for chunk, longs in line_chunks(f, self.chunk_bytes, self.max_line_bytes, first, True):
                yield chunk, longs, tokenize(chunk), raw_position(f)

        return cut

    def _check_overlap(self, previous: InputStats | None, current: InputStats) -> None:
        if self.allow_overlap or previous is None or previous.last_ms is None:
            return
        if current.first_ms is not None and current.first_ms < previous.last_ms:
            raise UserError(
                f"{current.path} starts at {instant_ms(current.first_ms)}, before "
                f"{previous.path} ends ({instant_ms(previous.last_ms)}): the files overlap in "
                "time; give files of one scheduler without overlap, or --allow-overlap to count "
                "the overlapping records as out of order"
            )


def _too_long(parsed: ParsedChunk, longs: list[LongLine], path: str, lineno: int) -> None:
    """Lines longer than the cap were read as empty lines (so the others keep their numbers):
    their ``blank_line`` rejects are not the input's; each is rejected as ``line_too_long``."""
    too_long = [ln.reject(path, lineno) for ln in longs]
    blanked = {r.lineno for r in too_long}
    kept = [r for r in parsed.rejects if not (r.reason == "blank_line" and r.lineno in blanked)]
    parsed.rejects = sorted([*kept, *too_long], key=lambda r: r.lineno)


def parse_plausible(
    chunk: bytes | memoryview,
    book: Codebook,
    bounds: TimeBounds,
    path: str,
    lineno: int,
    longs: list[LongLine] | None = None,
    tokens: Tokens | None = None,
) -> ParsedChunk:
    """Parse a Moab chunk, as the replay and the shipper both do. ``longs``: the lines of the
    chunk over the length cap (``line_chunks`` read them as empty lines), rejected as
    ``line_too_long``. Lines whose time is
    implausible (``implausible_time``, ``time_jump`` within the chunk) are rejected and the
    chunk parsed again without them, the codebook taken back to where it was, so they leave no
    node, job or window behind. ``tokens``: the chunk's, when cut already."""
    mark = book.mark()
    parsed = parse_moab_chunk(chunk, book, source=path, first_lineno=lineno, tokens=tokens)
    ts = parsed.batch.ts_ms
    # min and max first; the exact check only when they fail: a chunk spanning more than
    # max_jump (large chunks do) with no stray record must not take the line-by-line path
    if bounds.all_plausible(ts) or not any(bounds.reasons(ts)):
        if longs:
            _too_long(parsed, longs, path, lineno)
        return parsed
    book.rollback(mark)
    lines = bytes(chunk).split(b"\n")
    found: list[tuple[int, str, int]] = []  # (line index, text, time)
    for i, raw in enumerate(lines):
        text = raw.decode("utf-8", "replace")
        r = classify_line(text)
        if isinstance(r, NodeStatus):
            found.append((i, text, r.ts_ms))
    why = bounds.reasons(np.array([t for _, _, t in found], dtype=np.int64))
    bad: list[Reject] = []
    for (i, text, _), reason in zip(found, why, strict=True):
        if reason is not None:
            bad.append(Reject(reason, path, lineno + i, text))
            lines[i] = b""  # keeps the line numbers of the others
    again = parse_moab_chunk(b"\n".join(lines), book, source=path, first_lineno=lineno)
    blanked = {r.lineno for r in bad}  # their blank_line rejects are not the input's
    kept = [r for r in again.rejects if r.lineno not in blanked]
    again.rejects = sorted([*kept, *bad], key=lambda r: r.lineno)
    if longs:
        _too_long(again, longs, path, lineno)
    return again
