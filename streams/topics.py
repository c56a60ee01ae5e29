"""Every Kafka topic of drainwatch: its name, its key, the record type it carries, its JSON Schema.

Names are ``<prefix><name>`` (prefix ``drainwatch.`` by default, ``DRAINWATCH_TOPIC_PREFIX``).
Values are UTF-8 JSON objects (orjson); keys are UTF-8 strings. The schemas are JSON Schema
draft 2020-12 and are checked against the records the code really produces
(tests/streams/test_topics.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

SCHEMA = "https://json-schema.org/draft/2020-12/schema"

_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_INT = {"type": "integer"}
_NUM = {"type": "number"}

_INTS = {"type": "array", "items": _INT}
_STRS = {"type": "array", "items": _STR}

# A shipper's marker (streams/codecs/control.py, issue 30), on every partition of node-status,
# job-events and node-samples: a message of its own
MARKER_SCHEMA: dict[str, Any] = {
    "title": "A shipper's marker: how far its input has got on this partition",
    "description": "Sent on every partition of the shipper's topic every worker.marker_interval "
    "seconds and when it stops (watermark), and when a finite input ended (end); its bytes "
    "start with '{\"control\":'. Every record of the shipper it covers came before it on the "
    "partition.",
    "type": "object",
    "required": ["control", "v", "source", "ts", "sent"],
    "additionalProperties": False,
    "properties": {
        "control": {
            "enum": ["watermark", "end"],
            "description": "watermark: the shipper's input is at ts; end: its finite input "
            "ended (it sends nothing more on this partition)",
        },
        "v": {"const": 2, "description": "the marker's version"},
        "source": {
            **_STR,
            "minLength": 1,
            "description": "the shipper's id, '<kind>:<host>:<pid or what names it across "
            "restarts>'",
        },
        "ts": {
            "type": ["number", "null"],
            "description": "POSIX s: the latest record time it sent (null: none yet)",
        },
        "sent": {
            **_NUM,
            "description": "POSIX s on the shipper's clock: compared only with other markers' "
            "(a shipper silent for worker.shipper_timeout stops counting)",
        },
    },
}

NODE_STATUS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "node-status.v1.json",
    "title": "NodeStatus slice v1: node records of one partition from one read of a log",
    "description": "Columns of equal length indexing the message's own name tables "
    "(streams/codecs/nodestatus.py); or a shipper's marker (v 2, $defs/marker). An end marker, "
    "or version 1's end-of-input message {v: 1, source, control: 'flush'} (still read), ends "
    "the partition's input: the worker accounts what it holds for reordering and closes the "
    "windows. A watermark marker is recorded; it does "
    "not move the partition's watermark (a node's time is accounted when its next record "
    "comes).",
    "type": "object",
    "required": ["v", "source"],
    "additionalProperties": False,
    "if": {"properties": {"v": {"const": 2}}},
    "then": {"$ref": "#/$defs/marker"},
    "else": {
        "properties": {"control": {"const": "flush"}},
        "not": {"anyOf": [{"required": ["ts"]}, {"required": ["sent"]}]},
    },
    "$defs": {"marker": MARKER_SCHEMA},
    "properties": {
        "v": {"enum": [1, 2], "description": "1: a slice or the flush; 2: a marker"},
        "source": {**_STR, "description": "shipper and log the records come from"},
        "control": {
            "enum": ["flush", "watermark", "end"],
            "description": "flush (v 1): end of input; watermark, end (v 2): a marker",
        },
        "ts": {"type": ["number", "null"], "description": "a marker's: its latest record time"},
        "sent": {**_NUM, "description": "a marker's: its send time"},
        "ts_ms": {**_INTS, "description": "POSIX ms, UTC, one per record"},
        "nodes": {**_STRS, "description": "node names of this message"},
        "node": {**_INTS, "description": "index into nodes, one per record"},
        "states": {**_STRS, "description": "state names as written (Idle, Running, ...)"},
        "state": {**_INTS, "description": "index into states, one per record"},
        "jobs": {**_STRS, "description": "job and reservation ids of this message"},
        "rsv": {**_INTS, "description": "first id of rsvlist (index into jobs) or -1"},
        "run_row": {**_INTS, "description": "record of each joblist entry, ascending"},
        "run_job": {**_INTS, "description": "index into jobs of each joblist entry"},
    },
    "dependentRequired": {
        "ts_ms": ["nodes", "node", "states", "state", "jobs", "rsv", "run_row", "run_job"]
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
        "reserved_start": {
            "type": ["number", "null"],
            "description": "POSIX seconds, UTC: the start of the job's reservation (on its submit, "
            "or on its start when the reservation was made after the submit)",
        },
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
    ],
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
        "wchar": {
            **_INT,
            "minimum": 0,
            "description": "bytes passed to write calls, cumulative (/proc/<pid>/io); "
            "absent = unknown",
        },
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
    "$id": "dead-letter.v1.json",
    "title": "A rejected record or message and why (models.records.reject.Reject)",
    "type": "object",
    "required": ["source", "line", "reason", "text"],
    "additionalProperties": False,
    "properties": {
        "source": _STR,
        "line": {**_INT, "description": "line or record number in the source (0: unknown)"},
        "reason": {**_STR, "description": "short stable key, counted in summaries"},
        "text": {**_STR, "description": "the record as read (a message: its first 4 KiB)"},
        "topic": {**_STR, "description": "topic of a rejected message"},
        "partition": _INT,
        "offset": _INT,
        "error": {**_STR, "description": "the exception a stage raised on the record, one line"},
    },
}

_WINDOW_PROPS: dict[str, Any] = {
    "accounted_node_seconds": _NUM,
    "drain_node_seconds": _NUM,
    "unallocated_idle_node_seconds": _NUM,
    "down_node_seconds": _NUM,
    "unaccounted_node_seconds": _NUM,
    "drain_pct_static": {"type": ["number", "null"]},
    "drain_pct_dynamic": {"type": ["number", "null"]},
    "basis_seconds_per_node": _NUM,
    "data_quality": {"enum": ["ok", "short"]},
}

METRICS_DRAIN_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "metrics.drain.v1.json",
    "title": "Drain of one window, system-wide (the columns of drain_daily.csv)",
    "type": "object",
    "required": [
        "v",
        "cluster",
        "window",
        "start",
        "start_ms",
        "length_ms",
        "nodes",
        *_WINDOW_PROPS,
        "provisional",
    ],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1},
        "cluster": _STR,
        "window": {"enum": ["minute", "hour", "day"]},
        "start": {**_STR, "description": "window start, ISO 8601 UTC with ms"},
        "start_ms": _INT,
        "length_ms": _INT,
        "nodes": {**_INT, "description": "distinct nodes with time in the window"},
        **_WINDOW_PROPS,
        "provisional": {"type": "boolean", "description": "true while the window is open"},
        "node_states": {
            "type": "object",
            "description": "hour and day windows: state -> node-seconds per combination "
            "(none, job, rsv, rsv+job: rsvlist / joblist non-empty)",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": _NUM,
            },
        },
    },
}

METRICS_JOBS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "metrics.jobs.v1.json",
    "title": "Drain charged to one job so far (running totals; the fields of drain_jobs.csv)",
    "type": "object",
    "required": [
        "v",
        "cluster",
        "job",
        "drain_node_seconds",
        "nodes_charged",
        "first_charged",
        "last_charged",
        "nodes_running",
    ],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1},
        "cluster": _STR,
        "job": _STR,
        "drain_node_seconds": _NUM,
        "nodes_charged": _INT,
        "first_charged": _STR,
        "last_charged": _STR,
        "nodes_running": {**_INT, "description": "distinct nodes seen running it"},
    },
}

DRAIN_PARTIALS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "drain-partials.v1.json",
    "title": "Internal: absolute totals of one node-status partition (models.drain.live; "
    "streams/codecs/partials.py)",
    "type": "object",
    "required": ["partition", "watermark_ms", "nodes", "windows", "jobs", "counts", "states"],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1, "description": "absent: written before versions (read as 1)"},
        "partition": _INT,
        "watermark_ms": {"type": ["integer", "null"]},
        "nodes": _INT,
        "windows": {
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [{"enum": ["minute", "hour", "day"]}] + [_INT] * 7,
                "minItems": 8,
                "maxItems": 8,
            },
            "description": "unit, start_ms, nodes, accounted, drain, idle_unallocated, "
            "down, unaccounted (ms)",
        },
        "jobs": {
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [_STR] + [_INT] * 6,
                "minItems": 7,
                "maxItems": 7,
            },
            "description": "job, drain_ms, nodes_charged, first_ms, last_ms, nodes_running, "
            "last_active_ms",
        },
        "counts": {"type": "object", "additionalProperties": _INT},
        "states": {
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [
                    {"enum": ["hour", "day"]},
                    _INT,
                    {"type": "object", "additionalProperties": {"type": "array", "items": _INT}},
                ],
                "minItems": 3,
                "maxItems": 3,
            },
            "description": "unit, start_ms, state -> node-ms per (rsv, job) combination",
        },
    },
}

WORKER_STATE_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "worker-state.v1.json",
    "title": "Internal: a snapshot manifest (its chunks are raw bytes under '<key>/<gen><n>'; "
    "streams/codecs/state.py)",
    "type": "object",
    "required": ["id", "chunks", "bytes", "gen"],
    "properties": {
        "v": {"const": 1, "description": "absent: written before versions (read as 1)"},
        "id": {**_STR, "description": "32 hex digits, prefixed to each chunk"},
        "chunks": {**_INT, "minimum": 1},
        "bytes": {**_INT, "minimum": 0, "description": "the snapshot's length"},
        "gen": {"enum": ["a", "b"], "description": "the generation of the chunks' keys"},
    },
}


JOB_EVENTS_TOPIC_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "title": "One JobEvent per line ($defs/event), or a shipper's marker ($defs/marker)",
    "oneOf": [{"$ref": "#/$defs/event"}, {"$ref": "#/$defs/marker"}],
    "$defs": {
        "event": {k: v for k, v in JOB_EVENT_SCHEMA.items() if k != "$schema"},
        "marker": MARKER_SCHEMA,
    },
}

NODE_SAMPLES_TOPIC_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "title": "One NodeSample per line ($defs/sample), or a shipper's marker ($defs/marker)",
    "oneOf": [{"$ref": "#/$defs/sample"}, {"$ref": "#/$defs/marker"}],
    "$defs": {
        "sample": {k: v for k, v in NODE_SAMPLE_SCHEMA.items() if k != "$schema"},
        "marker": MARKER_SCHEMA,
    },
}

# a shipper's marker in a partials message: its fields without the version (the partials' own
# version covers it)
_MARKER_ENTRY: dict[str, Any] = {
    **{k: v for k, v in MARKER_SCHEMA.items() if k not in ("title", "description")},
    "required": ["control", "source", "ts", "sent"],
    "properties": {k: v for k, v in MARKER_SCHEMA["properties"].items() if k != "v"},
}

# a JobEvent as the worker forwards it: its fields in order (models.records.jobevent_row)
_JOB_EVENT_ROW: dict[str, Any] = {
    "type": "array",
    "prefixItems": list(JOB_EVENT_SCHEMA["properties"].values()),
    "minItems": len(JOB_EVENT_SCHEMA["properties"]),
    "maxItems": len(JOB_EVENT_SCHEMA["properties"]),
}

JOBS_PARTIALS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "jobs-partials.v1.json",
    "title": "Internal: job events of one job-events partition, with their offsets "
    "(models.jobs.merge); or (partition -1) the drain combiner's job totals to join "
    "(streams/codecs/partials.py)",
    "type": "object",
    "required": ["partition"],
    "oneOf": [{"required": ["events"]}, {"required": ["drain"]}],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1, "description": "absent: written before versions (read as 1)"},
        "partition": _INT,
        "drain": {
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [_STR, _INT, _INT, _INT, _INT, _INT, _INT],
                "minItems": 7,
                "maxItems": 7,
            },
            "description": "[job, drain ms, nodes charged, first charged ms, last charged ms, "
            "nodes running, point time ms] per job whose totals changed (the point time: the "
            "job's first charge as first reported, its drain_job point)",
        },
        "watermark_ms": {
            "type": ["integer", "null"],
            "description": "with drain: the combiner's watermark (every node-status partition "
            "is past it; null: not known yet), so the join keeps a job's events while the drain "
            "stream lags",
        },
        "events": {
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [
                    _INT,
                    {
                        "anyOf": [
                            {"type": "array", "items": _JOB_EVENT_ROW},
                            {
                                "type": "array",
                                "prefixItems": [_MARKER_ENTRY],
                                "minItems": 1,
                                "maxItems": 1,
                            },
                        ]
                    },
                ],
                "minItems": 2,
                "maxItems": 2,
            },
            "description": "[source offset, [row...]] in offset order (the events of one "
            "job-events message, each a row: its JobEvent fields in order), or a shipper's "
            "marker in its place, [source offset, [{control, source, ts, sent}]]",
        },
    },
}
METRICS_SHORTJOBS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "metrics.shortjobs.v1.json",
    "title": "Short-job penalty of one holder at one 3-minute tick (seed 002)",
    "type": "object",
    "required": [
        "v",
        "cluster",
        "ts",
        "ts_s",
        "holder_kind",
        "holder",
        "n_short",
        "penalty_seconds",
        "adjust",
    ],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1},
        "cluster": _STR,
        "ts": {**_STR, "description": "the tick, ISO 8601 UTC"},
        "ts_s": {**_NUM, "description": "the tick, POSIX seconds"},
        "holder_kind": {"enum": ["user", "group"]},
        "holder": _STR,
        "n_short": {**_INT, "description": "N_s: short jobs ended in the tick"},
        "penalty_seconds": {**_NUM, "description": "T_s: missing run time x slots"},
        "adjust": {**_NUM, "description": "A(t) = 0.9 A(t-1) + 0.1 T_s(t); 0.0: left the table"},
    },
}

_NUM_OR_NULL = {"type": ["number", "null"]}
METRICS_CAPABILITY_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "metrics.capability.v1.json",
    "title": "Capability use of one closed day (seed 004; capability_daily.csv's columns)",
    "type": "object",
    "required": ["v", "cluster", "day", "large_node_hours", "small_node_hours", "cup40"],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1},
        "cluster": _STR,
        "day": {**_STR, "description": "calendar day in the configured zone, YYYY-MM-DD"},
        "large_node_hours": {**_NUM, "description": "jobs on >= 40 % of the section"},
        "small_node_hours": {**_NUM, "description": "the other jobs"},
        "backfill_node_hours": {**_NUM_OR_NULL, "description": "small backfilled jobs"},
        "cup40": {**_NUM_OR_NULL, "description": "large / (large + small)"},
        "cup40_modified": {**_NUM_OR_NULL, "description": "large / (large + small - backfill)"},
        "red_node_hours": _NUM_OR_NULL,
        "black_node_hours": _NUM_OR_NULL,
        "red_share": _NUM_OR_NULL,
        "p_cup_factor": {**_NUM_OR_NULL, "description": "0.80 - cup40 while below the goal"},
    },
}
METRICS_DFS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "metrics.dfs.v1.json",
    "title": "DFS load of one final minute (seed 003 §5; dfs_minutely.csv's columns)",
    "type": "object",
    "required": ["v", "cluster", "minute", "minute_ms", "write_mb_s", "read_mb_s", "jobs_writing"],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1},
        "cluster": _STR,
        "minute": {**_STR, "description": "start of the minute, ISO 8601 UTC"},
        "minute_ms": {**_INT, "description": "start of the minute, POSIX milliseconds"},
        "write_mb_s": {**_NUM, "description": "write speed summed over jobs, MB/s"},
        "read_mb_s": {**_NUM, "description": "read speed summed over jobs, MB/s"},
        "jobs_writing": {**_INT, "description": "jobs that wrote in the minute"},
        "fs": {
            **_STR,
            "description": "the file system (samples with per-file-system speeds; key "
            "'<fs>:<minute_ms>'); absent: the whole DFS (key '<minute_ms>')",
        },
    },
}
SAMPLES_PARTIALS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "samples-partials.v1.json",
    "title": "Internal: node samples of one node-samples partition as columns, with their "
    "offsets (models.samples.batch.SampleBatch.to_bytes). The value is binary: b'DWS1', the "
    "header's length (u32 little-endian), this header (JSON), then the columns, little-endian: "
    "ts, start, core (f64); pid, write_bytes, read_bytes, vmRss, vmSwap, cores (i64); job and "
    "node codes (u32, into the header's lists)",
    "type": "object",
    "required": ["partition", "events", "rows", "jobs", "nodes", "fs"],
    "additionalProperties": False,
    "properties": {
        "partition": _INT,
        "events": {
            "type": "array",
            "items": {"type": "array", "prefixItems": [_INT, _INT], "minItems": 2, "maxItems": 2},
            "description": "[source offset, samples] in offset order: the rows in turn",
        },
        "markers": {
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [_INT, _MARKER_ENTRY],
                "minItems": 2,
                "maxItems": 2,
            },
            "description": "[source offset, {control, source, ts, sent}]: the shippers' "
            "markers, in offset order with the events (absent: none)",
        },
        "rows": {**_INT, "description": "samples in the batch"},
        "jobs": {"type": "array", "items": _STR, "description": "job names by code"},
        "nodes": {"type": "array", "items": _STR, "description": "node names by code"},
        "fs": {
            "type": "array",
            "items": {"type": "array", "prefixItems": [_INT, {"type": "array"}]},
            "description": "[row, [[file system, write, read]...]] of the rows with speeds",
        },
    },
}
ALERTS_SCHEMA: dict[str, Any] = {
    "$schema": SCHEMA,
    "$id": "alerts.v1.json",
    "title": "One alert state change (models.alerts): firing when a condition starts, resolved "
    "when it clears; the same id is not sent again while it fires",
    "type": "object",
    "required": [
        "v",
        "cluster",
        "id",
        "kind",
        "subject",
        "severity",
        "state",
        "value",
        "threshold",
        "window",
        "since",
        "at",
        "details",
        "since_iso",
        "at_iso",
    ],
    "additionalProperties": False,
    "properties": {
        "v": {"const": 1},
        "cluster": _STR,
        "id": {**_STR, "description": "'<kind>:<subject>': one episode at a time per id"},
        "kind": {
            "enum": [
                "shortjob_flood",
                "overrun",
                "capability",
                "sliding_job",
                "data_quality",
                "stalled",
                "hot_zone",
                "failure_to_launch",
                "sliding_rank",
            ]
        },
        "subject": {
            **_STR,
            "description": "job id, '<user|group>:<name>', 'cup40', a window length "
            "(data_quality), '<topic>@<host>:<web port>' (stalled)",
        },
        "severity": {"enum": ["info", "warning", "critical"]},
        "state": {"enum": ["firing", "resolved"]},
        "value": {**_NUM_OR_NULL, "description": "the measured value at this change"},
        "threshold": _NUM_OR_NULL,
        "window": {**_STR, "description": "what the value is measured over"},
        "since": {**_NUM, "description": "event time the episode began, POSIX seconds"},
        "at": {**_NUM, "description": "event time of this change, POSIX seconds"},
        "since_iso": _STR,
        "at_iso": _STR,
        "details": {"type": "object", "description": "kind-specific context (user, day...)"},
    },
}


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str  # without the prefix
    key: str  # what the message key is
    record: str  # what one message value is
    schema: dict[str, Any]
    compacted: bool = False
    single_partition: bool = False  # internal topics read by one consumer

    @property
    def schema_file(self) -> str:
        return f"{self.name}.v1.json"


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(
        "node-status",
        "'p<partition>': the shipper picks the partition of a node by blocks of 32 nodes "
        "numbered alike (streams.codecs.nodestatus.partition_of)",
        "node records of one partition from one read of a log (one iteration, at most "
        "8,192 records); or a shipper's marker (key 'marker')",
        NODE_STATUS_SCHEMA,
    ),
    TopicSpec(
        "job-events",
        "job id, or 'p<partition>' for a batch",
        "one JobEvent, or several as JSON lines (each line follows the schema): `drainwatch "
        "ship jobs` sends each partition's events in batches of up to 500, a job's events on "
        "the partition of crc32(job id); or a shipper's marker (key 'marker')",
        JOB_EVENTS_TOPIC_SCHEMA,
    ),
    TopicSpec(
        "node-samples",
        "node name",
        "one node's sweep: one NodeSample JSON line per process, newline-separated (each "
        "line follows the schema); or a shipper's marker (key 'marker')",
        NODE_SAMPLES_TOPIC_SCHEMA,
    ),
    TopicSpec(
        "metrics.drain",
        "'<window>:<start_ms>'",
        "drain of one window, system-wide; provisional until it closes",
        METRICS_DRAIN_SCHEMA,
        compacted=True,
    ),
    TopicSpec(
        "metrics.jobs",
        "job id",
        "running drain totals of one job",
        METRICS_JOBS_SCHEMA,
        compacted=True,
    ),
    TopicSpec(
        "metrics.shortjobs",
        "'<holder_kind>:<holder>'",
        "short-job penalty of one holder at one tick; compacted, the latest per holder is the "
        "table the scheduler's fairshare hook reads (0.0: not in it)",
        METRICS_SHORTJOBS_SCHEMA,
        compacted=True,
    ),
    TopicSpec(
        "metrics.capability",
        "day",
        "capability use of one closed day (seed 004)",
        METRICS_CAPABILITY_SCHEMA,
        compacted=True,
    ),
    TopicSpec(
        "metrics.dfs",
        "minute start (POSIX ms)",
        "DFS write and read load of one final minute (seed 003)",
        METRICS_DFS_SCHEMA,
        compacted=True,
    ),
    TopicSpec(
        "alerts",
        "alert id",
        "one alert state change; a consumer keeping the latest record per id sees each "
        "alert's current state",
        ALERTS_SCHEMA,
    ),
    TopicSpec("dead-letter", "source", "one rejected record with its reason", DEAD_LETTER_SCHEMA),
    TopicSpec(
        "drain-partials",
        "partition number",
        "internal: absolute totals of one node-status partition",
        DRAIN_PARTIALS_SCHEMA,
        single_partition=True,
    ),
    TopicSpec(
        "jobs-partials",
        "partition number",
        "internal: job events of one job-events partition with their offsets",
        JOBS_PARTIALS_SCHEMA,
        single_partition=True,
    ),
    TopicSpec(
        "samples-partials",
        "partition number",
        "internal: binary; node samples of one node-samples partition as columns with their "
        "offsets (the schema is its JSON header's)",
        SAMPLES_PARTIALS_SCHEMA,
        single_partition=True,
    ),
    TopicSpec(
        "worker-state",
        "'<group>/<owner>' (manifest) and '<group>/<owner>/<n>' (chunks)",
        "internal: worker state snapshots, chunked under the message size limit",
        WORKER_STATE_SCHEMA,
        compacted=True,
        single_partition=True,
    ),
)


@dataclass(frozen=True, slots=True)
class TopicNames:
    """Full topic names for one prefix."""

    node_status: str
    job_events: str
    node_samples: str
    metrics_drain: str
    metrics_jobs: str
    metrics_shortjobs: str
    metrics_capability: str
    metrics_dfs: str
    alerts: str
    dead_letter: str
    drain_partials: str
    jobs_partials: str
    samples_partials: str
    worker_state: str

    def all(self) -> tuple[str, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


def topic_names(prefix: str) -> TopicNames:
    """``<prefix>node-status``, ``<prefix>job-events``, ... for the given prefix."""
    return TopicNames(*(f"{prefix}{t.name}" for t in TOPICS))


SCHEMA_DIR = Path(__file__).parent / "schemas"


def schema_files() -> dict[str, str]:
    """File name -> text of every topic's JSON Schema, as kept in streams/schemas/."""
    return {t.schema_file: json.dumps(t.schema, indent=2) + "\n" for t in TOPICS}


