"""What every codec shares: the error a decoder raises and the checks of a JSON message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson


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
