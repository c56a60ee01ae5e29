"""Read a whole Kafka topic back (the tests' consumer)."""

from __future__ import annotations

import asyncio
import time


def read_topic(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes, int]]:
    """Every message now in ``topic``: (key, value, partition), in order within a partition."""

    async def go() -> list[tuple[bytes | None, bytes, int]]:
        from aiokafka import AIOKafkaConsumer

        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             group_id=None)  # fmt: skip
        await c.start()
        try:
            deadline = time.monotonic() + 10
            while not c.assignment() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            parts = list(c.assignment())
            end = await c.end_offsets(parts)
            out = []
            while True:
                behind = [tp for tp in parts if await c.position(tp) < end[tp]]
                if not behind:
                    return out
                for tp, recs in (await c.getmany(timeout_ms=1000)).items():
                    out += [(r.key, r.value, tp.partition) for r in recs]
        finally:
            await c.stop()

    return asyncio.run(go())
