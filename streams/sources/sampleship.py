"""The samples shipper for files: node-sample traces (JSON lines, the replay's ``--format
samples``) -> ``<prefix>node-samples``.

One message per sweep: the samples of one node at one time (its processes), as trace lines
joined by newlines, keyed by node, in time order; read and checked exactly as the replay reads
them (plausibility bounds, line cap). Rejected lines go to ``<prefix>dead-letter`` with source,
line, reason and text, and are counted. A run ends only when the broker has acknowledged
every message. (The /proc collector on compute nodes is ``drainwatch ship samples``.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.formats.sampletrace import dumps
from models.records.plausible import TimeBounds
from models.samples.merge import sample_sort_key
from streams.sources.jobship import IN_FLIGHT, RejectCollector, dead_letter_rejects
from streams.sources.samples import SampleTraceFiles


@dataclass(slots=True)
class SampleShipStats:
    samples: int = 0
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
) -> SampleShipStats:
    rejects = RejectCollector()
    src = SampleTraceFiles(list(paths), bounds, max_line_bytes)
    samples = [s for b in src.batches(rejects) for s in b]
    samples.sort(key=sample_sort_key)  # the worker's merge order; a node's sweep together
    st = SampleShipStats(files=len(paths))
    futs = await dead_letter_rejects(producer, dead_topic, rejects.items)
    st.dead_letters = len(futs)
    i, n = 0, len(samples)
    while i < n:
        j = i + 1
        while j < n and samples[j].ts == samples[i].ts and samples[j].node == samples[i].node:
            j += 1
        value = b"\n".join(dumps(s) for s in samples[i:j])
        futs.append(await producer.send(topic, value, key=samples[i].node.encode()))
        st.samples += j - i
        st.messages += 1
        i = j
        if len(futs) >= IN_FLIGHT:
            await asyncio.gather(*futs)
            futs.clear()
    await asyncio.gather(*futs)
    return st
