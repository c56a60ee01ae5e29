"""The end-of-input control message on node-status: ``{"v": 1, "source": ..., "control":
"flush"}``.

A shipper reading finite files sends one per partition after the last slice; the worker then
accounts the records it holds for reordering and lets every window up to the latest record
close (:meth:`models.drain.live.PartitionDrain.end_of_input`). It shares node-status's schema
(``streams/schemas/node-status.v1.json``) and version.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from streams.codecs.base import CodecError, check_version

VERSION = 1
FLUSH = "flush"
ACTIONS = (FLUSH,)
_MAX_BYTES = 8192  # a control message is a few dozen bytes; a slice is not looked into


@dataclass(frozen=True, slots=True)
class Control:
    source: str
    action: str  # one of ACTIONS


def encode_flush(source: str) -> bytes:
    """The end-of-input message of ``source`` (the shipper's source name, e.g. ``moab:<file>``)."""
    return orjson.dumps({"v": VERSION, "source": source, "control": FLUSH})


def decode_control(value: bytes) -> Control | None:
    """The control message ``value`` holds, or None for any other message (a slice: decode it
    with :class:`streams.codecs.nodestatus.Decoder`). A control message of another version, or
    with an action or source this release does not know, raises CodecError."""
    if len(value) >= _MAX_BYTES or b'"control"' not in value:
        return None
    try:
        d = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None  # not a control message: the slice decoder names what is wrong
    if type(d) is not dict or "control" not in d:
        return None
    check_version(d, "control message", VERSION, missing_ok=False)
    action, source = d["control"], d.get("source")
    if action not in ACTIONS:
        raise CodecError("bad_message", f"control message: unknown action {action!r}")
    if type(source) is not str or set(d) != {"v", "source", "control"}:
        raise CodecError("bad_message", "control message: fields are v, source, control")
    return Control(source, action)
