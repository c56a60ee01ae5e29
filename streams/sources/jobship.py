"""The job-events shipper: job event files (any format the replay reads) -> ``<prefix>job-events``.

JobEvents (``models.records.jobevent``, the ``job-events`` schema) as JSON lines, up to
``BATCH_EVENTS`` of one partition per message (a job's events all on the partition of
crc32(job id), so its submit, start and end stay in order; the per-message cost of the worker
is paid once per batch); events go out in time order, read and checked exactly as
``drainwatch replay --format F`` reads them (the same plausibility bounds, line and host-list
caps). Rejected lines and events go to
``<prefix>dead-letter`` with source, line, reason and text, and are counted; they never stop
the shipper. A run ends only when the broker has acknowledged every message.
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import time
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams import logs
from streams.codecs.control import END, WATERMARK, encode_marker
from streams.codecs.deadletter import dead_letter_message
from streams.contracts import RejectLog
from streams.sources.jobevents import read_job_events

IN_FLIGHT = 10_000  # messages sent before awaiting their acknowledgements
BATCH_EVENTS = 500  # events per message: one partition's, in time order (JSON lines)
ROUND_EVENTS = 20_000  # events between two marker rounds due by event time (a finite input)


def shipper_id(kind: str, stable: str | None = None) -> str:
    """A shipper's id in its markers: ``<kind>:<host>:<stable>``, ``stable`` being what names
    it across restarts (its checkpoint file), else its process id."""
    return f"{kind}:{socket.gethostname()}:{stable if stable is not None else os.getpid()}"


def just_before(ts: float) -> float:
    """The latest time before ``ts``: how far a finite input in time order has got when its
    next event is at ``ts`` (every event to come is later: none is late at any lateness)."""
    return math.nextafter(ts, -math.inf)


class Markers:
    """A shipper's watermark markers (streams.codecs.control) on every partition of its topic.

    The rule: a marker on a partition is sent after every event of this shipper on that
    partition it covers (one producer, one partition: Kafka keeps the order), so a shipper
    sends what it holds for every partition before a round of markers. ``ts`` is the latest
    event time sent (:meth:`seen`) unless the caller knows more (``round(ts=...)``). A round
    is due every ``interval`` seconds of the wall clock (``clock``) and, for a finite input
    read at full speed, every ``interval`` seconds of event time once ``ROUND_EVENTS``
    events went out since the last round (:meth:`due_at`): a round flushes every partition's
    batch, so rounds by event time alone would cut a year of history into messages of a few
    events each."""

    def __init__(
        self,
        producer: Any,
        topic: str,
        partitions: int,
        source: str,
        interval: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.producer, self.topic, self.partitions = producer, topic, partitions
        self.source, self.interval, self.clock = source, interval, clock
        self.latest: float | None = None  # the latest event time sent
        self.last_round = clock()  # wall clock of the last round
        self.last_ts: float | None = None  # its event time
        self.sent = 0  # markers sent
        self.since = 0  # events seen since the last round

    def seen(self, ts: float) -> None:
        self.since += 1
        if self.latest is None or ts > self.latest:
            self.latest = ts

    def due(self) -> bool:
        """A round is due by the wall clock."""
        return self.clock() - self.last_round >= self.interval

    def due_at(self, next_ts: float) -> bool:
        """Before an event at ``next_ts`` of a finite input (events in time order): a round is
        due by event time (``next_ts`` an interval past the last round's) or by the wall
        clock. Its time is then :func:`just_before` ``next_ts``: every event still to come is
        later."""
        latest = self.latest
        if latest is None or next_ts <= latest:
            return False
        last = self.last_ts
        by_events = self.since >= ROUND_EVENTS and (last is None or next_ts - last >= self.interval)
        return by_events or self.due()

    async def round(self, end: bool = False, ts: float | None = None) -> list[Any]:
        """One marker on every partition (``end``: the input ended); the send futures. The
        caller has sent every event the round covers."""
        t = self.latest if ts is None else ts
        value = encode_marker(self.source, END if end else WATERMARK, t, self.clock())
        futs = [
            await self.producer.send(self.topic, value, key=b"marker", partition=p)
            for p in range(self.partitions)
        ]
        self.last_round, self.last_ts, self.since = self.clock(), t, 0
        self.sent += len(futs)
        return futs


def job_partition(job: str, partitions: int) -> int:
    """The job-events partition of a job: every event of a job on one partition, in order."""
    return zlib.crc32(job.encode()) % partitions


class RejectCollector(RejectLog):
    """A RejectLog that also keeps the rejects, to dead-letter them."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[Reject] = []

    def add(self, r: Reject) -> None:
        super().add(r)
        self.items.append(r)


async def dead_letter_rejects(producer: Any, dead_topic: str, rejects: list[Reject]) -> list[Any]:
    """Send each reject to the dead-letter topic (keyed by its source); the send futures."""
    return [
        await producer.send(dead_topic, orjson.dumps(dead_letter_message(r)), key=r.source.encode())
        for r in rejects
    ]


@dataclass(slots=True)
class JobShipStats:
    events: int = 0
    messages: int = 0
    dead_letters: int = 0
    files: int = 0
    markers: int = 0


async def ship_job_files(
    producer: Any,
    topic: str,
    dead_topic: str,
    fmt: str,
    paths: Sequence[str],
    bounds: TimeBounds,
    max_line_bytes: int,
    max_hosts: int,
    progress: bool = True,
    partitions: int = 1,
    marker_interval: float | None = None,
    speed: float | None = None,
) -> JobShipStats:
    """Publish every event of ``paths`` (format ``fmt``) and dead-letter what was rejected;
    with ``marker_interval``, watermark markers as the events go (every that many seconds of
    event time or of the wall clock) and an end-of-input marker on every partition last. With
    ``speed``, the events go out paced (:func:`send_paced`), not as fast as possible."""
    rejects = RejectCollector()
    events, _ = read_job_events(fmt, list(paths), rejects, bounds, max_line_bytes, max_hosts)
    st = JobShipStats(files=len(paths))
    futs = await dead_letter_rejects(producer, dead_topic, rejects.items)
    st.dead_letters = len(futs)
    markers = None
    if marker_interval is not None:
        markers = Markers(producer, topic, partitions, shipper_id("jobs"), marker_interval)
    if speed is not None:
        await send_paced(producer, topic, events, partitions, st, speed, futs, markers)
    else:
        await send_events(producer, topic, events, partitions, st, futs, progress, markers)
    if markers is not None:
        await asyncio.gather(*await markers.round(end=True))
        st.markers = markers.sent
    if progress:
        logs.progress_end()
    return st


async def send_events(
    producer: Any,
    topic: str,
    events: Sequence[JobEvent],
    partitions: int,
    st: JobShipStats,
    futs: list[Any] | None = None,
    progress: bool = False,
    markers: Markers | None = None,
) -> None:
    """Publish ``events`` (in time order) in per-partition batches of JSON lines and wait until
    the broker acknowledged them (and the sends already in ``futs``). With ``markers``: a
    round of them whenever one is due (every partition's batch sent first); the round after
    the last event is the caller's (a watermark, or the end of input)."""
    futs = [] if futs is None else futs
    batches: dict[int, list[bytes]] = {}

    async def send(p: int) -> None:
        lines = batches.pop(p)
        value = b"\n".join(lines)
        futs.append(await producer.send(topic, value, key=f"p{p}".encode(), partition=p))
        st.messages += 1

    for e in events:
        if markers is not None:
            if markers.due_at(e.ts):  # what the round covers goes first
                for q in sorted(batches):
                    await send(q)
                futs += await markers.round(ts=just_before(e.ts))
            markers.seen(e.ts)
        p = job_partition(e.job, partitions)
        batch = batches.setdefault(p, [])
        batch.append(e.to_json())
        st.events += 1
        if len(batch) >= BATCH_EVENTS:
            await send(p)
        if len(futs) >= IN_FLIGHT:
            await asyncio.gather(*futs)
            futs.clear()
            if progress:
                logs.progress(f"ship jobs: {st.events:,} of {len(events):,} events")
    for p in sorted(batches):
        await send(p)
    await asyncio.gather(*futs)


async def send_paced(
    producer: Any,
    topic: str,
    events: Sequence[JobEvent],
    partitions: int,
    st: JobShipStats,
    speed: float,
    futs: list[Any] | None = None,
    markers: Markers | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> None:
    """Publish ``events`` (in time order) at ``speed`` times real time, as a live source would:
    the replay clock starts at the first event's time and runs ``speed`` event seconds per
    second of ``clock``; every event at or before it goes out at once (per-partition batches
    of at most BATCH_EVENTS). With ``markers``: a round every ``markers.interval`` seconds of
    the wall clock, its ``ts`` the replay clock (every event up to it was sent; before an
    event still due, just before it), so a round covers ``speed × interval`` event seconds.
    Waits until the broker acknowledged every message; the last round is the caller's."""
    if speed <= 0:
        raise ValueError("speed must be > 0")
    futs = [] if futs is None else futs
    if not events:
        await asyncio.gather(*futs)
        return
    first, t0, i, n = events[0].ts, clock(), 0, len(events)
    due = first  # the time of the event last slept for: due, however the clock rounds
    while True:
        upto = max(first + (clock() - t0) * speed, due)  # the replay clock
        batches: dict[int, list[bytes]] = {}
        while i < n and events[i].ts <= upto:
            e = events[i]
            batches.setdefault(job_partition(e.job, partitions), []).append(e.to_json())
            if markers is not None:
                markers.seen(e.ts)
            i += 1
        for p, lines in sorted(batches.items()):
            for k in range(0, len(lines), BATCH_EVENTS):
                value = b"\n".join(lines[k : k + BATCH_EVENTS])
                futs.append(await producer.send(topic, value, key=f"p{p}".encode(), partition=p))
                st.messages += 1
            st.events += len(lines)
        if i == n:
            break
        if markers is not None and markers.due():  # after what it covers
            futs += await markers.round(ts=min(upto, just_before(events[i].ts)))
        if len(futs) >= IN_FLIGHT:
            await asyncio.gather(*futs)
            futs.clear()
        wait = (events[i].ts - first) / speed - (clock() - t0)  # to the next event
        mark = math.inf
        if markers is not None:  # to the next round
            mark = markers.interval - (markers.clock() - markers.last_round)
        if wait <= mark:
            due = events[i].ts
        await sleep(max(0.0, min(wait, mark)))
    await asyncio.gather(*futs)
