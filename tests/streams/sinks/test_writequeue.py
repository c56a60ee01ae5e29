"""The write queue (streams/sinks/writequeue.py): points written in the order handed over, by
one thread; a barrier waits for what came before it; the first failure stops later writes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from streams.sinks.writequeue import WriteQueue


class _SlowSink:
    """A stand-in for InfluxSink: keeps what it is given, each write held until released."""

    def __init__(self) -> None:
        self.lines: list[Any] = []
        self.threads: set[str] = set()
        self.gate = threading.Event()
        self.gate.set()
        self.fail_on: Any = None

    def write(self, points: Sequence[Any]) -> None:
        self.gate.wait(5)
        self.threads.add(threading.current_thread().name)
        if self.fail_on is not None and self.fail_on in points:
            raise RuntimeError(f"refused {self.fail_on}")
        self.lines += points


def test_writes_in_order_and_a_barrier_waits_for_them() -> None:
    sink = _SlowSink()
    q = WriteQueue(sink.write, "jobs")

    async def run() -> None:
        sink.gate.clear()  # the first write waits in the thread
        q.submit(["a", "b"])
        q.submit([])  # nothing: not queued
        q.submit(["c"])
        done = q.barrier()
        await asyncio.sleep(0.05)
        assert not done.done() and sink.lines == []
        sink.gate.set()
        await asyncio.wait_for(done, 5)
        assert sink.lines == ["a", "b", "c"]
        q.submit(["d"])
        await asyncio.wait_for(q.barrier(), 5)

    asyncio.run(run())
    q.close(5)
    assert sink.lines == ["a", "b", "c", "d"]
    assert sink.threads == {"write-jobs"}  # one thread of its own
    assert (q.handed, q.written) == (4, 4)


def test_the_first_failure_fails_every_later_barrier_and_skips_later_writes() -> None:
    sink = _SlowSink()
    sink.fail_on = "bad"
    q = WriteQueue(sink.write)

    async def run() -> None:
        q.submit(["ok"])
        await asyncio.wait_for(q.barrier(), 5)
        q.submit(["bad", "x"])
        q.submit(["after"])  # not written: it would land out of order after a restart
        with pytest.raises(RuntimeError, match="refused bad"):
            await asyncio.wait_for(q.barrier(), 5)
        with pytest.raises(RuntimeError, match="refused bad"):
            await asyncio.wait_for(q.barrier(), 5)

    asyncio.run(run())
    q.close(5)
    assert sink.lines == ["ok"]
    assert q.handed == 4 and q.written == 1
    assert isinstance(q.error, RuntimeError)


def test_a_barrier_whose_loop_has_gone_is_dropped() -> None:
    sink = _SlowSink()
    q = WriteQueue(sink.write)
    sink.gate.clear()

    async def run() -> None:
        q.submit(["a"])
        q.barrier()  # never awaited: its loop closes before the write ends

    asyncio.run(run())
    sink.gate.set()
    q.close(5)  # the thread settles nothing on a closed loop, and stops
    assert sink.lines == ["a"]
