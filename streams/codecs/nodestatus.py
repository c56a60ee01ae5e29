"""Node-status messages on Kafka: one slice of node records, columnar, with local name tables.

A message carries the records of one partition's nodes from one read of the log (usually one
scheduler iteration), as columns that index small name tables of their own::

    {"v": 1, "source": "moab:/var/log/moab.log", "ts_ms": [..], "nodes": ["n1", ..],
     "node": [0, 1, ..], "states": ["Idle", ..], "state": [0, ..], "jobs": ["1292428", ..],
     "rsv": [0, -1, ..], "run_row": [2, ..], "run_job": [1, ..]}

``rsv`` is the first reservation of a record (the one a drain is charged to, seed 000 §IV-A) or
-1; ``run_row``/``run_job`` pair every job of every joblist with its record. The worker maps the
name tables into its own codebook once per message (a cache makes repeated node tables free), so
decoding costs a few numpy operations per message, not Python per record. Schema:
``streams/schemas/node-status.v1.json``; version ``VERSION`` (``"v"``); the end-of-input control
message on the same topic is :mod:`streams.codecs.control`'s. Decoding errors are
:class:`~streams.codecs.CodecError` (reasons bad_json, bad_message, bad_version).
"""

from __future__ import annotations

import re
import zlib
from typing import Any

import numpy as np
import orjson

from models.records.nodestatus import NO_JOB, Codebook, NodeStatusBatch
from models.records.plausible import TimeBounds
from streams.codecs.base import CodecError, check_version

VERSION = 1
MAX_ROWS = 8192  # rows per message: ~40 B per row keeps a message far below 1 MB


# the name node-status decoding had before every codec raised CodecError
MessageError = CodecError


def encode(batch: NodeStatusBatch, book: Codebook, source: str) -> bytes:
    """One message for all of ``batch`` (callers slice batches to at most MAX_ROWS rows), version
    ``VERSION``."""
    node_codes, node_idx = np.unique(batch.node, return_inverse=True)
    state_codes, state_idx = np.unique(batch.state, return_inverse=True)
    job_all = np.concatenate([batch.rsv[batch.rsv != NO_JOB], batch.run_job])
    job_codes = np.unique(job_all)
    rsv = np.full(len(batch), -1, dtype=np.int64)
    has = batch.rsv != NO_JOB
    rsv[has] = np.searchsorted(job_codes, batch.rsv[has])
    names = book.nodes.names
    msg = {
        "v": VERSION,
        "source": source,
        "ts_ms": batch.ts_ms,
        "nodes": [names[c] for c in node_codes.tolist()],
        "node": node_idx.astype(np.int64),
        "states": [book.states.names[c] for c in state_codes.tolist()],
        "state": state_idx.astype(np.int64),
        "jobs": book.jobs.names_of(job_codes.tolist()),
        "rsv": rsv,
        "run_row": batch.run_row,
        "run_job": np.searchsorted(job_codes, batch.run_job).astype(np.int64),
    }
    return orjson.dumps(msg, option=orjson.OPT_SERIALIZE_NUMPY)


def _names(msg: dict[str, Any], key: str) -> list[str]:
    v = msg.get(key)
    if not isinstance(v, list) or (v and set(map(type, v)) != {str}):  # map: C speed
        raise CodecError("bad_message", f"{key!r} must be a list of strings")
    return v


