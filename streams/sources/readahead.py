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
from typing import TypeVar, cast

T = TypeVar("T")
_END = object()


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def read_ahead(make: Callable[[], Iterator[T]], depth: int = 1) -> Generator[T, None, None]:
    """The items of ``make()``, produced on a thread up to ``depth`` items ahead."""
    q: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(x: object) -> bool:
        while not stop.is_set():
            try:
                q.put(x, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in make():
                if not put(item):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
            put(_Failed(e))
            return
        put(_END)

    t = threading.Thread(target=run, name="read-ahead", daemon=True)
    t.start()
    try:
        while True:
            x = q.get()
            if x is _END:
                return
            if isinstance(x, _Failed):
                raise x.error
            yield cast(T, x)
    finally:
        stop.set()
        while t.is_alive():
            try:  # let a thread blocked on a full queue see the stop
                q.get(timeout=0.05)
            except queue.Empty:
                pass
        t.join()
