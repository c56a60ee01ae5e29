"""The plain path of parse_sample (the common line, plain type tests) accepts only what the full
checks accept, with the same NodeSample; everything else goes to the full checks, which give
the reason. Generated lines mix good values with the kinds of bad ones the checks know."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.sampletrace import SampleTraceError, _checked, _plain, parse_sample
from models.records.nodesample import MAX_CORE_PCT, MAX_CORES, MAX_MEMORY_KB

_odd = st.sampled_from([None, True, False, -1, 1.5, 2.0, "7", "", float("inf"), [1], {}])
_int = st.one_of(st.integers(0, 2**40), st.just(2**63), st.just(MAX_MEMORY_KB + 1), _odd)
_num = st.one_of(
    st.floats(0, 1e10, allow_nan=False), st.integers(0, 10**9), st.just(MAX_CORE_PCT + 1), _odd
)
_FIELDS = {
    "pid": _int,
    "vmPeak": _int,
    "vmSize": _int,
    "vmRss": _int,
    "vmSwap": _int,
    "syscr": _int,
    "syscw": _int,
    "read_bytes": _int,
    "write_bytes": _int,
    "receive": _int,
    "transmit": _int,
    "ts": _num,
    "core": _num,
    "start": _num,
    "wchar": _int,
    "cores": st.one_of(st.integers(0, 300), st.just(MAX_CORES + 1), _odd),
    "job": st.one_of(st.text(min_size=0, max_size=4), st.integers(0, 99), _odd),
    "node": st.one_of(st.text(min_size=0, max_size=4), _odd),
    "command": st.one_of(st.text(max_size=4), _odd),
    "class": st.one_of(st.text(max_size=4), _odd),
    "fs": st.just({"scratch": [1.0, 0.0]}),
}
_REQUIRED = ("ts", "job", "pid", "node")
_sample = st.fixed_dictionaries(
    {
        "ts": st.one_of(st.floats(1e9, 2e9), _num),
        "job": st.one_of(st.just("12"), _FIELDS["job"]),
        "pid": st.one_of(st.integers(1, 99), _int),
        "node": st.one_of(st.just("n1"), _FIELDS["node"]),
    },
    optional={k: v for k, v in _FIELDS.items() if k not in _REQUIRED},
)


@settings(max_examples=600, deadline=None)
@given(_sample)
def test_plain_path_agrees_with_the_full_checks(d: dict) -> None:
    try:
        want = _checked(d)
    except SampleTraceError:
        want = None
    got = _plain(d)
    if got is not None:
        assert got == want
    line = orjson.dumps(d)  # JSON has no inf: compare with the line's own full check
    try:
        want_line = _checked(orjson.loads(line))
    except SampleTraceError:
        want_line = None
    try:
        assert parse_sample(line) == want_line
    except SampleTraceError:
        assert want_line is None


def test_a_plain_line_takes_the_plain_path() -> None:
    d = {"ts": 1.7e9, "job": "1", "pid": 4, "node": "n", "write_bytes": 10, "core": 50.0}
    assert _plain(d) is not None and _plain(d) == _checked(d)
    assert _plain({**d, "fs": {"a": [1.0, 0.0]}}) is None  # per-file-system speeds: checked
    assert _plain({**d, "pid": 4.0}) is None and _checked({**d, "pid": 4.0}) == _checked(d)
