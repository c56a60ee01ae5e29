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
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams import logs
from streams.codecs.deadletter import dead_letter_message
from streams.contracts import RejectLog
from streams.sources.jobevents import read_job_events

IN_FLIGHT = 10_000  # messages sent before awaiting their acknowledgements
BATCH_EVENTS = 500  # events per message: one partition's, in time order (JSON lines)


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
) -> JobShipStats:
    """Publish every event of ``paths`` (format ``fmt``) and dead-letter what was rejected."""
    rejects = RejectCollector()
    events, _ = read_job_events(fmt, list(paths), rejects, bounds, max_line_bytes, max_hosts)
    st = JobShipStats(files=len(paths))
    futs = await dead_letter_rejects(producer, dead_topic, rejects.items)
    st.dead_letters = len(futs)
    await send_events(producer, topic, events, partitions, st, futs, progress)
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
) -> None:
    """Publish ``events`` (in time order) in per-partition batches of JSON lines and wait until
    the broker acknowledged them (and the sends already in ``futs``)."""
    futs = [] if futs is None else futs
    batches: dict[int, list[bytes]] = {}

    async def send(p: int) -> None:
        lines = batches.pop(p)
        value = b"\n".join(lines)
        futs.append(await producer.send(topic, value, key=f"p{p}".encode(), partition=p))
        st.messages += 1

    for e in events:
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
