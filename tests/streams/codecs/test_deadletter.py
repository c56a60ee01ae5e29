"""Dead letters: the public fields, round trip, refusals; the old home writes the same."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from models.records.reject import Reject
from streams.codecs.deadletter import (
    DeadLetter,
    dead_letter_message,
    decode_dead_letter,
    encode_dead_letter,
    message_text,
)
from tests.streams.codecs.helpers import refused, validator

_rejects = st.builds(
    Reject, st.text(max_size=12), st.text(max_size=12), st.integers(0, 2**40), st.text(max_size=60)
)
_where = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {
            "topic": st.text(max_size=10),
            "partition": st.integers(0, 999),
            "offset": st.integers(0, 2**62),
        }
    ),
)


@settings(max_examples=80, deadline=None)
@given(_rejects, _where)
def test_round_trip_and_schema(r: Reject, where: dict[str, object]) -> None:
    value = encode_dead_letter(r, **where)
    doc = orjson.loads(value)
    validator("dead-letter").validate(doc)
    # the fields in one order whatever the call's (every caller passes topic, partition, offset)
    where = {k: where[k] for k in ("topic", "partition", "offset") if k in where}
    assert value == orjson.dumps(dead_letter_message(r, **where))
    assert doc == dead_letter_message(r, **where)
    assert decode_dead_letter(value) == DeadLetter(r, **where)


def test_the_fields_are_the_public_contract() -> None:
    r = Reject("bad_timestamp", "moab.log", 7, "2014-13-01 ...")
    want = {"source": "moab.log", "line": 7, "reason": "bad_timestamp", "text": "2014-13-01 ..."}
    want |= {"topic": "t", "partition": 3, "offset": 99}
    assert orjson.loads(encode_dead_letter(r, topic="t", partition=3, offset=99)) == want
    assert message_text(b"\xff" + b"x" * 5000) == "\ufffd" + "x" * 4095


def test_refusals() -> None:
    good = {"source": "s", "line": 1, "reason": "r", "text": "t"}
    refused(decode_dead_letter, b"\x00", "bad_json")
    refused(decode_dead_letter, orjson.dumps({**good, "v": 2}), "bad_version")
    refused(decode_dead_letter, orjson.dumps({**good, "line": "1"}), "bad_message", "'line'")
    refused(decode_dead_letter, orjson.dumps({**good, "offset": None}), "bad_message")
    refused(decode_dead_letter, orjson.dumps({**good, "extra": 1}), "bad_message", "extra")
    del good["text"]
    refused(decode_dead_letter, orjson.dumps(good), "bad_message", "'text'")
