"""streams.live.context.sent: sends queued in order, then awaited; a stop on the way closes the
sends not yet queued instead of leaving them never awaited."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from streams.live.context import sent as _sent


def test_sends_are_queued_in_order_and_acknowledged() -> None:
    order: list[int] = []

    async def send(i: int) -> asyncio.Future[None]:
        order.append(i)
        f: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f

    asyncio.run(_sent([send(i) for i in range(5)]))
    assert order == [0, 1, 2, 3, 4]


def test_a_stop_on_the_way_leaves_no_send_never_awaited() -> None:
    queued: list[int] = []

    async def send(i: int) -> asyncio.Future[None]:
        if i == 1:
            raise asyncio.CancelledError  # the worker stopping while this one is queued
        queued.append(i)
        f: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f

    sends = [send(i) for i in range(4)]
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_sent(sends))
    assert queued == [0]
    # the two after the stop were closed, not left to warn "never awaited"
    assert [inspect.getcoroutinestate(c) for c in sends[2:]] == [inspect.CORO_CLOSED] * 2
