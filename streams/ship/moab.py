"""The Moab shipper: read a log (whole files, or ``--follow`` a live one across rotation and
truncation) and publish node-status slices to Kafka, checkpointing what the broker has
acknowledged; its publisher also sends the Slurm shipper's snapshots (:mod:`streams.ship.slurm`).

Partitioning: a node's partition follows blocks of nodes numbered alike
(:func:`streams.codecs.nodestatus.partition_of`); one message holds one partition's records from
one read of the log, at most :data:`streams.codecs.nodestatus.MAX_ROWS` records. Bad lines become
dead letters (source, line, reason, text) and are counted; they never stop the shipper.

Markers (``streams.codecs.control``, issue 30): a round of ``watermark`` markers on every
partition every ``marker_interval`` wall seconds (ts: the latest record time sent; every round
after the records it covers were acknowledged), and, whole files, an ``end`` round after each
file. A message over ``max_bytes`` is cut in halves until each part fits.

Checkpoint (``--follow``, :class:`streams.ship.base.Checkpoint`): ``{"path", "dev", "ino",
"offset", "line"}`` written atomically (temporary file, fsync, rename) only after every message
of the lines before ``offset`` was acknowledged. Restarted after ``kill -9`` it resumes there:
lines after the checkpoint may be sent twice, which the worker's accounting ignores (a record
not later than its node's latest).
"""

from __future__ import annotations

import asyncio
import errno
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import orjson

from models.records.nodestatus import Codebook, NodeStatusBatch
from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams import logs
from streams.codecs.base import MESSAGE_MAX_BYTES
from streams.codecs.deadletter import dead_letter_message
from streams.codecs.nodestatus import MAX_ROWS, encode, partition_of
from streams.errors import FileRefused, open_regular
from streams.ship.base import Checkpoint, ShipStats
from streams.ship.markers import Markers, shipper_id
from streams.sources.files import (
    KEEP_BYTES,
    LINE_TOO_LONG,
    MAX_LINE_BYTES,
    LongLine,
    bare_cr_to_lf,
    line_chunks,
    open_binary,
    reading,
)
from streams.sources.moab import parse_plausible

READ_BYTES = 4 << 20
RESET_JOBS = 200_000  # the codebook starts afresh past this many ids (names travel in messages)


