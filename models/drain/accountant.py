"""Drain-time accounting (seed 000, Fullop, "The Hidden Cost of Large Jobs").

Rules (each pinned by a test):

1. Accrual (§III-B): a node's record at t_i accrues [t_i, t_{i+1}) to the state, rsv/job combination
   and first reservation seen at t_i, when the node's next record arrives. The last record of a
   node accrues nothing (yet: a later batch may close it).
2. Per-node accumulators (§III-B.1): states (the six of Moab + each unknown state as its own)
   x 4 combinations of (rsvlist non-empty, joblist non-empty), in node-milliseconds (exact int64;
   reported as decimal seconds).
3. Drain (§III-B.2, §IV-A): state Idle with a non-empty rsvlist, charged to the FIRST id in the
   list. Idle with rsvlist 'none' is unallocated idle (§IV-A.3), never drain.
4. An interval longer than ``max_gap_ms`` accrues to no state: it is unaccounted node-time. A
   record not strictly later than the node's latest accepted record (a duplicate or an
   out-of-order line) accrues nothing, is counted, and does not replace the latest record, so
   node-time is never counted twice.
5. Intervals are split exactly at local hour edges of an IANA zone (days are unions of hours), so
   unlike the paper's day files (§III-B.3) no seconds are lost at midnight.
6. Basis (§III-B.3): accounted node-time per window, mean seconds per node, a data-quality flag
   when it is short of the window length; drain % over a static basis (nodes x window length;
   26,846 nodes x 86,400 s = 644,304 node-hours/day on Blue Waters) and over the dynamic basis
   (all non-Down accounted node-time).

Each batch is accounted either by numpy (records grouped by node, a segmented running maximum,
intervals split with array operations) or by the same rules compiled (native/src/drain.rs: one
loop over the records in arrival order, one over the intervals), which updates these arrays in
place. Every sum is an exact integer, so both give the same state; tests run both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from models.drain import retention
from models.drain.windows import WindowGrid
from models.records.nodestatus import DOWN, IDLE, NO_JOB, Codebook, NodeStatusBatch

try:  # the compiled per-record loops (native/src/drain.rs), built where a Rust toolchain is
    from drainwatch_native import drain_accrue, drain_intervals
except ImportError:  # pragma: no cover - depends on the installation
    drain_accrue = drain_intervals = None  # type: ignore[assignment, unused-ignore]

# the ways a batch can be accounted, the first used: the compiled loops where they are installed
# (one pass over the records, one over the intervals), else numpy; the results are the same
KERNELS = ("native", "numpy") if drain_intervals is not None else ("numpy",)
_NO_EDGES = np.empty(0, dtype=np.int64)

NONE_TS = np.iinfo(np.int64).min  # "no record yet" for maxima and carried timestamps
NOT_YET = np.iinfo(np.int64).max  # "no record yet" for minima
N_COMBOS = 4  # (has_rsv, has_job) -> has_rsv * 2 + has_job
# Overflow guard of the segmented running maximum in add(): its keys g * span + (ts - base) are
# below (g + 1) * span, so g * span < _PACK_LIMIT keeps them inside int64 (< 2**63) for any span
# below 2**62 (millisecond timestamps of real dates span far less); else a slower loop is used.
_PACK_LIMIT = 2**62


def combo(has_rsv: np.ndarray, has_job: np.ndarray) -> np.ndarray:
    return has_rsv.astype(np.int64) * 2 + has_job.astype(np.int64)


def _grow(a: np.ndarray, n: int, fill: int | float) -> np.ndarray:
    if a.shape[0] >= n:
        return a
    had = a.shape[0]
    more = had if had < 1 << 20 else had // 4  # gentler growth for large arrays
    new = np.full((max(n, had + more, 64),) + a.shape[1:], fill, dtype=a.dtype)
    new[: a.shape[0]] = a
    return new


def _stable_order(codes: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative int codes; radix sort when they fit in 16 bits."""
    if codes.size and int(codes.max()) < 65536:
        return np.argsort(codes.astype(np.uint16), kind="stable")
    return np.argsort(codes, kind="stable")


