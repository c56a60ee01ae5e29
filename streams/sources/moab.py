"""Moab log files -> NodeStatusBatch, one batch per whole-line chunk (memory flat in the size).

Bad node-status lines go to the run's reject log with their reason; lines that are other Moab
messages are counted as ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from models.formats.moab import parse_moab_chunk
from models.records.nodestatus import Codebook, NodeStatusBatch
from streams.driver import InputStats, RejectLog
from streams.sources.files import Progress, line_chunks, open_binary, raw_position


class MoabFiles:
    def __init__(
        self, paths: list[str], book: Codebook, chunk_bytes: int = 32 << 20, progress: bool = True
    ) -> None:
        self.paths = paths
        self.book = book
        self.chunk_bytes = chunk_bytes
        self.inputs = [InputStats(p, bytes=os.path.getsize(p)) for p in paths]
        self.lines = 0
        self.ignored = 0
        self.progress = Progress(sum(i.bytes for i in self.inputs), enabled=progress)

    def batches(self, rejects: RejectLog) -> Iterator[NodeStatusBatch]:
        done_before = 0
        for path, stats in zip(self.paths, self.inputs, strict=True):
            with open_binary(path) as f:
                lineno = 1
                stats.lines = 0
                for chunk in line_chunks(f, self.chunk_bytes):
                    parsed = parse_moab_chunk(chunk, self.book, source=path, first_lineno=lineno)
                    lineno += parsed.lines
                    stats.lines += parsed.lines
                    stats.ignored += parsed.ignored
                    self.lines += parsed.lines
                    self.ignored += parsed.ignored
                    rejects.extend(parsed.rejects)
                    stats.rejected += len(parsed.rejects)
                    b = parsed.batch
                    stats.records += len(b)
                    if len(b):
                        stats.seen(int(b.ts_ms.min()), int(b.ts_ms.max()))
                        yield b
                    self.progress.update(done_before + raw_position(f), self.lines)
            done_before += stats.bytes
        self.progress.update(done_before, self.lines, force=True)
        self.progress.close()
