"""A drain accountant and its codebook as bytes, and back (the worker's durable state).

The worker snapshots each partition's :class:`DrainAccountant` (with the codebook its codes refer
to) and restores it after a crash or a rebalance. The format is a NumPy ``.npz`` archive of plain
arrays with ``allow_pickle=False`` (no code runs on load, whatever is in the state topic) plus one
UTF-8 JSON array ``meta`` for names, counters and window sums. ``FORMAT`` is bumped on any
change; an unknown format is refused with :class:`SnapshotError`, never half-read.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from typing import Any

import numpy as np

from models.drain.accountant import Counts, DrainAccountant, _PairCounter
from models.records.nodestatus import Codebook

FORMAT = 1
_ARRAYS = (
    "state_records",
    "last_ts",
    "last_state",
    "last_rsv",
    "last_combo",
    "last_fine",
    "last_hour",
    "last_day",
    "node_ms",
    "node_gap_ms",
    "job_drain_ms",
    "job_first_ms",
    "job_last_ms",
    "job_run_first_ms",
    "job_run_last_ms",
)


class SnapshotError(ValueError):
    """The bytes are not a snapshot this version can read."""


def dumps(acc: DrainAccountant, extra: dict[str, Any] | None = None) -> bytes:
    """The accountant, its codebook and ``extra`` (JSON-able: offsets, watermarks) as bytes."""
    book = acc.book
    win_keys = sorted(acc._win)
    meta = {
        "format": FORMAT,
        "tz": acc.days.tz.key,
        "unit": acc.unit,
        "max_gap_ms": acc.max_gap_ms,
        "retention_ms": acc._drain_pairs.retention_ms,
        "nodes": book.nodes.names,
        "states": book.states.names,
        "jobs": book.jobs.names,
        "counts": asdict(acc.counts),
        "first_ms": acc.first_ms,
        "last_ms": acc.last_ms,
        "win_keys": win_keys,
        "win_nodes": sorted(acc._win_nodes.items()),
        "hour_nodes": sorted(acc._hour_nodes.items()) if acc.unit != "hour" else None,
        "day_nodes": sorted(acc._day_nodes.items()),
        "extra": extra or {},
    }
    arrays = {name: getattr(acc, name) for name in _ARRAYS}
    ncat = acc.n_cats
    arrays["win"] = (
        np.stack([acc._win[k] for k in win_keys])
        if win_keys
        else np.zeros((0, ncat), dtype=np.int64)
    )
    for tag, pc in (("drain", acc._drain_pairs), ("run", acc._run_pairs)):
        arrays[f"{tag}_pairs"] = pc.pairs
        arrays[f"{tag}_count"] = pc.count
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    return buf.getvalue()


def loads(data: bytes) -> tuple[DrainAccountant, dict[str, Any]]:
    """(accountant with its own codebook, extra) from :func:`dumps` bytes."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop("meta").tobytes().decode())
    except Exception as e:  # zip, npz or JSON damage: one error type for the caller
        raise SnapshotError(f"not a drain snapshot: {e}") from None
    if meta.get("format") != FORMAT:
        raise SnapshotError(f"snapshot format {meta.get('format')!r}, this version reads {FORMAT}")
    book = Codebook()
    for n in meta["nodes"]:
        book.nodes.code(n)
    for s in meta["states"]:
        book.states.code(s)
    for j in meta["jobs"]:
        book.jobs.code(j)
    acc = DrainAccountant(
        book,
        tz=meta["tz"],
        max_gap_ms=meta["max_gap_ms"],
        retention_ms=meta["retention_ms"],
        unit=meta["unit"],
    )
    for name in _ARRAYS:
        setattr(acc, name, arrays[name].copy())
    acc.counts = Counts(**meta["counts"])
    acc.first_ms, acc.last_ms = meta["first_ms"], meta["last_ms"]
    acc._win = {int(k): row.copy() for k, row in zip(meta["win_keys"], arrays["win"], strict=True)}
    acc._win_nodes.clear()
    acc._win_nodes.update({int(k): int(v) for k, v in meta["win_nodes"]})
    if meta["hour_nodes"] is not None:
        acc._hour_nodes = {int(k): int(v) for k, v in meta["hour_nodes"]}
    acc._day_nodes = {int(k): int(v) for k, v in meta["day_nodes"]}
    for tag, attr in (("drain", "_drain_pairs"), ("run", "_run_pairs")):
        pc = _PairCounter(meta["retention_ms"])
        pc.pairs = arrays[f"{tag}_pairs"].copy()
        pc.count = arrays[f"{tag}_count"].copy()
        setattr(acc, attr, pc)
    return acc, meta["extra"]
