"""Shipper markers on the input topics (node-status, job-events, node-samples): one versioned
codec for all three.

A marker tells the worker how far a shipper's input has got (issue 30, "Source watermarks")::

    {"control": "watermark" | "end", "v": 2, "source": "<shipper id>",
     "ts": <latest event time sent, POSIX s, or null>, "sent": <shipper's wall clock, POSIX s>}

* ``watermark``: every event of ``source`` on this partition up to ``ts`` was sent before it
  (same producer, same partition: Kafka keeps the order), so the partition is at ``ts`` as far
  as that shipper goes; sent every ``worker.marker_interval`` and when a shipper stops.
* ``end``: ``source``'s finite input ended: it sends nothing more on this partition.
* ``sent`` is the shipper's own clock: the worker compares it only with other markers' (a
  shipper silent for ``worker.shipper_timeout`` of them stops counting).

A marker is its own message, never mixed with records, and its bytes start with
``{"control":`` (:data:`PREFIX`): a worker tells it from data by a prefix compare, without
parsing (a job event or sample line starts with another key; a node-status slice with
``{"v"``). The release before markers sent on node-status only the end-of-input message
``{"v": 1, "source": ..., "control": "flush"}`` (:func:`encode_flush`): it still reads, as an
``end`` (:func:`decode_control`). Schema: ``streams/schemas/node-status.v1.json`` and its peers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from streams.codecs.base import CodecError, check_version

VERSION = 2  # of the marker; the flush message of version 1 is still read
FLUSH = "flush"  # version 1's end of input (node-status)
WATERMARK = "watermark"
END = "end"
ACTIONS = (WATERMARK, END, FLUSH)
PREFIX = b'{"control":'  # what every marker this release writes starts with
_MAX_BYTES = 8192  # a marker is a few dozen bytes; a bigger message is not looked into
_FIELDS = {"control", "v", "source", "ts", "sent"}


@dataclass(frozen=True, slots=True)
class Marker:
    """A shipper's marker: ``action`` (watermark, end; flush is version 1's end), its
    ``source`` (the shipper's id), its latest event time ``ts`` (None: none sent yet, or a
    version 1 flush) and its send time ``sent`` (the shipper's clock; None for a flush)."""

    source: str
    action: str
    ts: float | None = None
    sent: float | None = None

    @property
    def end(self) -> bool:
        """The shipper's input ended (an ``end``, or version 1's ``flush``)."""
        return self.action != WATERMARK


Control = Marker  # its former name


def encode_marker(source: str, action: str, ts: float | None, sent: float) -> bytes:
    """A marker (``action`` WATERMARK or END) of shipper ``source`` at its latest event time
    ``ts`` (POSIX s, None before its first event), sent at ``sent`` (its wall clock)."""
    if action not in (WATERMARK, END):
        raise ValueError(f"marker action {action!r}")
    return orjson.dumps({"control": action, "v": VERSION, "source": source, "ts": ts, "sent": sent})


def encode_flush(source: str) -> bytes:
    """Version 1's end-of-input message of ``source`` (e.g. ``moab:<file>``): still read."""
    return orjson.dumps({"v": 1, "source": source, "control": FLUSH})


def is_marker(value: bytes) -> bool:
    """``value`` is a marker of this release (a prefix compare: no parsing)."""
    return value[:11] == PREFIX


def decode_marker(value: bytes) -> Marker | None:
    """The marker ``value`` holds (:func:`is_marker`), or None for any other message (data:
    decode it with the topic's decoder). A marker of another version, action or fields raises
    CodecError (dead-letter it). Version 1's flush is read by :func:`decode_control`."""
    if value[:11] != PREFIX:
        return None
    if len(value) >= _MAX_BYTES:
        raise CodecError("bad_message", "marker: larger than a marker can be")
    try:
        d = orjson.loads(value)
    except orjson.JSONDecodeError as e:
        raise CodecError("bad_json", f"marker: {e}") from None
    if type(d) is not dict:
        raise CodecError("bad_message", "marker: not an object")
    check_version(d, "marker", VERSION, missing_ok=False)
    return marker_from(d, "marker")


def marker_from(d: dict[str, Any], what: str) -> Marker:
    """The marker of a decoded object (a marker's, or a partials entry's without ``"v"``)."""
    action, source, ts, sent = d.get("control"), d.get("source"), d.get("ts"), d.get("sent")
    if action not in (WATERMARK, END):
        raise CodecError("bad_message", f"{what}: unknown action {action!r}")
    if set(d) - {"v"} != _FIELDS - {"v"}:
        raise CodecError("bad_message", f"{what}: fields are control, v, source, ts, sent")
    if type(source) is not str or not source:
        raise CodecError("bad_message", f"{what}: 'source' must be a non-empty string")
    if ts is not None and type(ts) not in (int, float) or type(sent) not in (int, float):
        raise CodecError("bad_message", f"{what}: 'ts' must be a number or null, 'sent' a number")
    assert sent is not None
    return Marker(source, action, None if ts is None else float(ts), float(sent))


def marker_obj(m: Marker) -> dict[str, Any]:
    """``m`` as an object without its version (a jobs-partials entry: the partials' version
    covers it)."""
    return {"control": m.action, "source": m.source, "ts": m.ts, "sent": m.sent}


def decode_control(value: bytes) -> Marker | None:
    """The marker ``value`` holds on node-status: a marker of this release, or version 1's
    flush (``{"v": 1, "source", "control": "flush"}``); None for any other message (a slice:
    decode it with :class:`streams.codecs.nodestatus.Decoder`). A marker of another version,
    or with an action or source this release does not know, raises CodecError."""
    if value[:11] == PREFIX:
        return decode_marker(value)
    if len(value) >= _MAX_BYTES or b'"control"' not in value:
        return None
    try:
        d = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None  # not a control message: the slice decoder names what is wrong
    if type(d) is not dict or "control" not in d:
        return None
    if d.get("v") == VERSION and d["control"] != FLUSH:  # a marker, its keys reordered
        return marker_from(d, "marker")
    check_version(d, "control message", 1, missing_ok=False)
    action, source = d["control"], d.get("source")
    if action != FLUSH:
        raise CodecError("bad_message", f"control message: unknown action {action!r}")
    if type(source) is not str or set(d) != {"v", "source", "control"}:
        raise CodecError("bad_message", "control message: fields are v, source, control")
    return Marker(source, FLUSH)
