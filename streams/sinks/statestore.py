"""Worker state snapshots on a compacted Kafka topic (docs/state.md).

A snapshot is split into chunks under the message size limit and sent under ``<key>/<g><n>``,
each value prefixed with the snapshot's 32-byte id, every send awaited until the broker
acknowledged it; then the manifest ``<key>`` -> ``{"id", "chunks", "bytes", "gen"}`` is sent and
awaited. A snapshot exists once its manifest does. Chunk keys alternate between two generations
``g`` (a, b), so writing a new snapshot never overwrites the chunks of the one the current
manifest points to: a crash at any moment leaves a whole snapshot to load.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from streams.config import Settings
from streams.kafka import read_latest

CHUNK = 900_000

Send = Callable[[bytes, bytes], Awaitable[Any]]  # (key, value) -> awaited broker ack


class StateError(RuntimeError):
    """A snapshot that is referenced but cannot be read whole."""


class StateStore:
    def __init__(self, settings: Settings, topic: str, group: str, send: Send) -> None:
        self.settings = settings
        self.topic = topic
        self.group = group
        self.send = send
        self._generation: dict[str, str] = {}

    def _key(self, owner: str) -> bytes:
        return f"{self.group}/{owner}".encode()

    async def save(self, owner: str, data: bytes) -> None:
        gen = "b" if self._generation.get(owner) == "a" else "a"
        sid = uuid.uuid4().hex.encode()  # 32 bytes
        base = self._key(owner)
        chunks = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)] or [b""]
        # the chunks at once (each send waits for its own acknowledgement), the manifest once
        # all of them are acknowledged
        await asyncio.gather(*(self.send(base + f"/{gen}{n}".encode(), sid + c)
                               for n, c in enumerate(chunks)))  # fmt: skip
        manifest = {"id": sid.decode(), "chunks": len(chunks), "bytes": len(data), "gen": gen}
        await self.send(base, orjson.dumps(manifest))
        self._generation[owner] = gen

    async def load(self, owner: str) -> bytes | None:
        base = self._key(owner)
        values = await read_latest(self.settings, self.topic, base)
        raw = values.get(base)
        if raw is None:
            return None
        m = orjson.loads(raw)
        sid, gen = m["id"].encode(), m["gen"]
        parts = []
        for n in range(m["chunks"]):
            v = values.get(base + f"/{gen}{n}".encode())
            if v is None or v[:32] != sid:
                raise StateError(f"snapshot {owner}: chunk {n} of {m['chunks']} is missing")
            parts.append(v[32:])
        data = b"".join(parts)
        if len(data) != m["bytes"]:
            raise StateError(f"snapshot {owner}: {len(data)} bytes, manifest says {m['bytes']}")
        self._generation[owner] = gen
        return data
