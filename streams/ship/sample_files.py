"""The node samples shipper for files (``ship sample-files``): node-sample traces (JSON lines,
the replay's ``--format samples``) -> ``<prefix>node-samples``.

Samples in batches: whole sweeps (the samples of one node at one time, its processes) of one
partition, up to ``BATCH_SAMPLES`` samples a message, as trace lines joined by newlines, in the
worker's merge order; a node's partition is CRC-32 of its name modulo the partitions, so a
node's samples stay in order and even a small machine feeds every partition (the worker's
merger releases a time only once every partition is past it). Read and checked exactly as the
replay reads them (plausibility bounds, line cap). Rejected lines go to
``<prefix>dead-letter`` with source, line, reason and text, and are counted. A run ends only
when the broker has acknowledged every message. (The /proc collector on compute nodes is
``drainwatch ship samples``.)

Markers (``streams.codecs.control``): with ``marker_interval``, a round of ``watermark``
markers on every partition every that many wall seconds, before the first sweep of a later
time (what every partition holds sent first; ts just before that sweep's time), and an
``end`` round once every sample was acknowledged.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Sequence
from typing import Any

from models.formats.sampletrace import dumps
from models.records.plausible import TimeBounds
from models.samples.merge import sample_sort_key
from streams.ship.base import IN_FLIGHT, RejectCollector, ShipStats, dead_letter_rejects
from streams.ship.markers import Markers, just_before, shipper_id
from streams.sources.samples import SampleTraceFiles

BATCH_SAMPLES = 2000  # samples per message at most (whole sweeps; one larger sweep: alone)


class SampleFilesShipper:
    """``ship sample-files``: every sample of ``paths`` published in sweeps and what was
    rejected dead-lettered; with ``marker_interval``, watermark markers as they go and an
    end-of-input round last. The files are read to their end (``stop`` does not cut them
    short)."""

    def __init__(
        self,
        producer: Any,
        topic: str,
        dead_topic: str,
        paths: Sequence[str],
        bounds: TimeBounds,
        max_line_bytes: int,
        partitions: int = 1,
        marker_interval: float | None = None,
    ) -> None:
        self.producer, self.topic, self.dead_topic = producer, topic, dead_topic
        self.paths, self.bounds, self.max_line_bytes = list(paths), bounds, max_line_bytes
        self.partitions, self.marker_interval = partitions, marker_interval
        self.stats = ShipStats(files=len(self.paths))

    async def run(self, stop: asyncio.Event | None = None) -> None:
        producer, topic, partitions, st = self.producer, self.topic, self.partitions, self.stats
        rejects = RejectCollector()
        src = SampleTraceFiles(self.paths, self.bounds, self.max_line_bytes)
        samples = [s for b in src.batches(rejects) for s in b]
        samples.sort(key=sample_sort_key)  # the worker's merge order; a node's sweep together
        futs = await dead_letter_rejects(producer, self.dead_topic, rejects.items)
        st.dead_letters = len(futs)
        part: dict[str, int] = {}
        batches: dict[int, list[bytes]] = {}

        async def send(p: int) -> None:
            lines = batches.pop(p)
            futs.append(
                await producer.send(topic, b"\n".join(lines), key=f"p{p}".encode(), partition=p)
            )
            st.messages += 1
            if len(futs) >= IN_FLIGHT:
                await asyncio.gather(*futs)
                futs.clear()

        markers = None
        if self.marker_interval is not None:
            sid = shipper_id("samples")
            markers = Markers(producer, topic, partitions, sid, self.marker_interval)
        i, n = 0, len(samples)
        while i < n:
            j = i + 1
            while j < n and samples[j].ts == samples[i].ts and samples[j].node == samples[i].node:
                j += 1
            ts = samples[i].ts
            if markers is not None:  # by the wall clock only: a round cuts every batch short
                latest = markers.latest
                if latest is not None and ts > latest and markers.due():
                    for q in sorted(batches):  # what the round covers goes first
                        await send(q)
                    futs += await markers.round(ts=just_before(ts))
                markers.seen(ts)
            node = samples[i].node
            p = part.get(node)
            if p is None:
                p = part[node] = zlib.crc32(node.encode()) % partitions
            batch = batches.get(p)
            if batch is not None and len(batch) + (j - i) > BATCH_SAMPLES:
                await send(p)
                batch = None
            if batch is None:
                batch = batches[p] = []
            batch.extend(dumps(s) for s in samples[i:j])
            st.samples += j - i
            st.sweeps += 1
            i = j
        for p in sorted(batches):
            await send(p)
        await asyncio.gather(*futs)
        if markers is not None:  # after every sample was acknowledged: the end, everywhere
            await asyncio.gather(*await markers.round(end=True))
            st.markers = markers.sent

    async def last_markers(self) -> None:
        """None: the input ended with its ``end`` round."""

    def summary(self) -> str:
        s = self.stats
        return (
            f"{s.samples:,} samples ({s.sweeps:,} sweeps) in {s.messages:,} messages from "
            f"{s.files} file(s), {s.dead_letters:,} dead letters, "
            f"{s.markers:,} markers"
        )


async def ship_sample_files(*args: Any, **kwargs: Any) -> ShipStats:
    """A :class:`SampleFilesShipper` (the same arguments) run to its end; its stats."""
    shipper = SampleFilesShipper(*args, **kwargs)
    await shipper.run()
    return shipper.stats
