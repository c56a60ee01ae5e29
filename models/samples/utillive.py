"""Per-job utilisation from samples as they come (seed 003 §5): the streaming form of
:func:`models.samples.utilization.measures_from_samples` + :func:`job_utilization`, with the
same rules and numbers.

Samples go into their (job, node, measure) bucket (measure = floor(ts / period)); a process
sampled twice in one bucket counts once, its last sample. :meth:`JobUtilStream.close` makes the
buckets before a time final and adds them to their job: allocated cores per node (the largest
seen), the measures, the core and memory sums (exact: ``add_exact``, so the order they come in
does not matter), the largest memory per node, the largest swap of one measure, the first and
last measure times. A job's row (``job_utilization.csv``'s columns) can be read at any time; it
is final once no sample of the job has come for ``quiet_s`` of event time, and the job then
leaves memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from models.jobs.usage import add_exact
from models.records.nodesample import NodeSample, group_codes
from models.samples.batch import (
    SampleBatch,
    as_batch,
    names_from_tree,
    names_tree,
    ragged_from_tree,
    ragged_tree,
    tree_array,
    tree_get,
    tree_strs,
)
from models.state import StateFormatError


class _Job:
    __slots__ = ("nodes", "n", "last_b", "core", "mem", "swap_max", "t0", "t1")

    def __init__(self) -> None:
        self.nodes: dict[str, list[float]] = {}  # node -> [largest cores, largest memory KiB]
        self.n = 0  # measures (distinct buckets)
        self.last_b: int | None = None
        self.core: list[float] = []  # exact partials of cores used
        self.mem: list[float] = []
        self.swap_max = -math.inf
        self.t0 = math.inf
        self.t1 = -math.inf


class JobUtilStream:
    __slots__ = ("period", "mem_per_core_kb", "cores_per_node", "quiet_s", "_pending", "_jobs")

    def __init__(
        self,
        period: float = 60.0,
        mem_per_core_kb: float | None = None,
        cores_per_node: float | None = None,
        quiet_s: float = 600.0,
    ) -> None:
        if period <= 0:
            raise ValueError("period must be > 0")
        self.period = period
        self.mem_per_core_kb = mem_per_core_kb
        self.cores_per_node = cores_per_node
        self.quiet_s = quiet_s
        self._pending: list[SampleBatch] = []  # samples of buckets not closed yet
        self._jobs: dict[str, _Job] = {}

    def update(self, samples: SampleBatch | Iterable[NodeSample]) -> None:
        b = as_batch(samples)
        if len(b):
            self._pending.append(b)

    def close(self, until_ts: float) -> tuple[list[str], list[str]]:
        """Buckets ending at or before ``until_ts`` are final. Returns the jobs that changed
        and the jobs that became final (quiet since ``quiet_s`` before ``until_ts``)."""
        changed: list[str] = []
        if self._pending:
            b = SampleBatch.concat(self._pending)
            bucket = np.floor(b.ts / self.period).astype(np.int64)
            done = (bucket + 1) * self.period <= until_ts
            if done.all():
                self._pending = []
            elif done.any():
                self._pending = [b.take(~done)]
            else:
                self._pending = [b]
            if done.any():
                changed = self._add(b.take(done), bucket[done])
        final = sorted(k for k, j in self._jobs.items() if j.t1 < until_ts - self.quiet_s)
        return changed, final

    def _add(self, b: SampleBatch, bucket: np.ndarray) -> list[str]:
        """Closed buckets' samples to their jobs; the jobs' names."""
        # a process's last sample in a bucket counts: the latest, of equal times the last come
        proc = group_codes(bucket, b.job, b.node, b.pid, b.start)
        order = np.lexsort((np.arange(len(b)), b.ts, proc))
        ps = proc[order]
        last = np.empty(ps.size, bool)
        last[-1] = True
        np.not_equal(ps[1:], ps[:-1], out=last[:-1])
        win = order[last]
        bk, job, node, ts = bucket[win], b.job[win], b.node[win], b.ts[win]
        # per (bucket, job, node): cores used, memory and swap (sums rounded once), cores
        g = group_codes(bk, job, node)
        ng = int(g.max()) + 1
        core = _exact_sums(g, b.core[win] / 100.0, ng)
        mem = np.bincount(g, b.rss[win].astype(np.float64), ng)  # whole KiB: exact
        swap = np.bincount(g, b.swap[win].astype(np.float64), ng)
        gcores = _group_max(g, b.cores[win].astype(np.float64), ng)
        gts = _group_max(g, ts, ng)
        _u, at = np.unique(g, return_index=True)
        gb, gj, gn = bk[at], job[at], node[at]
        # per (bucket, job): the swap of one measure (the nodes' sums, whole KiB: exact)
        bj = group_codes(gb, gj)
        nbj = int(bj.max()) + 1
        swap_bj = np.bincount(bj, swap, nbj)
        _u, bj_at = np.unique(bj, return_index=True)
        jobs, nodes = b.jobs, b.nodes
        touched: dict[int, _Job] = {}
        for code in np.unique(gj).tolist():
            name = jobs[code]
            j = self._jobs.get(name)
            if j is None:
                j = self._jobs[name] = _Job()
            touched[code] = j
        # measures: the job's distinct buckets, in order (a bucket seen at the last close
        # is not counted again)
        for code, bkt, sw in zip(
            gj[bj_at].tolist(), gb[bj_at].tolist(), swap_bj.tolist(), strict=True
        ):
            j = touched[code]
            if j.last_b != bkt:
                j.n += 1
                j.last_b = bkt
            j.swap_max = max(j.swap_max, sw)
        per_node = zip(
            gj.tolist(),
            gn.tolist(),
            gcores.tolist(),
            mem.tolist(),
            core.tolist(),
            gts.tolist(),
            strict=True,
        )
        for code, nd, c, m, cu, t in per_node:
            j = touched[code]
            name = nodes[nd]
            x = j.nodes.get(name)
            if x is None:
                j.nodes[name] = [c, m]
            else:
                x[0], x[1] = max(x[0], c), max(x[1], m)
            add_exact(j.core, cu)
            add_exact(j.mem, m)
            if t < j.t0:
                j.t0 = t
            if t > j.t1:
                j.t1 = t
        return sorted(jobs[c] for c in touched)

    def row(self, job: str, io: tuple[float, float]) -> tuple[Any, ...]:
        """``job_utilization.csv``'s row of the job; ``io``: its (fastest write of one node in
        one minute, data written), from :meth:`~models.samples.dfslive.DfsStream.io_of`."""
        j = self._jobs[job]
        cpn = self.cores_per_node
        node_cores = []
        for c, _m in j.nodes.values():
            if c <= 0 and cpn is not None:
                c = float(cpn)
            node_cores.append(c if c > 0 else math.nan)
        cores = sum(node_cores)  # whole numbers (or NaN): exact in any order
        n = j.n
        core_util = math.fsum(j.core) / (cores * n)
        mpc = self.mem_per_core_kb
        if mpc is None:
            mem_mean = mem_max = math.nan
        else:
            mem_mean = math.fsum(j.mem) / n / (mpc * cores)
            mem_max = (
                max(m / c for (_c, m), c in zip(j.nodes.values(), node_cores, strict=True)) / mpc
            )
        run = j.t1 - j.t0 + self.period
        wmax, wtot = io
        return (
            job,
            len(j.nodes),
            cores,
            n,
            core_util,
            mem_mean,
            mem_max,
            j.swap_max,
            cores * run,
            wmax,
            wtot,
        )

    def first_ts(self, job: str) -> float:
        """The job's first measure time (what identifies its row over time)."""
        return self._jobs[job].t0

    def forget(self, jobs: Iterable[str]) -> None:
        for job in jobs:
            self._jobs.pop(job, None)

    # ---- durable state ----------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The stream's state as a tree (:mod:`models.state`): the samples of the open buckets
        (one batch) and per job its sums as parallel arrays (its nodes and exact partials end to
        end, with their counts). The constructor's arguments are configuration, not state."""
        jobs = list(self._jobs.values())
        nodes = [j.nodes for j in jobs]
        last_b = [j.last_b for j in jobs]
        node_vals = [v for d in nodes for v in d.values()]
        return {
            "pending": SampleBatch.concat(self._pending).to_tree(),
            "jobs": {
                "job": list(self._jobs),
                "n": np.array([j.n for j in jobs], np.int64),
                "last_b": np.array([-1 if b is None else b for b in last_b], np.int64),
                "has_last_b": np.array([b is not None for b in last_b], np.bool_),
                "swap_max": np.array([j.swap_max for j in jobs], np.float64),
                "t0": np.array([j.t0 for j in jobs], np.float64),
                "t1": np.array([j.t1 for j in jobs], np.float64),
                "core": ragged_tree([j.core for j in jobs]),
                "mem": ragged_tree([j.mem for j in jobs]),
                "nodes": np.fromiter(map(len, nodes), np.int64, len(nodes)),
                "node": names_tree([k for d in nodes for k in d]),
                "cores_mem": np.array(node_vals, np.float64).reshape(len(node_vals), 2),
            },
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """:meth:`snapshot`'s state into this stream (built with its configuration); read whole
        before any of it is set."""
        pending = SampleBatch.from_tree(tree_get(tree, "pending"))
        t = tree_get(tree, "jobs")
        names = tree_strs(tree_get(t, "job"), "util job")
        n = len(names)
        ints = {
            k: tree_array(tree_get(t, k), "i", f"util {k}", (n,)).tolist()
            for k in ("n", "last_b", "nodes")
        }
        has_last_b = tree_array(tree_get(t, "has_last_b"), "b", "util has_last_b", (n,)).tolist()
        floats = {
            k: tree_array(tree_get(t, k), "f", f"util {k}", (n,)).tolist()
            for k in ("swap_max", "t0", "t1")
        }
        core = ragged_from_tree(tree_get(t, "core"), "util core", n)
        mem = ragged_from_tree(tree_get(t, "mem"), "util mem", n)
        counts = ints["nodes"]
        if any(c < 0 for c in counts):
            raise StateFormatError("state: util nodes below 0")
        k = sum(counts)
        node = names_from_tree(tree_get(t, "node"), "util node", k)
        vals = tree_array(tree_get(t, "cores_mem"), "f", "util cores_mem", (k, 2)).tolist()
        jobs: dict[str, _Job] = {}
        at = 0
        for i, name in enumerate(names):
            j = jobs[name] = _Job()
            c = counts[i]
            j.nodes = dict(zip(node[at : at + c], vals[at : at + c], strict=True))
            if len(j.nodes) != c:
                raise StateFormatError(f"state: util job {name!r}: a node twice")
            at += c
            j.n, j.last_b = ints["n"][i], (ints["last_b"][i] if has_last_b[i] else None)
            j.core, j.mem = core[i], mem[i]
            j.swap_max, j.t0, j.t1 = floats["swap_max"][i], floats["t0"][i], floats["t1"][i]
        if len(jobs) != n:
            raise StateFormatError("state: util: a job twice")
        self._pending = [pending] if len(pending) else []
        self._jobs = jobs


def _exact_sums(g: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Per group (codes 0..n-1) the sum of its values rounded once, as ``math.fsum``: one
    IEEE addition is that already, so groups of one or two values are summed by numpy and
    only larger ones one by one."""
    order = np.argsort(g, kind="stable")
    gs, vs = g[order], v[order]
    start = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    size = np.diff(np.r_[start, gs.size])
    out = np.zeros(n)
    out[gs[start]] = vs[start] + 0.0  # fsum([-0.0]) is 0.0
    two = start[size == 2]
    out[gs[two]] = vs[two] + vs[two + 1] + 0.0
    big = np.flatnonzero(size > 2)
    if big.size:
        vl = vs.tolist()
        for k in big.tolist():
            lo = int(start[k])
            out[gs[lo]] = math.fsum(vl[lo : lo + int(size[k])])
    return out


def _group_max(g: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, -np.inf)
    np.maximum.at(out, g, v)
    return out
