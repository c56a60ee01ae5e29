"""``ship jobs --jobcomp-topic TOPIC``: Slurm's jobcomp/kafka records -> ``<prefix>job-events``.

Each record (one JSON object a message, the plugin's format; see models/formats/jobcomp.py) is
normalised to JobEvents as ``replay --format jobcomp`` reads a file of them (unknown fields
ignored, the same plausibility bounds), published in the job-events batches of the file
shipper, and only then are the consumed offsets committed: a shipper killed in between reads
those records again (at-least-once). A record that cannot be used goes to
``<prefix>dead-letter`` with its topic, partition and offset and is counted.

Markers (``streams.codecs.control``): with ``markers``, a round of ``watermark`` markers on
every partition of job-events every ``marker_interval`` seconds of the wall clock, also while
no record comes (ts: the latest event time sent, every event before it acknowledged), and a
last round when the relay stops.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

from models.formats.jobcomp import iter_jobcomp_events
from models.formats.jobsource import sort_events
from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds, keep_plausible
from models.records.reject import Reject
from streams.codecs.deadletter import dead_letter_message
from streams.sources.jobship import JobShipStats, Markers, send_events


@dataclass(slots=True)
class JobcompStats:
    records: int = 0  # jobcomp messages consumed
    bad: int = 0  # of which dead-lettered whole or in part


def normalise(
    value: bytes, where: tuple[str, int, int], bounds: TimeBounds, start_records: bool
) -> tuple[list[JobEvent], list[Reject]]:
    """The events of one jobcomp message and its rejects (line = the message's offset)."""
    topic, partition, offset = where
    source = f"jobcomp:{topic}[{partition}]"
    bad: list[Reject] = []
    evs = list(iter_jobcomp_events([value], bad, source, start_records))
    evs = keep_plausible(evs, bounds, source, lambda e: e.to_json().decode(), bad)
    return evs, [Reject(r.reason, source, offset, r.text) for r in bad]


async def relay_jobcomp(
    consumer: Any,
    producer: Any,
    topic: str,
    dead_topic: str,
    partitions: int,
    bounds: TimeBounds,
    start_records: bool = False,
    stop: asyncio.Event | None = None,
    count: int | None = None,
    commit: bool = True,
    markers: Markers | None = None,
) -> tuple[JobcompStats, JobShipStats]:
    """Consume, normalise, publish, then commit (unless a dry run: ``commit`` False), until
    ``stop`` or ``count`` records; with ``markers``, their rounds (see the module doc)."""
    stop = stop or asyncio.Event()
    js, st = JobcompStats(), JobShipStats()
    try:
        while not stop.is_set() and (count is None or js.records < count):
            await _relay_once(
                consumer,
                producer,
                topic,
                dead_topic,
                partitions,
                bounds,
                start_records,
                commit,
                js,
                st,
                markers,
            )
            if markers is not None and markers.due():  # every event sent was acknowledged
                await asyncio.gather(*await markers.round())
    finally:
        if markers is not None:  # a last round (best effort: Kafka may be why it stops)
            try:
                await asyncio.wait_for(asyncio.gather(*await markers.round()), 10)
            except Exception:  # noqa: BLE001
                pass
            st.markers = markers.sent
    return js, st


async def _relay_once(
    consumer: Any,
    producer: Any,
    topic: str,
    dead_topic: str,
    partitions: int,
    bounds: TimeBounds,
    start_records: bool,
    commit: bool,
    js: JobcompStats,
    st: JobShipStats,
    markers: Markers | None,
) -> None:
    """One poll of the jobcomp topic (up to 0.5 s): its events published and acknowledged
    (and told to ``markers``), then its offsets committed."""
    got = await consumer.getmany(timeout_ms=500, max_records=5000)
    msgs = [m for tp in sorted(got, key=lambda t: (t.topic, t.partition)) for m in got[tp]]
    if not msgs:
        return
    events: list[JobEvent] = []
    futs = []
    for m in msgs:
        js.records += 1
        evs, bad = normalise(
            m.value or b"", (m.topic, m.partition, m.offset), bounds, start_records
        )
        events += evs
        if bad:
            js.bad += 1
        for r in bad:
            doc = dead_letter_message(r, topic=m.topic, partition=m.partition, offset=m.offset)
            futs.append(await producer.send(dead_topic, orjson.dumps(doc), key=r.source.encode()))
            st.dead_letters += 1
    await send_events(producer, topic, sort_events(events), partitions, st, futs)
    if markers is not None and events:
        markers.seen(max(e.ts for e in events))
    if commit:
        await consumer.commit()  # only now: the events are acknowledged
