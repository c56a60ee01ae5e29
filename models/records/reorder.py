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
    __slots__ = ("window_ms", "_held", "_latest", "reordered")

    def __init__(self, window_ms: int) -> None:
        if window_ms < 0:
            raise ValueError(f"reorder window must be >= 0 ms, not {window_ms}")
        self.window_ms = window_ms
        self._held = NodeStatusBatch.empty()
        self._latest: int | None = None
        self.reordered = 0  # records released in a different order than they arrived

    def __len__(self) -> int:
        return len(self._held)

    def push(self, batch: NodeStatusBatch) -> NodeStatusBatch:
        """Add ``batch``; return the records now older than the window, in time order."""
        if self.window_ms == 0:
            return batch
        if not len(batch):
            return NodeStatusBatch.empty()
        b = NodeStatusBatch.concat(self._held, batch)
        hi = int(batch.ts_ms.max())
        self._latest = hi if self._latest is None else max(self._latest, hi)
        ts = b.ts_ms
        if ts.size > 1 and bool(np.any(ts[1:] < ts[:-1])):
            self.reordered += int(np.count_nonzero(ts[1:] < np.maximum.accumulate(ts)[:-1]))
            order = np.argsort(ts, kind="stable")
            b = b.take(order)
            ts = b.ts_ms
        cut = int(np.searchsorted(ts, self._latest - self.window_ms, side="right"))
        if cut == len(b):
            self._held = NodeStatusBatch.empty()
            return b
        self._held = b.take(np.arange(cut, len(b), dtype=np.int64))
        return b.take(np.arange(cut, dtype=np.int64))

    def flush(self) -> NodeStatusBatch:
        """Everything still held, in time order (end of input)."""
        b, self._held = self._held, NodeStatusBatch.empty()
        return b
