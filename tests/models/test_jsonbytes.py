"""json_bytes: orjson's bytes, copied to a block of their own size."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from models.jsonbytes import json_bytes

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=20,
)


@given(_JSON)
def test_same_bytes_as_orjson(obj: Any) -> None:
    out = json_bytes(obj)
    assert type(out) is bytes
    assert out == orjson.dumps(obj)
    assert orjson.loads(out) == obj
