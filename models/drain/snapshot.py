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
from models.records.idbook import IdBook, numeric_id
from models.records.nodestatus import Codebook

FORMAT = 2  # 2: job ids as int64 values (IdBook), not a list of strings
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
    "job_run_last_ms",
)


class SnapshotError(ValueError):
    """The bytes are not a snapshot this version can read."""


def dumps(acc: DrainAccountant, extra: dict[str, Any] | None = None) -> bytes:
    """The accountant, its codebook and ``extra`` (JSON-able: offsets, watermarks) as bytes."""
    book = acc.book
    job_ids, job_strs = _job_arrays(book)
    win_keys = sorted(acc._win)
    meta = {
        "tz": acc.days.tz.key,
        "unit": acc.unit,
        "max_gap_ms": acc.max_gap_ms,
        "retention_ms": acc._drain_pairs.retention_ms,
        "nodes": book.nodes.names,
        "states": book.states.names,
        "job_strs": sorted(job_strs.items()),
        "counts": asdict(acc.counts),
        "first_ms": acc.first_ms,
        "last_ms": acc.last_ms,
        "win_keys": win_keys,
        "win_nodes": sorted(acc._win_nodes.items()),
        "hour_nodes": sorted(acc._hour_nodes.items()) if acc.unit != "hour" else None,
        "day_nodes": sorted(acc._day_nodes.items()),
        "next_prune_ms": [acc._drain_pairs.next_prune_ms, acc._run_pairs.next_prune_ms],
        "pair_shift": [acc._drain_pairs.shift, acc._run_pairs.shift],
        "extra": extra or {},
    }
    arrays = {name: getattr(acc, name) for name in _ARRAYS}
    arrays["job_ids"] = job_ids
    ncat = acc.n_cats
    arrays["win"] = (
        np.stack([acc._win[k] for k in win_keys])
        if win_keys
        else np.zeros((0, ncat), dtype=np.int64)
    )
    for tag, pc in (("drain", acc._drain_pairs), ("run", acc._run_pairs)):
        pc.merge()
        arrays[f"{tag}_pairs"] = pc.pairs
        arrays[f"{tag}_count"] = pc.count
    return pack(arrays, meta)


def pack(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> bytes:
    """Arrays and a JSON-able ``meta`` (its ``format`` set here) as one npz archive."""
    meta = {**meta, "format": FORMAT}
    buf = io.BytesIO()
    np.savez(
        buf, allow_pickle=False, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays
    )
    return buf.getvalue()


def unpack(data: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(arrays, meta) from :func:`pack` bytes; any damage or another format -> SnapshotError."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop("meta").tobytes().decode())
    except Exception as e:  # zip, npz or JSON damage: one error type for the caller
        raise SnapshotError(f"not a drain snapshot: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise SnapshotError(f"snapshot format {got!r}, this version reads {FORMAT}")
    return arrays, meta


def _job_arrays(book: Codebook) -> tuple[np.ndarray, dict[int, str]]:
    if isinstance(book.jobs, IdBook):
        return book.jobs.to_arrays()
    names = book.jobs.all_names()
    ids = np.array([numeric_id(n) for n in names], dtype=np.int64)
    return ids, {c: n for c, n in enumerate(names) if ids[c] < 0}


def loads(data: bytes) -> tuple[DrainAccountant, dict[str, Any]]:
    """(accountant with its own codebook, extra) from :func:`dumps` bytes."""
    arrays, meta = unpack(data)
    book = Codebook(jobs=IdBook.from_arrays(arrays.pop("job_ids"), dict(meta["job_strs"])))
    for n in meta["nodes"]:
        book.nodes.code(n)
    for s in meta["states"]:
        book.states.code(s)
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
        pc.next_prune_ms = meta["next_prune_ms"][0 if tag == "drain" else 1]
        pc.shift = int(meta["pair_shift"][0 if tag == "drain" else 1])
        pc.fresh = pc.pairs[:0]
        setattr(acc, attr, pc)
    return acc, meta["extra"]
