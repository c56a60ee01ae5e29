"""Node samples: one measure of one process of one job on one node (seed 003, Tables 1-2).

Emeras et al., "Analysis of the Jobs Resource Utilization on a Production System" (JSSPP 2013),
§3.1: every node measures every job every minute from /proc; a measure carries the time stamp,
job id, pid, node and the values of Table 2 (memory in KB, cumulative I/O counters, core %,
network bytes). :class:`NodeSample` is that record; :class:`SampleArrays` is the same data as
numpy columns for the vectorised analytics in :mod:`models.samples.utilization` and
:mod:`models.samples.dfs`.

Extra optional fields beyond Table 2: ``start`` (process start, epoch seconds: tells a reused pid
from the old process), ``cores`` (CPUs allocated to the job on this node, 0 = unknown) and
``job_class`` (e.g. ``normal`` / ``besteffort``), ``fs_rates`` (per file-system write/read
speeds when a source gives rates instead of counters) and ``wchar`` (bytes passed to write
calls, /proc/<pid>/io; None = unknown). Memory is in KiB as /proc reports it ("kB").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from models.records.nodestatus import Interner

# Physical bounds (bad-input policy 5): a sample beyond them is rejected as
# ``implausible_value``, so one stray value cannot rule a job's utilisation or a DFS minute.
# Generous on purpose: no node today has 8,192 hardware threads or 1 PiB of memory, and no file
# system delivers 10 TB/s to one node.
MAX_CORE_PCT = 100.0 * 8192  # % of one core, summed over a process's threads
MAX_CORES = 8192  # CPUs allocated to a job on one node
MAX_MEMORY_KB = 1 << 40  # KiB (1 PiB)
MAX_FS_RATE = 1e7  # the trace's unit per second (MB/s)
IMPLAUSIBLE = "implausible_value"


@dataclass(slots=True, frozen=True)
class NodeSample:
    ts: float
    job: str
    pid: int
    node: str
    command: str
    vm_peak_kb: int
    vm_size_kb: int
    vm_rss_kb: int
    vm_swap_kb: int
    syscr: int
    syscw: int
    read_bytes: int
    write_bytes: int
    core: float  # % of one core over the last sampling interval (100 = one core busy)
    receive: int  # bytes received, cumulative (the network namespace's counters)
    transmit: int  # bytes transmitted, cumulative
    start: float = 0.0  # process start time, epoch s (0 = unknown)
    cores: int = 0  # CPUs allocated to the job on this node (0 = unknown)
    job_class: str = ""
    # per file system (name, write, read) speeds, for sources that give rates instead of
    # counters (e.g. LLview MiB/s); empty for /proc samples
    fs_rates: tuple[tuple[str, float, float], ...] = ()
    # bytes passed to write calls, cumulative (/proc/<pid>/io ``wchar``: any target, page cache
    # or not); None = unknown (older traces, unreadable io, rate sources)
    wchar: int | None = None


@dataclass(slots=True)
class SampleArrays:
    """Column form of many :class:`NodeSample` (same order). Strings are interned: ``job[i]`` is
    an index into ``jobs`` and so on. Counters are float64 (exact to 2**53 bytes)."""

    ts: np.ndarray
    job: np.ndarray
    node: np.ndarray
    pid: np.ndarray
    start: np.ndarray
    vm_rss_kb: np.ndarray
    vm_swap_kb: np.ndarray
    read_bytes: np.ndarray
    write_bytes: np.ndarray
    core: np.ndarray
    cores: np.ndarray
    job_class: np.ndarray
    jobs: list[str]
    nodes: list[str]
    classes: list[str]

    def __len__(self) -> int:
        return int(self.ts.shape[0])


def to_arrays(samples: Iterable[NodeSample]) -> SampleArrays:
    """Columns from records (one pass)."""
    jobs, nodes, classes = Interner(), Interner(), Interner()
    cols: list[list[float]] = [[] for _ in range(11)]
    (ts, job, node, pid, start, rss, swap, rb, wb, core, cores) = cols
    cls: list[int] = []
    for s in samples:
        ts.append(s.ts)
        job.append(jobs.code(s.job))
        node.append(nodes.code(s.node))
        pid.append(s.pid)
        start.append(s.start)
        rss.append(s.vm_rss_kb)
        swap.append(s.vm_swap_kb)
        rb.append(s.read_bytes)
        wb.append(s.write_bytes)
        core.append(s.core)
        cores.append(s.cores)
        cls.append(classes.code(s.job_class or "normal"))
    f = np.float64
    return SampleArrays(
        ts=np.asarray(ts, f),
        job=np.asarray(job, np.int64),
        node=np.asarray(node, np.int64),
        pid=np.asarray(pid, np.int64),
        start=np.asarray(start, f),
        vm_rss_kb=np.asarray(rss, f),
        vm_swap_kb=np.asarray(swap, f),
        read_bytes=np.asarray(rb, f),
        write_bytes=np.asarray(wb, f),
        core=np.asarray(core, f),
        cores=np.asarray(cores, f),
        job_class=np.asarray(cls, np.int64),
        jobs=jobs.names,
        nodes=nodes.names,
        classes=classes.names,
    )


# ------------------------------------------------------------- vectorised group-by helpers

# composite_key() compacts its codes when span * range would reach this: int64 holds < 2**63,
# and code * r + kc < span * r stays below it
_KEY_LIMIT = 1 << 62


def _as_int_key(k: np.ndarray, n: int) -> tuple[np.ndarray, int]:
    """A key as small non-negative int64 codes (equal values <-> equal codes, order kept) and
    its range. Integer-valued keys with a range <= 4n are shifted; others are ranked."""
    if k.dtype.kind in "iub" or (k.size and np.array_equal(k, np.floor(k))):
        ki = k.astype(np.int64, copy=False)
        lo = int(ki.min()) if ki.size else 0
        r = (int(ki.max()) - lo + 1) if ki.size else 1
        if r <= max(4 * n, 1 << 16):
            return ki - lo, r
    u, inv = np.unique(k, return_inverse=True)
    return inv.astype(np.int64, copy=False), max(int(u.shape[0]), 1)


def composite_key(*keys: np.ndarray) -> np.ndarray:
    """One int64 per row that sorts like the tuple of ``keys`` (first key most significant)."""
    n = keys[0].shape[0]
    code = np.zeros(n, dtype=np.int64)
    span = 1
    for k in keys:
        kc, r = _as_int_key(k, n)
        if span * r >= _KEY_LIMIT:  # compact what we have so far, then go on
            u, inv = np.unique(code, return_inverse=True)
            code, span = inv.astype(np.int64), max(int(u.shape[0]), 1)
            if span * r >= _KEY_LIMIT:
                raise OverflowError("too many distinct keys for one int64")
        code = code * r + kc
        span *= r
    return code


def sort_order(*keys: np.ndarray) -> np.ndarray:
    """Stable order of rows by the tuple of ``keys`` (first key most significant)."""
    return np.argsort(composite_key(*keys), kind="stable")


def group_codes(*keys: np.ndarray) -> np.ndarray:
    """Dense group code (0..g-1, in key order) per row for the tuple of ``keys``."""
    n = keys[0].shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    c = composite_key(*keys)
    order = np.argsort(c, kind="stable")
    cs = c[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(cs[1:], cs[:-1], out=new[1:])
    codes = np.empty(n, dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes


def exact_bin_sums(k: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per bin the sum of its values rounded once (``math.fsum``): the same whatever the order
    of the rows, so a minute summed live from its rows as they arrive equals the replay's."""
    out = np.zeros(n)
    if k.size == 0:
        return out
    order = np.argsort(k, kind="stable")
    ks, vs = k[order], values[order].tolist()
    cuts = np.flatnonzero(np.diff(ks)) + 1
    lo = 0
    for hi in [*cuts.tolist(), ks.size]:
        out[ks[lo]] = math.fsum(vs[lo:hi])
        lo = hi
    return out
