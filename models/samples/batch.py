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
from itertools import accumulate, chain
from typing import Any

import numpy as np
import orjson

from models.records.nodesample import NodeSample
from models.state import StateFormatError

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
            np.array([x.ts for x in s], f8),
            np.array(job, i8),
            np.array(node, i8),
            np.array([x.pid for x in s], i8),
            np.array([x.start for x in s], f8),
            np.array([x.write_bytes for x in s], i8),
            np.array([x.read_bytes for x in s], i8),
            np.array([x.core for x in s], f8),
            np.array([x.vm_rss_kb for x in s], i8),
            np.array([x.vm_swap_kb for x in s], i8),
            np.array([x.cores for x in s], i8),
            list(jobs),
            list(nodes),
            fs,
        )

    @classmethod
    def concat(cls, batches: Sequence[SampleBatch]) -> SampleBatch:
        """One batch, rows in the given order, names in one table per column."""
        sizes = [b.ts.shape[0] for b in batches]
        if sizes.count(0):
            batches = [b for b, n in zip(batches, sizes, strict=True) if n]
            sizes = [n for n in sizes if n]
        if not batches:
            return cls.empty()
        if len(batches) == 1:
            return batches[0]
        jobs, job = _merged_codes([b.jobs for b in batches], [b.job for b in batches], sizes)
        nodes, node = _merged_codes([b.nodes for b in batches], [b.node for b in batches], sizes)
        fs: dict[int, FsRates] = {}
        for b, base in zip(batches, [0, *accumulate(sizes[:-1])], strict=True):
            if b.fs:
                fs.update({base + i: r for i, r in b.fs.items()})
        cat = np.concatenate
        return cls(
            cat([b.ts for b in batches]),
            job,
            node,
            cat([b.pid for b in batches]),
            cat([b.start for b in batches]),
            cat([b.write for b in batches]),
            cat([b.read for b in batches]),
            cat([b.core for b in batches]),
            cat([b.rss for b in batches]),
            cat([b.swap for b in batches]),
            cat([b.cores for b in batches]),
            jobs,
            nodes,
            fs,
        )

    def take(self, idx: np.ndarray) -> SampleBatch:
        """The rows ``idx`` (indices, or a boolean mask), in that order."""
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        fs: dict[int, FsRates] = {}
        if self.fs:
            fs = {new: self.fs[old] for new, old in enumerate(idx.tolist()) if old in self.fs}
        return SampleBatch(
            self.ts[idx],
            self.job[idx],
            self.node[idx],
            self.pid[idx],
            self.start[idx],
            self.write[idx],
            self.read[idx],
            self.core[idx],
            self.rss[idx],
            self.swap[idx],
            self.cores[idx],
            self.jobs,
            self.nodes,
            fs,
        )

    def slice(self, lo: int, hi: int) -> SampleBatch:
        """Rows ``lo:hi`` (views of these columns)."""
        fs = {i - lo: r for i, r in self.fs.items() if lo <= i < hi}
        return SampleBatch(
            self.ts[lo:hi],
            self.job[lo:hi],
            self.node[lo:hi],
            self.pid[lo:hi],
            self.start[lo:hi],
            self.write[lo:hi],
            self.read[lo:hi],
            self.core[lo:hi],
            self.rss[lo:hi],
            self.swap[lo:hi],
            self.cores[lo:hi],
            self.jobs,
            self.nodes,
            fs,
        )

    def to_bytes(self, head: dict[str, Any]) -> bytes:
        """This batch and ``head`` (JSON values) as one message: ``DWS1``, the header's length
        (u32), the header (JSON: ``head``, the name lists, the per-file-system speeds), then the
        columns (little-endian: ts, start, core as f64; pid, write, read, rss, swap, cores as
        i64; job and node codes as u32)."""
        h = orjson.dumps(
            {
                **head,
                "rows": len(self),
                "jobs": self.jobs,
                "nodes": self.nodes,
                "fs": [[i, r] for i, r in sorted(self.fs.items())],
            }
        )
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
        for k, dt in [
            *((k, "<f8") for k in _F8),
            *((k, "<i8") for k in _I8),
            ("job", "<u4"),
            ("node", "<u4"),
        ]:
            cols[k] = np.frombuffer(data, dt, rows, at)
            at += rows * cols[k].itemsize
        if at != len(data):
            raise ValueError("sample batch: length does not match its header")
        fs = {int(i): tuple((n, float(w), float(r)) for n, w, r in x) for i, x in head["fs"]}
        c = cols
        b = cls(
            c["ts"],
            c["job"].astype(np.int64),
            c["node"].astype(np.int64),
            c["pid"],
            c["start"],
            c["write"],
            c["read"],
            c["core"],
            c["rss"],
            c["swap"],
            c["cores"],
            head["jobs"],
            head["nodes"],
            fs,
        )
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
        cols = [
            self.ts.tolist(),
            self.job_names(),
            self.pid.tolist(),
            self.node_names(),
            self.write.tolist(),
            self.read.tolist(),
            self.core.tolist(),
            self.rss.tolist(),
            self.swap.tolist(),
            self.start.tolist(),
            self.cores.tolist(),
        ]
        out = []
        rows = enumerate(zip(*cols, strict=True))
        for i, (ts, job, pid, node, w, r, core, rss, swap, start, cores) in rows:
            out.append(
                NodeSample(
                    ts,
                    job,
                    pid,
                    node,
                    "",
                    0,
                    0,
                    rss,
                    swap,
                    0,
                    0,
                    r,
                    w,
                    core,
                    0,
                    0,
                    start,
                    cores,
                    "",
                    self.fs.get(i, ()),
                )
            )
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
        return cls(
            f["ts"],
            job,
            node,
            i["pid"],
            f["start"],
            i["write"],
            i["read"],
            f["core"],
            i["rss"],
            i["swap"],
            i["cores"],
            list(jobs),
            list(nodes),
            fs,
        )

    def to_tree(self) -> dict[str, Any]:
        """The batch as a state tree (:mod:`models.state`): the columns as they are (arrays,
        not copied: a batch's columns are never written to), the name tables as lists, the
        per-file-system speeds as the samples that have them, how many each and the
        (system, write, read) of all of them end to end."""
        tree: dict[str, Any] = {k: getattr(self, k) for k in (*_F8, *_I8, "job", "node")}
        tree["jobs"], tree["nodes"] = list(self.jobs), list(self.nodes)
        rows = sorted(self.fs)
        rates = [self.fs[i] for i in rows]
        flat = list(chain.from_iterable(rates))
        name, write, read = zip(*flat, strict=True) if flat else ((), (), ())
        tree["fs"] = {
            "row": np.array(rows, np.int64),
            "count": np.fromiter(map(len, rates), np.int64, len(rates)),
            "name": names_tree(name),
            "write": np.array(write, np.float64),
            "read": np.array(read, np.float64),
        }
        return tree

    @classmethod
    def from_tree(cls, tree: Any) -> SampleBatch:
        """:meth:`to_tree`'s batch; a malformed tree raises :class:`StateFormatError`."""
        n = len(tree_array(tree_get(tree, "ts"), "f", "batch ts"))
        f = {k: tree_array(tree_get(tree, k), "f", f"batch {k}", (n,)) for k in _F8}
        i = {k: tree_array(tree_get(tree, k), "i", f"batch {k}", (n,)) for k in _I8}
        jobs = tree_strs(tree_get(tree, "jobs"), "batch jobs")
        nodes = tree_strs(tree_get(tree, "nodes"), "batch nodes")
        job = tree_codes(tree_get(tree, "job"), len(jobs), "batch job", n)
        node = tree_codes(tree_get(tree, "node"), len(nodes), "batch node", n)
        t = tree_get(tree, "fs")
        row = tree_codes(tree_get(t, "row"), n, "batch fs row").tolist()
        count = tree_array(tree_get(t, "count"), "i", "batch fs count", (len(row),))
        k = int(count.sum())
        if (count < 0).any() or len(set(row)) != len(row):
            raise StateFormatError("state: batch fs: a row twice or a count below 0")
        name = names_from_tree(tree_get(t, "name"), "batch fs name", k)
        write = tree_array(tree_get(t, "write"), "f", "batch fs write", (k,)).tolist()
        read = tree_array(tree_get(t, "read"), "f", "batch fs read", (k,)).tolist()
        entries = list(zip(name, write, read, strict=True))
        end = np.cumsum(count).tolist()
        parts = map(entries.__getitem__, map(slice, [0, *end[:-1]], end))
        fs = dict(zip(row, map(tuple, parts), strict=True))
        ts, start, core = f["ts"], f["start"], f["core"]
        pid, wb, rb, rss, swap, cores = (i[k] for k in _I8)
        return cls(ts, job, node, pid, start, wb, rb, core, rss, swap, cores, jobs, nodes, fs)


