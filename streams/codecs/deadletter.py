"""Dead letters: one rejected record or message and why (schema ``dead-letter.v1.json``).

``{"source", "line", "reason", "text"}`` and, for a rejected Kafka message, ``topic``,
``partition``, ``offset``; for a record that made a stage raise, ``error``: the exception on one
line (``reason`` stays a short key to count by). Every message fits in ``MIN_MESSAGE_BYTES``
(its longest texts cut, saying so). The fields are a public contract and carry no ``"v"``: the
version is the schema's (1); a decoder refuses a message that names another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from models.jsonbytes import json_bytes
from models.records.reject import Reject
from streams.codecs.base import (
    MIN_MESSAGE_BYTES,
    CodecError,
    check_version,
    fit_object,
    load_object,
)

VERSION = 1
TEXT_BYTES = 4096  # a rejected message's text: its first 4 KiB


@dataclass(frozen=True, slots=True)
class DeadLetter:
    reject: Reject
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    error: str | None = None


def dead_letter_message(
    r: Reject,
    *,
    topic: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """A dead-letter message value (see DEAD_LETTER_SCHEMA); topic, partition and offset: where
    a rejected message was read; error: the exception a stage raised on it."""
    d: dict[str, Any] = {"source": r.source, "line": r.lineno, "reason": r.reason, "text": r.text}
    if topic is not None:
        d["topic"] = topic
    if partition is not None:
        d["partition"] = partition
    if offset is not None:
        d["offset"] = offset
    if error is not None:
        d["error"] = error
    return d


def encode_dead_letter(
    r: Reject,
    *,
    topic: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
    error: str | None = None,
) -> bytes:
    """:func:`dead_letter_message` as JSON, at most ``MIN_MESSAGE_BYTES`` (in a block of its
    own size: kept until sent)."""
    d = dead_letter_message(r, topic=topic, partition=partition, offset=offset, error=error)
    return fit_object(d, MIN_MESSAGE_BYTES, json_bytes)


def message_text(value: bytes) -> str:
    """A rejected message's ``text``: its first TEXT_BYTES bytes, undecodable bytes replaced."""
    return value[:TEXT_BYTES].decode("utf-8", "replace")


_FIELDS = {"source": str, "line": int, "reason": str, "text": str}
_WHERE = {"topic": str, "partition": int, "offset": int, "error": str}


def decode_dead_letter(value: bytes) -> DeadLetter:
    """A dead-letter message; CodecError for anything :func:`dead_letter_message` does not
    write, or a ``"v"`` other than 1."""
    d = load_object(value, "dead letter")
    check_version(d, "dead letter", VERSION, missing_ok=True)
    for k, t in (*_FIELDS.items(), *_WHERE.items()):
        if (k in d or k in _FIELDS) and type(d.get(k)) is not t:
            raise CodecError("bad_message", f"dead letter: {k!r} is not {t.__name__}")
    extra = d.keys() - _FIELDS.keys() - _WHERE.keys() - {"v"}
    if extra:
        raise CodecError("bad_message", f"dead letter: unknown field {', '.join(sorted(extra))}")
    r = Reject(d["reason"], d["source"], d["line"], d["text"])
    return DeadLetter(r, d.get("topic"), d.get("partition"), d.get("offset"), d.get("error"))
