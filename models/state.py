"""Versioned, data-only state documents: what the live worker saves and restores.

A document is ``MAGIC`` + a 4-byte big-endian header length + a JSON header + the arrays'
bytes. The header names the state's ``kind`` and ``version`` and holds the state as a tree of
plain values (None, bool, int, float, str, lists, dicts with str keys); the tree's NumPy arrays
(numeric and fixed-width string dtypes only: never objects) follow the header, each described
in it by dtype, shape and byte range, and are referenced from the tree as ``{"$a": index}``.
Non-finite floats are ``{"$f": "nan" | "inf" | "-inf"}``; bytes are stored raw like an array of
``uint8`` and referenced as ``{"$y": index}``. Tuples
are written as lists: a ``restore`` converts what it needs back.

Nothing read runs code: no pickle, no class names, no eval. A document that is truncated,
of another kind, of an unknown version or not well formed raises :class:`StateFormatError`
with a one-line reason.
"""

from __future__ import annotations

import importlib
import math
import struct
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import orjson


class LazyModule:
    """A module imported when one of its names is first read: the command line's parser
    imports the models for their defaults, and NumPy costs it a tenth of a second."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")

MAGIC = b"DWST"
_HEAD = struct.Struct(">I")
_MAX_HEADER = 1 << 30
_KINDS = frozenset("biufcSUM")  # numpy dtype kinds a state may hold (no objects, no voids)


class StateFormatError(ValueError):
    """A state document that cannot be restored; ``str(e)`` is a one-line reason."""


def pack(kind: str, version: int, tree: Any) -> bytes:
    """The document for ``tree`` (see the module docstring for what a tree may hold)."""
    arrays: list[np.ndarray] = []
    state = _encode(tree, arrays)
    blobs, layout, at = [], [], 0
    for a in arrays:
        b = np.ascontiguousarray(a).tobytes()
        layout.append([a.dtype.str, list(a.shape), at, len(b)])
        blobs.append(b)
        at += len(b)
    header = {"kind": kind, "version": version, "arrays": layout, "state": state}
    head = orjson.dumps(header)
    return b"".join([MAGIC, _HEAD.pack(len(head)), head, *blobs])


def unpack(data: bytes, kind: str, versions: Collection[int]) -> tuple[int, Any]:
    """(version, tree) of a document of ``kind`` in one of ``versions``; refuses anything
    else with :class:`StateFormatError`."""
    if data[:4] != MAGIC:
        what = (
            "a pickle (drainwatch 0.1 pickled its job and sample states; never restored)"
            if data[:1] == b"\x80"
            else "not a state document"
        )
        raise StateFormatError(f"{kind} state: {what} (no {MAGIC.decode()} header)")
    if len(data) < 8:
        raise StateFormatError(f"{kind} state: truncated header")
    (n,) = _HEAD.unpack_from(data, 4)
    if n > _MAX_HEADER or 8 + n > len(data):
        raise StateFormatError(f"{kind} state: truncated ({len(data)} bytes, header says {n})")
    try:
        header = orjson.loads(data[8 : 8 + n])
    except orjson.JSONDecodeError as e:
        raise StateFormatError(f"{kind} state: header is not JSON ({e})") from None
    if not isinstance(header, dict) or "state" not in header:
        raise StateFormatError(f"{kind} state: header is not a state header")
    if header.get("kind") != kind:
        raise StateFormatError(f"{kind} state: the document holds {header.get('kind')!r}")
    version = header.get("version")
    if not isinstance(version, int) or version not in versions:
        known = ", ".join(str(v) for v in sorted(versions))
        raise StateFormatError(
            f"{kind} state: version {version!r} is not one this release reads ({known})"
        )
    arrays = _arrays(header.get("arrays", []), memoryview(data)[8 + n :], kind)
    return int(version), _decode(header["state"], arrays, kind)


def _arrays(layout: Any, blob: memoryview, kind: str) -> list[np.ndarray]:
    """The arrays the header describes, each checked: a known dtype (numbers or fixed-width
    strings), a shape that matches its byte range, the range inside the document."""
    if not isinstance(layout, list):
        raise StateFormatError(f"{kind} state: the array table is not a list")
    out = []
    for i, entry in enumerate(layout):
        try:
            dtype_s, shape, at, size = entry
            dtype = np.dtype(str(dtype_s))
            shape = tuple(int(d) for d in shape)
            at, size = int(at), int(size)
        except (TypeError, ValueError) as e:
            raise StateFormatError(f"{kind} state: array {i}: bad description ({e})") from None
        if dtype.kind not in _KINDS or dtype.hasobject or dtype.fields is not None:
            raise StateFormatError(f"{kind} state: array {i} of dtype {dtype} refused")
        count = math.prod(shape)
        if min(shape, default=0) < 0 or count * dtype.itemsize != size:
            raise StateFormatError(f"{kind} state: array {i}: {shape} of {dtype} in {size} B")
        if at < 0 or at + size > len(blob):
            raise StateFormatError(f"{kind} state: array {i} is truncated")
        a = np.frombuffer(blob[at : at + size], dtype=dtype, count=count).reshape(shape)
        out.append(a.copy())
    return out


def _encode(v: Any, arrays: list[np.ndarray]) -> Any:
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return {"$f": "nan" if v != v else ("inf" if v > 0 else "-inf")}
    if isinstance(v, list | tuple):
        return [_encode(x, arrays) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str) or k.startswith("$"):
                raise TypeError(f"state keys are str not starting with '$': {k!r}")
            out[k] = _encode(x, arrays)
        return out
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in _KINDS:
            raise TypeError(f"state arrays hold numbers or fixed-width strings, not {v.dtype}")
        arrays.append(v)
        return {"$a": len(arrays) - 1}
    if isinstance(v, np.generic):
        return _encode(v.item(), arrays)
    if isinstance(v, bytes | bytearray | memoryview):  # raw, after the header, as an array's
        arrays.append(np.frombuffer(v, np.uint8))
        return {"$y": len(arrays) - 1}
    raise TypeError(f"a state holds plain values and arrays, not {type(v).__name__}")


_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _decode(v: Any, arrays: list[np.ndarray], kind: str) -> Any:
    if isinstance(v, list):
        return [_decode(x, arrays, kind) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1:
        ((k, x),) = v.items()
        if k == "$a":
            if not isinstance(x, int) or not 0 <= x < len(arrays):
                raise StateFormatError(f"{kind} state: reference to array {x!r} of {len(arrays)}")
            return arrays[x]
        if k == "$f":
            if x not in _FLOATS:
                raise StateFormatError(f"{kind} state: bad float {x!r}")
            return _FLOATS[x]
        if k == "$y":
            if not isinstance(x, int) or not 0 <= x < len(arrays) or arrays[x].dtype != "|u1":
                raise StateFormatError(f"{kind} state: bad bytes reference {x!r}")
            return arrays[x].tobytes()
    if any(k.startswith("$") for k in v):
        raise StateFormatError(f"{kind} state: unknown marker in {sorted(v)[:3]}")
    return {k: _decode(x, arrays, kind) for k, x in v.items()}
