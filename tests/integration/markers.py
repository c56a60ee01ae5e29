"""Shipper markers on a job-events topic read back (the tests' checks): data messages and
markers apart, and the rules a finite file's markers keep."""

from __future__ import annotations

import orjson

from streams.codecs.control import Marker, decode_marker, is_marker

Message = tuple[bytes | None, bytes, int]  # key, value, partition (kafka_read.read_topic)


def data_messages(got: list[Message]) -> list[Message]:
    """The messages of ``got`` that are not markers."""
    return [m for m in got if not is_marker(m[1])]


def markers(got: list[Message]) -> dict[int, list[Marker]]:
    """Per partition, its markers in order."""
    out: dict[int, list[Marker]] = {}
    for _, v, p in got:
        if is_marker(v):
            m = decode_marker(v)
            assert m is not None
            out.setdefault(p, []).append(m)
    return out


def times(value: bytes) -> list[float]:
    """The event times of a job-events message (JSON lines)."""
    return [float(orjson.loads(line)["ts"]) for line in value.split(b"\n")]


def check_file_markers(got: list[Message], partitions: int) -> int:
    """A finite input's markers on every one of ``partitions``: keyed ``marker``, of one
    shipper, each after every event it covers (its ``ts`` at or past them) and before every
    later one (whose times are past its ``ts``), times never going back, and one ``end`` last.
    Returns how many markers there are."""
    by_part: dict[int, list[Message]] = {}
    for m in got:
        by_part.setdefault(m[2], []).append(m)
    assert sorted(by_part) == list(range(partitions))
    sources = set()
    n = 0
    for msgs in by_part.values():
        assert is_marker(msgs[-1][1]), "the end of input comes last"
        seen = claimed = float("-inf")
        ends = 0
        for k, v, _ in msgs:
            if not is_marker(v):
                ts = times(v)
                assert min(ts) > claimed, "an event behind a marker sent before it"
                seen = max(seen, *ts)
                continue
            mk = decode_marker(v)
            assert mk is not None and k == b"marker" and mk.ts is not None
            assert mk.ts >= seen and mk.ts >= claimed
            claimed = mk.ts
            ends += mk.end
            sources.add(mk.source)
            n += 1
        last = decode_marker(msgs[-1][1])
        assert ends == 1 and last is not None and last.end
    assert len(sources) == 1, sources
    return n
