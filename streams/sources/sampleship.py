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

import orjson

from models.formats.sampletrace import dumps
from models.records.plausible import TimeBounds
from streams.sources.jobship import IN_FLIGHT, _Collect
from streams.sources.samples import SampleTraceFiles
from streams.topics import dead_letter_message


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
    rejects = _Collect()
    src = SampleTraceFiles(list(paths), bounds, max_line_bytes)
    samples = [s for b in src.batches(rejects) for s in b]
    samples.sort(key=lambda s: (s.ts, s.node, s.pid))
    st = SampleShipStats(files=len(paths))
    futs = []
    for r in rejects.items:
        value = orjson.dumps(dead_letter_message(r))
        futs.append(await producer.send(dead_topic, value, key=r.source.encode()))
        st.dead_letters += 1
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
