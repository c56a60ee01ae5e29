"""The live drain accountant's retention (models.drain.live): what a streaming
:class:`~models.drain.accountant.DrainAccountant` forgets so its memory follows the jobs and
windows that can still change, not the whole history.

Rules (each pinned by a test, tests/models/drain/test_retention.py):

1. Windows (finest, hour and day) that start before a cut are forgotten whole; the caller cuts
   at a day edge, so the day sums it keeps are never partial.
2. A job is quiet since ``before_ms`` when nothing was charged to it nor was it seen running
   since then; the caller forgets quiet jobs in bulk.
3. Forgetting jobs renumbers the others densely (the codebook, every per-job array and the
   (job, node) pairs of nodes charged and running move together); a job a node still holds as
   its latest reservation is always kept, since that node's next record charges it. A
   forgotten job seen again starts from zero.

These functions work on the accountant's own arrays, as :mod:`models.drain.snapshot` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from models.records.nodestatus import NO_JOB

if TYPE_CHECKING:
    from models.drain.accountant import DrainAccountant, _PairCounter

_JOB_ARRAYS = ("job_drain_ms", "job_first_ms", "job_last_ms", "job_run_last_ms")


def evict_windows(acc: DrainAccountant, before_ms: int) -> int:
    """Forget the windows (finest, hour and day) that start before ``before_ms``; how many
    finest windows were dropped."""
    old = [k for k in acc._win if k < before_ms]
    for k in old:
        del acc._win[k]
    for nodes in (acc._win_nodes, acc._hour_nodes, acc._day_nodes):
        for k in [k for k in nodes if k < before_ms]:
            del nodes[k]
    return len(old)


def idle_jobs(acc: DrainAccountant, before_ms: int) -> np.ndarray:
    """Per job code: nothing charged to it nor seen running since ``before_ms``."""
    nj = len(acc.book.jobs)
    acc._ensure()
    quiet: np.ndarray = (acc.job_last_ms[:nj] < before_ms) & (acc.job_run_last_ms[:nj] < before_ms)
    return quiet


def compact_jobs(acc: DrainAccountant, keep: np.ndarray) -> np.ndarray:
    """Forget the jobs whose ``keep`` (bool per job code) is false, and the jobs no node holds
    as its latest reservation; renumber the rest densely. Returns old code -> new code (-1:
    forgotten)."""
    nj = len(acc.book.jobs)
    acc._ensure()
    keep = keep[:nj].copy()
    held = acc.last_rsv[: len(acc.book.nodes)]
    keep[held[held != NO_JOB]] = True
    new = np.full(nj, -1, dtype=np.int64)
    new[keep] = np.arange(int(keep.sum()), dtype=np.int64)
    for name in _JOB_ARRAYS:
        setattr(acc, name, getattr(acc, name)[:nj][keep].copy())
    has = acc.last_rsv != NO_JOB
    acc.last_rsv[has] = new[acc.last_rsv[has]]
    for pairs in (acc._drain_pairs, acc._run_pairs):
        _remap_pairs(pairs, keep, new)
    acc.book.jobs.compact(keep)
    return new


def _remap_pairs(pc: _PairCounter, keep: np.ndarray, new: np.ndarray) -> None:
    """The (job, node) pairs of the jobs kept, renumbered by ``new`` (old code -> new code);
    the others' pairs and counts dropped."""
    pc.merge()
    j, n = pc.jobs_nodes(pc.pairs)
    ok = keep[j]
    pc.pairs = ((new[j[ok]] << pc.shift) | n[ok]).astype(pc.pairs.dtype)
    count = np.zeros(keep.size, dtype=pc.count.dtype)  # a count not grown yet is 0
    had = min(pc.count.size, keep.size)
    count[:had] = pc.count[:had]
    pc.count = count[keep]
