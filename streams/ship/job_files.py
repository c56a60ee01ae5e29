"""The job-events shipper for files: job event files (any format the replay reads) ->
``<prefix>job-events``; and the job-events batches every job shipper sends.

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
import time
import zlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds
from streams import logs
from streams.ship.base import IN_FLIGHT, RejectCollector, ShipStats, dead_letter_rejects
from streams.ship.markers import Markers, just_before, shipper_id
from streams.sources.jobevents import read_job_events

BATCH_EVENTS = 500  # events per message: one partition's, in time order (JSON lines)


def job_partition(job: str, partitions: int) -> int:
    """The job-events partition of a job: every event of a job on one partition, in order."""
    return zlib.crc32(job.encode()) % partitions


class JobFilesShipper:
    """``ship jobs --format F FILE...``: every event of ``paths`` published and what was
    rejected dead-lettered; with ``marker_interval``, watermark markers as the events go (every
    that many seconds of event time or of the wall clock) and an end-of-input marker on every
    partition last. With ``speed``, the events go out paced (:func:`send_paced`), not as fast
    as possible. The files are read to their end (``stop`` does not cut them short)."""

    def __init__(
        self,
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
    ) -> None:
        self.producer, self.topic, self.dead_topic = producer, topic, dead_topic
        self.fmt, self.paths, self.bounds = fmt, list(paths), bounds
        self.max_line_bytes, self.max_hosts = max_line_bytes, max_hosts
        self.progress, self.partitions = progress, partitions
        self.marker_interval, self.speed = marker_interval, speed
        self.stats = ShipStats(files=len(self.paths))

    async def run(self, stop: asyncio.Event | None = None) -> None:
        producer, topic, partitions, st = self.producer, self.topic, self.partitions, self.stats
        rejects = RejectCollector()
        events, _ = read_job_events(
            self.fmt, self.paths, rejects, self.bounds, self.max_line_bytes, self.max_hosts
        )
        futs = await dead_letter_rejects(producer, self.dead_topic, rejects.items)
        st.dead_letters = len(futs)
        markers = None
        if self.marker_interval is not None:
            markers = Markers(producer, topic, partitions, shipper_id("jobs"), self.marker_interval)
        if self.speed is not None:
            await send_paced(producer, topic, events, partitions, st, self.speed, futs, markers)
        else:
            await send_events(producer, topic, events, partitions, st, futs, self.progress, markers)
        if markers is not None:
            await asyncio.gather(*await markers.round(end=True))
            st.markers = markers.sent
        if self.progress:
            logs.progress_end()

    async def last_markers(self) -> None:
        """None: the input ended with its ``end`` round."""

    def summary(self) -> str:
        s = self.stats
        return (
            f"{s.events:,} events in {s.messages:,} messages from {s.files} file(s), "
            f"{s.dead_letters:,} dead letters, {s.markers:,} markers"
        )


async def ship_job_files(*args: Any, **kwargs: Any) -> ShipStats:
    """A :class:`JobFilesShipper` (the same arguments) run to its end; its stats."""
    shipper = JobFilesShipper(*args, **kwargs)
    await shipper.run()
    return shipper.stats


async def send_events(
    producer: Any,
    topic: str,
    events: Sequence[JobEvent],
    partitions: int,
    st: ShipStats,
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
    st: ShipStats,
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
