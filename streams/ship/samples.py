"""The node samples shipper (``ship samples --kafka``): the node sampler's sweeps
(:mod:`streams.ship.sampler`) straight to ``<prefix>node-samples``.

One message per sweep (this node's samples at one time, as trace lines joined by newlines,
keyed by node, on partition CRC-32(node) modulo the partitions: the format of ``ship
sample-files``, so the worker reads both alike). A sweep waits in a bounded local buffer until
the broker acknowledged it; while Kafka cannot be reached the buffer grows, and past
``buffer_max`` sweeps the OLDEST are dropped, counted (sweeps and samples) and reported. Nothing
is dropped below the cap; the connection is tried again at every sweep.

Markers (``streams.codecs.control``): with ``marker_interval``, a ``watermark`` marker on every
partition every that many seconds, while nothing waits in the buffer (ts: the latest sweep
time sent, or of a sweep that found no job process), and a last round when it stops.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models.formats.sampletrace import dumps
from models.records.nodesample import NodeSample
from streams import logs
from streams.codecs.control import WATERMARK, encode_marker
from streams.ship.base import ShipStats

log = logs.get("ship.samples")


@dataclass(slots=True)
class BufferedSweep:
    node: str
    value: bytes
    samples: int
    ts: float  # the sweep's time


class SampleKafkaShipper:
    """Sweeps -> a bounded buffer -> Kafka. ``connect`` returns a started producer (raises when
    the broker cannot be reached); tests give their own. As a
    :class:`~streams.ship.base.Shipper`, it runs ``sampler`` (:func:`run_sampler`, a sweep
    every ``period`` seconds until stopped or ``count`` sweeps)."""

    def __init__(
        self,
        connect: Callable[[], Any],
        topic: str,
        buffer_max: int = 1440,
        send_timeout: float = 30.0,
        marker_interval: float | None = None,
        source: str = "sampler",
        clock: Callable[[], float] = time.time,
        sampler: Any = None,
        period: float = 60.0,
        count: int | None = None,
    ) -> None:
        self.connect = connect
        self.sampler, self.period, self.count = sampler, period, count
        self.marker_interval, self.source, self.clock = marker_interval, source, clock
        self.latest: float | None = None  # the latest sweep time sent (or swept empty)
        self.empty_at: float | None = None  # the latest empty sweep's time, while some wait
        self.last_round: float | None = None  # wall clock of the last marker round
        self.topic = topic
        self.buffer: deque[BufferedSweep] = deque()
        self.buffer_max = buffer_max
        self.send_timeout = send_timeout
        self.producer: Any = None
        self.partitions = 1
        self.stats = ShipStats()

    async def run(self, stop: asyncio.Event | None = None) -> None:
        await run_sampler(self.sampler, self, self.period, self.count, stop)

    async def last_markers(self) -> None:
        await self.mark(force=True)

    def summary(self) -> str:
        k = self.stats
        return (
            f"{k.sweeps:,} sweeps, {k.sent_sweeps:,} sent ({k.sent_samples:,} samples), "
            f"{len(self.buffer):,} still buffered, {k.dropped_sweeps:,} dropped past the buffer "
            f"cap ({k.dropped_samples:,} samples), {k.send_failures:,} Kafka failures"
        )

    def push(self, samples: list[NodeSample], at: float | None = None) -> None:
        """Queue one sweep (nothing when it has no sample: ``at``, the time it started, is
        then how far this node has got); drop the oldest past the cap."""
        self.stats.sweeps += 1
        if not samples:
            if at is not None:
                self.empty_at = at if self.empty_at is None else max(self.empty_at, at)
                if not self.buffer:
                    self._covered(at)
            return
        value = b"\n".join(dumps(s) for s in samples)
        ts = max(s.ts for s in samples)
        self.buffer.append(BufferedSweep(samples[0].node, value, len(samples), ts))
        while len(self.buffer) > self.buffer_max:
            old = self.buffer.popleft()
            self.stats.dropped_sweeps += 1
            self.stats.dropped_samples += old.samples

    async def _close(self) -> None:
        p, self.producer = self.producer, None
        if p is not None:
            try:
                await asyncio.wait_for(p.stop(), timeout=5)
            except Exception:  # noqa: BLE001 - a broken producer is dropped either way
                pass

    def _failed(self, e: BaseException) -> None:
        self.stats.send_failures += 1
        self.stats.last_error = f"{type(e).__name__}: {e}"[:300]
        log.warning("Kafka: %s; %d sweeps buffered", self.stats.last_error, len(self.buffer))

    def _covered(self, ts: float) -> None:
        if self.latest is None or ts > self.latest:
            self.latest = ts

    async def _connected(self) -> bool:
        """A producer (connected now if need be); False, counted, when Kafka cannot be
        reached."""
        if self.producer is None:
            try:
                self.producer = await asyncio.wait_for(self.connect(), self.send_timeout)
                self.partitions = len(await self.producer.partitions_for(self.topic)) or 1
            except Exception as e:  # noqa: BLE001 - any failure to connect: keep buffering
                await self._close()
                self._failed(e)
                return False
        return True

    async def mark(self, force: bool = False) -> None:
        """A ``watermark`` marker on every partition when one is due (``force``: now), only
        while nothing waits in the buffer (a marker covers every sweep before it)."""
        if self.marker_interval is None or self.buffer:
            return
        now = self.clock()
        last = self.last_round
        if not force and last is not None and now - last < self.marker_interval:
            return
        if not await self._connected():
            return
        value = encode_marker(self.source, WATERMARK, self.latest, now)
        try:
            futs = [
                await self.producer.send(self.topic, value, key=b"marker", partition=p)
                for p in range(self.partitions)
            ]
            await asyncio.wait_for(asyncio.gather(*futs), self.send_timeout)
        except Exception as e:  # noqa: BLE001 - tried again at the next round
            await self._close()
            self._failed(e)
            return
        self.last_round = now
        self.stats.markers += len(futs)

    async def flush(self) -> None:
        """Send the buffer, oldest first, each sweep removed only once acknowledged; stop at
        the first failure (the rest waits for the next sweep)."""
        if not self.buffer:
            return
        if not await self._connected():
            return
        while self.buffer:
            sw = self.buffer[0]
            p = zlib.crc32(sw.node.encode()) % self.partitions
            try:
                fut = await self.producer.send(
                    self.topic, sw.value, key=sw.node.encode(), partition=p
                )
                await asyncio.wait_for(fut, self.send_timeout)
            except Exception as e:  # noqa: BLE001 - keep the sweep, reconnect next time
                await self._close()
                self._failed(e)
                return
            self.buffer.popleft()
            self.stats.sent_sweeps += 1
            self.stats.sent_samples += sw.samples
            self._covered(sw.ts)
        if self.empty_at is not None:  # every sweep before it is sent: it is covered too
            self._covered(self.empty_at)

    async def close(self) -> None:
        await self._close()


async def run_sampler(
    sampler: Any,
    shipper: SampleKafkaShipper,
    period: float,
    count: int | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Sweep every ``period`` s on a fixed grid (as ``Sampler.run``), queue and send each sweep,
    and the shipper's markers when due (also while it waits); at the end, one last try to send
    what is buffered."""
    stop = stop or asyncio.Event()
    clock = getattr(sampler, "clock", time.time)
    step = shipper.marker_interval or period
    t0 = time.monotonic()
    k = 0
    while not stop.is_set():
        at = clock()  # the sweep's samples are at or after it
        shipper.push(await asyncio.to_thread(sampler.sweep), at)
        await shipper.flush()
        await shipper.mark()
        k += 1
        if count is not None and k >= count:
            break
        now = time.monotonic()
        nxt = t0 + period * (int((now - t0) / period) + 1)
        while not stop.is_set() and (left := nxt - time.monotonic()) > 0:
            try:
                await asyncio.wait_for(stop.wait(), timeout=min(left, step))
            except TimeoutError:
                pass
            await shipper.mark()
    await shipper.flush()
