"""Write sizes per job: bytes per write call over each sampling interval, and their distribution.

Seed 003 (Emeras et al. 2013), §3.1 Table 2 defines the counters (``syscw``: number of write
syscalls; ``write_bytes``: bytes written to the DFS) and §5.2 ("Global IO Activity", Fig. 15 and
16) looks at the sizes written on the DFS: peaks at 4 KB and 64 KB (small) and at 16-32 MB, the
most frequent per-minute sizes being small (4-16 KB) or medium (8-64 MB). Here the size is seen
from the sampler's side: per process and sampling interval, ``delta write_bytes / delta syscw``.

Choice of the numerator: ``wchar`` (bytes passed to write calls, any target: files, pipes,
sockets, terminals) when both samples of an interval carry it, so ``delta wchar / delta syscw`` is
the true mean size argument of the process's write calls. Traces without ``wchar`` (written
before the sampler kept it, or /proc/<pid>/io unreadable) fall back to ``write_bytes`` (the seed's
DFS bytes): *storage bytes per write call* -- ``write_bytes`` is charged when page-cache pages
are dirtied (a rewrite of a dirty page is not counted again; mmap writes are counted without a
call) while ``syscw`` counts every write call, so that figure is the storage load per call, not
the call size. :attr:`WriteSizes.wchar_intervals` says how many of a job's intervals used
``wchar`` (:meth:`WriteSizes.measure`: ``wchar``, ``write_bytes`` or ``mixed``).

Intervals: consecutive samples of one process (job, node, pid, process start) in time order.
An interval where a counter it uses decreased (counter reset, pid reuse) is ignored, and so is one
without write calls (``delta syscw == 0``). Each counted interval's mean size puts its calls and
bytes in one bucket of fixed power-of-two edges: < 4 KiB, 4-64 KiB, 64 KiB-1 MiB, >= 1 MiB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.records.nodesample import NodeSample, group_codes, sort_order

# bucket edges in bytes (a size s is in bucket k when EDGES[k-1] <= s < EDGES[k])
EDGES = (4 * 1024, 64 * 1024, 1024 * 1024)
BUCKETS = ("lt_4k", "4k_64k", "64k_1m", "ge_1m")
BUCKET_LABELS = ("< 4 KiB", "4 KiB - 64 KiB", "64 KiB - 1 MiB", ">= 1 MiB")


@dataclass(slots=True)
class WriteSizes:
    """Per job (index j into ``jobs``, in order of first appearance): counted intervals, write
    calls, bytes (delta wchar, else delta write_bytes), per bucket (columns in :data:`BUCKETS`
    order) calls and bytes, and how many intervals were sized by ``wchar``."""

    jobs: list[str]
    intervals: np.ndarray  # (J,) int64
    calls: np.ndarray  # (J,) float64
    bytes: np.ndarray  # (J,) float64
    bucket_calls: np.ndarray  # (J, 4) float64
    bucket_bytes: np.ndarray  # (J, 4) float64
    wchar_intervals: np.ndarray  # (J,) int64: counted intervals sized by delta wchar
    ignored_resets: int = 0  # intervals with a decreasing counter
    ignored_no_writes: int = 0  # intervals without write calls

    def measure(self) -> list[str]:
        """Per job, the numerator of its sizes: ``wchar`` (every counted interval had it),
        ``write_bytes`` (none had it, or no counted interval) or ``mixed``."""
        return [
            "write_bytes" if w == 0 else "wchar" if w == n else "mixed"
            for w, n in zip(self.wchar_intervals.tolist(), self.intervals.tolist(), strict=True)
        ]

    def bytes_per_call(self) -> np.ndarray:
        """Mean bytes per write call over the job's counted intervals (NaN: no write call)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.calls > 0, self.bytes / np.maximum(self.calls, 1), np.nan)


def bucket_of(size: np.ndarray) -> np.ndarray:
    """Bucket index (0..3) of each mean write size in bytes."""
    return np.searchsorted(np.asarray(EDGES, dtype=np.float64), size, side="right")


def write_sizes(samples: Sequence[NodeSample]) -> WriteSizes:
    """:class:`WriteSizes` of the jobs in ``samples`` (any order)."""
    names: dict[str, int] = {}
    job = np.fromiter((names.setdefault(s.job, len(names)) for s in samples), np.int64)
    nodes: dict[str, int] = {}
    node = np.fromiter((nodes.setdefault(s.node, len(nodes)) for s in samples), np.int64)
    n = len(samples)
    pid = np.fromiter((s.pid for s in samples), np.int64, n)
    start = np.fromiter((s.start for s in samples), np.float64, n)
    ts = np.fromiter((s.ts for s in samples), np.float64, n)
    calls = np.fromiter((s.syscw for s in samples), np.float64, n)
    wbytes = np.fromiter((s.write_bytes for s in samples), np.float64, n)
    wchar = np.fromiter((np.nan if s.wchar is None else s.wchar for s in samples), np.float64, n)
    nj = len(names)
    out = WriteSizes(
        jobs=list(names),
        intervals=np.zeros(nj, np.int64),
        calls=np.zeros(nj),
        bytes=np.zeros(nj),
        bucket_calls=np.zeros((nj, len(BUCKETS))),
        bucket_bytes=np.zeros((nj, len(BUCKETS))),
        wchar_intervals=np.zeros(nj, np.int64),
    )
    if n < 2:
        return out
    series = group_codes(job, node, pid, start)
    order = sort_order(series, ts)
    g, j, c, b, w = series[order], job[order], calls[order], wbytes[order], wchar[order]
    same = g[1:] == g[:-1]  # row k+1 continues row k's process: an interval
    use_w = ~np.isnan(w[1:]) & ~np.isnan(w[:-1])  # both ends know wchar
    dc = c[1:] - c[:-1]
    db = np.where(use_w, w[1:] - w[:-1], b[1:] - b[:-1])
    reset = same & ((dc < 0) | (db < 0))
    no_writes = same & ~reset & (dc == 0)
    ok = same & ~reset & (dc > 0)
    out.ignored_resets = int(reset.sum())
    out.ignored_no_writes = int(no_writes.sum())
    jj, dc, db = j[1:][ok], dc[ok], db[ok]
    np.add.at(out.wchar_intervals, jj, use_w[ok].astype(np.int64))
    k = bucket_of(db / dc)
    np.add.at(out.intervals, jj, 1)
    np.add.at(out.calls, jj, dc)
    np.add.at(out.bytes, jj, db)
    np.add.at(out.bucket_calls, (jj, k), dc)
    np.add.at(out.bucket_bytes, (jj, k), db)
    return out
