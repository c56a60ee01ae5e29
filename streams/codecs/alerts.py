"""Alert state changes on ``alerts`` (schema ``alerts.v1.json``, version ``"v": 1``).

``{"v": 1, "cluster", <models.alerts.Alert's fields>, "since_iso", "at_iso"}``: the alert's
times also as ISO 8601 UTC text. The fields are a public contract.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from models.alerts import Alert
from models.jsonbytes import json_bytes
from streams.codecs.base import (
    MIN_MESSAGE_BYTES,
    check_fields,
    check_version,
    fit_object,
    load_object,
)
from streams.format import instant
from streams.topics import ALERTS_SCHEMA

VERSION = 1


@dataclass(frozen=True, slots=True)
class AlertMessage:
    cluster: str
    alert: Alert


def alert_message(cluster: str, a: Alert) -> dict[str, Any]:
    return {
        "v": VERSION,
        "cluster": cluster,
        **a.to_dict(),
        "since_iso": instant(a.since),
        "at_iso": instant(a.at),
    }


def encode_alert(cluster: str, a: Alert) -> bytes:
    """:func:`alert_message` as JSON (in a block of its own size: kept until sent), at most
    MIN_MESSAGE_BYTES: a text too long for it (a subject, a detail) is cut, marked so."""
    return fit_object(alert_message(cluster, a), MIN_MESSAGE_BYTES, json_bytes)


_ALERT_FIELDS = tuple(f.name for f in fields(Alert))


def decode_alert(value: bytes) -> AlertMessage:
    """An alert message; CodecError for another version or a field the schema does not allow."""
    d = load_object(value, "alert")
    check_version(d, "alert", VERSION, missing_ok=False)
    check_fields(d, ALERTS_SCHEMA, "alert")
    return AlertMessage(d["cluster"], Alert(**{k: d[k] for k in _ALERT_FIELDS}))
