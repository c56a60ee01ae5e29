"""The worker-state snapshot manifest (schema ``worker-state.v1.json``, version ``"v": 1``).

A snapshot is saved as chunks under ``<key>/<gen><n>`` (streams/sinks/statestore.py), then its
manifest under ``<key>``: ``{"v": 1, "id", "chunks", "bytes", "gen"}``. What the chunks hold
is a state document of :mod:`models.state` (versioned by its own header) or a family's own
snapshot bytes. Manifests written before versions (the same layout without ``"v"``) stay on
the compacted topic and read as version 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from streams.codecs.base import CodecError, check_version, load_object

VERSION = 1
GENERATIONS = ("a", "b")
ID_BYTES = 32  # the snapshot id prefixed to every chunk: 32 hex digits
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class Manifest:
    id: str  # ID_BYTES hex digits, prefixed to each chunk of the snapshot
    chunks: int
    bytes: int  # the snapshot's length, its chunks joined
    gen: str  # one of GENERATIONS: the chunk keys' prefix


def encode_manifest(m: Manifest) -> bytes:
    return orjson.dumps(
        {"v": VERSION, "id": m.id, "chunks": m.chunks, "bytes": m.bytes, "gen": m.gen}
    )


def decode_manifest(value: bytes) -> Manifest:
    what = "state manifest"
    d = load_object(value, what)
    check_version(d, what, VERSION, missing_ok=True)
    sid, chunks, size, gen = d.get("id"), d.get("chunks"), d.get("bytes"), d.get("gen")
    if type(sid) is not str or len(sid) != ID_BYTES or not set(sid) <= _HEX:
        raise CodecError("bad_message", f"{what}: 'id' must be {ID_BYTES} hex digits")
    if type(chunks) is not int or chunks < 1 or type(size) is not int or size < 0:
        raise CodecError("bad_message", f"{what}: 'chunks' (>= 1) and 'bytes' must be integers")
    if gen not in GENERATIONS:
        raise CodecError("bad_message", f"{what}: 'gen' must be one of {', '.join(GENERATIONS)}")
    return Manifest(sid, chunks, size, gen)
