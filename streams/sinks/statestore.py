"""Worker state snapshots on a compacted Kafka topic (docs/state.md).

A snapshot is split into chunks sent under ``<key>/<g><n>``, each value the snapshot's 32-byte
id and the next ``kafka.message_max_bytes`` - 32 bytes of the snapshot (a chunk is at most the
setting), every send awaited until the broker acknowledged it; then the manifest ``<key>`` ->
``{"v", "id", "chunks", "bytes", "gen"}`` (:mod:`streams.codecs.state`) is sent and awaited,
under ``<key>/<g>`` (the generation's) and then ``<key>`` (the current one). A snapshot exists
once its manifest does. Chunk keys alternate between two generations ``g`` (a, b), so writing a
new snapshot never overwrites the chunks of the one the current manifest points to: a crash at
any moment leaves a whole snapshot to load, and a current snapshot that cannot be read leaves
the other generation's (:meth:`StateStore.candidates`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from streams.codecs import CodecError
from streams.codecs.state import ID_BYTES, Manifest, decode_manifest, encode_manifest
from streams.config import Settings
from streams.kafka import read_latest

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
        self.refused: list[str] = []  # manifests or chunks that could not be read whole

    def _key(self, owner: str) -> bytes:
        return f"{self.group}/{owner}".encode()

    async def save(self, owner: str, data: bytes) -> None:
        gen = "b" if self._generation.get(owner) == "a" else "a"
        sid = uuid.uuid4().hex.encode()  # ID_BYTES
        base = self._key(owner)
        size = (
            self.settings.kafka.message_max_bytes - ID_BYTES
        )  # a chunk's value: the id, then this
        chunks = [data[i : i + size] for i in range(0, len(data), size)] or [b""]
        # the chunks at once (each send waits for its own acknowledgement), the manifests (the
        # generation's own and the current one) once all of them are acknowledged
        await asyncio.gather(
            *(self.send(base + f"/{gen}{n}".encode(), sid + c) for n, c in enumerate(chunks))
        )
        manifest = encode_manifest(Manifest(sid.decode(), len(chunks), len(data), gen))
        # both manifests at once: each is checked against the chunks when read, so any of
        # them written alone still names a whole snapshot
        await asyncio.gather(
            self.send(base + f"/{gen}".encode(), manifest), self.send(base, manifest)
        )
        self._generation[owner] = gen

    async def load(self, owner: str) -> bytes | None:
        """The current snapshot of ``owner`` (None: none saved); raises StateError."""
        base = self._key(owner)
        values = await read_latest(self.settings, self.topic, base)
        raw = values.get(base)
        if raw is None:
            return None
        data, gen = _whole(owner, raw, base, values)
        self._generation[owner] = gen
        return data

    async def candidates(self, owner: str) -> list[tuple[str, bytes]]:
        """(generation, bytes) of ``owner``'s snapshots to try, newest first: the current
        manifest's, then the other generation's. A manifest or chunk that cannot be read
        whole is left out and its reason kept in :attr:`refused`. The caller says which one
        it restored (:meth:`restored`)."""
        base = self._key(owner)
        values = await read_latest(self.settings, self.topic, base)
        order: list[bytes] = [base, base + b"/a", base + b"/b"]
        out: list[tuple[str, bytes]] = []
        seen: set[str] = set()
        for key in order:
            raw = values.get(key)
            if raw is None:
                continue
            try:
                data, gen = _whole(owner, raw, base, values)
            except StateError as e:
                self.refused.append(str(e))
                continue
            if gen not in seen:
                seen.add(gen)
                out.append((gen, data))
        return out

    def restored(self, owner: str, gen: str) -> None:
        """``owner`` was restored from generation ``gen``: the next save writes the other."""
        self._generation[owner] = gen


def _whole(owner: str, raw: bytes, base: bytes, values: dict[bytes, bytes]) -> tuple[bytes, str]:
    """A manifest's snapshot, checked whole: (bytes, generation)."""
    try:
        m = decode_manifest(raw)
    except CodecError as e:
        raise StateError(f"snapshot {owner}: manifest unreadable ({e})") from None
    sid, gen, n, size = m.id.encode(), m.gen, m.chunks, m.bytes
    parts = []
    for i in range(n):
        v = values.get(base + f"/{gen}{i}".encode())
        if v is None or v[:32] != sid:
            raise StateError(f"snapshot {owner}: chunk {i} of {n} is missing")
        parts.append(v[32:])
    data = b"".join(parts)
    if len(data) != size:
        raise StateError(f"snapshot {owner}: {len(data)} bytes, manifest says {size}")
    return data, gen
