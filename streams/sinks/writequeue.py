"""Points written in the order they are handed over, by one background thread.

The live job and sample paths hand their InfluxDB points over as soon as enough wait, from
inside the combiner's own processing (no ``await``), instead of at a flush that needs the
event loop: a combiner step that releases a lagging partition's backlog runs without yielding, and
InfluxDB must not wait idle for it. A flush hands over what is left
and awaits :meth:`WriteQueue.barrier`, which resolves once everything handed over before it
is written; only then is the state saved and the input acked (the drain path's invariant).

The first failed write (``InfluxSink.write`` retries what can be retried, so a failure is
final: points InfluxDB refuses) is kept: later writes are skipped and every barrier fails
with it, so nothing handed over after it is written out of order; the worker stops, and its
input, not acked, comes again after a restart.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any


class WriteQueue:
    def __init__(self, write: Callable[[Sequence[Any]], None], name: str = "points") -> None:
        self._write = write
        self._name = name
        self._q: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.handed = 0  # points handed over
        self.written = 0  # points written

    def _started(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"write-{self._name}", daemon=True
            )
            self._thread.start()

    def submit(self, points: Sequence[Any]) -> None:
        """Write ``points`` after everything handed over before them (returns at once)."""
        if points:
            self._started()
            self.handed += len(points)
            self._q.put(("write", points))

    def barrier(self) -> asyncio.Future[None]:
        """A future of the running loop: done once every point handed over before this call
        is written; its exception is the first failed write's."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._started()
        self._q.put(("barrier", (loop, fut)))
        return fut

    def close(self, timeout: float | None = None) -> None:
        """Stop the thread once what was handed over is written."""
        if self._thread is not None:
            self._q.put(("stop", None))
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while True:
            kind, item = self._q.get()
            if kind == "stop":
                return
            if kind == "write":
                if self.error is None:
                    try:
                        self._write(item)
                        self.written += len(item)
                    except BaseException as e:  # kept: every later barrier fails with it
                        self.error = e
                continue
            loop, fut = item
            try:
                loop.call_soon_threadsafe(_settle, fut, self.error)
            except RuntimeError:  # the loop has closed: nobody waits any more
                pass


def _settle(fut: asyncio.Future[None], error: BaseException | None) -> None:
    if fut.done():  # cancelled: its flush was stopped
        return
    if error is None:
        fut.set_result(None)
    else:
        fut.set_exception(error)
