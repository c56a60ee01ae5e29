"""What every part of one worker shares: the app, the settings, the topics, the sinks, the
state store, the counters and the log. One object, passed explicitly (nothing is patched onto
the Faust app).

Also the two ways the worker sends: :func:`send_many` (metric rows, alerts and dead letters,
appended to record batches that go to the producer whole) and :func:`sent` (partials and
state chunks, each send awaited until the broker has it).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.config import Settings
from streams.sinks.statestore import StateStore
from streams.sinks.writequeue import WriteQueue

Message = tuple[str, bytes, bytes]  # (topic name, key, value)


@dataclass(eq=False)
class WorkerContext:
    app: Any
    settings: Settings
    sink: Any | None  # streams.sinks.influx.InfluxSink, None with --no-influx
    topics: Any = None  # streams.app.AppTopics
    store: StateStore | None = None
    writes: WriteQueue | None = None  # the InfluxDB points, in order, from a thread of its own
    counts: Counter[str] = field(default_factory=Counter)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("drainwatch.worker"))
    worker: str = ""
    key_partitions: KeyPartitions | None = None
    health: Any = None  # streams.live.health.Health: the input clock of the stall alert

    def __post_init__(self) -> None:
        if self.topics is None:
            self.topics = self.app.drainwatch_topics
        if self.store is None:
            name = self.topics.worker_state.get_topic_name()
            self.store = StateStore(self.settings, name, self.app.conf.id, self._send_state)
        if self.writes is None and self.sink is not None:
            self.writes = WriteQueue(self.sink.write_lines, "influxdb")
        if not self.worker:
            self.worker = f"{socket.gethostname()}:{self.settings.worker.web_port}"

    async def _send_state(self, key: bytes, value: bytes) -> None:
        await (await self.topics.worker_state.send(key=key, value=value))

    async def send_many(self, messages: Sequence[Message]) -> None:
        await send_many(self, messages)


async def sent(sends: list[Any]) -> None:
    """Queue every send, then wait until the broker acknowledged all of them. Stopped on the
    way (the worker's shutdown), the sends not yet queued are closed, never left unawaited
    (nothing they cover was acked)."""
    futures = []
    try:
        for s in sends:
            futures.append(await s)
    except BaseException:
        for s in sends[len(futures) :]:
            if hasattr(s, "close"):
                s.close()
        raise
    if futures:
        await asyncio.gather(*futures)


class KeyPartitions:
    """The default partitioner's choice for a key (murmur2 of the key modulo the topic's
    partitions, as Topic.send and the Java client choose it), remembered: aiokafka computes
    murmur2 in pure Python, and the metric topics' keys (holders, days, alert ids) repeat.
    Bounded: forgotten wholesale past ``limit`` keys."""

    def __init__(self, limit: int = 200_000) -> None:
        from aiokafka.partitioner import DefaultPartitioner

        self.limit = limit
        self.choose = DefaultPartitioner()
        self.known: dict[tuple[bytes, int], int] = {}

    def __call__(self, key: bytes, partitions: list[int]) -> int:
        k = (key, len(partitions))
        p = self.known.get(k)
        if p is None:
            if len(self.known) >= self.limit:
                self.known.clear()
            p = self.known[k] = self.choose(key, partitions, partitions)
        return p


async def send_many(ctx: WorkerContext, messages: Sequence[Message]) -> None:
    """Send (topic name, key, value) messages, each to its key's partition as Topic.send would
    choose it, then wait until the broker acknowledged all of them.

    The messages are appended to record batches that go to the producer whole (aiokafka's
    ``create_batch``/``send_batch``): about 1 us a message, where the producer's ``send``
    costs about 11 us and Faust's ``Topic.send`` about 72 us. A producer that is not
    aiokafka's (a stand-in) gets ``send``."""
    if not messages:
        return
    app = ctx.app
    ensure = getattr(app.producer, "_ensure_producer", None)
    futures = []
    if ensure is None:
        send = app.producer.send
        for name, k, v in messages:
            futures.append(await send(name, k, v, None, None, None))
        await asyncio.gather(*futures)
        return
    kp = ensure()
    if ctx.key_partitions is None:
        ctx.key_partitions = KeyPartitions()
    chooser = ctx.key_partitions
    parts = {n: sorted(await kp.partitions_for(n)) for n in {m[0] for m in messages}}
    groups: dict[tuple[str, int], list[tuple[bytes, bytes]]] = {}
    for name, k, v in messages:
        groups.setdefault((name, chooser(k, parts[name])), []).append((k, v))
    for (name, p), kvs in groups.items():
        batch = kp.create_batch()
        for k, v in kvs:
            if batch.append(timestamp=None, key=k, value=v) is None:
                if batch.record_count():
                    futures.append(await kp.send_batch(batch, name, partition=p))
                batch = kp.create_batch()
                if batch.append(timestamp=None, key=k, value=v) is None:  # larger than a batch
                    futures.append(await kp.send(name, v, key=k, partition=p))
                    batch = kp.create_batch()
        if batch.record_count():
            futures.append(await kp.send_batch(batch, name, partition=p))
    await asyncio.gather(*futures)