def _ints(msg: dict[str, Any], key: str, n: int | None, lo: int, hi: int) -> np.ndarray:
    v = msg.get(key)
    if not isinstance(v, list):
        raise CodecError("bad_message", f"{key!r} must be a list of integers")
    try:
        a = np.array(v, dtype=np.int64) if v else np.empty(0, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise CodecError("bad_message", f"{key!r} must be a list of integers") from None
    if a.ndim != 1 or any(type(x) is not int for x in v[:1]) or a.dtype != np.int64:
        raise CodecError("bad_message", f"{key!r} must be a list of integers")
    if n is not None and a.size != n:
        raise CodecError("bad_message", f"{key!r} has {a.size} values, ts_ms has {n}")
    if a.size and (int(a.min()) < lo or int(a.max()) > hi):
        raise CodecError("bad_message", f"{key!r} has values outside [{lo}, {hi}]")
    return a


class Decoder:
    """Messages -> NodeStatusBatch in one codebook (one per partition of a worker)."""

    def __init__(self, book: Codebook) -> None:
        self.book = book
        self._node_cache: dict[tuple[str, ...], np.ndarray] = {}

    def decode(
        self, value: bytes, bounds: TimeBounds | None = None
    ) -> tuple[str, NodeStatusBatch, list[tuple[str, str]]]:
        """(source, batch, rejected rows as (reason, text)); raises CodecError naming what is
        wrong with the message (reasons bad_json, bad_message, bad_version). Records outside
        ``bounds`` are left out before any name is interned, so they leave no node or job
        behind."""
        try:
            msg = orjson.loads(value)
        except orjson.JSONDecodeError as e:
            raise CodecError("bad_json", str(e)) from None
        if not isinstance(msg, dict):
            raise CodecError("bad_message", "not a JSON object")
        check_version(msg, "node-status", VERSION, missing_ok=False)
        source = msg.get("source")
        if not isinstance(source, str):
            raise CodecError("bad_message", "'source' must be a string")
        big = np.iinfo(np.int64).max
        ts = _ints(msg, "ts_ms", None, -big, big)
        n = int(ts.size)
        nodes, states, jobs = _names(msg, "nodes"), _names(msg, "states"), _names(msg, "jobs")
        node = _ints(msg, "node", n, 0, len(nodes) - 1)
        state = _ints(msg, "state", n, 0, len(states) - 1)
        rsv = _ints(msg, "rsv", n, -1, len(jobs) - 1)
        run_row = _ints(msg, "run_row", None, 0, n - 1)
        run_job = _ints(msg, "run_job", run_row.size, 0, len(jobs) - 1)
        if run_row.size > 1 and bool(np.any(run_row[1:] < run_row[:-1])):
            raise CodecError("bad_message", "'run_row' must be ascending")
        has_job = np.zeros(n, dtype=bool)
        has_job[run_row] = True
        local = NodeStatusBatch(ts, node, state, rsv, has_job, run_row, run_job)
        rejected: list[tuple[str, str]] = []
        if bounds is not None and not bounds.all_plausible(ts):
            why = bounds.reasons(ts)
            for i, w in enumerate(why):
                if w is not None:
                    row = {
                        "ts_ms": int(ts[i]),
                        "node": nodes[int(node[i])],
                        "state": states[int(state[i])],
                    }
                    rejected.append((w, orjson.dumps(row).decode()))
            local = local.take(
                np.array([i for i, w in enumerate(why) if w is None], dtype=np.int64)
            )
        return source, self._intern(local, nodes, states, jobs), rejected

    def _intern(
        self, b: NodeStatusBatch, nodes: list[str], states: list[str], jobs: list[str]
    ) -> NodeStatusBatch:
        """Local indices -> codes of the codebook; only names the records use are interned."""
        book = self.book
        key = tuple(nodes)
        ncodes = self._node_cache.get(key)
        if ncodes is None:
            used = np.zeros(len(nodes), dtype=bool)
            used[b.node] = True
            ncodes = np.full(len(nodes), -1, dtype=np.int64)
            for i in np.flatnonzero(used).tolist():
                ncodes[i] = book.nodes.code(nodes[i])
            if used.all():  # a full table: reusable for the next message with the same nodes
                if len(self._node_cache) > 4096:
                    self._node_cache.clear()
                self._node_cache[key] = ncodes
        used_s = np.zeros(len(states), dtype=bool)
        used_s[b.state] = True
        scodes = np.full(len(states), -1, dtype=np.int64)
        for i in np.flatnonzero(used_s).tolist():
            scodes[i] = book.states.code(states[i])
        used_j = np.zeros(len(jobs) + 1, dtype=bool)
        used_j[b.rsv] = True  # -1 marks the NO_JOB slot appended last
        used_j[b.run_job] = True
        jcodes = np.full(len(jobs) + 1, NO_JOB, dtype=np.int64)
        used = np.flatnonzero(used_j[:-1])
        jcodes[used] = book.jobs.codes([jobs[i] for i in used.tolist()])
        return NodeStatusBatch(
            b.ts_ms,
            ncodes[b.node],
            scodes[b.state],
            jcodes[b.rsv],
            b.has_job,
            b.run_row,
            jcodes[b.run_job],
        )


NODE_BLOCK = 32  # nodes numbered alike go to a partition in blocks of this many
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d{1,9})$")


def partition_of(names: list[str], partitions: int, block: int = NODE_BLOCK) -> np.ndarray:
    """The partition of each node name, the same whatever shipper sends it: in node blocks.

    A name ending in a number (Moab '27453', Slurm 'nid001234', 'c401-17') is (prefix, n);
    block n // ``block`` of a prefix goes to partition (CRC-32 of the prefix + block) modulo
    ``partitions``, so consecutive blocks land on consecutive partitions (balanced for any
    machine of more than ``partitions`` blocks) and a job on neighbouring nodes touches one or
    two partitions, not all of them: per-job state is held once per partition it touches.
    Other names: CRC-32 of the name. Changing this needs a fresh worker state."""
    out = np.empty(len(names), dtype=np.int64)
    for i, n in enumerate(names):
        m = _TRAILING_NUMBER.match(n)
        if m is None:
            out[i] = zlib.crc32(n.encode()) % partitions
        else:
            out[i] = (zlib.crc32(m.group(1).encode()) + int(m.group(2)) // block) % partitions
    return out