def _merged_codes(
    tables: list[list[str]], codes: list[np.ndarray], sizes: list[int]
) -> tuple[list[str], np.ndarray]:
    """One name table for several batches' (each name where it is first seen, the batches in
    order) and every row's code in it; a batch without a table keeps its codes. Per name, not
    per batch: concatenating thousands of one-sweep batches stays array work."""
    flat = list(chain.from_iterable(tables))
    table = list(dict.fromkeys(flat))
    cat = np.concatenate(codes)
    if not flat:
        return table, cat
    index = {x: i for i, x in enumerate(table)}
    glob = np.fromiter(map(index.__getitem__, flat), np.int64, len(flat))
    lens = [len(t) for t in tables]
    at = cat + np.repeat(np.cumsum([0, *lens[:-1]]), sizes)  # per row: its name's place in flat
    has = np.repeat(np.array(lens) > 0, sizes)
    if has.all():
        return table, glob[at]
    return table, np.where(has, glob[np.where(has, at, 0)], cat)


def as_batch(samples: SampleBatch | Iterable[NodeSample]) -> SampleBatch:
    return samples if isinstance(samples, SampleBatch) else SampleBatch.from_samples(samples)


# ---- reading and writing state trees ----------------------------------------------------------
# The live samples stages' snapshot/restore (models.state trees). A reader takes the value it
# is given, checks its type and converts it explicitly; anything else raises StateFormatError
# naming ``what``, so a malformed state never builds a half-working object.

