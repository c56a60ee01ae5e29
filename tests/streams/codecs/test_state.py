"""The worker-state snapshot manifest."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.codecs.state import Manifest, decode_manifest, encode_manifest
from tests.streams.codecs.helpers import refused, validator

_manifests = st.builds(
    Manifest,
    st.text("0123456789abcdef", min_size=32, max_size=32),
    st.integers(1, 10**6),
    st.integers(0, 2**50),
    st.sampled_from(["a", "b"]),
)
SID = "0123456789abcdef" * 2


@settings(max_examples=50, deadline=None)
@given(_manifests)
def test_round_trip_and_schema(m: Manifest) -> None:
    value = encode_manifest(m)
    doc = orjson.loads(value)
    validator("worker-state").validate(doc)
    assert doc["v"] == 1
    assert decode_manifest(value) == m


def test_a_manifest_written_before_versions_reads() -> None:
    old = orjson.dumps({"id": SID, "chunks": 2, "bytes": 5, "gen": "b"})
    validator("worker-state").validate(orjson.loads(old))
    assert decode_manifest(old) == Manifest(SID, 2, 5, "b")


@pytest.mark.parametrize(
    ("change", "reason", "word"),
    [
        ({"v": 2}, "bad_version", "v=2"),
        ({"id": "xyz"}, "bad_message", "'id'"),
        ({"chunks": 0}, "bad_message", "'chunks'"),
        ({"bytes": "5"}, "bad_message", "'bytes'"),
        ({"gen": "c"}, "bad_message", "'gen'"),
        ({"gen": None}, "bad_message", "'gen'"),
    ],
)
def test_refusals(change: dict[str, object], reason: str, word: str) -> None:
    good = {"v": 1, "id": SID, "chunks": 2, "bytes": 5, "gen": "a"}
    refused(decode_manifest, orjson.dumps({**good, **change}), reason, word)
    refused(decode_manifest, b"\x80\x04", "bad_json")
