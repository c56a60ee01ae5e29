"""A bounded reorder buffer for node-status records (issue policy: mild disorder is tolerated).

Scheduler logs written by several threads, or merged from several shippers, can carry records a
few seconds out of time order. The drain accounting ignores a record not later than its node's
latest (seed 000 §III-B: one state per node per iteration), so such records would be lost. The
buffer holds every record until the latest time seen has moved ``window_ms`` past it and releases
records in time order (stable: equal times keep their arrival order). Memory is bounded by the
records of one window. A record that arrives later than the window still comes out late and is
counted as out of order downstream: the buffer hides mild disorder, never a reversed file.
"""

from __future__ import annotations

import numpy as np

from models.records.nodestatus import NodeStatusBatch


class ReorderBuffer:
    """Records come out in order of their release, then time. A record is released by the
    first arriving record that moves the latest time seen ``window_ms`` past it (at once if it
    is already that late), so the output depends on the record stream, never on how it was cut
    into batches."""

    __slots__ = ("window_ms", "_held", "_latest", "reordered")

    def __init__(self, window_ms: int) -> None:
        if window_ms < 0:
            raise ValueError(f"reorder window must be >= 0 ms, not {window_ms}")
        self.window_ms = window_ms
        self._held = NodeStatusBatch.empty()
        self._latest: int | None = None
        self.reordered = 0  # records that arrived behind a later one and were put back in order

    def __len__(self) -> int:
        return len(self._held)

    def push(self, batch: NodeStatusBatch) -> NodeStatusBatch:
        """Add ``batch``; return the records it releases, in release order."""
        n = len(batch)
        if self.window_ms == 0 or n == 0:
            return batch
        ts_new = batch.ts_ms
        runmax = np.maximum.accumulate(ts_new)
        if self._latest is not None:
            runmax = np.maximum(runmax, self._latest)
        before = np.empty(n, dtype=np.int64)  # latest time seen before each new record
        before[0] = self._latest if self._latest is not None else np.iinfo(np.int64).min
        before[1:] = runmax[:-1]
        behind = ts_new < before
        self.reordered += int(np.count_nonzero(behind & (ts_new > before - self.window_ms)))
        self._latest = int(runmax[-1])
        b = NodeStatusBatch.concat(self._held, batch)
        ts = b.ts_ms
        h = len(self._held)
        if not bool(np.any(behind)) and (h == 0 or int(self._held.ts_ms[-1]) <= int(ts_new[0])):
            # already in time order: release order is arrival order
            cut = int(np.searchsorted(ts, self._latest - self.window_ms, side="right"))
            self._held = b.slice(cut, len(b))
            return b.slice(0, cut)
        k = np.searchsorted(runmax, ts + self.window_ms, side="left")
        k[h:] = np.maximum(k[h:], np.arange(n))
        out = np.flatnonzero(k < n)
        keep = np.flatnonzero(k >= n)
        keep = keep[np.argsort(ts[keep], kind="stable")]  # held in time order, then arrival
        order = out[np.lexsort((out, ts[out], k[out]))]
        self._held = b.take(keep)
        return b.take(order)

    def flush(self) -> NodeStatusBatch:
        """Everything still held, in time order (end of input)."""
        b, self._held = self._held, NodeStatusBatch.empty()
        return b