def topics_markdown() -> str:
    """docs/topics.md: every topic, its key, its record, and its schema's fields."""
    out = [
        "# Topics",
        "",
        "<!-- generated by `python -m streams.topics`; do not edit by hand -->",
        "",
        "Names are `<prefix><name>` (prefix `drainwatch.` by default, `DRAINWATCH_TOPIC_PREFIX`). "
        "Values are UTF-8 JSON (orjson); keys UTF-8. Each schema is a versioned JSON Schema file "
        "(draft 2020-12) in `streams/schemas/`; the end-to-end test validates every message the "
        "pipeline emits against it. `drainwatch ship` and `drainwatch worker` create missing "
        "topics with the partitions and cleanup policy below (`DRAINWATCH_TOPIC_PARTITIONS`).",
        "",
    ]
    for t in TOPICS:
        parts = "1" if t.single_partition else "`topic_partitions` (8)"
        policy = "compact" if t.compacted else "delete"
        out += [
            f"## `{t.name}`",
            "",
            f"{t.schema.get('title', '')}",
            "",
            f"- key: {t.key}",
            f"- value: {t.record}",
            f"- partitions: {parts}; cleanup: {policy}; schema: `streams/schemas/{t.schema_file}`",
            "",
        ]
        if "properties" in t.schema:
            out += _fields_table(t.schema)
        for name, sub in t.schema.get("$defs", {}).items():  # the kinds of message it carries
            out += [f"### `{t.name}`: {name}", "", sub.get("title", ""), "", *_fields_table(sub)]
    return "\n".join(out)


def _fields_table(schema: dict[str, Any]) -> list[str]:
    """A schema's fields as a markdown table (name, type, meaning), and a blank line."""
    out = ["| field | type | meaning |", "|---|---|---|"]
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        typ = prop.get("type", "enum" if "enum" in prop else "const" if "const" in prop else "")
        if isinstance(typ, list):
            typ = " or ".join(typ)
        if "enum" in prop:
            typ = " / ".join(f"`{v}`" for v in prop["enum"])
        if "const" in prop:
            typ = f"`{prop['const']}`"
        if typ == "array" and "items" in prop and "type" in prop["items"]:
            typ = f"array of {prop['items']['type']}"
        req = "" if name in required else " (optional)"
        out.append(f"| `{name}` | {typ}{req} | {prop.get('description', '')} |")
    out.append("")
    return out


if __name__ == "__main__":  # regenerate docs/topics.md and streams/schemas/
    for _name, _text in schema_files().items():
        (SCHEMA_DIR / _name).write_text(_text)
    (Path(__file__).parents[1] / "docs" / "topics.md").write_text(topics_markdown())
