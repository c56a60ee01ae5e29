"""The Moab follower's cut (streams/ship/moab.py ``_whole_lines``): what it ships of a
growing file are whole lines that end at LF, CRLF or a bare CR, as ``bytes.splitlines`` cuts,
however the appends fall (a CR last in what is there yet waits for the byte after it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.ship.moab import _whole_lines
from tests.streams.sources.test_files import line_bytes, lines_of


@settings(max_examples=1000, deadline=None)
@given(data=line_bytes, appends=st.lists(st.integers(0, 9), max_size=30))
def test_what_the_follower_ships_is_the_files_lines(data: bytes, appends: list[int]) -> None:
    shipped: list[bytes] = []
    offset = written = 0
    for n in appends:  # a poll: the file has grown by n bytes; ship its whole lines
        written = min(len(data), written + n)
        whole = _whole_lines(data[offset:written], final=False)
        assert len(whole) <= written - offset
        shipped.append(whole)
        offset += len(whole)  # the follower's checkpoint: a byte offset in the file
    shipped.append(_whole_lines(data[offset:], final=True))  # rotated away: the rest
    for part in shipped[:-1]:
        assert not part or part.endswith(b"\n")
    assert sum(map(len, shipped)) == len(data)
    assert lines_of(shipped) == data.splitlines()
