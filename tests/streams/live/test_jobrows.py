"""The job family's forward step (streams/live/jobs.py ``JobsForward.rows``): the compiled reader
(native/src/jobevents.rs) gives, for the lines it takes, the row Python's path gives (read back
from JSON: the same values of the same types), takes the common line, and never takes a line
Python refuses; a message read either way forwards the same rows and dead-letters the same
lines with the same reasons."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import streams.live.jobs as livejobs
from models.records.jobevent import JobEventError, jobevent_from_row, jobevent_row
from streams.config import load_settings
from streams.live.checkpoint import Outbox
from streams.live.jobs import JobsForward
from tests.models.formats.test_parsers_fuzz import (
    _JOBEVENT_EXTRA,
    FUZZ,
    JOBEVENT,
    junk_text,
    near_jobevent,
)

try:
    from drainwatch_native import jobevent_rows
except ImportError:  # pragma: no cover - CI builds native/
    jobevent_rows = None
needs_native = pytest.mark.skipif(
    jobevent_rows is None,
    reason="native/ is not built: no compiled reader to compare; the Python path is the one "
    "the pipeline test below runs then",
)
NB, NA = 0, 4_102_444_800_000  # the settings' default bounds (ms): 1970 .. 2100


def python_row(line: bytes) -> list[Any] | None:
    try:
        row = jobevent_row(orjson.loads(line))
    except (orjson.JSONDecodeError, JobEventError):
        return None
    return row if NB <= row[1] * 1000 < NA else None


def same_row(got: bytes, want: list[Any]) -> None:
    back = orjson.loads(got)
    assert [type(v) for v in back[:11] + back[12:]] == [
        type(v) for v in want[:11] + want[12:]
    ]  # ints stay ints, floats floats
    assert jobevent_from_row(back) == jobevent_from_row(list(want))


@needs_native
@FUZZ
@given(st.one_of(near_jobevent, junk_text, st.just(json.dumps(JOBEVENT))), _JOBEVENT_EXTRA)
def test_a_line_the_compiled_reader_takes_is_pythons_row(line: str, extra: Any) -> None:
    assert jobevent_rows is not None
    texts = [line]
    try:
        d = orjson.loads(line)
        texts.append(json.dumps({**d, **extra} if isinstance(d, dict) else extra))
    except orjson.JSONDecodeError:
        pass
    for text in texts:
        value = text.encode("utf-8", "surrogatepass")
        lines = value.splitlines() if b"\n" in value else [value]
        got = jobevent_rows(value, float(NB), float(NA))
        assert len(got) == len(lines)
        for g, one in zip(got, lines, strict=True):
            want = python_row(one)
            if g is not None:
                assert want is not None, one  # never a line Python refuses
                same_row(g, want)


@needs_native
@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"end","ts":1700000000.25,"job":"7","user":"u","nodes":2,"cores":64,'
        b'"req_walltime":3600,"node_list":["n1","","n2"],"state":"COMPLETED","exit_code":-1,'
        b'"backfill":true,"reserved_start":1700000000}',
        b'{"type":"submit","ts":1700000000,"job":"j","extra":{"a":[1]}}',  # nested: Python
        b' {"job":"j" , "ts" : -0.0e0 ,"type":"start"}\r',
        b'{"type":"end","ts":1,"job":"a","job":"b"}',  # the last of a repeated key
        b'{"type":"end","ts":1,"job":"\\u00e9"}',  # an escape: Python
        b'{"type":"end","ts":1,"job":"\xc3\xa9","name":"\xf0\x9f\x98\x80"}',
        b'{"type":"end","ts":1e400,"job":"a"}',
        b'{"type":"end","ts":4102444800,"job":"a"}',  # at the upper bound: implausible
        b'{"type":"end","ts":4102444799.9999,"job":"a"}',
        b'{"type":"end","ts":1,"job":"a","nodes":9223372036854775807}',
        b'{"type":"end","ts":1,"job":"a","nodes":9223372036854775808}',
        b'{"type":"end","ts":1,"job":"a","nodes":2.0}',
        b'{"type":"end","ts":1,"job":"a","req_walltime":-0.0}',
        b'{"type":"end","ts":1,"job":"a","exit_code":-9223372036854775808}',
        b'{"type":"end","ts":9007199254740993,"job":"a"}',
        b'{"type":"end","ts":"2024-01-01T00:00:00Z","job":"a"}',
        b'{"type":"end","ts":01,"job":"a"}',
        b'{"type":"end","ts":1,"job":""}',
        b"{}",
        b"[]",
        b"",
        b"   ",
        b'\xef\xbb\xbf{"type":"end","ts":1,"job":"a"}',
    ],
)
def test_chosen_lines(line: bytes) -> None:
    assert jobevent_rows is not None
    [got] = jobevent_rows(line, float(NB), float(NA))
    want = python_row(line)
    if got is not None:
        assert want is not None
        same_row(got, want)


@needs_native
def test_the_common_line_is_taken_and_lines_split_as_splitlines() -> None:
    assert jobevent_rows is not None
    a = orjson.dumps(JOBEVENT)
    value = a + b"\r\n" + b"x" + b"\r" + a + b"\n\n" + a
    got = jobevent_rows(value, float(NB), float(NA))
    assert len(got) == len(value.splitlines()) == 5
    assert [g is not None for g in got] == [True, False, True, False, True]
    assert jobevent_rows(a + b"\r" + a, float(NB), float(NA)) == [None]  # one line: bad JSON
    want = python_row(a)
    assert want is not None
    same_row(got[0], want)


def _pipe() -> tuple[JobsForward, Outbox]:
    """The forward step without an app: settings, counts, and the outbox that keeps its dead
    letters until they are sent (no broker is involved in reading a line)."""
    ctx = SimpleNamespace(settings=load_settings(env={}), counts=Counter())
    return JobsForward(ctx), Outbox()  # type: ignore[arg-type]


@FUZZ
@given(
    st.lists(
        st.one_of(
            near_jobevent, st.just(json.dumps(JOBEVENT)), st.just(""), st.just(" "), junk_text
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_a_message_forwards_the_same_rows_and_dead_letters_either_way(
    lines: list[str], sep: str
) -> None:
    value = sep.join(lines).encode("utf-8", "surrogatepass")
    where = {"topic": "t", "partition": 0, "offset": 5}
    out = {}
    for native in (True, False):
        pipe, box = _pipe()
        saved = livejobs._native_rows
        if not native:
            livejobs._native_rows = None
        try:
            rows = pipe.rows(value, where, box)
        finally:
            livejobs._native_rows = saved
        dead = [(d["reason"], d["text"]) for d in (orjson.loads(v) for _k, v in box.dead)]
        back = [jobevent_from_row(orjson.loads(r)) for r in rows] or None
        counts = pipe.ctx.counts
        out[native] = (back, dead, counts["job_events"], counts["dead_letters"])
    assert out[True] == out[False]