class MoabShipper:
    """Node-status slices to Kafka, and this shipper's markers (``source``: its id, default
    ``moab:<host>:<pid>``; ``marker_interval``: wall seconds between rounds). As a
    :class:`~streams.ship.base.Shipper`: ``paths`` shipped whole, in the order given, or, with
    ``checkpoint``, the one live log ``paths[0]`` followed (:func:`follow`, every ``poll_s``
    seconds)."""

    def __init__(
        self,
        producer: Any,
        topic: str,
        dead_topic: str,
        partitions: int,
        bounds: TimeBounds | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_bytes: int = MESSAGE_MAX_BYTES,
        source: str | None = None,
        marker_interval: float = 10.0,
        paths: Sequence[str] = (),
        checkpoint: str | None = None,
        poll_s: float = 0.5,
        progress: bool = True,
    ) -> None:
        self.producer = producer
        self.paths, self.checkpoint, self.poll_s = list(paths), checkpoint, poll_s
        self.progress = progress
        self.max_bytes = max_bytes
        self.markers = Markers(
            producer, topic, partitions, source or shipper_id("moab"), marker_interval
        )
        self.topic = topic
        self.dead_topic = dead_topic
        self.partitions = partitions
        self.bounds = bounds or TimeBounds()
        self.max_line_bytes = max_line_bytes
        self.max_rows = MAX_ROWS  # records per message (1 in the benchmark's unbatched run)
        self.book = Codebook()
        self.part_of = np.empty(0, dtype=np.int64)
        self.stats = ShipStats()

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Follow the live log until ``stop`` (with ``checkpoint``), else ship the whole files
        to their end (``stop`` does not cut them short)."""
        if self.checkpoint is not None:
            os.makedirs(os.path.dirname(self.checkpoint) or ".", exist_ok=True)
            await follow(self, self.paths[0], self.checkpoint, poll_s=self.poll_s, stop=stop)
        else:
            await ship_files(self, self.paths, self.progress)

    async def last_markers(self) -> None:
        """A watermark round when a followed log stops (whole files ended with ``end``)."""
        if self.checkpoint is not None:
            await self.mark(force=True)

    def summary(self) -> str:
        s = self.stats
        return (
            f"{s.lines:,} lines, {s.records:,} records in {s.messages:,} messages, "
            f"{s.dead_letters:,} dead letters, {s.ignored:,} other lines"
        )

    def _owners(self, b: NodeStatusBatch) -> np.ndarray:
        n = len(self.book.nodes)
        if self.part_of.size < n:
            new = partition_of(self.book.nodes.names[self.part_of.size : n], self.partitions)
            self.part_of = np.concatenate([self.part_of, new])
        owners: np.ndarray = self.part_of[b.node]
        return owners

    async def ship(
        self, chunk: bytes, source: str, first_line: int, longs: list[LongLine] | None = None
    ) -> int:
        """Parse whole lines, send them, wait for the broker's acks; returns lines shipped.
        ``longs``: lines over the length cap, read as empty lines (``line_chunks``)."""
        self.reset_if_large()
        parsed = parse_plausible(chunk, self.book, self.bounds, source, first_line, longs)
        self.stats.lines += parsed.lines
        self.stats.ignored += parsed.ignored
        futures = await self.send_batch(parsed.batch, f"moab:{source}", parsed.row_lines)
        for r in parsed.rejects:
            futures.append(await self.dead_letter(r))
        if futures:
            await asyncio.gather(*futures)
        await self.mark()
        return parsed.lines

    async def mark(self, force: bool = False) -> None:
        """A round of watermark markers when one is due by the wall clock (``force``: now),
        at the latest record time sent; every record was acknowledged before (callers
        gather their sends first)."""
        if force or self.markers.due():
            await asyncio.gather(*await self.markers.round())

    def reset_if_large(self) -> None:
        """Start the codebook afresh past RESET_JOBS ids (names travel in every message)."""
        if len(self.book.jobs) > RESET_JOBS:
            self.book = Codebook()
            self.part_of = np.empty(0, dtype=np.int64)

    async def send_batch(
        self,
        b: NodeStatusBatch,
        source: str,
        lines: Callable[[], np.ndarray] | None = None,
    ) -> list[Any]:
        """Send ``b`` (codes of ``self.book``) as one message per partition and MAX_ROWS rows;
        the send futures, not awaited. ``source`` names the input in every message; ``lines``
        gives the source line of each row (a file's: ``ParsedChunk.row_lines``), which a
        dead-lettered row names."""
        futures: list[Any] = []
        if len(b):
            owners = self._owners(b)
            for p in range(self.partitions):
                rows = np.flatnonzero(owners == p)
                for lo in range(0, rows.size, self.max_rows):
                    await self._send_rows(
                        b, rows[lo : lo + self.max_rows], p, source, futures, lines
                    )
            self.stats.records += len(b)
            self.markers.seen(int(b.ts_ms.max()) / 1000)
        return futures

    async def _send_rows(
        self,
        b: NodeStatusBatch,
        rows: np.ndarray,
        p: int,
        source: str,
        futures: list[Any],
        lines: Callable[[], np.ndarray] | None = None,
    ) -> None:
        """Rows ``rows`` of ``b`` as one message on partition ``p``, or, over ``max_bytes``
        (long names), as halves in order, cut again until each fits; a single record that
        does not fit is dead-lettered (``too_large``, naming its line when ``lines`` is given;
        a record of no file, a Slurm snapshot's, has none: 0)."""
        value = encode(b.take(rows), self.book, source)
        if len(value) > self.max_bytes:
            if rows.size > 1:
                self.stats.split += 1
                half = rows.size // 2
                await self._send_rows(b, rows[:half], p, source, futures, lines)
                await self._send_rows(b, rows[half:], p, source, futures, lines)
                return
            text = value[:4096].decode("utf-8", "replace")
            line = int(lines()[rows[0]]) if lines is not None else 0
            futures.append(await self.dead_letter(Reject("too_large", source, line, text)))
            return
        key = f"p{p}".encode()
        futures.append(await self.producer.send(self.topic, value, key=key, partition=p))
        self.stats.messages += 1

    async def dead_letter(self, r: Reject) -> Any:
        self.stats.dead_letters += 1
        value = orjson.dumps(dead_letter_message(r))
        return await self.producer.send(self.dead_topic, value, key=r.source.encode())

    async def end_of_input(self, source: str = "") -> None:
        """Tell every partition this shipper's finite input ended (``source``: the file, for
        the caller's logs): an ``end`` marker round, after every record (all acknowledged).
        The worker then accounts what it holds for reordering and closes the windows up to
        the last record, once every live shipper on the partition has ended."""
        await asyncio.gather(*await self.markers.round(end=True))


def _whole_lines(data: bytes, final: bool) -> bytes:
    """``data`` up to its last line end (all of it when ``final``), bare CRs made LF byte for
    byte (:func:`~streams.sources.files.bare_cr_to_lf`: a line ends at LF, CRLF or a bare CR,
    as the replay reads it). A CR that ends ``data`` waits for the byte after it (unless
    ``final``): it may be the CR of a CRLF."""
    if not final and not data.endswith(b"\n"):
        cut = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1))
        data = data[: cut + 1]
    return bare_cr_to_lf(data)


async def ship_files(shipper: MoabShipper, paths: list[str], progress: bool = True) -> None:
    """Ship whole files (any compression), in the order given (the CLI orders them)."""
    for path in paths:
        line = 1
        with reading(path), open_binary(path) as f:
            for chunk, longs in line_chunks(f, READ_BYTES, shipper.max_line_bytes):
                line += await shipper.ship(chunk, path, line, longs)
                if progress:
                    s = shipper.stats
                    logs.progress(
                        f"ship moab: {path}: {s.lines:,} lines, {s.records:,} records, "
                        f"{s.dead_letters:,} dead letters"
                    )
        if progress:
            logs.progress_end()
        await shipper.end_of_input(path)


