"""Read-ahead: the next items of an iterator made on a thread while the caller works on this
one (the replay reads and tokenizes the next Moab chunk while it accounts the current one: the
file read and the compiled tokenizer release the GIL, so the two cores both work).

Items come in order; at most ``depth`` wait. An exception on the thread is raised in the caller
at the item where it happened. Closing the generator (or leaving its ``closing`` block) stops the
thread and waits for it, so whatever the thread reads (an open file) can be closed after."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Generic, TypeVar, cast

T = TypeVar("T")
_END = object()


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class ReadAhead(Generic[T]):
    """The items of ``make()``, produced on a thread started at once, up to ``depth`` ahead;
    iterate, then :meth:`close` (which also stops a thread whose items were never taken)."""

    def __init__(self, make: Callable[[], Iterator[T]], depth: int = 1) -> None:
        self._q: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._t = threading.Thread(target=self._run, args=(make,), name="read-ahead", daemon=True)
        self._t.start()

    def _put(self, x: object) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(x, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, make: Callable[[], Iterator[T]]) -> None:
        try:
            for item in make():
                if not self._put(item):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
            self._put(_Failed(e))
            return
        self._put(_END)

    def __iter__(self) -> ReadAhead[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        x = self._q.get()
        if x is _END:
            self._done = True
            raise StopIteration
        if isinstance(x, _Failed):
            self._done = True
            raise x.error
        return cast(T, x)

    def close(self) -> None:
        """Stop the thread and wait for it (so what it reads can be closed after); again: no-op."""
        self._done = True
        self._stop.set()
        while self._t.is_alive():
            try:  # let a thread blocked on a full queue see the stop
                self._q.get(timeout=0.05)
            except queue.Empty:
                pass
        self._t.join()


def read_ahead(make: Callable[[], Iterator[T]], depth: int = 1) -> Generator[T, None, None]:
    """The items of ``make()``, produced on a thread (started at the first item taken) up to
    ``depth`` items ahead."""
    ra = ReadAhead(make, depth)
    try:
        yield from ra
    finally:
        ra.close()
