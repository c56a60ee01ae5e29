"""Every Kafka topic of drainwatch: its name, its key, the record type it carries, its JSON Schema.

Names are ``<prefix><name>`` (prefix ``drainwatch.`` by default, ``DRAINWATCH_TOPIC_PREFIX``).
Values are UTF-8 JSON objects (orjson); keys are UTF-8 strings. The schemas are JSON Schema
draft 2020-12 and are checked against the records the code really produces
(tests/streams/test_topics.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from models.records.nodestatus import NodeStatus
from models.records.reject import Reject

SCHEMA = "https://json-schema.org/draft/2020-12/schema"

_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_INT = {"type": "integer"}
_NUM = {"type": "number"}

NODE_STATUS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "title": "NodeStatus batch: one slice of one scheduler iteration",
    "description": "Columns of equal length; rsvlist/joblist as written by Moab ('' = none).",
    "type": "object",
    "required": ["source", "ts_ms", "node", "state", "rsvlist", "joblist"],
    "additionalProperties": False,
    "properties": {
        "source": {**_STR, "description": "shipper and log the records come from"},
        "ts_ms": {"type": "array", "items": _INT, "description": "POSIX ms, UTC"},
        "node": {"type": "array", "items": _STR},
        "state": {"type": "array", "items": _STR},
        "rsvlist": {"type": "array", "items": _STR, "description": "comma-separated ids"},
        "joblist": {"type": "array", "items": _STR, "description": "comma-separated ids"},
    },
}

JOB_EVENT_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "title": "JobEvent: one submit, start or end of one job (models.records.jobevent)",
    "type": "object",
    "required": ["type", "ts", "job"],
    "additionalProperties": False,
    "properties": {
        "type": {"enum": ["submit", "start", "end"]},
        "ts": {**_NUM, "description": "POSIX seconds, UTC"},
        "job": _STR,
        "user": _STR_OR_NULL,
        "group": _STR_OR_NULL,
        "account": _STR_OR_NULL,
        "partition": _STR_OR_NULL,
        "name": _STR_OR_NULL,
        "nodes": {"type": ["integer", "null"], "minimum": 0},
        "cores": {"type": ["integer", "null"], "minimum": 0},
        "req_walltime": {"type": ["number", "null"], "description": "seconds"},
        "node_list": {"type": "array", "items": _STR},
        "state": _STR_OR_NULL,
        "exit_code": {"type": ["integer", "null"]},
        "backfill": {"type": ["boolean", "null"]},
    },
}

NODE_SAMPLE_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "title": "NodeSample: one /proc measure of one process of one job (models.formats.sampletrace)",
    "type": "object",
    "required": [
        "ts",
        "job",
        "pid",
        "node",
        "command",
        "vmPeak",
        "vmSize",
        "vmRss",
        "vmSwap",
        "syscr",
        "syscw",
        "read_bytes",
        "write_bytes",
        "core",
        "receive",
        "transmit",
    ],  # fmt: skip
    "additionalProperties": False,
    "properties": {
        "ts": _NUM,
        "job": _STR,
        "pid": _INT,
        "node": _STR,
        "command": _STR,
        **{k: {**_INT, "description": "KiB"} for k in ("vmPeak", "vmSize", "vmRss", "vmSwap")},
        **{k: _INT for k in ("syscr", "syscw", "read_bytes", "write_bytes")},
        "core": {**_NUM, "description": "% of one core over the last interval"},
        "receive": _INT,
        "transmit": _INT,
        "start": {**_NUM, "description": "process start, POSIX seconds"},
        "cores": {**_INT, "minimum": 0},
        "class": _STR,
        "fs": {
            "type": "object",
            "additionalProperties": {
                "type": "array",
                "prefixItems": [_NUM, _NUM],
                "minItems": 2,
                "maxItems": 2,
            },
        },
    },
}

DEAD_LETTER_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "title": "A rejected record and why (models.records.reject.Reject)",
    "type": "object",
    "required": ["source", "line", "reason", "text"],
    "additionalProperties": False,
    "properties": {
        "source": _STR,
        "line": {**_INT, "description": "line or record number in the source"},
        "reason": {**_STR, "description": "short stable key, counted in summaries"},
        "text": {**_STR, "description": "the record as read"},
    },
}

METRICS_DRAIN_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "title": "Drain of one window (the columns of drain_daily.csv / drain_hourly.csv)",
    "type": "object",
    "required": ["window", "start_ms", "accounted_ms", "drain_ms"],
    "properties": {
        "window": {"enum": ["day", "hour", "minute"]},
        "start_ms": _INT,
        "length_ms": _INT,
        "nodes": _INT,
        "accounted_ms": _INT,
        "drain_ms": _INT,
        "idle_unallocated_ms": _INT,
        "down_ms": _INT,
        "unaccounted_ms": _INT,
    },
}


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str  # without the prefix
    key: str  # what the message key is
    record: str  # what one message value is
    schema: dict[str, Any]


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(
        "node-status",
        "node block of the slice ('<first node>..<last node>'): a node always lands on the "
        "same partition",
        "one slice of one scheduler iteration: NodeStatus columns",
        NODE_STATUS_SCHEMA,
    ),
    TopicSpec("job-events", "job id", "one JobEvent", JOB_EVENT_SCHEMA),
    TopicSpec("node-samples", "node name", "one NodeSample", NODE_SAMPLE_SCHEMA),
    TopicSpec(
        "metrics.drain", "'<window>:<start_ms>'", "drain of one window", METRICS_DRAIN_SCHEMA
    ),
    TopicSpec("dead-letter", "source", "one rejected record with its reason", DEAD_LETTER_SCHEMA),
)


@dataclass(frozen=True, slots=True)
class TopicNames:
    """Full topic names for one prefix."""

    node_status: str
    job_events: str
    node_samples: str
    metrics_drain: str
    dead_letter: str

    def all(self) -> tuple[str, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


def topic_names(prefix: str) -> TopicNames:
    """``<prefix>node-status``, ``<prefix>job-events``, ... for the given prefix."""
    return TopicNames(*(f"{prefix}{t.name}" for t in TOPICS))


def node_status_message(source: str, records: Sequence[NodeStatus]) -> dict[str, Any]:
    """A node-status message value (see NODE_STATUS_SCHEMA) for records of one slice."""
    return {
        "source": source,
        "ts_ms": [r.ts_ms for r in records],
        "node": [r.node for r in records],
        "state": [r.state for r in records],
        "rsvlist": [",".join(r.rsvlist) for r in records],
        "joblist": [",".join(r.joblist) for r in records],
    }


def dead_letter_message(r: Reject) -> dict[str, Any]:
    """A dead-letter message value (see DEAD_LETTER_SCHEMA)."""
    return {"source": r.source, "line": r.lineno, "reason": r.reason, "text": r.text}
