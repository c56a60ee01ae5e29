"""What every codec shares: the error a decoder raises, the checks of a JSON message, and the
size bound of what the worker sends (``kafka.message_max_bytes``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

# The default of ``kafka.message_max_bytes``: no message the worker sends is larger.
MESSAGE_MAX_BYTES = 900_000
# Its smallest allowed value: a message of one row, alert or dead letter is made to fit this,
# so it fits whatever the setting says without knowing it.
MIN_MESSAGE_BYTES = 65_536


class CodecError(ValueError):
    """A message a decoder refuses. ``reason`` is a short stable key (the dead-letter reason):

    * ``bad_json``: not JSON (or not the binary form the topic carries);
    * ``bad_message``: not the shape of its kind (a field missing, of the wrong type...);
    * ``bad_version``: a version this release does not read;
    * ``old_generation``: a format only an earlier drainwatch wrote, refused by name.

    ``str(e)`` is one line: ``<reason>: <detail>``."""

    def __init__(self, reason: str, detail: str) -> None:
        detail = " ".join(detail.split())  # one line whatever the detail holds
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def load_object(value: bytes, what: str) -> dict[str, Any]:
    """``value`` as a JSON object, or CodecError (bad_json, bad_message)."""
    try:
        d = orjson.loads(value)
    except orjson.JSONDecodeError as e:
        raise CodecError("bad_json", f"{what}: {e}") from None
    if type(d) is not dict:
        raise CodecError("bad_message", f"{what}: not a JSON object")
    return d


def check_version(d: Mapping[str, Any], what: str, version: int, missing_ok: bool) -> None:
    """``d["v"]`` is ``version``; absent is ``version`` too where ``missing_ok`` (a layout that
    was written before it carried its version, the same otherwise)."""
    v = d.get("v")
    if v is None and missing_ok and "v" not in d:
        return
    if type(v) is not int or v != version:
        raise CodecError("bad_version", f"{what}: v={v!r}, this release reads {version}")


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}


def _fits(x: Any, prop: Mapping[str, Any]) -> bool:
    if "const" in prop:
        return type(x) is type(prop["const"]) and x == prop["const"]
    if "enum" in prop:
        return any(type(x) is type(e) and x == e for e in prop["enum"])
    t = prop.get("type")
    if t is None:
        return True
    kinds = t if isinstance(t, list) else [t]
    for k in kinds:
        # bool is an int to Python, not to JSON Schema
        if isinstance(x, _TYPES[k]) and (k == "boolean" or type(x) is not bool):
            return True
    return False


def check_fields(d: Mapping[str, Any], schema: Mapping[str, Any], what: str) -> None:
    """The top level of ``d`` against a topic's JSON Schema: every required field, no field it
    does not declare (where it says so), each value of its declared type, enum or const. The
    full schema is checked by the tests; this is what a consumer needs to trust the fields."""
    props: Mapping[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", ()) if k not in d]
    if missing:
        raise CodecError("bad_message", f"{what}: missing {', '.join(missing)}")
    if schema.get("additionalProperties") is False:
        extra = [k for k in d if k not in props]
        if extra:
            raise CodecError("bad_message", f"{what}: unknown field {', '.join(extra[:3])}")
    for k, x in d.items():
        prop = props.get(k)
        if prop is not None and not _fits(x, prop):
            raise CodecError("bad_message", f"{what}: {k!r} is {type(x).__name__} {x!r:.40}")


# ---- size bounds ----------------------------------------------------------------------------
def _json_len(text: str) -> int:
    return len(orjson.dumps(text)) - 2  # without the quotes


def cut_text(text: str, max_bytes: int) -> str:
    """``text`` whole if its JSON fits ``max_bytes`` bytes; else its start and a marker saying
    what was cut (``...[cut: kept N of M bytes]``), the whole at most ``max_bytes`` in JSON
    (at least the marker's own ~40 bytes)."""
    total = _json_len(text)
    if total <= max_bytes:
        return text
    lo, hi = 0, len(text)  # the longest prefix whose JSON fits beside the marker
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _json_len(text[:mid]) + _json_len(_mark(mid, total)) <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + _mark(lo, total)


def _mark(kept: int, total: int) -> str:
    return f"...[cut: kept {kept} chars of {total} bytes]"


def _texts(x: Any, path: tuple[Any, ...], out: list[tuple[int, tuple[Any, ...], bool]]) -> None:
    """(JSON length, path, is a key) of every text in ``x``: values and object keys."""
    if type(x) is str:
        out.append((_json_len(x), path, False))
    elif type(x) is dict:
        for k, v in x.items():
            out.append((_json_len(k), (*path, k), True))
            _texts(v, (*path, k), out)
    elif type(x) is list:
        for i, v in enumerate(x):
            _texts(v, (*path, i), out)


def _get(d: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        d = d[k]
    return d


def _cut(d: Any, path: tuple[Any, ...], is_key: bool, max_bytes: int) -> int:
    """Cut the text at ``path`` in ``d`` (a key: renamed in place, its order kept) to
    ``max_bytes``; returns the JSON bytes saved."""
    parent, last = _get(d, path[:-1]), path[-1]
    old = last if is_key else parent[last]
    new = cut_text(old, max_bytes)
    if is_key:
        items = [(new if k == last else k, v) for k, v in parent.items()]
        parent.clear()
        parent.update(items)
    else:
        parent[last] = new
    return _json_len(old) - _json_len(new)


def fit_object(
    d: dict[str, Any], max_bytes: int, dump: Callable[[Any], bytes] = orjson.dumps
) -> bytes:
    """``d`` as JSON (``dump``) of at most ``max_bytes``: whole when it fits, else with its
    longest texts (values, or object keys) cut (:func:`cut_text`, the marker says so) until it
    does; ``d`` is left as it was. ValueError when even the texts cut to their markers do not
    fit (its numbers alone too large: never for a row, an alert or a dead letter)."""
    value = dump(d)
    if len(value) <= max_bytes:
        return value
    cut = orjson.loads(orjson.dumps(d))  # a copy: lists and dicts of plain values
    texts: list[tuple[int, tuple[Any, ...], bool]] = []
    _texts(cut, (), texts)
    # the longest first; the keys of an object before the texts inside it (a key renamed
    # changes the paths below it, so those are not cut after it)
    texts.sort(key=lambda t: (-t[0], len(t[1])))
    size = len(value)
    renamed: list[tuple[Any, ...]] = []
    for n, path, is_key in texts:
        if size <= max_bytes:
            break
        if any(path[: len(r)] == r for r in renamed):
            continue
        size -= _cut(cut, path, is_key, max(0, n - (size - max_bytes)))
        if is_key:
            renamed.append(path)
    value = dump(cut)
    if len(value) > max_bytes:
        raise ValueError(f"a message of {len(value)} bytes does not fit {max_bytes} bytes")
    return value
