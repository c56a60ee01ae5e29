"""Reading and writing the parts of a state tree (models/state.py) the stages share: typed
scalars read back with checks, columns of numbers, strings and optional values.

Every ``*_in`` checks what it reads and raises :class:`~models.state.StateFormatError` (or a
TypeError/ValueError) rather than building a wrong state. NumPy is loaded at first use: the
command line's parser imports the models for their defaults and must stay light.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from itertools import repeat
from operator import is_not
from typing import TYPE_CHECKING, Any, TypeVar

from models.state import LazyModule, StateFormatError

K = TypeVar("K")
V = TypeVar("V")

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    np = LazyModule("numpy")


def int_in(x: Any) -> int:
    """An int of a state tree (not a bool, not a float)."""
    if type(x) is not int:
        raise StateFormatError(f"expected an int, got {type(x).__name__}")
    return x


def float_in(x: Any) -> float:
    """A float of a state tree (an int is taken as its float)."""
    if type(x) is not float and type(x) is not int:
        raise StateFormatError(f"expected a number, got {type(x).__name__}")
    return float(x)


def str_in(x: Any) -> str:
    if type(x) is not str:
        raise StateFormatError(f"expected a string, got {type(x).__name__}")
    return x


def bool_in(x: Any) -> bool:
    if type(x) is not bool:
        raise StateFormatError(f"expected a bool, got {type(x).__name__}")
    return x


def opt_int_in(x: Any) -> int | None:
    return None if x is None else int_in(x)


def opt_float_in(x: Any) -> float | None:
    return None if x is None else float_in(x)


def list_in(x: Any, n: int | None = None) -> list[Any]:
    """A list of a state tree (a tuple too: a tree not read back from a document), of ``n``
    items when given."""
    if type(x) is not list and type(x) is not tuple:
        raise StateFormatError(f"expected a list, got {type(x).__name__}")
    if n is not None and len(x) != n:
        raise StateFormatError(f"expected {n} items, got {len(x)}")
    return list(x)


def dict_in(x: Any) -> dict[str, Any]:
    if type(x) is not dict:
        raise StateFormatError(f"expected a mapping, got {type(x).__name__}")
    return x


_ARRAY_KINDS = {"i": "i", "f": "f", "b": "b"}  # signed only: a uint64 would wrap in int64


def array_in(x: Any, kind: str, n: int | None = None) -> NDArray[Any]:
    """A one-dimensional array of a state tree: ``kind`` "i" (integers, as int64), "f"
    (float64) or "b" (bool), of ``n`` items when given."""
    if not isinstance(x, np.ndarray) or x.ndim != 1:
        raise StateFormatError(f"expected a one-dimensional array, got {type(x).__name__}")
    if x.dtype.kind not in _ARRAY_KINDS[kind]:
        raise StateFormatError(f"expected an array of kind {kind!r}, got {x.dtype}")
    if n is not None and len(x) != n:
        raise StateFormatError(f"expected {n} items, got {len(x)}")
    if kind == "i":
        return x.astype(np.int64, copy=False)
    if kind == "f":
        return x.astype(np.float64, copy=False)
    return x


def ints_in(x: Any, n: int | None = None) -> list[int]:
    out: list[int] = array_in(x, "i", n).tolist()
    return out


def floats_in(x: Any, n: int | None = None) -> list[float]:
    out: list[float] = array_in(x, "f", n).tolist()
    return out


def ints_out(values: Iterable[int]) -> NDArray[np.int64]:
    return np.fromiter(values, np.int64)


def floats_out(values: Iterable[float]) -> NDArray[np.float64]:
    return np.fromiter(values, np.float64)


def strs_out(values: Collection[str | None]) -> dict[str, Any]:
    """Strings (or None) as ``{"text": the distinct ones joined, "len": their lengths,
    "code": each value's index among them, -1 for None}``."""
    seen: dict[str | None, None] = dict.fromkeys(values)
    seen.pop(None, None)
    vocab: list[str] = list(seen)  # type: ignore[arg-type]
    text = "".join(vocab)  # TypeError for anything but strings
    n, k = len(values), len(vocab)
    if k == n:  # all distinct, no None (job ids): the codes are their places
        code = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    else:
        index: dict[str | None, int] = dict(zip(vocab, range(k), strict=True))
        index[None] = -1
        code = np.fromiter(map(index.__getitem__, values), np.int32 if k < 2**31 else np.int64, n)
    return {"text": text, "len": np.fromiter(map(len, vocab), np.int64, k), "code": code}


def strs_in(tree: Any, n: int | None = None, none: bool = False) -> list[str | None]:
    """The strings of :func:`strs_out` (None only where ``none``), ``n`` of them when given."""
    t = dict_in(tree)
    text = str_in(t["text"])
    lens = array_in(t["len"], "i")
    code = array_in(t["code"], "i", n)
    if len(lens) and lens.min() < 0 or int(lens.sum()) != len(text):
        raise StateFormatError("string column: lengths do not add up to its text")
    ends = np.cumsum(lens).tolist()
    vocab: list[str | None] = [text[a:b] for a, b in zip([0, *ends], ends, strict=False)]
    if len(code) and (code.min() < (-1 if none else 0) or code.max() >= len(vocab)):
        raise StateFormatError("string column: a code outside its strings")
    vocab.append(None)  # code -1
    return list(map(vocab.__getitem__, code.tolist()))


def by_key(keys: Sequence[K], values: Iterable[V], what: str) -> dict[K, V]:
    """keys -> values, each key once (else the state is malformed: ``what`` names it)."""
    out = dict(zip(keys, values, strict=True))
    if len(out) != len(keys):
        raise StateFormatError(f"{what}: a key twice")
    return out


def keys_in(tree: Any, n: int | None = None) -> list[str]:
    """The strings of :func:`strs_out` without None (keys of a mapping)."""
    return strs_in(tree, n)  # type: ignore[return-value]


def opt_ints_out(values: Collection[int | None]) -> dict[str, Any]:
    """Integers or None as ``{"value": int64 (0 for None), "set": bool}``."""
    n = len(values)
    return {
        "value": np.fromiter((0 if v is None else v for v in values), np.int64, n),
        "set": np.fromiter(map(is_not, values, repeat(None)), np.bool_, n),
    }


def _nones(values: list[Any], is_set: NDArray[Any]) -> list[Any]:
    for i in np.flatnonzero(~is_set).tolist():
        values[i] = None
    return values


def opt_ints_in(tree: Any, n: int | None = None) -> list[int | None]:
    t = dict_in(tree)
    value = array_in(t["value"], "i", n)
    return _nones(value.tolist(), array_in(t["set"], "b", len(value)))


def opt_floats_out(values: Collection[float | None]) -> dict[str, Any]:
    """Floats or None as ``{"value": float64 (0.0 for None), "set": bool}``."""
    n = len(values)
    return {
        "value": np.fromiter((0.0 if v is None else v for v in values), np.float64, n),
        "set": np.fromiter(map(is_not, values, repeat(None)), np.bool_, n),
    }


def opt_floats_in(tree: Any, n: int | None = None) -> list[float | None]:
    t = dict_in(tree)
    value = array_in(t["value"], "f", n)
    return _nones(value.tolist(), array_in(t["set"], "b", len(value)))


def ragged_out(lists: Collection[Collection[Any]]) -> NDArray[np.int64]:
    """The lengths of ``lists`` (their items go flat into a column of their own)."""
    return np.fromiter(map(len, lists), np.int64, len(lists))


def ragged_in(lens: Any, flat: Sequence[Any], n: int | None = None) -> list[Any]:
    """``flat`` cut into runs of the lengths ``lens`` (:func:`ragged_out`): lists of a list,
    tuples of a tuple."""
    k = array_in(lens, "i", n)
    if len(k) and k.min() < 0 or int(k.sum()) != len(flat):
        raise StateFormatError("ragged column: lengths do not add up to its items")
    ends = np.cumsum(k).tolist()
    return [flat[a:b] for a, b in zip([0, *ends], ends, strict=False)]


def bools_out(values: Iterable[bool], n: int = -1) -> NDArray[np.bool_]:
    return np.fromiter(values, np.bool_, n)
