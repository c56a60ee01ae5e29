"""The jobcomp shipper (``ship jobs --jobcomp-topic TOPIC``): Slurm's jobcomp/kafka records ->
``<prefix>job-events``.

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
from typing import Any

import orjson

from models.formats.jobcomp import iter_jobcomp_events
from models.formats.jobsource import sort_events
from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds, keep_plausible
from models.records.reject import Reject
from streams.codecs.deadletter import dead_letter_message
from streams.ship.base import ShipStats
from streams.ship.job_files import send_events
from streams.ship.markers import Markers


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


class JobcompShipper:
    """Consume, normalise, publish, then commit (unless a dry run: ``commit`` False), until
    ``stop`` or ``count`` records; with ``markers``, their rounds (see the module doc). Its
    stats: ``records`` jobcomp messages consumed, ``bad`` of which dead-lettered whole or in
    part, and the events, messages and dead letters sent."""

    def __init__(
        self,
        consumer: Any,
        producer: Any,
        topic: str,
        dead_topic: str,
        partitions: int,
        bounds: TimeBounds,
        start_records: bool = False,
        count: int | None = None,
        commit: bool = True,
        markers: Markers | None = None,
    ) -> None:
        self.consumer, self.producer = consumer, producer
        self.topic, self.dead_topic, self.partitions = topic, dead_topic, partitions
        self.bounds, self.start_records = bounds, start_records
        self.count, self.commit, self.markers = count, commit, markers
        self.stats = ShipStats()

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        markers = self.markers
        try:
            while not stop.is_set() and (self.count is None or self.stats.records < self.count):
                await self._relay_once()
                if markers is not None and markers.due():  # every event sent was acknowledged
                    await asyncio.gather(*await markers.round())
        finally:
            if markers is not None:  # a last round (best effort: Kafka may be why it stops)
                try:
                    await asyncio.wait_for(asyncio.gather(*await markers.round()), 10)
                except Exception:  # noqa: BLE001
                    pass
                self.stats.markers = markers.sent

    async def last_markers(self) -> None:
        """None: :meth:`run` sends the last round itself, silently best effort."""

    def summary(self) -> str:
        s = self.stats
        return (
            f"{s.records:,} jobcomp records, {s.events:,} events in {s.messages:,} messages, "
            f"{s.dead_letters:,} dead letters"
        )

    async def _relay_once(self) -> None:
        """One poll of the jobcomp topic (up to 0.5 s): its events published and acknowledged
        (and told to ``markers``), then its offsets committed."""
        producer, st = self.producer, self.stats
        got = await self.consumer.getmany(timeout_ms=500, max_records=5000)
        msgs = [m for tp in sorted(got, key=lambda t: (t.topic, t.partition)) for m in got[tp]]
        if not msgs:
            return
        events: list[JobEvent] = []
        futs = []
        for m in msgs:
            st.records += 1
            evs, bad = normalise(
                m.value or b"", (m.topic, m.partition, m.offset), self.bounds, self.start_records
            )
            events += evs
            if bad:
                st.bad += 1
            for r in bad:
                doc = dead_letter_message(r, topic=m.topic, partition=m.partition, offset=m.offset)
                value = orjson.dumps(doc)
                futs.append(await producer.send(self.dead_topic, value, key=r.source.encode()))
                st.dead_letters += 1
        await send_events(producer, self.topic, sort_events(events), self.partitions, st, futs)
        if self.markers is not None and events:
            self.markers.seen(max(e.ts for e in events))
        if self.commit:
            await self.consumer.commit()  # only now: the events are acknowledged
