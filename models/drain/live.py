"""Drain accounting on a stream split over partitions (seed 000 on the live path).

Nodes are partitioned (a node always lands on the same partition), so each partition keeps its
own :class:`PartitionDrain` (an accountant with minute windows, a reorder buffer, an event-time
watermark) and reports **absolute** totals of what changed (:class:`Partial`); a
:class:`DrainCombiner` sums the partitions into system-wide rows. Absolute values make every
re-sent partial harmless, which is what at-least-once delivery needs.

Event time only, never the wall clock: a partition's watermark is its latest record time minus
the allowed lateness; a record older than its partition's watermark when it arrives is late
(counted, returned to be dead-lettered, never accounted). The combiner's watermark is the lowest
over the partitions that have reported; a window is final once that passes its end, and is
written provisional (flagged) before. Nodes are disjoint across partitions, so distinct-node
counts, node-time and per-job totals add up exactly; a job's first/last charge are min/max.
A closed window can still change when a node returns after a silence longer than the lateness
(its gap accrues as unaccounted time back to its last record); the combiner then writes the
corrected final row again (same window, same timestamp: an overwrite).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.drain.accountant import DrainAccountant, WindowRow
from models.drain.basis import QUALITY_MIN, window_basis
from models.drain.snapshot import dumps, loads, pack, unpack
from models.drain.windows import WindowGrid
from models.records.idbook import IdBook, IntIndex
from models.records.nodestatus import NO_JOB, Codebook, NodeStatusBatch
from models.records.reorder import ReorderBuffer

UNITS = ("minute", "hour", "day")
_BATCH_COLS = ("ts_ms", "node", "state", "rsv", "has_job", "run_row", "run_job")


@dataclass(slots=True)
class Partial:
    """What one partition reports: absolute totals of the windows and jobs that changed.

    ``windows``: (unit, start_ms, nodes, accounted, drain, idle_unallocated, down, unaccounted);
    ``jobs``: (job, drain_ms, nodes_charged, first_charged_ms, last_charged_ms, nodes_running,
    last_active_ms).

    A partial may travel in parts (``streams.codecs.partials.encode_drain_partials``), which
    :meth:`DrainCombiner.add` applied in order turns into the state of the whole: each row is
    an absolute total in one part; windows come before the states of their window, then jobs;
    only the last part carries the watermark; nodes and counts are on every part.
    """

    partition: int
    watermark_ms: int | None
    nodes: int
    windows: list[tuple[str, int, int, int, int, int, int, int]] = field(default_factory=list)
    jobs: list[tuple[str, int, int, int, int, int, int]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # (unit, start_ms, {state: node-ms per (rsv, job) combination}) of hour and day windows
    states: list[tuple[str, int, dict[str, list[int]]]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "watermark_ms": self.watermark_ms,
            "nodes": self.nodes,
            "windows": [list(w) for w in self.windows],
            "jobs": [list(j) for j in self.jobs],
            "counts": self.counts,
            "states": [[u, st, d] for u, st, d in self.states],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Partial:
        return cls(
            int(d["partition"]),
            None if d["watermark_ms"] is None else int(d["watermark_ms"]),
            int(d["nodes"]),
            [(str(w[0]), *map(int, w[1:])) for w in d["windows"]],  # type: ignore[misc]
            [(str(j[0]), *map(int, j[1:])) for j in d["jobs"]],  # type: ignore[misc]
            {str(k): int(v) for k, v in d["counts"].items()},
            [
                (str(u), int(st), {str(k): [int(x) for x in v] for k, v in sd.items()})
                for u, st, sd in d.get("states", [])
            ],
        )


class PartitionDrain:
    """One partition's drain state; every method is pure computation on its own data.

    Shipper markers (``streams.codecs.control``, issue 30): an ``end``, or version 1's flush,
    ends this partition's input (:meth:`end_of_input`) whoever else ships to it (an empty file
    shipped beside ``ship moab --follow`` is how an operator closes what the live shipper
    sent); windows it closes early are written again, corrected, when other records come.

    A ``watermark`` marker never moves the watermark (a documented limit): the accountant
    accrues a node's interval [t_i, t_i+1) only when its next record arrives, so a watermark
    past a node's last record would close windows whose node time is still to come (they
    would be written final short, raise ``data_quality`` alerts, then be corrected). A
    partition that holds nodes gets a record per node every scheduler iteration while its
    shipper runs, so its watermark moves with its records; a partition without nodes never
    reports a watermark and holds nobody (the combiner's watermark is over the partitions that
    reported)."""

    def __init__(
        self,
        partition: int,
        tz: str = "UTC",
        max_gap_ms: int = 600_000,
        lateness_ms: int = 600_000,
        reorder_ms: int = 0,
        retention_ms: int = 2 * 86_400_000,
        forget_min: int = 1000,
    ) -> None:
        self.partition = partition
        self.forget_min = forget_min
        self.lateness_ms = lateness_ms
        self.retention_ms = retention_ms
        self.book = Codebook(jobs=IdBook())
        self.acc = DrainAccountant(self.book, tz=tz, max_gap_ms=max_gap_ms, unit="minute")
        self.reorder = ReorderBuffer(reorder_ms)
        self.latest: int | None = None
        self.late = 0
        self.offset = -1  # last source offset whose records are in this state
        self.evicted_before: int | None = None  # windows before this are forgotten
        self.ended_at: int | None = None  # end of a finite input: windows up to here close
        self.too_old = 0  # changes to forgotten windows (a node back after days of silence)
        self.jobs_forgotten = 0

    @property
    def watermark_ms(self) -> int | None:
        if self.latest is None:
            return None
        return max(self.latest - self.lateness_ms, self.ended_at or self.latest - self.lateness_ms)

    def end_of_input(self) -> None:
        """A finite input ended (a shipper's flush message): account the records held for
        reordering and let every window up to the latest record close."""
        self.acc.add(self.reorder.flush())
        self.ended_at = self.latest

    def add(self, batch: NodeStatusBatch) -> NodeStatusBatch:
        """Account ``batch``; return its late records (not accounted: dead-letter them)."""
        n = len(batch)
        if n == 0:
            return batch
        ts = batch.ts_ms
        first = int(ts[0]) if self.latest is None else self.latest
        before = np.maximum.accumulate(np.concatenate([[first], ts[:-1]]))  # latest before each
        late = ts < before - self.lateness_ms
        self.latest = max(int(before[-1]), int(ts[-1]))
        if late.any():
            self.late += int(np.count_nonzero(late))
            late_rows = batch.take(np.flatnonzero(late))
            batch = batch.take(np.flatnonzero(~late))
        else:
            late_rows = NodeStatusBatch.empty()
        for part in self.reorder.push_parts(batch):
            self.acc.add(part)
        return late_rows

    def partial(self, final: bool = False) -> Partial:
        """Absolute totals of what changed since the last partial (``final``: flush the
        reorder buffer first, at the end of a finite input)."""
        if final:
            self.acc.add(self.reorder.flush())
        acc, book = self.acc, self.book
        since = acc.take_touched()
        p = Partial(self.partition, self.watermark_ms, len(book.nodes))
        if since is not None and self.evicted_before is not None and since < self.evicted_before:
            self.too_old += 1  # never report a sum of a window that is partly forgotten
            since = self.evicted_before
        if since is not None:
            for unit, rows in acc.rows_since(since).items():
                p.windows += [_wtuple(unit, r) for r in rows]
            for unit in ("hour", "day"):
                p.states += [(unit, st, d) for st, d in acc.state_ms(unit, since).items()]
            codes = acc.jobs_touched(since)
            if codes.size:
                charged = acc.nodes_charged()
                running = acc.nodes_running()
                drain = acc.job_drain_ms
                for name, j in zip(book.jobs.names_of(codes.tolist()), codes.tolist(), strict=True):
                    p.jobs.append(
                        (
                            name,
                            int(drain[j]),
                            int(charged[j]),
                            int(acc.job_first_ms[j]),
                            int(acc.job_last_ms[j]),
                            int(running[j]),
                            max(int(acc.job_last_ms[j]), int(acc.job_run_last_ms[j])),
                        )
                    )
        c = acc.counts
        p.counts = {
            "records": c.records,
            "duplicates": c.duplicates,
            "out_of_order": c.out_of_order,
            "late": self.late,
            "reordered": self.reorder.reordered,
            "too_old": self.too_old,
            "jobs_forgotten": self.jobs_forgotten,
        }
        if self.latest is not None:  # the newest record time (the combiner's watermark lag)
            p.counts["latest_ms"] = self.latest
        wm = self.watermark_ms
        if wm is not None:  # windows a day behind the watermark can no longer be asked for
            day = acc.days
            day.ensure(wm - self.retention_ms, wm)
            cut = int(day.edges[day.locate(np.array([wm - self.retention_ms]))[0]])
            acc.evict_windows(cut)
            self.evicted_before = cut
            self._forget_jobs(wm - self.retention_ms)
        return p

    def _forget_jobs(self, before_ms: int) -> None:
        """Jobs quiet since ``before_ms`` (their final totals were reported) leave memory, in
        bulk once they are a quarter of the codebook."""
        acc = self.acc
        quiet = acc.idle_jobs(before_ms)
        if int(quiet.sum()) < max(self.forget_min, len(self.book.jobs) // 4):
            return
        held = self.reorder._held
        keep = ~quiet
        keep[held.rsv[held.rsv != NO_JOB]] = True
        keep[held.run_job] = True
        new = acc.compact_jobs(keep)
        if len(held):
            rsv = held.rsv.copy()
            rsv[rsv != NO_JOB] = new[rsv[rsv != NO_JOB]]
            held.rsv, held.run_job = rsv, new[held.run_job]
        self.jobs_forgotten += int((new < 0).sum())

    # ---- durable state ----------------------------------------------------------------------
    def dumps(self) -> bytes:
        held = self.reorder._held
        extra = {
            "partition": self.partition,
            "lateness_ms": self.lateness_ms,
            "retention_ms": self.retention_ms,
            "forget_min": self.forget_min,
            "latest": self.latest,
            "late": self.late,
            "offset": self.offset,
            "evicted_before": self.evicted_before,
            "ended_at": self.ended_at,
            "too_old": self.too_old,
            "jobs_forgotten": self.jobs_forgotten,
            "touched_ms": self.acc.touched_ms,
            "reorder": {
                "window_ms": self.reorder.window_ms,
                "latest": self.reorder._latest,
                "reordered": self.reorder.reordered,
                "held": {k: getattr(held, k).tolist() for k in _BATCH_COLS},
            },
        }
        return dumps(self.acc, extra)

    @classmethod
    def loads(cls, data: bytes) -> PartitionDrain:
        acc, x = loads(data)
        self = cls.__new__(cls)
        self.partition = int(x["partition"])
        self.lateness_ms = int(x["lateness_ms"])
        self.retention_ms = int(x["retention_ms"])
        self.forget_min = int(x.get("forget_min", 1000))
        self.book = acc.book
        self.acc = acc
        acc.touched_ms = x["touched_ms"]
        r = x["reorder"]
        self.reorder = ReorderBuffer(int(r["window_ms"]))
        self.reorder._latest = r["latest"]
        self.reorder.reordered = int(r["reordered"])
        h = r["held"]
        self.reorder._held = NodeStatusBatch(
            *(np.array(h[k], dtype=bool if k == "has_job" else np.int64) for k in _BATCH_COLS)
        )
        self.latest = x["latest"]
        self.late = int(x["late"])
        self.offset = int(x["offset"])
        self.evicted_before = x["evicted_before"]
        self.ended_at = x["ended_at"]
        self.too_old = int(x["too_old"])
        self.jobs_forgotten = int(x["jobs_forgotten"])
        return self


def _wtuple(unit: str, r: WindowRow) -> tuple[str, int, int, int, int, int, int, int]:
    return (
        unit,
        r.start_ms,
        r.nodes,
        r.accounted_ms,
        r.drain_ms,
        r.idle_unallocated_ms,
        r.down_ms,
        r.unaccounted_ms,
    )


@dataclass(slots=True)
class LiveWindow:
    """A system-wide drain row (the columns of drain_daily.csv) and whether it is final."""

    unit: str
    start_ms: int
    length_ms: int
    nodes: int
    accounted_ms: int
    drain_ms: int
    idle_unallocated_ms: int
    down_ms: int
    unaccounted_ms: int
    drain_pct_static: float | None
    drain_pct_dynamic: float | None
    basis_seconds_per_node: float
    data_quality: str
    provisional: bool
    states: dict[str, list[int]] | None = None  # hour and day: node-ms per state and combo

    def node_seconds(self) -> dict[str, float]:
        """The node-ms totals as node-seconds, by drain_daily.csv's column names (the InfluxDB
        fields and the metrics.drain message write the same)."""
        return {
            "accounted_node_seconds": self.accounted_ms / 1000,
            "drain_node_seconds": self.drain_ms / 1000,
            "unallocated_idle_node_seconds": self.idle_unallocated_ms / 1000,
            "down_node_seconds": self.down_ms / 1000,
            "unaccounted_node_seconds": self.unaccounted_ms / 1000,
        }

    @classmethod
    def of(
        cls,
        unit: str,
        w: WindowRow,
        basis_nodes: int,
        quality_min: float,
        provisional: bool,
        states: dict[str, list[int]] | None = None,
    ) -> LiveWindow:
        """A window's row with its basis (seed 000 §III-B.3), as the replay computes it."""
        b = window_basis(
            w.drain_ms, w.accounted_ms, w.down_ms, w.nodes, w.length_ms, basis_nodes, quality_min
        )
        return cls(
            unit,
            w.start_ms,
            w.length_ms,
            w.nodes,
            w.accounted_ms,
            w.drain_ms,
            w.idle_unallocated_ms,
            w.down_ms,
            w.unaccounted_ms,
            b.drain_pct_static,
            b.drain_pct_dynamic,
            b.seconds_per_node,
            b.quality,
            provisional,
            states,
        )