_ARRAY_KINDS = {"f": ("f", np.float64), "i": ("iu", np.int64), "b": ("b", np.bool_)}


def tree_get(tree: Any, key: str) -> Any:
    """``tree[key]`` of a mapping."""
    if not isinstance(tree, dict):
        raise StateFormatError(f"state: a mapping with {key!r} expected, not {_kind(tree)}")
    if key not in tree:
        raise StateFormatError(f"state: {key!r} missing")
    return tree[key]


def tree_int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise StateFormatError(f"state: {what} must be an integer, not {_kind(v)}")
    return int(v)


def tree_float(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise StateFormatError(f"state: {what} must be a number, not {_kind(v)}")
    return float(v)


def tree_number(v: Any, what: str) -> int | float:
    """An int or a float, kept as it is (a value typed float may have been made an int)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise StateFormatError(f"state: {what} must be a number, not {_kind(v)}")
    return v


def tree_opt_float(v: Any, what: str) -> float | None:
    return None if v is None else tree_float(v, what)


def tree_opt_int(v: Any, what: str) -> int | None:
    return None if v is None else tree_int(v, what)


def tree_str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise StateFormatError(f"state: {what} must be a string, not {_kind(v)}")
    return v


def tree_list(v: Any, what: str, n: int | None = None) -> list[Any]:
    """A list (of ``n`` items when given)."""
    if not isinstance(v, list):
        raise StateFormatError(f"state: {what} must be a list, not {_kind(v)}")
    if n is not None and len(v) != n:
        raise StateFormatError(f"state: {what} has {len(v)} items, not {n}")
    return v


def tree_pairs(v: Any, what: str) -> list[tuple[Any, Any]]:
    """A list of two-item lists (a dict's items), as tuples."""
    return [(x[0], x[1]) for x in (tree_list(x, what, 2) for x in tree_list(v, what))]


def tree_strs(v: Any, what: str) -> list[str]:
    return [tree_str(x, what) for x in tree_list(v, what)]


def tree_array(v: Any, kind: str, what: str, shape: tuple[int | None, ...] = (None,)) -> np.ndarray:
    """An array of ``kind`` (``f``: float64, ``i``: int64, ``b``: bool) and ``shape`` (None:
    any length), in that dtype."""
    kinds, dtype = _ARRAY_KINDS[kind]
    if not isinstance(v, np.ndarray):
        raise StateFormatError(f"state: {what} must be an array, not {_kind(v)}")
    if v.dtype.kind not in kinds:
        raise StateFormatError(f"state: {what} must hold {dtype.__name__}, not {v.dtype}")
    if v.ndim != len(shape) or any(w not in (None, h) for h, w in zip(v.shape, shape, strict=True)):
        raise StateFormatError(f"state: {what} has shape {v.shape}, not {shape}")
    return v.astype(dtype, copy=False)


def tree_codes(v: Any, size: int, what: str, n: int | None = None) -> np.ndarray:
    """int64 codes, each in ``0..size-1`` (``n`` of them when given)."""
    codes = tree_array(v, "i", what, (n,))
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= size):
        raise StateFormatError(f"state: {what} out of range (0..{size - 1})")
    return codes


def names_tree(names: Sequence[str]) -> dict[str, Any]:
    """A column of strings as a tree: each distinct one once, and per row its code."""
    table = list(dict.fromkeys(names))
    index = {x: i for i, x in enumerate(table)}
    codes = np.fromiter(map(index.__getitem__, names), np.int64, len(names))
    return {"names": table, "codes": codes}


def names_from_tree(v: Any, what: str, n: int | None = None) -> list[str]:
    """:func:`names_tree`'s column (of ``n`` rows when given)."""
    table = tree_strs(tree_get(v, "names"), what)
    codes = tree_codes(tree_get(v, "codes"), len(table), what, n)
    return list(map(table.__getitem__, codes.tolist()))


def ragged_tree(lists: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Lists of floats of any lengths as a tree: their values end to end and their lengths."""
    values = np.fromiter(chain.from_iterable(lists), np.float64)
    return {"values": values, "counts": np.fromiter(map(len, lists), np.int64, len(lists))}


def ragged_from_tree(v: Any, what: str, n: int | None = None) -> list[list[float]]:
    """:func:`ragged_tree`'s lists (``n`` of them when given)."""
    values = tree_array(tree_get(v, "values"), "f", what).tolist()
    counts = tree_array(tree_get(v, "counts"), "i", what, (n,)).tolist()
    if any(c < 0 for c in counts) or sum(counts) != len(values):
        raise StateFormatError(f"state: {what}: lengths do not match the values")
    out, at = [], 0
    for c in counts:
        out.append(values[at : at + c])
        at += c
    return out


def _kind(v: Any) -> str:
    return type(v).__name__
