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
        parts = self.push_parts(batch)
        out = parts[0] if parts else NodeStatusBatch.empty()
        for p in parts[1:]:
            out = NodeStatusBatch.concat(out, p)
        return out

    def push_parts(self, batch: NodeStatusBatch) -> list[NodeStatusBatch]:
        """As :meth:`push`, the released records as consecutive parts: input already in time
        order is released as what was held, then the new batch's front (a view), without
        copying the batch into one."""
        n = len(batch)
        if self.window_ms == 0 or n == 0:
            return [batch] if n else []
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
        held = self._held
        h = len(held)
        if not bool(np.any(behind)) and (h == 0 or int(held.ts_ms[-1]) <= int(ts_new[0])):
            # already in time order: release order is arrival order
            edge = self._latest - self.window_ms
            cut = int(np.searchsorted(ts_new, edge, side="right"))
            if cut == 0:  # nothing of the new batch is released: some of what was held may be
                hcut = int(np.searchsorted(held.ts_ms, edge, side="right"))
                self._held = NodeStatusBatch.concat(held.slice(hcut, h), batch)
                return [held.slice(0, hcut)] if hcut else []
            self._held = batch.slice(cut, n)
            return [p for p in (held, batch.slice(0, cut)) if len(p)]
        b = NodeStatusBatch.concat(held, batch)
        ts = b.ts_ms
        k = np.searchsorted(runmax, ts + self.window_ms, side="left")
        k[h:] = np.maximum(k[h:], np.arange(n))
        out = np.flatnonzero(k < n)
        keep = np.flatnonzero(k >= n)
        keep = keep[np.argsort(ts[keep], kind="stable")]  # held in time order, then arrival
        order = out[np.lexsort((out, ts[out], k[out]))]
        self._held = b.take(keep)
        return [b.take(order)] if order.size else []

    def flush(self) -> NodeStatusBatch:
        """Everything still held, in time order (end of input)."""
        b, self._held = self._held, NodeStatusBatch.empty()
        return b