def unique_ints(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an int array; a bitmap when their range is small (O(n), no
    sort), else np.unique."""
    if a.size == 0:
        return a
    lo, hi = int(a.min()), int(a.max())
    if hi - lo < 16 * a.size + 4096:
        seen = np.zeros(hi - lo + 1, dtype=bool)
        seen[a - lo] = True
        return np.flatnonzero(seen) + lo
    return np.unique(a)


def split_at_edges(
    start: np.ndarray, end: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split intervals [start, end) at sorted ``edges`` (which must cover them).

    Returns (interval index, window index, piece start, piece length) for every piece."""
    idx = np.arange(start.size, dtype=np.int64)
    cur = start
    win = np.searchsorted(edges, cur, side="right") - 1
    out_i, out_w, out_s, out_l = [], [], [], []
    while idx.size:
        nxt = edges[win + 1]
        e = np.minimum(end[idx], nxt)
        out_i.append(idx)
        out_w.append(win)
        out_s.append(cur)
        out_l.append(e - cur)
        cont = end[idx] > nxt
        idx, cur, win = idx[cont], nxt[cont], win[cont] + 1
    if not out_i:
        z = np.empty(0, dtype=np.int64)
        return z, z, z, z
    return (
        np.concatenate(out_i),
        np.concatenate(out_w),
        np.concatenate(out_s),
        np.concatenate(out_l),
    )


def _member(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Per key: is it in ``sorted_keys``."""
    out = np.zeros(keys.size, dtype=bool)
    if sorted_keys.size:
        pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
        out = sorted_keys[pos] == keys
    return out


class _PairCounter:
    """Distinct (job, node) pairs per job, holding pairs only for jobs seen recently (data time)
    so memory is bounded by active jobs, not by history.

    A pair is the key ``job << shift | node``: uint32 while jobs and nodes fit (``shift`` node
    bits), else int64 with ``shift`` 32; keys are kept in a large sorted array plus a small
    sorted one of recent pairs, merged into the large one when it reaches a sixteenth of it
    (inserting into the large array on every batch would copy it every time). Pruning runs at
    most every eighth of the retention, in data time. Counts per job are int32."""

    __slots__ = ("pairs", "fresh", "count", "retention_ms", "next_prune_ms", "shift")

    def __init__(self, retention_ms: int) -> None:
        self.pairs = np.empty(0, dtype=np.uint32)
        self.fresh = np.empty(0, dtype=np.uint32)
        self.count = np.zeros(0, dtype=np.int32)
        self.retention_ms = retention_ms
        self.next_prune_ms: int | None = None
        self.shift = 12

    def jobs_nodes(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = keys.astype(np.int64)
        return k >> self.shift, k & ((1 << self.shift) - 1)

    def _fit(self, max_job: int, max_node: int) -> None:
        """Widen the keys when a job or node code no longer fits."""
        shift, wide = self.shift, self.pairs.dtype == np.int64
        if max_node < 1 << shift and max_job < 1 << ((63 if wide else 32) - shift):
            return
        node_bits = max(shift, int(max_node).bit_length())
        dtype: type[np.integer[Any]]
        if not wide and node_bits + int(max_job).bit_length() <= 32:
            new_shift, dtype = node_bits, np.uint32
        else:
            new_shift, dtype = 32, np.int64
        for name in ("pairs", "fresh"):
            j, n = self.jobs_nodes(getattr(self, name))
            setattr(self, name, ((j << new_shift) | n).astype(dtype))
        self.shift = new_shift

    def add(self, job: np.ndarray, node: np.ndarray, n_jobs: int) -> None:
        self.count = _grow(self.count, n_jobs, 0)
        if job.size == 0:
            return
        js = unique_ints(job)  # the few jobs of this batch, densely renumbered
        local = np.searchsorted(js, job)
        width = int(node.max()) + 1
        dense = unique_ints(local * width + node)
        self._fit(max(int(js[-1]), n_jobs - 1), width - 1)  # n_jobs bounds every code held
        keys = ((js[dense // width] << self.shift) | (dense % width)).astype(self.pairs.dtype)
        new = keys[~(_member(self.pairs, keys) | _member(self.fresh, keys))]  # sorted
        if new.size:
            jn = self.jobs_nodes(new)[0]
            starts = np.flatnonzero(np.concatenate([[True], jn[1:] != jn[:-1]]))
            self.count[jn[starts]] += np.diff(np.concatenate([starts, [jn.size]])).astype(np.int32)
            self.fresh = np.insert(self.fresh, np.searchsorted(self.fresh, new), new)
            if self.fresh.size > max(1 << 16, self.pairs.size >> 4):
                self.merge()

    def merge(self) -> None:
        """Move the recent pairs into the large sorted array."""
        if self.fresh.size:
            pos = np.searchsorted(self.pairs, self.fresh)
            self.pairs = np.insert(self.pairs, pos, self.fresh)
            self.fresh = self.fresh[:0]

    def prune(self, last_seen: np.ndarray, now_ms: int) -> None:
        if self.next_prune_ms is not None and now_ms < self.next_prune_ms:
            return
        self.next_prune_ms = now_ms + max(self.retention_ms // 8, 1)
        self.merge()
        if self.pairs.size == 0:
            return
        keep = last_seen[self.jobs_nodes(self.pairs)[0]] >= now_ms - self.retention_ms
        if not keep.all():
            self.pairs = self.pairs[keep]


@dataclass(slots=True)
class WindowRow:
    start_ms: int
    length_ms: int
    nodes: int
    accounted_ms: int
    drain_ms: int
    idle_unallocated_ms: int
    down_ms: int
    unaccounted_ms: int


@dataclass(slots=True)
class Counts:
    records: int = 0
    accepted: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    intervals: int = 0
    gaps: int = 0


class DrainAccountant:
    """Streaming accumulator over NodeStatusBatches in arrival order (batch at a time: numpy,
    or the compiled loops of :data:`KERNELS`)."""

    def __init__(
        self,
        book: Codebook,
        tz: str = "UTC",
        max_gap_ms: int = 600_000,
        retention_ms: int = 7 * 86_400_000,
        unit: str = "hour",
    ) -> None:
        """``unit``: the finest window, 'hour' (offline reports) or 'minute' (streaming)."""
        if unit not in ("hour", "minute"):
            raise ValueError(f"finest window must be 'hour' or 'minute', not {unit!r}")
        if max_gap_ms <= 0:
            raise ValueError("max_gap must be positive")
        self.book = book
        self.max_gap_ms = int(max_gap_ms)
        self.unit = unit
        self.fine = WindowGrid(tz, unit)
        self.hours = self.fine if unit == "hour" else WindowGrid(tz, "hour")
        self.days = WindowGrid(tz, "day")
        self.state_records = np.zeros(0, dtype=np.int64)  # records seen per state code
        self.counts = Counts()
        # per node: latest accepted record and accumulators
        self.last_ts = np.full(0, NONE_TS, dtype=np.int64)
        self.last_state = np.zeros(0, dtype=np.int64)
        self.last_rsv = np.zeros(0, dtype=np.int64)
        self.last_combo = np.zeros(0, dtype=np.int64)
        self.last_fine = np.full(0, NONE_TS, dtype=np.int64)
        self.last_hour = np.full(0, NONE_TS, dtype=np.int64)
        self.last_day = np.full(0, NONE_TS, dtype=np.int64)
        self.node_ms = np.zeros((0, 8 * N_COMBOS), dtype=np.int64)  # [node, state*4+combo]
        self.node_gap_ms = np.zeros(0, dtype=np.int64)
        # per window (keyed by start ms): category sums and distinct nodes
        self._win: dict[int, np.ndarray] = {}
        self._win_nodes: dict[int, int] = {}
        self._hour_nodes: dict[int, int] = self._win_nodes if unit == "hour" else {}
        self._day_nodes: dict[int, int] = {}
        # per job: drain and running
        self.job_drain_ms = np.zeros(0, dtype=np.int64)
        self.job_first_ms = np.full(0, NOT_YET, dtype=np.int64)
        self.job_last_ms = np.full(0, NONE_TS, dtype=np.int64)
        self.job_run_last_ms = np.full(0, NONE_TS, dtype=np.int64)
        self._drain_pairs = _PairCounter(retention_ms)
        self._run_pairs = _PairCounter(retention_ms)
        self.first_ms: int | None = None
        self.last_ms: int | None = None
        # earliest instant whose windows or jobs changed since take_touched() (streaming)
        self.touched_ms: int | None = None

    # ---- sizing -------------------------------------------------------------------------
    @property
    def n_cats(self) -> int:
        return self.node_ms.shape[1] + 1  # + unaccounted

    def _ensure(self) -> None:
        nn, nj = len(self.book.nodes), len(self.book.jobs)
        self.last_ts = _grow(self.last_ts, nn, NONE_TS)
        self.last_state = _grow(self.last_state, nn, 0)
        self.last_rsv = _grow(self.last_rsv, nn, NO_JOB)
        self.last_combo = _grow(self.last_combo, nn, 0)
        self.last_fine = _grow(self.last_fine, nn, NONE_TS)
        self.last_hour = _grow(self.last_hour, nn, NONE_TS)
        self.last_day = _grow(self.last_day, nn, NONE_TS)
        self.node_gap_ms = _grow(self.node_gap_ms, nn, 0)
        ns = len(self.book.states)
        if ns * N_COMBOS > self.node_ms.shape[1]:
            wider = np.zeros((self.node_ms.shape[0], 2 * ns * N_COMBOS), dtype=np.int64)
            wider[:, : self.node_ms.shape[1]] = self.node_ms
            old = self.node_ms.shape[1]
            self.node_ms = wider
            for k, v in self._win.items():  # keep the unaccounted column last
                nv = np.zeros(self.n_cats, dtype=np.int64)
                nv[:old] = v[:old]
                nv[-1] = v[-1]
                self._win[k] = nv
        self.node_ms = _grow(self.node_ms, nn, 0)
        self.job_drain_ms = _grow(self.job_drain_ms, nj, 0)
        self.job_first_ms = _grow(self.job_first_ms, nj, NOT_YET)
        self.job_last_ms = _grow(self.job_last_ms, nj, NONE_TS)
        self.job_run_last_ms = _grow(self.job_run_last_ms, nj, NONE_TS)

    # ---- the work -------------------------------------------------------------------------
    def add(self, b: NodeStatusBatch) -> None:
        n = len(b)
        if n == 0:
            return
        self._ensure()
        self.counts.records += n
        ns = len(self.book.states)
        self.state_records = _grow(self.state_records, ns, 0)
        self.state_records[:ns] += np.bincount(b.state, minlength=ns)
        lo, hi = int(b.ts_ms.min()), int(b.ts_ms.max())
        self._touch(lo)
        self.first_ms = lo if self.first_ms is None else min(self.first_ms, lo)
        self.last_ms = hi if self.last_ms is None else max(self.last_ms, hi)
        self._running(b)
        if KERNELS[0] == "native":
            self._add_native(b)
            return

        order = _stable_order(b.node)
        nd = b.node[order]
        ts = b.ts_ms[order]
        first = np.empty(n, dtype=bool)
        first[0] = True
        first[1:] = nd[1:] != nd[:-1]
        carried = self.last_ts[nd]

        # running maximum of earlier timestamps per node (segmented cummax), incl. the carried one
        base = lo - 1
        span = hi - base + 1
        g = np.cumsum(first) - 1
        if int(g[-1]) * span < _PACK_LIMIT:
            key = g * span + (ts - base)
            cm = np.maximum.accumulate(key) - g * span + base
            prev = np.empty(n, dtype=np.int64)
            prev[0] = NONE_TS
            prev[1:] = cm[:-1]
            prev[first] = NONE_TS
        else:  # enormous span x nodes: plain loop over groups
            prev = np.full(n, NONE_TS, dtype=np.int64)
            starts = np.flatnonzero(first)
            for s0, s1 in zip(starts, np.r_[starts[1:], n], strict=True):
                seg = np.maximum.accumulate(ts[s0:s1])
                prev[s0 + 1 : s1] = seg[:-1]
        prev = np.maximum(prev, carried)
        accepted = ts > prev
        self.counts.duplicates += int(np.count_nonzero(ts == prev))
        self.counts.out_of_order += int(np.count_nonzero(ts < prev))
        self.counts.accepted += int(np.count_nonzero(accepted))

        ai = order[accepted]  # rows of b, grouped by node, in arrival order
        a_node = b.node[ai]
        a_ts = b.ts_ms[ai]
        a_state = b.state[ai]
        a_rsv = b.rsv[ai]
        a_combo = combo(b.rsv[ai] != NO_JOB, b.has_job[ai])
        m = ai.size
        same = np.zeros(m, dtype=bool)
        same[1:] = a_node[1:] == a_node[:-1]
        sh = np.maximum(np.arange(m) - 1, 0)  # index of the previous accepted row
        p_ts = np.where(same, a_ts[sh], self.last_ts[a_node])
        p_state = np.where(same, a_state[sh], self.last_state[a_node])
        p_rsv = np.where(same, a_rsv[sh], self.last_rsv[a_node])
        p_combo = np.where(same, a_combo[sh], self.last_combo[a_node])
        has = p_ts != NONE_TS

        # the latest accepted record of each node becomes its carried record
        last = np.ones(m, dtype=bool)
        last[:-1] = a_node[1:] != a_node[:-1]
        ln = a_node[last]
        self.last_ts[ln] = a_ts[last]
        self.last_state[ln] = a_state[last]
        self.last_rsv[ln] = a_rsv[last]
        self.last_combo[ln] = a_combo[last]

        s, e = p_ts[has], a_ts[has]
        self._accrue(a_node[has], s, e, p_state[has], p_combo[has], p_rsv[has])

    def _add_native(self, b: NodeStatusBatch) -> None:
        """:meth:`add`'s record loop compiled (native/src/drain.rs: drain_intervals): the same
        acceptance rule and intervals, in arrival order rather than grouped by node."""
        assert drain_intervals is not None
        i64 = np.int64
        out = np.empty((6, len(b)), dtype=i64)
        dups, ooo, acc, m = drain_intervals(
            np.ascontiguousarray(b.node, dtype=i64),
            np.ascontiguousarray(b.ts_ms, dtype=i64),
            np.ascontiguousarray(b.state, dtype=i64),
            np.ascontiguousarray(b.rsv, dtype=i64),
            np.ascontiguousarray(b.has_job, dtype=bool).view(np.uint8),
            self.last_ts,
            self.last_state,
            self.last_rsv,
            self.last_combo,
            int(NONE_TS),
            int(NO_JOB),
            out,
        )
        self.counts.duplicates += dups
        self.counts.out_of_order += ooo
        self.counts.accepted += acc
        node, s, e, state, cmb, rsv = out[:, :m]
        self._accrue(node, s, e, state, cmb, rsv)

    def _accrue_native(
        self,
        node: np.ndarray,
        s: np.ndarray,
        e: np.ndarray,
        state: np.ndarray,
        cmb: np.ndarray,
        rsv: np.ndarray,
        hi: int,
    ) -> None:
        """:meth:`_accrue`'s pieces compiled (native/src/drain.rs: drain_accrue); the grids
        already cover the intervals."""
        assert drain_accrue is not None
        c = [np.ascontiguousarray(a, dtype=np.int64) for a in (node, s, e, state, cmb, rsv)]
        gaps, w0, nw, sums_b, fine, hour, day, pj, pn = drain_accrue(
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            self.max_gap_ms,
            int(IDLE),
            int(NO_JOB),
            self.fine.edges,
            self.hours.edges if self.unit != "hour" else _NO_EDGES,
            self.days.edges,
            self.node_ms,
            self.node_gap_ms,
            self.last_fine,
            self.last_hour,
            self.last_day,
            self.job_drain_ms,
            self.job_first_ms,
            self.job_last_ms,
        )
        self.counts.gaps += gaps
        sums = np.frombuffer(sums_b, dtype="<i8").reshape(nw, self.n_cats)
        self._add_window_sums(w0, sums)
        for pairs, out in (
            (fine, self._win_nodes),
            (hour, self._hour_nodes),
            (day, self._day_nodes),
        ):
            wc = np.frombuffer(pairs, dtype="<i8").reshape(-1, 2)
            for w, c in wc.tolist():
                out[w] = out.get(w, 0) + c
        if pj:
            j, n = np.frombuffer(pj, dtype="<i8"), np.frombuffer(pn, dtype="<i8")
            self._drain_pairs.add(j, n, len(self.book.jobs))
            self._drain_pairs.prune(self.job_last_ms, hi)

    def _add_window_sums(self, w0: int, sums: np.ndarray) -> None:
        """Category sums of the fine windows w0, w0 + 1, ... into the per-window rows."""
        for k in range(sums.shape[0]):
            h = w0 + k
            if not sums[k].any():
                continue
            key = int(self.fine.edges[h])
            row = self._win.get(key)
            if row is None:
                self._win[key] = sums[k].copy()
            else:
                row += sums[k]

    def _running(self, b: NodeStatusBatch) -> None:
        if b.run_row.size == 0:
            return
        j = b.run_job
        t = b.ts_ms[b.run_row]
        np.maximum.at(self.job_run_last_ms, j, t)
        self._run_pairs.add(j, b.node[b.run_row], len(self.book.jobs))
        self._run_pairs.prune(self.job_run_last_ms, int(b.ts_ms.max()))

    def _accrue(
        self,
        node: np.ndarray,
        s: np.ndarray,
        e: np.ndarray,
        state: np.ndarray,
        cmb: np.ndarray,
        rsv: np.ndarray,
    ) -> None:
        if s.size == 0:
            return
        self.counts.intervals += int(s.size)
        lo, hi = int(s.min()), int(e.max())
        self._touch(lo)
        self.fine.ensure(lo, hi)
        self.hours.ensure(lo, hi)
        self.days.ensure(lo, hi)
        if KERNELS[0] == "native":
            self._accrue_native(node, s, e, state, cmb, rsv, hi)
            return
        gap = (e - s) > self.max_gap_ms
        self.counts.gaps += int(np.count_nonzero(gap))
        ncat = self.n_cats
        cat = np.where(gap, ncat - 1, state * N_COMBOS + cmb)
        pi, pw, ps, pl = split_at_edges(s, e, self.fine.edges)
        pcat = cat[pi]
        pnode = node[pi]

        # per node accumulators
        nn = self.node_ms.shape[0]
        acc = ~gap[pi]
        flat = np.bincount(
            pnode[acc] * (ncat - 1) + pcat[acc], weights=pl[acc], minlength=nn * (ncat - 1)
        )
        self.node_ms += np.rint(flat).astype(np.int64).reshape(nn, ncat - 1)
        self.node_gap_ms += np.rint(
            np.bincount(pnode[~acc], weights=pl[~acc], minlength=nn)
        ).astype(np.int64)

        # per window category sums
        w0 = int(pw.min())
        nw = int(pw.max()) - w0 + 1
        sums = np.bincount((pw - w0) * ncat + pcat, weights=pl, minlength=nw * ncat)
        self._add_window_sums(w0, np.rint(sums).astype(np.int64).reshape(nw, ncat))
        # distinct nodes per hour and per day (per node, windows only move forward)
        self._distinct(pnode, pw, self.fine.edges, self.last_fine, self._win_nodes)
        if self.unit != "hour":
            self._distinct(
                pnode, self.hours.locate(ps), self.hours.edges, self.last_hour, self._hour_nodes
            )
        self._distinct(pnode, self.days.locate(ps), self.days.edges, self.last_day, self._day_nodes)

        # per job drain: Idle with a reservation, charged to the first reservation
        dm = (~gap[pi]) & (state[pi] == IDLE) & (rsv[pi] != NO_JOB)
        if dm.any():
            j = rsv[pi][dm]
            lens = pl[dm]
            starts = ps[dm]
            self.job_drain_ms += np.rint(
                np.bincount(j, weights=lens, minlength=self.job_drain_ms.size)
            ).astype(np.int64)
            np.minimum.at(self.job_first_ms, j, starts)
            np.maximum.at(self.job_last_ms, j, starts + lens)
            self._drain_pairs.add(j, pnode[dm], len(self.book.jobs))
            self._drain_pairs.prune(self.job_last_ms, hi)

    @staticmethod
    def _distinct(
        node: np.ndarray, win: np.ndarray, edges: np.ndarray, last: np.ndarray, out: dict[int, int]
    ) -> None:
        """Count nodes new to each window (per node, windows only move forward in time)."""
        if node.size == 0:
            return
        w0 = int(win.min())
        span = int(win.max()) - w0 + 1
        keys = unique_ints(node * span + (win - w0))  # sorted by node, then window
        n_ = keys // span
        w_ = edges[keys % span + w0]
        fresh = w_ != last[n_]
        for w, c in zip(*np.unique(w_[fresh], return_counts=True), strict=True):
            out[int(w)] = out.get(int(w), 0) + int(c)
        lastpos = np.ones(n_.size, dtype=bool)
        lastpos[:-1] = n_[1:] != n_[:-1]
        last[n_[lastpos]] = np.maximum(last[n_[lastpos]], w_[lastpos])

    # ---- results ----------------------------------------------------------------------
    def _cats(self, v: np.ndarray) -> tuple[int, int, int, int, int]:
        body = v[:-1].reshape(-1, N_COMBOS)
        acc = int(body.sum())
        drain = int(body[IDLE, 2] + body[IDLE, 3])
        idle_u = int(body[IDLE, 0] + body[IDLE, 1])
        down = int(body[DOWN].sum())
        return acc, drain, idle_u, down, int(v[-1])

    def windows(self) -> list[WindowRow]:
        """Rows of the finest window (hours, or minutes for a streaming accountant)."""
        rows = []
        for k in sorted(self._win):
            acc, drain, idle_u, down, gap = self._cats(self._win[k])
            rows.append(
                WindowRow(
                    k,
                    self.fine.length_ms(k),
                    self._win_nodes.get(k, 0),
                    acc,
                    drain,
                    idle_u,
                    down,
                    gap,
                )
            )
        return rows

    def _sums(self, grid: WindowGrid, since_ms: int | None = None) -> dict[int, np.ndarray]:
        """Category sums of the finest windows per window of ``grid`` (exact: edges nest);
        only windows starting at or after ``since_ms`` when given."""
        keys = np.array(sorted(self._win), dtype=np.int64)
        if since_ms is not None:
            keys = keys[keys >= since_ms]
        if not keys.size:
            return {}
        grid.ensure(int(keys.min()), int(keys.max()))
        starts = grid.edges[grid.locate(keys)]
        sums: dict[int, np.ndarray] = {}
        for k, d in zip(keys.tolist(), starts.tolist(), strict=True):
            v = self._win[k]
            sums[d] = sums[d] + v if d in sums else v.copy()
        return sums

    def _aggregate(
        self, grid: WindowGrid, nodes: dict[int, int], since_ms: int | None = None
    ) -> list[WindowRow]:
        """Rows of the windows of ``grid`` (see :meth:`_sums`)."""
        sums = self._sums(grid, since_ms)
        rows = []
        for d in sorted(sums):
            acc, drain, idle_u, down, gap = self._cats(sums[d])
            rows.append(
                WindowRow(d, grid.length_ms(d), nodes.get(d, 0), acc, drain, idle_u, down, gap)
            )
        return rows

    def state_ms(self, unit: str, since_ms: int | None = None) -> dict[int, dict[str, list[int]]]:
        """Per window of ``unit`` ('hour' or 'day') starting at or after ``since_ms``: state name
        -> node-ms per (rsv, job) combination [none/none, none/job, rsv/none, rsv/job] (seed 000
        §III-B.1), states with time only."""
        grid = self.days if unit == "day" else self.hours
        if since_ms is not None:
            grid.ensure(since_ms, since_ms)
            since_ms = int(grid.edges[grid.locate(np.array([since_ms]))[0]])
        names = self.book.states.names
        out: dict[int, dict[str, list[int]]] = {}
        for d, v in self._sums(grid, since_ms).items():
            body = v[:-1].reshape(-1, N_COMBOS)
            out[d] = {names[i]: body[i].tolist() for i in np.flatnonzero(body.sum(axis=1))}
        return out

    def hourly(self) -> list[WindowRow]:
        return (
            self.windows() if self.unit == "hour" else self._aggregate(self.hours, self._hour_nodes)
        )

    def daily(self) -> list[WindowRow]:
        return self._aggregate(self.days, self._day_nodes)

    def node_state_ms(self) -> np.ndarray:
        """[node, state, combo] node-milliseconds."""
        self._ensure()
        nn, ns = len(self.book.nodes), len(self.book.states)
        return self.node_ms[:nn, : ns * N_COMBOS].reshape(nn, ns, N_COMBOS)

    def jobs_charged(self) -> np.ndarray:
        """Codes of jobs with drain charged, in code order."""
        nj = len(self.book.jobs)
        return np.flatnonzero(self.job_drain_ms[:nj] > 0)

    def nodes_charged(self) -> np.ndarray:
        nj = len(self.book.jobs)
        return _grow(self._drain_pairs.count, nj, 0)[:nj]

    def seen_running(self) -> npt.NDArray[np.bool_]:
        """Per job code: was it ever in a joblist."""
        seen: npt.NDArray[np.bool_] = self.job_run_last_ms[: len(self.book.jobs)] != NONE_TS
        return seen  # (numpy stubs type ndarray != as Any, hence the annotated local)

    def nodes_running(self) -> np.ndarray:
        nj = len(self.book.jobs)
        return _grow(self._run_pairs.count, nj, 0)[:nj]

    def _touch(self, ms: int) -> None:
        self.touched_ms = ms if self.touched_ms is None else min(self.touched_ms, ms)

    def take_touched(self) -> int | None:
        """The earliest instant changed since the last call (None: nothing changed)."""
        t, self.touched_ms = self.touched_ms, None
        return t

    def rows_since(self, since_ms: int) -> dict[str, list[WindowRow]]:
        """Minute (finest), hour and day rows of the windows that hold or follow ``since_ms``
        (absolute values of those windows)."""
        out: dict[str, list[WindowRow]] = {}
        for unit, grid, nodes in (
            (self.unit, self.fine, self._win_nodes),
            ("hour", self.hours, self._hour_nodes),
            ("day", self.days, self._day_nodes),
        ):
            if unit in out:
                continue
            grid.ensure(since_ms, since_ms)
            start = int(grid.edges[grid.locate(np.array([since_ms]))[0]])
            out[unit] = self._aggregate(grid, nodes, start)
        return out

    def jobs_touched(self, since_ms: int) -> np.ndarray:
        """Codes of jobs charged or seen running at or after ``since_ms``."""
        nj = len(self.book.jobs)
        self._ensure()
        hit = (self.job_last_ms[:nj] >= since_ms) | (self.job_run_last_ms[:nj] >= since_ms)
        return np.flatnonzero(hit)

    # ---- memory: the live path's retention (models.drain.retention) ------------------------
    def evict_windows(self, before_ms: int) -> int:
        """Forget the windows that start before ``before_ms`` (a day edge); how many finest
        windows were dropped (:func:`models.drain.retention.evict_windows`)."""
        return retention.evict_windows(self, before_ms)

    def idle_jobs(self, before_ms: int) -> np.ndarray:
        """Per job code: nothing charged to it nor seen running since ``before_ms``
        (:func:`models.drain.retention.idle_jobs`)."""
        return retention.idle_jobs(self, before_ms)

    def compact_jobs(self, keep: np.ndarray) -> np.ndarray:
        """Forget the jobs not kept, renumber the rest; old code -> new code, -1: forgotten
        (:func:`models.drain.retention.compact_jobs`)."""
        return retention.compact_jobs(self, keep)
