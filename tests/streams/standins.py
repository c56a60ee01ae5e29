"""Stand-ins for the broker side of a Faust app, for checking a pipeline's own work without
Kafka (tests/streams/live/test_flush.py, bench/bench_live_jobs.py --in-process): a topic keeps
what it is sent and acknowledges at once; the producer sends to those topics by name."""

from __future__ import annotations

import asyncio
from typing import Any


class Topic:
    """A stand-in for a faust topic: keeps what is sent, acknowledged at once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent: list[tuple[bytes, bytes]] = []

    def get_topic_name(self) -> str:
        return self.name

    async def send(self, key: bytes, value: bytes) -> asyncio.Future[None]:
        self.sent.append((key, value))
        f: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f


class Producer:
    """A stand-in for the app's producer: sends go to the named :class:`Topic`."""

    def __init__(self, topics: dict[str, Topic]) -> None:
        self.topics = topics

    async def send(
        self, topic: str, key: bytes, value: bytes, partition: Any, timestamp: Any, headers: Any
    ) -> asyncio.Future[None]:
        return await self.topics[topic].send(key=key, value=value)
