"""Metric-topic messages: ``metrics.drain`` (a window), ``metrics.jobs`` (a job's drain) and the
table-row topics (``metrics.shortjobs``, ``metrics.capability``, ``metrics.dfs``: one output
row each). Every message is ``{"v": 1, "cluster", ...}``; the fields are a public contract,
one JSON Schema per topic (``streams/schemas/metrics.*.v1.json``). A message is one row: at
most MIN_MESSAGE_BYTES, so within any ``kafka.message_max_bytes``; a text too long for that
(a name from the input) is cut, marked so (:func:`streams.codecs.base.fit_object`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from models.drain.live import LiveJob, LiveWindow
from models.jsonbytes import json_bytes
from streams.codecs.base import (
    MIN_MESSAGE_BYTES,
    check_fields,
    check_version,
    fit_object,
    load_object,
)
from streams.contracts import Row, Table
from streams.format import instant, instant_ms
from streams.topics import TOPICS

VERSION = 1
COMBOS = ("none", "job", "rsv", "rsv+job")  # has_rsv * 2 + has_job (seed 000 §III-B.1)


# ---- metrics.drain, metrics.jobs ------------------------------------------------------------
def node_states_seconds(states: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    """State -> node-seconds per (rsv, job) combination that has any."""
    return {
        name: {COMBOS[i]: ms / 1000 for i, ms in enumerate(v) if ms} for name, v in states.items()
    }


def window_message(cluster: str, w: LiveWindow) -> dict[str, Any]:
    """A ``metrics.drain`` message: one window, system-wide."""
    return {
        "v": VERSION,
        "cluster": cluster,
        "window": w.unit,
        "start": instant_ms(w.start_ms),
        "start_ms": w.start_ms,
        "length_ms": w.length_ms,
        "nodes": w.nodes,
        **w.node_seconds(),
        "drain_pct_static": w.drain_pct_static,
        "drain_pct_dynamic": w.drain_pct_dynamic,
        "basis_seconds_per_node": w.basis_seconds_per_node,
        "data_quality": w.data_quality,
        "provisional": w.provisional,
        **({"node_states": node_states_seconds(w.states)} if w.states else {}),
    }


def job_message(cluster: str, j: LiveJob) -> dict[str, Any]:
    """A ``metrics.jobs`` message: the drain charged to one job so far."""
    return {
        "v": VERSION,
        "cluster": cluster,
        "job": j.job,
        "drain_node_seconds": j.drain_ms / 1000,
        "nodes_charged": j.nodes_charged,
        "first_charged": instant_ms(j.first_charged_ms),
        "last_charged": instant_ms(j.last_charged_ms),
        "nodes_running": j.nodes_running,
    }


def encode_window(cluster: str, w: LiveWindow) -> bytes:
    """:func:`window_message` as JSON (in a block of its own size: kept until sent)."""
    return fit_object(window_message(cluster, w), MIN_MESSAGE_BYTES, json_bytes)


def encode_job(cluster: str, j: LiveJob) -> bytes:
    """:func:`job_message` as JSON (in a block of its own size: kept until sent)."""
    return fit_object(job_message(cluster, j), MIN_MESSAGE_BYTES, json_bytes)


# ---- table rows -----------------------------------------------------------------------------
def row_message(cluster: str, table: Table, row: Row) -> dict[str, Any]:
    """A metric-topic message of one row: its columns by name; an instant column as ISO 8601
    UTC, with its POSIX time beside it as ``<name>_s`` (seconds), or ``<name>_ms`` for a
    millisecond column."""
    d: dict[str, Any] = {"v": VERSION, "cluster": cluster}
    for c, v in zip(table.columns, row, strict=True):
        if c.kind in ("instant", "instant_ms"):
            ts = v if v is None or c.kind == "instant" else v / 1000
            d[c.name] = None if ts is None else instant(ts)
            d[c.name + ("_s" if c.kind == "instant" else "_ms")] = v
        else:
            d[c.name] = v
    return d


Builder = Callable[[str, Row, Callable[[Any], str]], dict[str, Any]]


def _message_builder(table: Table) -> Builder:
    """:func:`row_message` for ``table`` as one dict display: (cluster, row, iso) -> message,
    ``iso`` giving an instant column's text (the caller remembers the texts it made)."""
    items = [f'"v": {VERSION}', '"cluster": cluster']
    for i, c in enumerate(table.columns):
        if c.kind == "instant":
            items += [
                f"{c.name!r}: None if r[{i}] is None else iso(r[{i}])",
                f"{c.name + '_s'!r}: r[{i}]",
            ]
        elif c.kind == "instant_ms":
            items += [
                f"{c.name!r}: None if r[{i}] is None else iso(r[{i}] / 1000)",
                f"{c.name + '_ms'!r}: r[{i}]",
            ]
        else:
            items.append(f"{c.name!r}: r[{i}]")
    code = f"def build(cluster, r, iso):\n    return {{{', '.join(items)}}}"
    scope: dict[str, Any] = {}
    exec(code, scope)  # noqa: S102 (code made above from the table's column names)
    return scope["build"]  # type: ignore[no-any-return]


_BUILDERS: dict[str, Builder] = {}


def row_messages(cluster: str, table: Table, rows: Sequence[Row]) -> list[bytes]:
    """:func:`row_message` of each row, as JSON: the same messages (tests/streams/sinks/
    test_lineproto.py), built from one dict display per table, each instant's text made once
    per call (a tick's rows share their time)."""
    build = _BUILDERS.get(table.file)
    if build is None:
        build = _BUILDERS[table.file] = _message_builder(table)
    width = len(table.columns)
    texts: dict[Any, str] = {}

    def iso(ts: Any) -> str:
        t = texts.get(ts)
        if t is None:
            t = texts[ts] = instant(ts)
        return t

    out = []
    for r in rows:
        if len(r) != width:
            raise ValueError(f"{table.file}: a row of {len(r)} columns, not {width}")
        # kept until the flush sends them: in a block of its own size
        out.append(fit_object(build(cluster, r, iso), MIN_MESSAGE_BYTES, json_bytes))
    return out


# ---- decoding -------------------------------------------------------------------------------
_SCHEMAS = {t.name: t.schema for t in TOPICS if t.name.startswith("metrics.")}
METRIC_TOPICS = tuple(_SCHEMAS)


def decode_metric(topic: str, value: bytes) -> dict[str, Any]:
    """A message of metric topic ``topic`` (its name without the prefix: ``metrics.drain``...)
    as its fields by name, checked against the topic's schema at the top level; CodecError for
    another version or a field the schema does not allow."""
    schema = _SCHEMAS.get(topic)
    if schema is None:
        raise ValueError(f"not a metric topic: {topic!r} (one of {', '.join(METRIC_TOPICS)})")
    d = load_object(value, topic)
    check_version(d, topic, VERSION, missing_ok=False)
    check_fields(d, schema, topic)
    return d
