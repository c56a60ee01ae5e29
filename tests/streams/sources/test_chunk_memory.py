"""Moab chunk sizes bounded by memory (issue 31, class 6): ``--chunk-mb`` is lowered so that the
chunks in flight take at most a share of the memory available, the read-ahead holds a bounded
number of bytes, and a chunk that spans more than ``bounds.max_jump`` without a stray record
is not read again line by line (its cost grew with the chunk's size)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.records.nodestatus import Codebook
from models.records.plausible import TimeBounds
from streams.sources import moab as moab_source
from streams.sources import prefetch
from streams.sources.prefetch import (
    AHEAD_BYTES,
    CHUNK_MEMORY,
    DEPTH,
    MEMORY_SHARE,
    MIN_CHUNK_BYTES,
    chunk_bytes_for_memory,
    chunk_mb_for_memory,
    depth,
    memory_available,
)

MB = 1 << 20


@given(st.integers(1, 1024), st.one_of(st.none(), st.integers(0, 1 << 40)))
def test_chunks_in_flight_fit_the_memory_share(requested_mb: int, available: int | None) -> None:
    """Never above the request; the chunks in flight (one accounted, one being cut, the
    read-ahead's) fit the share of the memory available, or the chunk is the 1 MiB floor;
    unknown memory leaves the request alone."""
    c = chunk_bytes_for_memory(requested_mb * MB, available)
    assert min(MIN_CHUNK_BYTES, requested_mb * MB) <= c <= requested_mb * MB
    if available is None:
        assert c == requested_mb * MB
    elif c > MIN_CHUNK_BYTES:
        assert (depth(c) + 2) * c * CHUNK_MEMORY <= available * MEMORY_SHARE
    more = chunk_bytes_for_memory(requested_mb * MB, None if available is None else 2 * available)
    assert more >= c  # more memory never gives a smaller chunk


def test_read_ahead_is_bounded_in_bytes() -> None:
    assert depth(8 * MB) == DEPTH  # the default chunk keeps its read-ahead
    assert depth(1024 * MB) == 1 and depth(AHEAD_BYTES) == 1
    assert all(depth(c) * c <= max(AHEAD_BYTES, c) for c in range(MB, 1025 * MB, 7 * MB))


def test_memory_available_is_known_here_and_lowers_1024_on_a_small_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    avail = memory_available()
    assert avail is not None and avail > 0  # Linux: /proc/meminfo
    monkeypatch.setattr(prefetch, "memory_available", lambda: 2 << 30)
    mb, note = chunk_mb_for_memory(1024)
    assert mb == 85 and note is not None
    assert note == (
        "--chunk-mb 1024 lowered to 85: the chunks in flight take at most 25% of the 2,048 MB "
        "of memory available"
    )
    assert chunk_mb_for_memory(8) == (8, None)
    monkeypatch.setattr(prefetch, "memory_available", lambda: None)
    assert chunk_mb_for_memory(1024) == (1024, None)


def _lines(hours: list[float]) -> bytes:
    return b"".join(
        f"2015-03-{1 + int(h // 24):02d}T{int(h % 24):02d}:00:00.000-0600 10000 INFO  "
        f"Node 'n{i % 7}' status: state='Idle' rsvlist='none' joblist='none'\n".encode()
        for i, h in enumerate(hours)
    )


def test_a_chunk_spanning_more_than_max_jump_is_not_read_line_by_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Records every hour over 10 days, ``max_jump`` 2 days: the chunk spans more than the
    jump, but no record strays from the others, so nothing is rejected and the chunk is not
    read again line by line; a record that does stray still is (and only it is rejected)."""
    bounds = TimeBounds(max_jump_ms=2 * 86_400_000)
    even = _lines([float(h) for h in range(240)])
    want = moab_source.parse_plausible(even, Codebook(), TimeBounds(), "x", 1)

    def line_by_line(text: str) -> None:
        raise AssertionError("read again line by line")

    with monkeypatch.context() as m:
        m.setattr(moab_source, "classify_line", line_by_line)
        got = moab_source.parse_plausible(even, Codebook(), bounds, "x", 1)
    assert got.rejects == want.rejects == []
    assert got.batch.ts_ms.tolist() == want.batch.ts_ms.tolist()
    assert got.lines == want.lines
    stray = _lines([*[float(h) for h in range(48)], 24.0 * 9, *[48.0 + h for h in range(48)]])
    got = moab_source.parse_plausible(stray, Codebook(), bounds, "x", 1)
    assert [(r.reason, r.lineno) for r in got.rejects] == [("time_jump", 49)]
