"""The job-events shipper: job event files (any format the replay reads) -> ``<prefix>job-events``.

One JobEvent per message (``models.records.jobevent``, the ``job-events`` schema), keyed by job
id so a job's submit, start and end stay in order on one partition; events go out in time
order, read and checked exactly as ``drainwatch replay --format F`` reads them (the same
plausibility bounds, line and host-list caps). Rejected lines and events go to
``<prefix>dead-letter`` with source, line, reason and text, and are counted; they never stop
the shipper. A run ends only when the broker has acknowledged every message.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams.driver import RejectLog
from streams.sources.jobevents import read_job_events
from streams.topics import dead_letter_message

IN_FLIGHT = 10_000  # messages sent before awaiting their acknowledgements


class _Collect(RejectLog):
    """A RejectLog that also keeps the rejects, to dead-letter them."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[Reject] = []

    def add(self, r: Reject) -> None:
        super().add(r)
        self.items.append(r)


@dataclass(slots=True)
class JobShipStats:
    events: int = 0
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
) -> JobShipStats:
    """Publish every event of ``paths`` (format ``fmt``) and dead-letter what was rejected."""
    rejects = _Collect()
    events, _ = read_job_events(fmt, list(paths), rejects, bounds, max_line_bytes, max_hosts)
    st = JobShipStats(files=len(paths))
    futs = []
    for r in rejects.items:
        value = orjson.dumps(dead_letter_message(r))
        futs.append(await producer.send(dead_topic, value, key=r.source.encode()))
        st.dead_letters += 1
    for e in events:
        futs.append(await producer.send(topic, e.to_json(), key=e.job.encode()))
        st.events += 1
        if len(futs) >= IN_FLIGHT:
            await asyncio.gather(*futs)
            futs.clear()
            if progress:
                print(f"\rship jobs: {st.events:,} of {len(events):,} events", end="",
                      file=sys.stderr)  # fmt: skip
    await asyncio.gather(*futs)
    if progress and st.events >= IN_FLIGHT:
        print(file=sys.stderr)
    return st
