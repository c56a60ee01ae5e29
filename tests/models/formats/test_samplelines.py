"""Sample trace lines read into columns (models/formats/samplelines.py): the compiled pass
takes a line only where ``sample_row`` gives the same values, and leaves every other line to
it, so a block reads the same with and without the compiled module, bit for bit, rejects and
their reasons included."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats import samplelines
from models.formats.samplelines import parse_lines
from models.formats.sampletrace import dumps, sample_row
from models.records.nodesample import NodeSample

pytestmark = pytest.mark.skipif(
    samplelines._native is None,
    reason="native/ is not built (no Rust toolchain): no compiled reader to compare; the Python "
    "reader alone is checked against parse_trace in test_parsers_fuzz.py",
)

GOOD = NodeSample(
    1704067200.25,
    "J1",
    4242,
    "n001",
    "app",
    10,
    9,
    8,
    7,
    1,
    2,
    3,
    4,
    99.5,
    5,
    6,
    start=1704067100.0,
    cores=4,
    job_class="normal",
    wchar=12,
)


def _same(data: bytes) -> samplelines.ParsedLines:
    got, want = parse_lines(data), parse_lines(data, native=False)
    assert got.batch.to_dict() == want.batch.to_dict()
    for k in ("ts", "start", "core"):  # equal bits (to_dict's == would take -0.0 for 0.0)
        assert getattr(got.batch, k).tobytes() == getattr(want.batch, k).tobytes()
    assert got.bounds.tolist() == want.bounds.tolist()
    assert [r[:3] for r in got.rejects] == [r[:3] for r in want.rejects]
    return got


def test_the_common_line_is_taken_by_the_compiled_pass() -> None:
    line = dumps(GOOD)
    st_, *_ = samplelines._native(line + b"\n" + line)  # type: ignore[misc]
    assert st_ == b"\x01\x01"
    p = _same(line + b"\n\n  \n" + line + b"\n")
    assert len(p.batch) == 2 and p.rejects == []
    s = p.batch.to_samples()[0]
    assert (
        s.ts,
        s.job,
        s.pid,
        s.node,
        s.write_bytes,
        s.read_bytes,
        s.core,
        s.vm_rss_kb,
        s.vm_swap_kb,
        s.start,
        s.cores,
    ) == (GOOD.ts, "J1", 4242, "n001", 4, 3, 99.5, 8, 7, GOOD.start, 4)
    assert p.bounds.tolist() == [[0, len(line)], [len(line) + 5, 2 * len(line) + 5]]


@pytest.mark.parametrize(
    "line",
    [
        b'{"ts": 1, "job": "J", "node": "n", "pid": 1.0}',  # integral float: Python decides
        b'{"ts": 1, "job": "J\\u0031", "node": "n"}',  # an escape
        b'{"ts": 1, "job": "J", "node": "n", "extra": [1, {"a": null}]}',  # unknown key
        b'{"ts": 1, "job": "J", "node": "n", "ts": 2}',  # a key twice: the last counts
        b'{"ts": 1, "job": "J", "node": "n", "fs": {"home": [1.5, 0]}}',
        b'{"ts": 1, "job": "J", "node": "n", "write_bytes": -1}',  # negative
        b'{"ts": 1, "job": "J", "node": "n", "pid": 9223372036854775808}',  # past int64
        b'{"ts": 1e999, "job": "J", "node": "n"}',
        b'{"ts": 1, "job": "J", "node": "n", "core": 819200.5}',  # past the physical bound
        b'{"ts": 1, "job": "", "node": "n"}',
        b'{"ts": 1, "job": "J\xc3\xa9", "node": "n\xf0\x9f\x92\xbb"}',  # UTF-8
        b'{"ts": 1, "job": "J\xff", "node": "n"}',  # not UTF-8
        b'{"ts": 1, "job": "J", "node": "n"}\r{"ts": 2, "job": "J", "node": "n"}',
        b'{"ts": 1, "job": "J", "node": "n"} x',
        b'{"ts": 01, "job": "J", "node": "n"}',
        b'{"ts": 1., "job": "J", "node": "n"}',
        b"[1, 2]",
        b"{}",
        b'\x0b{"ts": 1, "job": "J", "node": "n"}',
        b'{"ts": true, "job": "J", "node": "n"}',
        b'{"ts": 1, "job": "J", "node": "n", "wchar": null}',
    ],
)
def test_lines_the_pass_leaves_to_python_read_as_python_reads_them(line: bytes) -> None:
    good = dumps(GOOD)
    _same(good + b"\n" + line + b"\n" + good)


_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(0, 2e9),
    st.integers(0, 2**64),
    st.sampled_from([0.1, 1e-320, 5e-324, 1.7976931348623157e308, 2**53 + 1, 1704067200.123456]),
)
_INTS = st.one_of(st.integers(0, 2**63 + 10), st.integers(-5, 5), st.floats(0, 10))
_STRS = st.one_of(st.text(max_size=4), st.sampled_from(["J1", "n001", "", "é", "a\\b", 'q"q']))
_ANY = st.one_of(_FLOATS, _INTS, _STRS, st.none(), st.booleans(), st.just([1, 2]))
_KEYS = [
    "ts",
    "job",
    "pid",
    "node",
    "command",
    "vmPeak",
    "vmSize",
    "vmRss",
    "vmSwap",
    "syscr",
    "syscw",
    "read_bytes",
    "write_bytes",
    "core",
    "receive",
    "transmit",
    "start",
    "cores",
    "class",
    "wchar",
]
_KIND = {
    "ts": _FLOATS,
    "core": _FLOATS,
    "start": _FLOATS,
    "job": _STRS,
    "node": _STRS,
    "command": _STRS,
    "class": _STRS,
}


def _value(v: object) -> bytes:
    try:
        return orjson.dumps(v)
    except TypeError:
        return str(v).encode()  # integers past 64 bits


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    keys = draw(st.lists(st.sampled_from([*_KEYS, "fs", "other"]), max_size=22))
    if draw(st.booleans()):
        keys = ["ts", "job", "node", *keys]
    parts = []
    for k in keys:
        v = draw(_ANY) if draw(st.integers(0, 9)) == 0 else draw(_KIND.get(k, _INTS))
        text = _value(v)
        if isinstance(v, float) and draw(st.booleans()):
            text = repr(v).encode()  # Python's spelling (inf, nan: not JSON)
        sep = draw(st.sampled_from([b":", b": ", b" :\t"]))
        parts.append(orjson.dumps(k) + sep + text)
    glue = draw(st.sampled_from([b",", b", ", b" ,"]))
    line = b"{" + glue.join(parts) + b"}"
    return (
        draw(st.sampled_from([b"", b" ", b"\t"]))
        + line
        + draw(st.sampled_from([b"", b" ", b"\r", b" x", b","]))
    )


_PLAIN = {
    "ts": st.one_of(st.floats(0, 4e9), st.integers(0, 2**60)),
    "core": st.one_of(st.floats(0, 819200.0), st.integers(0, 819201)),
    "start": st.one_of(st.floats(0, 4e9), st.integers(0, 4 * 10**9)),
    "cores": st.integers(0, 8193),
    "vmRss": st.integers(0, 2**40 + 1),
    "job": st.text(min_size=1, max_size=6),
    "node": st.text(min_size=1, max_size=6),
    "command": st.text(max_size=6),
    "class": st.text(max_size=3),
}


@st.composite
def _near_line(draw: st.DrawFn) -> bytes:
    """A good common line (keys in any order, optional ones left out, values of any size),
    now and then with one change."""
    keys = ["ts", "job", "node"] + [k for k in _KEYS[3:] if draw(st.booleans())]
    if draw(st.booleans()):
        keys.insert(2, "pid")
    keys = draw(st.permutations(keys))
    d = {k: draw(_PLAIN.get(k, st.integers(0, 2**63 - 1))) for k in keys}
    change = draw(st.integers(0, 5))
    if change == 1:
        d[draw(st.sampled_from(keys))] = draw(_ANY)
    line = b"{" + b",".join(orjson.dumps(k) + b":" + _value(v) for k, v in d.items()) + b"}"
    if change == 2:
        line = line[:-1] + b',"' + draw(st.sampled_from(keys + ["fs", "x"])).encode() + b'":1}'
    elif change == 3:
        k = draw(st.integers(0, len(line)))
        line = line[:k] + draw(st.sampled_from([b" ", b"\t", b"\r", b"\x0b", b"-"])) + line[k:]
    return line


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(_line(), _near_line(), _near_line()), min_size=1, max_size=6),
    st.sampled_from([b"\n", b"\r\n", b"\n\n"]),
)
def test_generated_lines_read_the_same_with_and_without_the_pass(
    lines: list[bytes], nl: bytes
) -> None:
    p = _same(nl.join(lines))
    # and each sample is what sample_row makes of its line
    for row, (a, b) in zip(p.batch.to_samples(), p.bounds.tolist(), strict=True):
        want = sample_row(nl.join(lines)[a:b])
        assert (row.ts, row.job, row.pid, row.node, row.write_bytes, row.core) == (
            want[0],
            want[1],
            want[2],
            want[3],
            want[12],
            want[13],
        )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=20))
def test_floats_read_to_the_same_bits(xs: list[float]) -> None:
    lines = [
        b'{"ts":%s,"job":"J","node":"n","core":%s}'
        % (repr(abs(x)).encode(), repr(min(abs(x), 8e5)).encode())
        for x in xs
    ]
    p = _same(b"\n".join(lines))
    assert p.batch.ts.tolist() == [abs(x) for x in xs]
    assert all(not math.isnan(c) for c in p.batch.core.tolist())
    assert np.array_equal(p.batch.core, [min(abs(x), 8e5) for x in xs])
