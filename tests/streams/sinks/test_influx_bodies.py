"""``request_bodies`` (streams/sinks/influx.py): the request bodies of a write, per writer by
series, compiled (native/src/lineproto.rs) and in Python, the same bytes."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.sinks import influx
from streams.sinks.influx import request_bodies

native = pytest.mark.skipif(influx._native_bodies is None, reason="drainwatch_native not built")

series = st.sampled_from(["m,a=1", "m,a=2", "m", "n,t=x\\ y", "jobs,cluster=c", "ü,k=v"])
lines = st.one_of(
    st.builds(lambda s, f, t: f"{s} v={f} {t}", series, st.integers(0, 9), st.integers(0, 99)),
    st.sampled_from(["", None, "bare"]),
)


def _python(points: list[Any], writers: int, batch: int) -> list[list[bytes]]:
    saved = influx._native_bodies
    influx._native_bodies = None
    try:
        return request_bodies(points, writers, batch)
    finally:
        influx._native_bodies = saved


@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=40), st.integers(1, 4), st.integers(1, 7))
def test_bodies_keep_each_series_on_one_writer_in_order(
    points: list[Any], writers: int, batch: int
) -> None:
    got = _python(points, writers, batch)
    assert len(got) == writers
    kept = [p for p in points if p]
    for w, bodies in enumerate(got):
        assert all(0 < b.count(b"\n") + 1 <= batch for b in bodies)
        part = [x.decode() for b in bodies for x in b.split(b"\n")]
        want = [p for p in kept if zlib.crc32(p.split(" ", 1)[0].encode()) % writers == w]
        assert part == want  # the writer's lines, in the points' order


@native
@settings(max_examples=300, deadline=None)
@given(st.lists(lines, max_size=40), st.integers(1, 4), st.integers(1, 7))
def test_the_compiled_bodies_are_the_python_bodies(
    points: list[Any], writers: int, batch: int
) -> None:
    assert request_bodies(points, writers, batch) == _python(points, writers, batch)
