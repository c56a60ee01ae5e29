"""The read-ahead thread of the Moab replay (streams/sources/readahead.py): items in order, an
error raised where it happened, and a consumer that stops early stops the thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import closing

import pytest

from streams.sources.readahead import read_ahead


def test_items_come_in_order_whatever_the_depth() -> None:
    for depth in (1, 2, 5):
        assert list(read_ahead(lambda: iter(range(1000)), depth)) == list(range(1000))


def test_an_error_on_the_thread_is_raised_after_the_items_before_it() -> None:
    def items() -> Iterator[int]:
        yield 1
        yield 2
        raise OSError("disk gone")

    got = []
    with pytest.raises(OSError, match="disk gone"):
        for x in read_ahead(items):
            got.append(x)
    assert got == [1, 2]


def test_closing_early_stops_the_thread_before_the_source_is_closed() -> None:
    made = []
    closed = threading.Event()

    def items() -> Iterator[int]:
        try:
            for i in range(10**9):
                made.append(i)
                yield i
        finally:
            closed.set()

    before = threading.active_count()
    with closing(read_ahead(items, depth=2)) as it:
        assert [next(it) for _ in range(3)] == [0, 1, 2]
    # the thread has ended (not left reading the source after the caller closed it)
    assert threading.active_count() == before and closed.is_set()
    assert len(made) <= 3 + 2 + 1  # what was taken, what waited, the one being put
