"""The checkpoint protocol's own parts (streams/live/checkpoint.py): acks trail one snapshot, in
offset order, and revoked partitions' acks are void; a saved state that cannot be read is
refused with its reason and counted, and the next generation is tried; a pickle is never
loaded. Stand-ins, named as such: events that record their ack, a state store that returns
fixed candidates (no broker)."""

from __future__ import annotations

import asyncio
import logging
import pickle
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from models.state import pack, unpack
from streams.live.checkpoint import Held, load_state


class _Event:
    def __init__(self, offset: int, acks: list[int]) -> None:
        self.offset, self._acks = offset, acks

    def ack(self) -> None:
        self._acks.append(self.offset)


def test_acks_trail_one_snapshot_in_offset_order() -> None:
    acks: list[int] = []
    held = Held()
    for off in (0, 1, 2):
        held.add(0, _Event(off, acks))
    held.saved(0, held.take(0))  # the snapshot that holds 0-2: nothing acked yet
    assert acks == []
    for off in (3, 4):
        held.add(0, _Event(off, acks))
    held.saved(0, held.take(0))  # the next one: 0-2 acked, 3-4 trail
    assert acks == [0, 1, 2]
    held.add(0, _Event(5, acks))
    held.drop(0)  # revoked: its acks are void
    held.saved(0, [])
    assert acks == [0, 1, 2]


class _Store:
    """A stand-in state store: fixed (generation, bytes) candidates, newest first."""

    def __init__(self, found: list[tuple[str, bytes]], refused: list[str]) -> None:
        self.found, self.refused_at_read = found, refused
        self.refused: list[str] = []
        self.restored_gen: str | None = None

    async def candidates(self, owner: str) -> list[tuple[str, bytes]]:
        self.refused += self.refused_at_read
        return self.found

    def restored(self, owner: str, gen: str) -> None:
        self.restored_gen = gen


class _Opens:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def _load(store: _Store) -> tuple[Any, Counter[str]]:
    ctx = SimpleNamespace(store=store, counts=Counter())

    def restore(data: bytes) -> Any:
        return unpack(data, "jobs", (1,))[1]

    got = asyncio.run(load_state(ctx, "jobs", restore, logging.getLogger("t")))  # type: ignore[arg-type]
    return got, ctx.counts


def test_a_pickle_and_garbage_are_refused_and_the_other_generation_restored(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    marker = tmp_path / "ran"
    store = _Store(
        [("b", pickle.dumps(_Opens(str(marker)))), ("a", pack("jobs", 1, {"offset": 7}))],
        ["snapshot jobs: manifest unreadable (bad_json)"],
    )
    with caplog.at_level(logging.ERROR):
        got, counts = _load(store)
    assert got == {"offset": 7} and store.restored_gen == "a"
    assert counts["state_refused"] == 2 and counts["snapshots_loaded"] == 1
    assert not marker.exists()
    lines = [r.getMessage() for r in caplog.records]
    assert any("manifest unreadable" in m for m in lines)
    assert any("generation b" in m and "a pickle" in m for m in lines)
    assert all("\n" not in m for m in lines)  # one line each


def test_with_no_readable_state_the_partition_starts_empty() -> None:
    store = _Store([("a", b"DWST\x00\x00\x00\x05{}"), ("b", pack("drain", 1, {}))], [])
    got, counts = _load(store)
    assert got is None and counts["state_refused"] == 2 and store.restored_gen is None