@dataclass(slots=True)
class LiveJob:
    job: str
    drain_ms: int
    nodes_charged: int
    first_charged_ms: int
    last_charged_ms: int
    nodes_running: int
    time_ms: int  # identifies the job's point: its first charge as first reported


_PART_BITS = 20  # a (job, partition) slot's key: job code << 20 | partition
_NO_TIME = np.iinfo(np.int64).min


class _JobTable:
    """Per (job, partition) the partition's absolute totals of the job (one int64 row each:
    drain_ms, nodes_charged, first_ms, last_ms, nodes_running, last_active_ms), in arrays:
    ~60 bytes per slot and ~30 per job instead of Python tuples in dicts."""

    __slots__ = ("book", "slots", "vals", "row_job", "time_ms", "dirty")

    def __init__(self) -> None:
        self.book = IdBook()
        self.slots = IntIndex()
        self.vals = np.zeros((0, 6), dtype=np.int64)
        self.row_job = np.zeros(0, dtype=np.int32)  # job code of each slot
        self.time_ms = np.zeros(0, dtype=np.int64)  # first charge as first written
        self.dirty: set[int] = set()

    def __len__(self) -> int:
        return len(self.book)

    def add(self, partition: int, names: list[str], vals: np.ndarray) -> None:
        if not names:
            return
        if len(self.book) + len(names) >= 1 << 31:
            raise ValueError("more than 2**31 jobs held")
        if not 0 <= partition < 1 << _PART_BITS:
            raise ValueError(f"partition {partition} out of range")
        c = self.book.codes(names)
        rows, new = self.slots.add((c << _PART_BITS) | partition)
        n, nj = len(self.slots), len(self.book)
        if n > self.row_job.size:
            cap = max(64, n + n // 4)
            self.vals = np.concatenate(
                [self.vals, np.zeros((cap - self.vals.shape[0], 6), dtype=np.int64)]
            )
            self.row_job = np.concatenate(
                [self.row_job, np.zeros(cap - self.row_job.size, dtype=np.int32)]
            )
        if nj > self.time_ms.size:
            cap = max(64, nj + nj // 4)
            self.time_ms = np.concatenate(
                [self.time_ms, np.full(cap - self.time_ms.size, _NO_TIME, dtype=np.int64)]
            )
        changed = new | (self.vals[rows] != vals).any(axis=1)
        self.vals[rows] = vals
        self.row_job[rows] = c
        self.dirty.update(c[changed].tolist())

    def take(self) -> list[LiveJob]:
        """Totals over the partitions of the jobs that changed, by job id; a job seen running
        but never charged drain is not a drain_jobs row."""
        if not self.dirty:
            return []
        d = np.array(sorted(self.dirty), dtype=np.int64)
        self.dirty.clear()
        n = len(self.slots)
        sel = np.flatnonzero(np.isin(self.row_job[:n], d))
        sel = sel[np.argsort(self.row_job[sel], kind="stable")]
        j, v = self.row_job[sel], self.vals[sel]
        starts = np.flatnonzero(np.concatenate([[True], j[1:] != j[:-1]]))
        jobs = j[starts]
        drain = np.add.reduceat(v[:, 0], starts)
        charged = np.add.reduceat(v[:, 1], starts)
        first = np.minimum.reduceat(v[:, 2], starts)
        last = np.maximum.reduceat(v[:, 3], starts)
        running = np.add.reduceat(v[:, 4], starts)
        out = drain > 0
        unset = out & (self.time_ms[jobs] == _NO_TIME)
        self.time_ms[jobs[unset]] = first[unset]
        idx = np.flatnonzero(out)
        names = self.book.names_of(jobs[idx].tolist())
        rows = [
            LiveJob(
                name,
                int(drain[i]),
                int(charged[i]),
                int(first[i]),
                int(last[i]),
                int(running[i]),
                int(self.time_ms[jobs[i]]),
            )
            for name, i in zip(names, idx.tolist(), strict=True)
        ]
        rows.sort(key=lambda r: r.job)
        return rows

    def forget(self, cut_ms: int, min_jobs: int) -> int:
        """Jobs whose latest activity in every partition is before ``cut_ms`` (and with no
        change waiting) leave memory, in bulk once they are a quarter of the table."""
        n, nj = len(self.slots), len(self.book)
        if nj == 0:
            return 0
        latest = np.full(nj, _NO_TIME, dtype=np.int64)
        np.maximum.at(latest, self.row_job[:n], self.vals[:n, 5])
        quiet = latest < cut_ms
        if self.dirty:
            quiet[np.fromiter(self.dirty, dtype=np.int64)] = False
        gone = int(quiet.sum())
        if gone < max(min_jobs, nj // 4):
            return 0
        keep_j = ~quiet
        new = np.cumsum(keep_j) - 1
        keep_r = keep_j[self.row_job[:n]]
        part = self.slots.keys_by_code()[keep_r] & ((1 << _PART_BITS) - 1)
        self.row_job = new[self.row_job[:n][keep_r]].astype(np.int32)
        self.vals = self.vals[:n][keep_r].copy()
        self.slots = IntIndex.of((self.row_job.astype(np.int64) << _PART_BITS) | part)
        self.time_ms = self.time_ms[:nj][keep_j].copy()
        self.dirty = {int(new[c]) for c in self.dirty}
        self.book.compact(keep_j)
        return gone

    def arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        n, nj = len(self.slots), len(self.book)
        ids, strs = self.book.to_arrays()
        return {
            "job_ids": ids,
            "job_time_ms": self.time_ms[:nj],
            "slot_keys": self.slots.keys_by_code(),
            "slot_vals": self.vals[:n],
        }, {"job_strs": sorted(strs.items()), "dirty_jobs": sorted(self.dirty)}

    @classmethod
    def of(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> _JobTable:
        self = cls()
        self.book = IdBook.from_arrays(arrays["job_ids"], dict(meta["job_strs"]))
        keys = arrays["slot_keys"].astype(np.int64)
        self.slots = IntIndex.of(keys)
        self.vals = arrays["slot_vals"].astype(np.int64).reshape(-1, 6).copy()
        self.row_job = (keys >> _PART_BITS).astype(np.int32)
        self.time_ms = arrays["job_time_ms"].astype(np.int64).copy()
        self.dirty = {int(c) for c in meta["dirty_jobs"]}
        return self


class DrainCombiner:
    """Partials of every partition -> system-wide window and job rows (see module doc)."""

    def __init__(
        self,
        tz: str = "UTC",
        basis_nodes: int | None = None,
        quality_min: float = QUALITY_MIN,
        keep_ms: dict[str, int] | None = None,
        forget_min: int = 1000,
        partitions: int | None = None,
    ) -> None:
        """``partitions``: when the set of partitions is known to all hold nodes, the
        watermark waits until every one has reported. The worker leaves it None: a machine
        with fewer node blocks than partitions leaves some empty, and they would hold every
        window open; a window closed before a slow partition reports is written again,
        corrected, when it does."""
        self.tz = tz
        self.partitions = partitions
        self.basis_nodes = basis_nodes
        self.quality_min = quality_min
        self.keep_ms = keep_ms or {
            "minute": 3 * 3_600_000,
            "hour": 2 * 86_400_000,
            "day": 8 * 86_400_000,
        }
        self.grids = {u: WindowGrid(tz, u) for u in UNITS}
        self.windows: dict[tuple[str, int], dict[int, tuple[int, ...]]] = {}
        self.states: dict[tuple[str, int], dict[int, dict[str, list[int]]]] = {}
        self.final: set[tuple[str, int]] = set()  # windows written final
        self.jobs = _JobTable()
        self.forget_min = forget_min
        self._next_forget: int | None = None
        self.marks: dict[int, int] = {}  # partition -> watermark
        self.nodes: dict[int, int] = {}
        self.counts: dict[int, dict[str, int]] = {}
        self.dirty_windows: set[tuple[str, int]] = set()
        self.corrections = 0
        self.dropped = 0  # changes to windows already forgotten (older than keep_ms)

    @property
    def watermark_ms(self) -> int | None:
        if not self.marks or self.partitions is not None and len(self.marks) < self.partitions:
            return None
        return min(self.marks.values())

    def add(self, p: Partial) -> None:
        """Take a partition's partial, or the next of its parts (see :class:`Partial`): every
        row replaces the partition's total of its window or job; a part without a watermark
        closes nothing."""
        if p.watermark_ms is not None:
            self.marks[p.partition] = max(
                self.marks.get(p.partition, p.watermark_ms), p.watermark_ms
            )
        self.nodes[p.partition] = max(self.nodes.get(p.partition, 0), p.nodes)
        self.counts[p.partition] = p.counts
        for unit, start, *vals in p.windows:
            key = (unit, start)
            if key not in self.windows and key in self.final:
                self.dropped += 1  # final, and forgotten: too old to correct
                continue
            parts = self.windows.setdefault(key, {})
            if parts.get(p.partition) != tuple(vals):
                parts[p.partition] = tuple(vals)
                self.dirty_windows.add(key)
        for unit, start, sd in p.states:
            key = (unit, start)
            if key not in self.windows:
                continue  # a forgotten window (counted above)
            parts_s = self.states.setdefault(key, {})
            if parts_s.get(p.partition) != sd:
                parts_s[p.partition] = sd
                self.dirty_windows.add(key)
        if p.jobs:
            self.jobs.add(
                p.partition,
                [j[0] for j in p.jobs],
                np.array([j[1:] for j in p.jobs], dtype=np.int64),
            )

    def take(self) -> tuple[list[LiveWindow], list[LiveJob]]:
        """Rows to write now: changed windows (provisional while open), windows that just
        closed (final), changed jobs. Forgets windows older than ``keep_ms``."""
        wm = self.watermark_ms
        out_keys = set(self.dirty_windows)
        for key in self.windows:
            if key not in self.final and wm is not None and self._end(key) <= wm:
                out_keys.add(key)
        rows = []
        basis = self.basis_nodes or sum(self.nodes.values())
        for key in sorted(out_keys, key=lambda k: (UNITS.index(k[0]), k[1])):
            parts = self.windows.get(key)
            if not parts:
                continue
            tot = np.sum(np.array(list(parts.values()), dtype=np.int64), axis=0).tolist()
            length = self.grids[key[0]].length_ms(key[1])
            row = WindowRow(key[1], length, *tot)
            closed = wm is not None and key[1] + length <= wm
            if closed and key in self.final:
                self.corrections += 1
            if closed:
                self.final.add(key)
            rows.append(
                LiveWindow.of(
                    key[0], row, basis, self.quality_min, not closed, self._state_sum(key)
                )
            )
        self.dirty_windows.clear()
        jobs = self.jobs.take()
        if wm is not None:
            self._forget(wm)
        return rows, jobs

    @property
    def dirty_jobs(self) -> set[int]:
        return self.jobs.dirty

    def _state_sum(self, key: tuple[str, int]) -> dict[str, list[int]] | None:
        parts = self.states.get(key)
        if key[0] == "minute" or not parts:
            return None
        out: dict[str, list[int]] = {}
        for sd in parts.values():
            for name, v in sd.items():
                cur = out.setdefault(name, [0] * len(v))
                for i, x in enumerate(v):
                    cur[i] += x
        return dict(sorted(out.items()))

    def _end(self, key: tuple[str, int]) -> int:
        return key[1] + self.grids[key[0]].length_ms(key[1])

    def _forget(self, wm: int) -> None:
        old = [k for k in self.windows if k in self.final and k[1] + self.keep_ms[k[0]] < wm]
        for k in old:
            del self.windows[k]
            self.states.pop(k, None)
        # the final set only needs windows that could still come back
        self.final = {k for k in self.final if k[1] + self.keep_ms[k[0]] * 2 >= wm}
        # jobs quiet for keep_ms['hour'] in every partition (the partitions forget them after
        # the same time, so no total of theirs can change any more); checked every eighth of it
        if self._next_forget is None or wm >= self._next_forget:
            self._next_forget = wm + self.keep_ms["hour"] // 8
            self.jobs.forget(wm - self.keep_ms["hour"], self.forget_min)

    # ---- durable state ----------------------------------------------------------------------
    def dumps(self, extra: dict[str, Any] | None = None) -> bytes:
        """The combiner and ``extra`` (JSON-able) as bytes: jobs as arrays, windows as JSON."""
        arrays, jmeta = self.jobs.arrays()
        meta = {
            "windows": [
                [u, s, [[p, list(v)] for p, v in parts.items()]]
                for (u, s), parts in self.windows.items()
            ],
            "states": [
                [u, s, [[p, sd] for p, sd in parts.items()]]
                for (u, s), parts in self.states.items()
            ],
            "final": sorted([u, s] for u, s in self.final),
            "marks": sorted(self.marks.items()),
            "nodes": sorted(self.nodes.items()),
            "counts": sorted(self.counts.items()),
            "dirty_windows": sorted([u, s] for u, s in self.dirty_windows),
            "corrections": self.corrections,
            "dropped": self.dropped,
            "next_forget": self._next_forget,
            "jobs": jmeta,
            "extra": extra or {},
        }
        return pack(arrays, meta)

    def restore(self, data: bytes) -> dict[str, Any]:
        """Load :meth:`dumps` bytes into this combiner; returns their ``extra``."""
        arrays, d = unpack(data)
        self.windows = {
            (u, int(s)): {int(p): tuple(v) for p, v in parts} for u, s, parts in d["windows"]
        }
        self.states = {
            (u, int(s)): {int(p): dict(sd) for p, sd in parts} for u, s, parts in d["states"]
        }
        self.final = {(u, int(s)) for u, s in d["final"]}
        self.marks = {int(p): int(m) for p, m in d["marks"]}
        self.nodes = {int(p): int(n) for p, n in d["nodes"]}
        self.counts = {int(p): dict(c) for p, c in d["counts"]}
        self.dirty_windows = {(u, int(s)) for u, s in d["dirty_windows"]}
        self.corrections = int(d["corrections"])
        self.dropped = int(d["dropped"])
        self._next_forget = d["next_forget"]
        self.jobs = _JobTable.of(arrays, d["jobs"])
        extra: dict[str, Any] = d["extra"]
        return extra

    def totals(self) -> dict[str, int]:
        """Record counts summed over the partitions (``latest_ms``, a time, is not a count)."""
        out: dict[str, int] = {}
        for c in self.counts.values():
            for k, v in c.items():
                if k != "latest_ms":
                    out[k] = out.get(k, 0) + v
        return out

    def newest_ms(self) -> int | None:
        """The newest record time any partition reported (``counts["latest_ms"]``)."""
        times = [c["latest_ms"] for c in self.counts.values() if "latest_ms" in c]
        return max(times, default=None)
