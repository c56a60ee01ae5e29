"""A block of node-sample trace lines (models/formats/sampletrace.py) read straight into
columns: the live samples path's reader.

The compiled pass (``native/src/samples.rs``) takes the common line and leaves every other one
to :func:`~models.formats.sampletrace.sample_row`, which decides with its reasons; the result
is what ``sample_row`` gives line by line (proven on generated lines in
``tests/models/formats/test_samplelines.py``). Without the compiled module every line goes
through ``sample_row``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.formats.sampletrace import SampleTraceError, sample_row
from models.records.nodesample import NodeSample
from models.samples.batch import SampleBatch

_native: Callable[[bytes], tuple[Any, ...]] | None
try:
    from drainwatch_native import sample_lines as _native
except ImportError:  # pragma: no cover - the pure-Python path (tests force it too)
    _native = None


@dataclass(slots=True)
class ParsedLines:
    batch: SampleBatch  # the good lines' samples, in line order
    bounds: np.ndarray  # (rows, 2) int64: each sample's line, [start, end) in the block
    rejects: list[tuple[int, int, str, str]]  # (start, end, reason, detail) per bad line


def parse_lines(data: bytes, native: bool = True) -> ParsedLines:
    """Every line of ``data`` (lines end at ``\\n`` or ``\\r``, as ``bytes.splitlines`` cuts;
    blank ones are skipped): the good ones' samples and the bad ones' reasons."""
    if native and _native is not None:
        return _parse_native(data)
    rows, bounds, rejects = _python(data, 0, len(data))
    return ParsedLines(_from_rows(rows), _bounds(bounds), rejects)


def _python(
    data: bytes, lo: int, hi: int
) -> tuple[list[list[Any]], list[tuple[int, int]], list[tuple[int, int, str, str]]]:
    """sample_row line by line over ``data[lo:hi]``."""
    rows, bounds, rejects = [], [], []
    pos = lo
    for line in data[lo:hi].splitlines(keepends=True):
        end = pos + len(line)
        text = line.rstrip(b"\r\n")
        a, b = pos, pos + len(text)
        pos = end
        if not text.strip():
            continue
        try:
            rows.append(sample_row(text))
            bounds.append((a, b))
        except SampleTraceError as err:
            rejects.append((a, b, err.reason, str(err)))
    return rows, bounds, rejects


def _bounds(b: list[tuple[int, int]]) -> np.ndarray:
    return np.array(b, np.int64).reshape(-1, 2)


def _from_rows(rows: list[list[Any]]) -> SampleBatch:
    """sample_row's rows (NodeSample's fields in order) as a batch."""
    return SampleBatch.from_samples(NodeSample(*r) for r in rows)


def _f8(b: bytes) -> np.ndarray:
    return np.frombuffer(b, np.float64)


def _i8(b: bytes) -> np.ndarray:
    return np.frombuffer(b, np.int64)


def _u4(b: bytes) -> np.ndarray:
    return np.frombuffer(b, np.uint32).astype(np.int64)


def _parse_native(data: bytes) -> ParsedLines:
    assert _native is not None
    (status, bounds, ts, start, core, pid, wb, rb, rss, swap, cores, jc, nc, jobs, nodes) = _native(
        data
    )
    st = np.frombuffer(status, np.uint8)
    lb = np.frombuffer(bounds, np.uint64).astype(np.int64).reshape(-1, 2)
    batch = SampleBatch(
        _f8(ts),
        _u4(jc),
        _u4(nc),
        _i8(pid),
        _f8(start),
        _i8(wb),
        _i8(rb),
        _f8(core),
        _i8(rss),
        _i8(swap),
        _i8(cores),
        jobs,
        nodes,
    )
    taken = st == 1
    other = np.flatnonzero(st == 2)
    if not other.size:
        return ParsedLines(batch, lb[taken], [])
    # the lines Python decides (in line order among the taken ones)
    rows: list[list[Any]] = []
    rb_: list[tuple[int, int]] = []
    rejects: list[tuple[int, int, str, str]] = []
    at: list[int] = []  # line index of each Python row
    for k in other.tolist():
        r, b, rej = _python(data, int(lb[k, 0]), int(lb[k, 1]))
        rows += r
        rb_ += b
        at += [k] * len(r)
        rejects += rej
    if not rows:
        return ParsedLines(batch, lb[taken], rejects)
    both = SampleBatch.concat([batch, _from_rows(rows)])
    line = np.concatenate([np.flatnonzero(taken), np.array(at, np.int64)])
    order = np.argsort(line, kind="stable")
    return ParsedLines(both.take(order), np.concatenate([lb[taken], _bounds(rb_)])[order], rejects)
