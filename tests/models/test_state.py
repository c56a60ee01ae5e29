"""State documents (models/state.py): a tree of plain values and arrays comes back as it went;
anything else (truncated, another kind, an unknown version, a pickle, an object array, a
crafted array table) is refused with a one-line reason and runs nothing."""

from __future__ import annotations

import math
import pickle
import struct
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.state import MAGIC, StateFormatError, pack, unpack

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
)
arrays = st.one_of(
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6).map(lambda v: np.array(v, np.int64)),
    st.lists(st.floats(), max_size=6).map(lambda v: np.array(v, np.float64)),
    st.lists(st.booleans(), max_size=6).map(lambda v: np.array(v, np.bool_)),
    st.lists(st.text(max_size=4), min_size=1, max_size=4).map(np.array),
)
keys = st.text(max_size=6).filter(lambda k: not k.startswith("$"))
trees = st.recursive(
    st.one_of(scalars, arrays),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(keys, kids, max_size=4)),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and (a.tobytes() == b.tobytes())
        )
    if isinstance(a, float):
        return isinstance(b, float) and (a == b or (math.isnan(a) and math.isnan(b)))
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(trees)
def test_a_tree_comes_back_as_it_went(tree: Any) -> None:
    version, back = unpack(pack("jobs", 3, tree), "jobs", (1, 2, 3))
    assert version == 3 and _same(tree, back)


def test_tuples_come_back_as_lists() -> None:
    assert unpack(pack("k", 1, {"t": (1, (2, "x"))}), "k", (1,))[1] == {"t": [1, [2, "x"]]}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (pickle.dumps({"x": 1}), "a pickle"),
        (b"garbage", "not a state document"),
        (MAGIC + b"\x00", "truncated header"),
        (MAGIC + struct.pack(">I", 99) + b"{}", "truncated"),
        (MAGIC + struct.pack(">I", 3) + b"{x}", "header is not JSON"),
        (pack("drain", 1, {}), "holds 'drain'"),
        (pack("jobs", 9, {}), "version 9 is not one this release reads (1)"),
    ],
)
def test_what_is_refused_and_why(data: bytes, reason: str) -> None:
    with pytest.raises(StateFormatError) as e:
        unpack(data, "jobs", (1,))
    assert reason in str(e.value) and "\n" not in str(e.value)


def _crafted(arrays: list[Any], state: Any, blob: bytes) -> bytes:
    head = orjson.dumps({"kind": "k", "version": 1, "arrays": arrays, "state": state})
    return MAGIC + struct.pack(">I", len(head)) + head + blob


@pytest.mark.parametrize(
    ("arrays", "state", "blob", "reason"),
    [
        ([["|O", [1], 0, 8]], {"$a": 0}, b"\x00" * 8, "dtype object refused"),
        ([["<i8", [2], 0, 16]], {"$a": 0}, b"\x00" * 8, "truncated"),
        ([["<i8", [3], 0, 16]], {"$a": 0}, b"\x00" * 16, "in 16 B"),
        ([["<i8", [-2], 0, -16]], {"$a": 0}, b"", "in -16 B"),
        ([], {"$a": 0}, b"", "reference to array 0 of 0"),
        ([], {"$f": "pi"}, b"", "bad float"),
        ([], {"$x": 1}, b"", "unknown marker"),
        ("no", {}, b"", "array table is not a list"),
    ],
)
def test_crafted_documents_are_refused(arrays: Any, state: Any, blob: bytes, reason: str) -> None:
    with pytest.raises(StateFormatError) as e:
        unpack(_crafted(arrays, state, blob), "k", (1,))
    assert reason in str(e.value)


def test_only_plain_values_and_arrays_are_written() -> None:
    with pytest.raises(TypeError):
        pack("k", 1, {"x": object()})
    with pytest.raises(TypeError):
        pack("k", 1, {"x": np.array([object()])})
    with pytest.raises(TypeError):
        pack("k", 1, {1: "int key"})
    with pytest.raises(TypeError):
        pack("k", 1, {"$a": 0})
