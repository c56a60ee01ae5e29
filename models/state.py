"""Versioned, data-only state documents: what the live worker saves and restores.

A document is ``MAGIC`` + a 4-byte big-endian header length + a JSON header + a NumPy ``.npz``
archive. The header names the state's ``kind`` and ``version`` and holds the state as a tree
of plain values (None, bool, int, float, str, lists, dicts with str keys); the tree's NumPy
arrays are stored in the archive (numeric and fixed-width string dtypes only, read with
``allow_pickle=False``) and referenced from the tree as ``{"$a": index}``. Non-finite floats
are ``{"$f": "nan" | "inf" | "-inf"}``, bytes ``{"$b": "<base64>"}``. Tuples are written as
lists: a ``restore`` converts what it needs back.

Nothing read runs code: no pickle, no class names, no eval. A document that is truncated,
of another kind, of an unknown version or not well formed raises :class:`StateFormatError`
with a one-line reason.
"""

from __future__ import annotations

import base64
import io
import math
import struct
import zipfile
from collections.abc import Collection
from typing import Any

import numpy as np
import orjson

MAGIC = b"DWST"
_HEAD = struct.Struct(">I")
_MAX_HEADER = 1 << 30
_KINDS = frozenset("biufcSUM")  # numpy dtype kinds a state may hold (no objects, no voids)


class StateFormatError(ValueError):
    """A state document that cannot be restored; ``str(e)`` is a one-line reason."""


def pack(kind: str, version: int, tree: Any) -> bytes:
    """The document for ``tree`` (see the module docstring for what a tree may hold)."""
    arrays: list[np.ndarray] = []
    header = {"kind": kind, "version": version, "state": _encode(tree, arrays)}
    head = orjson.dumps(header)
    buf = io.BytesIO()
    if arrays:
        np.savez(buf, *arrays)
    return MAGIC + _HEAD.pack(len(head)) + head + buf.getvalue()


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
    arrays = _arrays(data[8 + n :], kind)
    return int(version), _decode(header["state"], arrays, kind)


def _arrays(blob: bytes, kind: str) -> list[np.ndarray]:
    if not blob:
        return []
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            out = [z[f"arr_{i}"] for i in range(len(z.files))]
    except (ValueError, OSError, KeyError, EOFError, zipfile.BadZipFile) as e:
        raise StateFormatError(f"{kind} state: bad array archive ({e})") from None
    for a in out:
        if a.dtype.kind not in _KINDS:
            raise StateFormatError(f"{kind} state: array of dtype {a.dtype} refused")
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
    if isinstance(v, bytes | bytearray | memoryview):
        return {"$b": base64.b64encode(bytes(v)).decode()}
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
        if k == "$b":
            try:
                return base64.b64decode(x, validate=True)
            except (ValueError, TypeError):
                raise StateFormatError(f"{kind} state: bad bytes value") from None
    if any(k.startswith("$") for k in v):
        raise StateFormatError(f"{kind} state: unknown marker in {sorted(v)[:3]}")
    return {k: _decode(x, arrays, kind) for k, x in v.items()}
