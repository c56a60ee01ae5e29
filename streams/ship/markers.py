"""A shipper's watermark and end-of-input markers (``streams.codecs.control``, issue 30) on every
partition of its topic, and the id that names the shipper in them."""

from __future__ import annotations

import math
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from streams.codecs.control import END, WATERMARK, encode_marker

ROUND_EVENTS = 20_000  # events between two marker rounds due by event time (a finite input)


def shipper_id(kind: str, stable: str | None = None) -> str:
    """A shipper's id in its markers: ``<kind>:<host>:<stable>``, ``stable`` being what names
    it across restarts (its checkpoint file), else its process id."""
    return f"{kind}:{socket.gethostname()}:{stable if stable is not None else os.getpid()}"


def just_before(ts: float) -> float:
    """The latest time before ``ts``: how far a finite input in time order has got when its
    next event is at ``ts`` (every event to come is later: none is late at any lateness)."""
    return math.nextafter(ts, -math.inf)


class Markers:
    """A shipper's watermark markers (streams.codecs.control) on every partition of its topic.

    The rule: a marker on a partition is sent after every event of this shipper on that
    partition it covers (one producer, one partition: Kafka keeps the order), so a shipper
    sends what it holds for every partition before a round of markers. ``ts`` is the latest
    event time sent (:meth:`seen`) unless the caller knows more (``round(ts=...)``). A round
    is due every ``interval`` seconds of the wall clock (``clock``) and, for a finite input
    read at full speed, every ``interval`` seconds of event time once ``ROUND_EVENTS``
    events went out since the last round (:meth:`due_at`): a round flushes every partition's
    batch, so rounds by event time alone would cut a year of history into messages of a few
    events each."""

    def __init__(
        self,
        producer: Any,
        topic: str,
        partitions: int,
        source: str,
        interval: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.producer, self.topic, self.partitions = producer, topic, partitions
        self.source, self.interval, self.clock = source, interval, clock
        self.latest: float | None = None  # the latest event time sent
        self.last_round = clock()  # wall clock of the last round
        self.last_ts: float | None = None  # its event time
        self.sent = 0  # markers sent
        self.since = 0  # events seen since the last round

    def seen(self, ts: float) -> None:
        self.since += 1
        if self.latest is None or ts > self.latest:
            self.latest = ts

    def due(self) -> bool:
        """A round is due by the wall clock."""
        return self.clock() - self.last_round >= self.interval

    def due_at(self, next_ts: float) -> bool:
        """Before an event at ``next_ts`` of a finite input (events in time order): a round is
        due by event time (``next_ts`` an interval past the last round's) or by the wall
        clock. Its time is then :func:`just_before` ``next_ts``: every event still to come is
        later."""
        latest = self.latest
        if latest is None or next_ts <= latest:
            return False
        last = self.last_ts
        by_events = self.since >= ROUND_EVENTS and (last is None or next_ts - last >= self.interval)
        return by_events or self.due()

    async def round(self, end: bool = False, ts: float | None = None) -> list[Any]:
        """One marker on every partition (``end``: the input ended); the send futures. The
        caller has sent every event the round covers."""
        t = self.latest if ts is None else ts
        value = encode_marker(self.source, END if end else WATERMARK, t, self.clock())
        futs = [
            await self.producer.send(self.topic, value, key=b"marker", partition=p)
            for p in range(self.partitions)
        ]
        self.last_round, self.last_ts, self.since = self.clock(), t, 0
        self.sent += len(futs)
        return futs