def _find_rotated(cp: Checkpoint) -> str | None:
    """The file the checkpoint points to, after a rotation renamed it in the same directory."""
    d = os.path.dirname(os.path.abspath(cp.path)) or "."
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        try:
            st = os.stat(p)
        except OSError:
            continue
        if st.st_ino == cp.ino and st.st_dev == cp.dev:
            return p
    return None


async def follow(
    shipper: MoabShipper,
    path: str,
    checkpoint: str,
    poll_s: float = 0.5,
    status_every_s: float = 60.0,
    stop: asyncio.Event | None = None,
    rotate_grace_s: float | None = None,
) -> None:
    """Tail ``path`` across rotation and truncation until ``stop`` is set. After a rotation
    (the path names a new file) the old file is read until it has been quiet for
    ``rotate_grace_s`` (default 5 polls), then the new one from its start."""
    rotate_grace_s = 5 * poll_s if rotate_grace_s is None else rotate_grace_s
    stop = stop or asyncio.Event()
    cp = Checkpoint.load(checkpoint)
    cur_path, offset, line = path, 0, 1
    if cp is not None:
        st = _stat(path)
        if st is not None and (st.st_dev, st.st_ino) == (cp.dev, cp.ino):
            offset, line = cp.offset, cp.line
        else:  # rotated since: finish the old file first, if it is still there
            old = _find_rotated(cp)
            if old is not None:
                cur_path, offset, line = old, cp.offset, cp.line
    last_status = time.monotonic()
    while not stop.is_set():
        try:
            f = open_regular(cur_path)  # closed below, reopened on rotation
        except FileRefused as e:
            if e.errno != errno.ENOENT:  # a FIFO or a device in the log's place
                raise
            await shipper.mark()
            await _sleep(stop, poll_s)
            continue
        try:
            fst = os.fstat(f.fileno())
            if fst.st_size < offset:  # truncated in place
                offset, line = 0, 1
            f.seek(offset)
            rotated_at: float | None = None  # when the path was seen to name another file
            while not stop.is_set():
                data = f.read(READ_BYTES)
                final = False
                if data:
                    rotated_at = None  # quiet is measured from the last data
                else:
                    now = _stat(path)
                    moved = now is None or (now.st_dev, now.st_ino) != (fst.st_dev, fst.st_ino)
                    if moved:
                        # the writer may still append to the renamed file for a moment: keep
                        # reading it until it has been quiet for the grace period
                        rotated_at = rotated_at or time.monotonic()
                        final = time.monotonic() - rotated_at >= rotate_grace_s
                    elif os.fstat(f.fileno()).st_size < offset:
                        break  # truncated in place: reopen from the start
                    if not final:
                        await shipper.mark()  # a round every marker_interval while quiet
                        if time.monotonic() - last_status >= status_every_s:
                            st_ = shipper.stats
                            logs.get("ship.moab").info(
                                f"following {path}: {st_.lines:,} lines, {st_.records:,} "
                                f"records, {st_.dead_letters:,} dead letters"
                            )
                            last_status = time.monotonic()
                        await _sleep(stop, poll_s)
                        continue
                    data = f.read()  # the rest of the rotated file, last line included
                whole = _whole_lines(data, final=final)
                if not whole and len(data) > shipper.max_line_bytes:
                    skipped = await _skip_long_line(shipper, f, offset, path, line)
                    if skipped:
                        offset, line = offset + skipped, line + 1
                        Checkpoint(path, fst.st_dev, fst.st_ino, offset, line).save(checkpoint)
                    else:
                        await _sleep(stop, poll_s)  # its end is not written yet
                    f.seek(offset)
                    continue
                if whole:
                    line += await shipper.ship(whole, path, line)
                    offset += len(whole)
                    Checkpoint(path, fst.st_dev, fst.st_ino, offset, line).save(checkpoint)
                f.seek(offset)
                if final:
                    cur_path, offset, line = path, 0, 1
                    break
        finally:
            f.close()


async def _skip_long_line(shipper: MoabShipper, f: Any, offset: int, source: str, line: int) -> int:
    """Bytes of the overlong line at ``offset`` up to its newline (0: not ended yet), read in
    bounded pieces; the line is dead-lettered as ``line_too_long`` with its head."""
    f.seek(offset)
    head = f.read(KEEP_BYTES)
    n: int = len(head)
    while True:
        piece = f.read(1 << 20)
        if not piece:
            return 0
        nl = piece.find(b"\n")
        if nl >= 0:
            n += nl + 1
            break
        n += len(piece)
    r = Reject(LINE_TOO_LONG, source, line, head.split(b"\n")[0].decode("utf-8", "replace"))
    await asyncio.gather(await shipper.dead_letter(r))
    shipper.stats.lines += 1
    return n


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


async def _sleep(stop: asyncio.Event, s: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), timeout=s)
    except TimeoutError:
        pass
