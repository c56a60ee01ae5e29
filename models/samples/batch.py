"""Node samples as columns, for the live samples path (docs/state.md, "Node samples").

:class:`SampleBatch` holds the fields the live analytics read (seed 003 Table 1-2: time, job,
pid, node, and of the measure: write and read bytes, core %, RSS and swap, allocated cores;
plus the process start and per-file-system speeds) as numpy columns, one row per sample, in
the order they came. Job and node names are codes into the batch's own lists; two batches'
codes mean nothing to each other until :meth:`SampleBatch.concat` puts them in one table.
Counters stay int64 here (the analytics turn them to float64 where the replay does).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from models.records.nodesample import NodeSample

FsRates = tuple[tuple[str, float, float], ...]

_F8 = ("ts", "start", "core")
_I8 = ("pid", "write", "read", "rss", "swap", "cores")
MAGIC = b"DWS1"


@dataclass(slots=True)
class SampleBatch:
    ts: np.ndarray  # float64, epoch s
    job: np.ndarray  # int64 codes into ``jobs``
    node: np.ndarray  # int64 codes into ``nodes``
    pid: np.ndarray  # int64
    start: np.ndarray  # float64, process start (0 = unknown)
    write: np.ndarray  # int64, cumulative write_bytes
    read: np.ndarray  # int64, cumulative read_bytes
    core: np.ndarray  # float64, % of one core
    rss: np.ndarray  # int64, KiB
    swap: np.ndarray  # int64, KiB
    cores: np.ndarray  # int64, allocated on the node (0 = unknown)
    jobs: list[str]
    nodes: list[str]
    fs: dict[int, FsRates] = field(default_factory=dict)  # row -> its per-file-system speeds

    def __len__(self) -> int:
        return int(self.ts.shape[0])

    @classmethod
    def empty(cls) -> SampleBatch:
        f, i = np.zeros(0), np.zeros(0, np.int64)
        return cls(f, i, i, i, f, i, i, f, i, i, i, [], [])

    @classmethod
    def from_samples(cls, samples: Iterable[NodeSample]) -> SampleBatch:
        """Columns from records (the slow way in; the live path reads lines straight into
        columns: :func:`models.formats.samplelines.parse_lines`)."""
        s = list(samples)
        jobs: dict[str, int] = {}
        nodes: dict[str, int] = {}
        job = [jobs.setdefault(x.job, len(jobs)) for x in s]
        node = [nodes.setdefault(x.node, len(nodes)) for x in s]
        fs = {i: x.fs_rates for i, x in enumerate(s) if x.fs_rates}
        i8, f8 = np.int64, np.float64
        return cls(
            np.array([x.ts for x in s], f8), np.array(job, i8), np.array(node, i8),
            np.array([x.pid for x in s], i8), np.array([x.start for x in s], f8),
            np.array([x.write_bytes for x in s], i8), np.array([x.read_bytes for x in s], i8),
            np.array([x.core for x in s], f8), np.array([x.vm_rss_kb for x in s], i8),
            np.array([x.vm_swap_kb for x in s], i8), np.array([x.cores for x in s], i8),
            list(jobs), list(nodes), fs,
        )  # fmt: skip

    @classmethod
    def concat(cls, batches: Sequence[SampleBatch]) -> SampleBatch:
        """One batch, rows in the given order, names in one table per column."""
        batches = [b for b in batches if len(b)]
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        jobs: dict[str, int] = {}
        nodes: dict[str, int] = {}
        jc, nc, fs = [], [], {}
        base = 0
        for b in batches:
            jl = np.array([jobs.setdefault(x, len(jobs)) for x in b.jobs], np.int64)
            nl = np.array([nodes.setdefault(x, len(nodes)) for x in b.nodes], np.int64)
            jc.append(jl[b.job] if b.jobs else b.job)
            nc.append(nl[b.node] if b.nodes else b.node)
            fs.update({base + i: r for i, r in b.fs.items()})
            base += len(b)
        cat = np.concatenate
        return cls(
            cat([b.ts for b in batches]), cat(jc), cat(nc), cat([b.pid for b in batches]),
            cat([b.start for b in batches]), cat([b.write for b in batches]),
            cat([b.read for b in batches]), cat([b.core for b in batches]),
            cat([b.rss for b in batches]), cat([b.swap for b in batches]),
            cat([b.cores for b in batches]), list(jobs), list(nodes), fs,
        )  # fmt: skip

    def take(self, idx: np.ndarray) -> SampleBatch:
        """The rows ``idx`` (indices, or a boolean mask), in that order."""
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        fs: dict[int, FsRates] = {}
        if self.fs:
            fs = {new: self.fs[old] for new, old in enumerate(idx.tolist()) if old in self.fs}
        return SampleBatch(
            self.ts[idx], self.job[idx], self.node[idx], self.pid[idx], self.start[idx],
            self.write[idx], self.read[idx], self.core[idx], self.rss[idx], self.swap[idx],
            self.cores[idx], self.jobs, self.nodes, fs,
        )  # fmt: skip

    def slice(self, lo: int, hi: int) -> SampleBatch:
        """Rows ``lo:hi`` (views of these columns)."""
        fs = {i - lo: r for i, r in self.fs.items() if lo <= i < hi}
        return SampleBatch(
            self.ts[lo:hi], self.job[lo:hi], self.node[lo:hi], self.pid[lo:hi],
            self.start[lo:hi], self.write[lo:hi], self.read[lo:hi], self.core[lo:hi],
            self.rss[lo:hi], self.swap[lo:hi], self.cores[lo:hi], self.jobs, self.nodes, fs,
        )  # fmt: skip

    def to_bytes(self, head: dict[str, Any]) -> bytes:
        """This batch and ``head`` (JSON values) as one message: ``DWS1``, the header's length
        (u32), the header (JSON: ``head``, the name lists, the per-file-system speeds), then the
        columns (little-endian: ts, start, core as f64; pid, write, read, rss, swap, cores as
        i64; job and node codes as u32)."""
        h = orjson.dumps({**head, "rows": len(self), "jobs": self.jobs, "nodes": self.nodes,
                          "fs": [[i, r] for i, r in sorted(self.fs.items())]})  # fmt: skip
        cols = [getattr(self, k).astype("<f8", copy=False) for k in _F8]
        cols += [getattr(self, k).astype("<i8", copy=False) for k in _I8]
        cols += [self.job.astype("<u4"), self.node.astype("<u4")]
        return b"".join([MAGIC, len(h).to_bytes(4, "little"), h, *(c.tobytes() for c in cols)])

    @classmethod
    def from_bytes(cls, data: bytes) -> tuple[SampleBatch, dict[str, Any]]:
        """:meth:`to_bytes`'s batch (columns are views of ``data``) and header."""
        if data[:4] != MAGIC:
            raise ValueError("not a sample batch")
        n = int.from_bytes(data[4:8], "little")
        head = orjson.loads(data[8 : 8 + n])
        rows, at = int(head["rows"]), 8 + n
        cols: dict[str, np.ndarray] = {}
        for k, dt in [*((k, "<f8") for k in _F8), *((k, "<i8") for k in _I8),
                      ("job", "<u4"), ("node", "<u4")]:  # fmt: skip
            cols[k] = np.frombuffer(data, dt, rows, at)
            at += rows * cols[k].itemsize
        if at != len(data):
            raise ValueError("sample batch: length does not match its header")
        fs = {int(i): tuple((n, float(w), float(r)) for n, w, r in x) for i, x in head["fs"]}
        c = cols
        b = cls(c["ts"], c["job"].astype(np.int64), c["node"].astype(np.int64), c["pid"],
                c["start"], c["write"], c["read"], c["core"], c["rss"], c["swap"], c["cores"],
                head["jobs"], head["nodes"], fs)  # fmt: skip
        return b, head

    def ranks(self, which: str) -> np.ndarray:
        """Per row, the rank of its job (``"job"``) or node name in Python's string order:
        int64 codes that sort as the names do."""
        names = self.jobs if which == "job" else self.nodes
        codes = self.job if which == "job" else self.node
        order = sorted(range(len(names)), key=names.__getitem__)
        lut = np.empty(len(names), np.int64)
        lut[order] = np.arange(len(names))
        return lut[codes] if len(names) else codes

    def job_names(self) -> list[str]:
        jobs = self.jobs
        return [jobs[c] for c in self.job.tolist()]

    def node_names(self) -> list[str]:
        nodes = self.nodes
        return [nodes[c] for c in self.node.tolist()]

    def to_samples(self) -> list[NodeSample]:
        """Records with these fields (the others empty)."""
        cols = [self.ts.tolist(), self.job_names(), self.pid.tolist(), self.node_names(),
                self.write.tolist(), self.read.tolist(), self.core.tolist(), self.rss.tolist(),
                self.swap.tolist(), self.start.tolist(), self.cores.tolist()]  # fmt: skip
        out = []
        rows = enumerate(zip(*cols, strict=True))
        for i, (ts, job, pid, node, w, r, core, rss, swap, start, cores) in rows:
            out.append(NodeSample(ts, job, pid, node, "", 0, 0, rss, swap, 0, 0, r, w, core, 0,
                                  0, start, cores, "", self.fs.get(i, ())))  # fmt: skip
        return out

    # ---- durable state ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {k: getattr(self, k).tolist() for k in (*_F8, *_I8)}
        d["job"], d["node"] = self.job_names(), self.node_names()
        d["fs"] = [[i, [list(x) for x in r]] for i, r in sorted(self.fs.items())]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SampleBatch:
        jobs: dict[str, int] = {}
        nodes: dict[str, int] = {}
        job = np.array([jobs.setdefault(x, len(jobs)) for x in d["job"]], np.int64)
        node = np.array([nodes.setdefault(x, len(nodes)) for x in d["node"]], np.int64)
        f = {k: np.array(d[k], np.float64) for k in _F8}
        i = {k: np.array(d[k], np.int64) for k in _I8}
        fs = {int(r): tuple((n, float(w), float(x)) for n, w, x in v) for r, v in d["fs"]}
        return cls(f["ts"], job, node, i["pid"], f["start"], i["write"], i["read"], f["core"],
                   i["rss"], i["swap"], i["cores"], list(jobs), list(nodes), fs)  # fmt: skip


def as_batch(samples: SampleBatch | Iterable[NodeSample]) -> SampleBatch:
    return samples if isinstance(samples, SampleBatch) else SampleBatch.from_samples(samples)
