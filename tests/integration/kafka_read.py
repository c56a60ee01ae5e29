"""Read a whole Kafka topic back (the tests' consumer)."""

from __future__ import annotations

import asyncio
import time
from typing import Any


def read_topic(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes, int]]:
    """Every message now in ``topic``: (key, value, partition), in order within a partition."""
    recs = read_records(topic, bootstrap_servers=bootstrap)
    return [(r.key, r.value, r.partition) for r in recs]


def read_records(topic: str, **consumer: Any) -> list[Any]:
    """Every record now in ``topic`` (aiokafka ConsumerRecords: key, value, partition,
    timestamp...), in order within a partition; ``consumer``: the consumer's connection
    settings (bootstrap servers, security)."""

    async def go() -> list[Any]:
        from aiokafka import AIOKafkaConsumer

        c = AIOKafkaConsumer(topic, **consumer, auto_offset_reset="earliest", group_id=None)
        await c.start()
        try:
            deadline = time.monotonic() + 10
            while not c.assignment() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            parts = list(c.assignment())
            end = await c.end_offsets(parts)
            out: list[Any] = []
            while True:
                behind = [tp for tp in parts if await c.position(tp) < end[tp]]
                if not behind:
                    return out
                for recs in (await c.getmany(timeout_ms=1000)).values():
                    out += recs
        finally:
            await c.stop()

    return asyncio.run(go())
