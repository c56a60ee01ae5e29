"""The samples shipper for files: node-sample traces (JSON lines, the replay's ``--format
samples``) -> ``<prefix>node-samples``.

Samples in batches: whole sweeps (the samples of one node at one time, its processes) of one
partition, up to ``BATCH_SAMPLES`` samples a message, as trace lines joined by newlines, in the
worker's merge order; a node's partition is CRC-32 of its name modulo the partitions, so a
node's samples stay in order and even a small machine feeds every partition (the worker's
merger releases a time only once every partition is past it). Read and checked exactly as the
replay reads them (plausibility bounds, line cap). Rejected lines go to
``<prefix>dead-letter`` with source, line, reason and text, and are counted. A run ends only
when the broker has acknowledged every message. (The /proc collector on compute nodes is
``drainwatch ship samples``.)
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.formats.sampletrace import dumps
from models.records.plausible import TimeBounds
from models.samples.merge import sample_sort_key
from streams.sources.jobship import IN_FLIGHT, RejectCollector, dead_letter_rejects
from streams.sources.samples import SampleTraceFiles

BATCH_SAMPLES = 2000  # samples per message at most (whole sweeps; one larger sweep: alone)


@dataclass(slots=True)
class SampleShipStats:
    samples: int = 0
    sweeps: int = 0
    messages: int = 0
    dead_letters: int = 0
    files: int = 0


async def ship_sample_files(
    producer: Any,
    topic: str,
    dead_topic: str,
    paths: Sequence[str],
    bounds: TimeBounds,
    max_line_bytes: int,
    partitions: int = 1,
) -> SampleShipStats:
    rejects = RejectCollector()
    src = SampleTraceFiles(list(paths), bounds, max_line_bytes)
    samples = [s for b in src.batches(rejects) for s in b]
    samples.sort(key=sample_sort_key)  # the worker's merge order; a node's sweep together
    st = SampleShipStats(files=len(paths))
    futs = await dead_letter_rejects(producer, dead_topic, rejects.items)
    st.dead_letters = len(futs)
    part: dict[str, int] = {}
    batches: dict[int, list[bytes]] = {}

    async def send(p: int) -> None:
        lines = batches.pop(p)
        futs.append(await producer.send(topic, b"\n".join(lines), key=f"p{p}".encode(),
                                        partition=p))  # fmt: skip
        st.messages += 1
        if len(futs) >= IN_FLIGHT:
            await asyncio.gather(*futs)
            futs.clear()

    i, n = 0, len(samples)
    while i < n:
        j = i + 1
        while j < n and samples[j].ts == samples[i].ts and samples[j].node == samples[i].node:
            j += 1
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
    return st
