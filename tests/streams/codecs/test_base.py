"""The shared error and checks of the codecs."""

from __future__ import annotations

from typing import Any

import pytest

from streams.codecs import CodecError
from streams.codecs.base import check_fields, check_version, load_object


def test_a_codec_error_is_one_line_with_its_reason() -> None:
    e = CodecError("bad_json", "unexpected character:\n  line 1 column 2")
    assert isinstance(e, ValueError)
    assert e.reason == "bad_json" and e.detail == "unexpected character: line 1 column 2"
    assert str(e) == "bad_json: unexpected character: line 1 column 2"


@pytest.mark.parametrize(
    ("value", "reason"), [(b"", "bad_json"), (b"{", "bad_json"), (b"[1]", "bad_message")]
)
def test_load_object_refuses_what_is_not_a_json_object(value: bytes, reason: str) -> None:
    with pytest.raises(CodecError) as e:
        load_object(value, "x")
    assert e.value.reason == reason


def test_versions() -> None:
    check_version({"v": 1}, "x", 1, missing_ok=False)
    check_version({}, "x", 1, missing_ok=True)
    for d in ({"v": 2}, {"v": True}, {"v": "1"}, {"v": None}, {}):
        with pytest.raises(CodecError) as e:
            check_version(d, "x", 1, missing_ok=False)
        assert e.value.reason == "bad_version"
    with pytest.raises(CodecError):
        check_version({"v": None}, "x", 1, missing_ok=True)  # present and null: not absent


SCHEMA = {
    "required": ["a"],
    "additionalProperties": False,
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": ["number", "null"]},
        "c": {"enum": ["x", "y"]},
        "d": {"const": 1},
    },
}


@pytest.mark.parametrize(
    "d",
    [
        {},
        {"a": 1.5},
        {"a": True},
        {"a": 1, "b": "2"},
        {"a": 1, "c": "z"},
        {"a": 1, "d": True},
        {"a": 1, "e": 0},
    ],
)
def test_check_fields_refuses_what_the_schema_does_not_allow(d: dict[str, Any]) -> None:
    with pytest.raises(CodecError) as e:
        check_fields(d, SCHEMA, "x")
    assert e.value.reason == "bad_message"


def test_check_fields_takes_what_the_schema_allows() -> None:
    check_fields({"a": 1, "b": None, "c": "y", "d": 1}, SCHEMA, "x")
    check_fields({"a": 1, "b": 2}, SCHEMA, "x")
