"""What the codec tests share: each topic's schema validator, and the refusal check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from streams.codecs import CodecError
from streams.topics import TOPICS


def validator(topic: str) -> jsonschema.Draft202012Validator:
    """The JSON Schema validator of ``topic`` (its name without the prefix) as declared in
    streams/topics.py, as tests/streams/test_topics.py uses them."""
    schema = next(t.schema for t in TOPICS if t.name == topic)
    return jsonschema.Draft202012Validator(schema)


def refused(decode: Callable[[bytes], Any], value: bytes, reason: str, *words: str) -> CodecError:
    """``decode(value)`` raises CodecError with ``reason``, a one-line message naming it (and
    ``words``)."""
    with pytest.raises(CodecError) as e:
        decode(value)
    err = e.value
    assert err.reason == reason, str(err)
    assert isinstance(err, ValueError)
    text = str(err)
    assert "\n" not in text and text.startswith(f"{reason}: ")
    for w in words:
        assert w in text, (w, text)
    return err
