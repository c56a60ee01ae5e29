"""Node samples from a stream split over partitions, merged back into time order: the job
merger's rules (``models.jobs.merge``: event-time watermark over the partitions, late records
refused, a re-sent message ignored by (partition, offset)) with samples as the records, held
and released as columns (:class:`~models.samples.batch.SampleBatch`). A message of
``node-samples`` holds node sweeps (several processes at one time), so its samples share one
offset. Released samples are in ``(ts, node, pid, start, job)`` order, samples equal in all
five in the order they came: what a stable sort of the records by that key gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from models.formats.sampletrace import parse_sample, sample_to_dict
from models.jobs.merge import JobEventMerger
from models.records.nodesample import NodeSample
from models.samples.batch import (
    SampleBatch,
    tree_float,
    tree_get,
    tree_int,
    tree_opt_float,
    tree_pairs,
)


def sample_sort_key(s: NodeSample) -> tuple[float, str, int, float, str]:
    return (s.ts, s.node, s.pid, s.start, s.job)


def time_order(b: SampleBatch) -> np.ndarray:
    """The stable order of ``b``'s rows by :func:`sample_sort_key`."""
    return np.lexsort((b.ranks("job"), b.start, b.pid, b.ranks("node"), b.ts))


class SampleMerger(JobEventMerger):
    """``held`` is a list of batches; :meth:`add_many` takes a batch and returns the row
    indices of its late samples."""

    @staticmethod
    def encode(e: Any) -> Any:
        """A late sample for its dead letter."""
        return sample_to_dict(e)

    def add_many(self, partition: int, offset: int, records: Any) -> Any:
        b: SampleBatch = records
        if offset <= self.offsets.get(partition, -1):
            self.duplicates += len(b)
            return np.zeros(0, np.int64)
        self.offsets[partition] = offset
        if not len(b):
            return np.zeros(0, np.int64)
        self.input_ended = False
        top = float(b.ts.max())
        if top > self.latest.get(partition, float("-inf")):
            self.latest[partition] = top
        if self.released_to is not None:
            late = b.ts <= self.released_to
            if late.any():
                self.late += int(late.sum())
                self.held.append(b.take(~late))
                return np.flatnonzero(late)
        self.held.append(b)
        return np.zeros(0, np.int64)

    def add(self, partition: int, offset: int, event: Any) -> str | None:
        if offset <= self.offsets.get(partition, -1):
            self.duplicates += 1
            return "duplicate"
        late = self.add_many(partition, offset, SampleBatch.from_samples([event]))
        return "late" if late.size else None

    def release(self) -> SampleBatch:  # type: ignore[override]
        wm = self.watermark
        if wm is None or not self.held or (self.released_to is not None and wm <= self.released_to):
            return SampleBatch.empty()
        out, keep = [], []
        for b in self.held:
            m = b.ts <= wm
            if m.all():
                out.append(b)
            elif m.any():
                out.append(b.take(m))
                keep.append(b.take(~m))
            else:
                keep.append(b)
        self.held = keep
        self.released_to = wm
        return _ordered(out)

    def end(self) -> SampleBatch:  # type: ignore[override]
        out = self.flush()
        self.input_ended = True
        return out

    def flush(self) -> SampleBatch:  # type: ignore[override]
        out = _ordered(self.held)
        self.held = []
        if len(out):
            top = float(out.ts[-1])
            self.released_to = max(top, self.released_to if self.released_to is not None else top)
        return out

    # ---- durable state ----------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The merger's state as a tree (:mod:`models.state`); the lateness and the partitions
        are its configuration, not state. The held batches go as one (their rows in the order
        held: what a release sorts, stably, is the same)."""
        return {
            "latest": [[p, t] for p, t in self.latest.items()],
            "offsets": [[p, o] for p, o in self.offsets.items()],
            "released_to": self.released_to,
            "duplicates": self.duplicates,
            "late": self.late,
            "held": SampleBatch.concat(self.held).to_tree(),
            **self.marks_snapshot(),
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """:meth:`snapshot`'s state into this merger (built with its configuration); read
        whole before any of it is set."""
        latest = {
            tree_int(p, "merger partition"): tree_float(t, "merger latest")
            for p, t in tree_pairs(tree_get(tree, "latest"), "merger latest")
        }
        offsets = {
            tree_int(p, "merger partition"): tree_int(o, "merger offset")
            for p, o in tree_pairs(tree_get(tree, "offsets"), "merger offsets")
        }
        released_to = tree_opt_float(tree_get(tree, "released_to"), "merger released_to")
        duplicates = tree_int(tree_get(tree, "duplicates"), "merger duplicates")
        late = tree_int(tree_get(tree, "late"), "merger late")
        held = SampleBatch.from_tree(tree_get(tree, "held"))
        self.marks_restore(tree)
        self.latest, self.offsets, self.released_to = latest, offsets, released_to
        self.duplicates, self.late = duplicates, late
        self.held = [held] if len(held) else []

    def to_dict(self) -> dict[str, Any]:
        held, self.held = self.held, []
        try:
            d = super().to_dict()
        finally:
            self.held = held
        d["held"] = [b.to_dict() for b in held]
        d["columns"] = 1
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SampleMerger:
        held = d["held"]
        self = super().from_dict({**d, "held": []})
        assert isinstance(self, SampleMerger)
        if d.get("columns"):
            self.held = [SampleBatch.from_dict(b) for b in held]
        elif held:  # a state saved by a release that held records
            self.held = [SampleBatch.from_samples(parse_sample(orjson.dumps(x)) for x in held)]
        return self


def _ordered(batches: list[SampleBatch]) -> SampleBatch:
    b = SampleBatch.concat(batches)
    return b.take(time_order(b)) if len(b) > 1 else b
