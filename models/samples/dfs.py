"""Distributed file system (DFS) load per minute, hot zones, and the jobs behind them.

Seed 003 (Emeras et al., JSSPP 2013) §5 "File System IO" and §5.2: the write load on the DFS is
the jobs' written bytes aggregated per minute (Fig. 16) and turned into a speed (Fig. 18). The
*hot zone* is the area above mean write speed - standard deviation of a bandwidth test (IOR on
Gofree's NFS: 98 MB/s +- 5 -> 93 MB/s); the seed then looks at which jobs wrote during each
episode (e.g. July 18: two jobs competing, 10 hot peaks in two hours).

Inputs are :class:`IoRates`, one row per (job, node, minute), built either from cumulative
/proc counters (:func:`io_from_samples`, bytes -> MB with MB = 10**6 bytes) or from sources that
already give rates (:func:`io_from_rates`, e.g. LLview's MiB/s: the unit stays the source's).
A threshold is a :class:`Rate` with its unit (:func:`parse_rate`); it is converted exactly to the
source's unit (:func:`convert_rate`, 1 MiB/s = 1.048576 MB/s), so 93 MB/s is never compared
with MiB/s as if it were 93 MiB/s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from models.formats.procfs import counter_deltas
from models.records.nodesample import SampleArrays, exact_bin_sums, group_codes

MINUTE = 60
_NO_EPISODE = -1  # hot_zones: episode number of an I/O row outside every hot minute


@dataclass(slots=True)
class IoRates:
    """Per (job, node, minute): write / read speed over that minute (unit/s) and the amount
    (unit) written / read. ``minute`` = floor(epoch s / 60)."""

    job: np.ndarray
    node: np.ndarray
    minute: np.ndarray
    write: np.ndarray
    read: np.ndarray
    write_amount: np.ndarray
    read_amount: np.ndarray
    jobs: list[str]
    nodes: list[str]


def _per_job_node_minute(
    job: np.ndarray, node: np.ndarray, minute: np.ndarray, cols: list[np.ndarray], how: str
) -> tuple[np.ndarray, ...]:
    g = group_codes(job, node, minute)
    ng = int(g.max()) + 1 if g.size else 0
    first = np.full(ng, -1, dtype=np.int64)
    # first row index of each group (any row works: job/node/minute are constant in it)
    first[g] = np.arange(g.shape[0])
    out = [job[first], node[first], minute[first]]
    cnt = np.bincount(g, minlength=ng)
    for c in cols:
        if how == "mean":  # speeds: sums rounded once, as the live per-file-system stream's
            out.append(exact_bin_sums(g, c, ng) / np.maximum(cnt, 1))
        else:
            out.append(np.bincount(g, c, ng))
    return tuple(out)


def io_from_samples(arr: SampleArrays, period: float = 60.0, unit: float = 1e6) -> IoRates:
    """Write / read byte deltas of every process (cumulative counters, never negative: see
    :func:`models.formats.procfs.counter_deltas`), summed per (job, node, minute of the sample) and
    divided by 60 s. A process first seen less than ``period`` after its start counts its
    whole counter; one already running when first seen is the baseline (no delta)."""
    proc = group_codes(arr.node, arr.pid, arr.start)
    new = (arr.start > 0) & (arr.start > arr.ts - period)
    # byte deltas are whole numbers: their sums are exact in float64 (below 2**53 bytes) and
    # do not depend on the order of the rows, so the live worker's sums equal these
    d = counter_deltas(proc, arr.ts, np.stack([arr.write_bytes, arr.read_bytes], axis=1), new)
    dw, dr = d[:, 0], d[:, 1]
    minute = np.floor(arr.ts / MINUTE).astype(np.int64)
    job, node, mnt, w, r = _per_job_node_minute(arr.job, arr.node, minute, [dw, dr], "sum")
    return IoRates(
        job=job,
        node=node,
        minute=mnt,
        write=w / unit / MINUTE,
        read=r / unit / MINUTE,
        write_amount=w / unit,
        read_amount=r / unit,
        jobs=arr.jobs,
        nodes=arr.nodes,
    )


def io_from_rates(
    job: np.ndarray,
    node: np.ndarray,
    ts: np.ndarray,
    write_rate: np.ndarray,
    read_rate: np.ndarray,
    dt: np.ndarray,
    jobs: list[str],
    nodes: list[str],
) -> IoRates:
    """Sources that give speeds: per (job, node, minute) the mean speed of the samples in that
    minute; amounts = sum of speed x ``dt`` (the time each sample stands for)."""
    minute = np.floor(ts / MINUTE).astype(np.int64)
    j, n, m, w, r = _per_job_node_minute(job, node, minute, [write_rate, read_rate], "mean")
    _, _, _, wa, ra = _per_job_node_minute(
        job, node, minute, [write_rate * dt, read_rate * dt], "sum"
    )
    return IoRates(
        job=j,
        node=n,
        minute=m,
        write=w,
        read=r,
        write_amount=wa,
        read_amount=ra,
        jobs=jobs,
        nodes=nodes,
    )


@dataclass(slots=True)
class DfsMinutely:
    minute: np.ndarray
    write: np.ndarray  # unit/s over all jobs and nodes
    read: np.ndarray
    jobs_writing: np.ndarray


def dfs_minutely(io: IoRates, minutes: np.ndarray | None = None) -> DfsMinutely:
    """Aggregate DFS load per minute over all jobs. ``minutes`` = the minutes to report (e.g.
    every minute some job was sampled, so idle minutes show 0); default: minutes in ``io``."""
    allm = io.minute if minutes is None else np.union1d(minutes, io.minute)
    um = np.unique(allm)
    k = np.searchsorted(um, io.minute)
    w = exact_bin_sums(k, io.write, um.shape[0])
    r = exact_bin_sums(k, io.read, um.shape[0])
    jm = group_codes(io.job, io.minute)
    writing = io.write > 0
    # one count per (job, minute) with any node writing
    jm_w = np.zeros(int(jm.max()) + 1 if jm.size else 0, dtype=bool)
    np.logical_or.at(jm_w, jm, writing)
    jm_min = np.zeros(jm_w.shape[0], dtype=np.int64)
    jm_min[jm] = k
    jobs_writing = np.bincount(jm_min[jm_w], minlength=um.shape[0])
    return DfsMinutely(minute=um, write=w, read=r, jobs_writing=jobs_writing)


def hot_zone_threshold(mean: float, std: float, k: float = 1.0) -> float:
    """Seed 003 §5.2: the DFS may start to be overloaded above mean write speed - k x sigma of a
    bandwidth test (IOR 98 +- 5 MB/s -> 93 MB/s with k = 1)."""
    return float(mean - k * std)


# Rate units, bytes per second. Decimal (MB = 10**6 bytes: /proc counters, IOR, the seed) and
# binary (MiB = 2**20 bytes: LLview); 1 MiB/s = 1.048576 MB/s exactly.
RATE_UNITS: dict[str, int] = {
    "B/s": 1,
    "kB/s": 10**3,
    "KB/s": 10**3,
    "MB/s": 10**6,
    "GB/s": 10**9,
    "TB/s": 10**12,
    "KiB/s": 2**10,
    "MiB/s": 2**20,
    "GiB/s": 2**30,
    "TiB/s": 2**40,
}
_BITS = ("b/s", "bps", "bit/s")


@dataclass(frozen=True, slots=True)
class Rate:
    """A speed as given: ``unit`` one of :data:`RATE_UNITS`, or None for "the source's own
    unit/s" (a plain number)."""

    value: float
    unit: str | None = None

    def to(self, unit: str) -> float:
        """The value in ``unit`` (a plain number is taken to be in ``unit`` already)."""
        return self.value if self.unit is None else convert_rate(self.value, self.unit, unit)

    def __str__(self) -> str:
        return f"{self.value:g}" if self.unit is None else f"{self.value:g} {self.unit}"


def convert_rate(value: float, unit: str, to: str) -> float:
    """``value`` ``unit`` in ``to``: exact ratios of bytes per second (93 MB/s = 88.69... MiB/s)."""
    a, b = RATE_UNITS[unit], RATE_UNITS[to]
    return float(value) if a == b else float(value) * a / b


def parse_rate(text: str, zero_ok: bool = False) -> Rate:
    """``93``, ``93MB/s``, ``1.2 GiB/s``, ``93MBps``. A plain number is in the source's unit/s.
    Spellings that do not say decimal or binary bytes (``M/s``, ``Mb/s`` = bits, ``mb/s``) are
    refused rather than guessed: ValueError with the reason. ``zero_ok``: 0 is accepted (a
    standard deviation)."""
    t = text.strip()
    k = len(t)
    while k and not (t[k - 1].isdigit() or t[k - 1] == "."):
        k -= 1
    num, unit = t[:k].strip(), t[k:].strip()
    try:
        value = float(num)
    except ValueError:
        raise ValueError(f"{text!r} is no rate (e.g. 93MB/s, 1.2GiB/s, or 93)") from None
    if not (value > 0 or (zero_ok and value == 0)) or value == float("inf"):
        raise ValueError(f"{text!r}: the rate must be a finite number {'>=' if zero_ok else '>'} 0")
    if not unit:
        return Rate(value)
    if unit.endswith("ps") and not unit.endswith(_BITS):
        unit = unit[:-2] + "/s"
    if unit in RATE_UNITS:
        return Rate(value, unit)
    if unit.endswith(_BITS) and not unit[:-2].endswith("B"):
        raise ValueError(f"{text!r} is bits per second: give bytes (MB/s or MiB/s)")
    raise ValueError(
        f"{text!r}: unit {unit!r} is not one of {', '.join(RATE_UNITS)} "
        "(MB/s = 10**6 bytes/s, MiB/s = 2**20 bytes/s; a plain number = the source's unit)"
    )


def parse_fs_rates(items: Iterable[str]) -> dict[str, Rate]:
    """Per-file-system hot-zone thresholds, ``FS=RATE`` items (``scratch=1.2GiB/s``) -> file
    system -> rate, in the order given; ValueError starting with the item (``'x': expected
    FS=RATE ...``, ``'a=2': a has a threshold already``, ``'a=1Mb/s': <why the rate is not
    one>``)."""
    out: dict[str, Rate] = {}
    for item in items:
        fs, eq, value = item.rpartition("=")
        fs = fs.strip()
        if not eq or not fs:
            raise ValueError(f"{item!r}: expected FS=RATE (e.g. scratch=1.2GiB/s)")
        if fs in out:
            raise ValueError(f"{item!r}: {fs} has a threshold already")
        try:
            out[fs] = parse_rate(value)
        except ValueError as e:
            raise ValueError(f"{item!r}: {e}") from None
    return out


@dataclass(slots=True)
class HotZone:
    start: int  # first hot minute (epoch minute)
    end: int  # last hot minute (inclusive)
    peak: float
    minutes: int  # minutes above the threshold
    top_jobs: list[tuple[str, float]] = field(default_factory=list)  # (job, share of writes)


def hot_zones(
    dm: DfsMinutely, io: IoRates, threshold: float, top: int = 3, max_gap: int = 0
) -> list[HotZone]:
    """Episodes of minutes with write speed > ``threshold``. Hot minutes at most ``max_gap``
    minutes apart belong to one episode. Each episode names its ``top`` jobs by share of the
    data written during its hot minutes (share = job's writes / all writes in those minutes)."""
    hot = dm.minute[dm.write > threshold]
    if hot.size == 0:
        return []
    brk = np.flatnonzero(np.diff(hot) > max_gap + 1)
    starts = np.concatenate([[0], brk + 1])
    ends = np.concatenate([brk, [hot.size - 1]])
    peak_by_min = dict(zip(dm.minute.tolist(), dm.write.tolist(), strict=True))
    # writes per (job, hot minute), via the episode number of each io row
    ep_of = np.full(io.minute.shape[0], _NO_EPISODE, dtype=np.int64)
    pos = np.searchsorted(hot, io.minute)
    ok = (pos < hot.size) & (hot[np.minimum(pos, hot.size - 1)] == io.minute)
    ep_idx = np.searchsorted(ends, pos[ok], side="left")
    ep_of[ok] = ep_idx
    out: list[HotZone] = []
    nj = len(io.jobs)
    name_rank = np.empty(nj, dtype=np.int64)
    name_rank[np.argsort(np.array(io.jobs, dtype=object), kind="stable")] = np.arange(nj)
    for e, (a, b) in enumerate(zip(starts, ends, strict=True)):
        mins = hot[a : b + 1]
        rows = ep_of == e
        per_job = exact_bin_sums(io.job[rows], io.write[rows], nj)
        total = math.fsum(per_job.tolist())
        order = np.lexsort((name_rank, -per_job))[:top]  # ties: by job id
        tops = [
            (io.jobs[j], float(per_job[j] / total)) for j in order if total > 0 and per_job[j] > 0
        ]
        out.append(
            HotZone(
                start=int(mins[0]),
                end=int(mins[-1]),
                peak=float(max(peak_by_min[int(x)] for x in mins)),
                minutes=int(mins.size),
                top_jobs=tops,
            )
        )
    return out


def job_write_series(io: IoRates, job: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-job write speed per minute (summed over its nodes): (minutes, speed)."""
    rows = io.job == job
    um, inv = np.unique(io.minute[rows], return_inverse=True)
    return um, np.bincount(inv, io.write[rows], um.shape[0])


def job_minutely(io: IoRates) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every job's I/O speed per minute, summed over its nodes (seed 003 §5.3, per-job write
    series): (job code, minute, write unit/s, read unit/s), ordered by job then minute."""
    g = group_codes(io.job, io.minute)
    ng = int(g.max()) + 1 if g.size else 0
    first = np.zeros(ng, dtype=np.int64)
    first[g] = np.arange(g.shape[0])
    return (
        io.job[first],
        io.minute[first],
        np.bincount(g, io.write, ng),
        np.bincount(g, io.read, ng),
    )


def job_write_stats(io: IoRates) -> tuple[np.ndarray, np.ndarray]:
    """Per job (code order): the highest write speed of one node in one minute, and the total
    amount written."""
    nj = len(io.jobs)
    mx = np.zeros(nj)
    np.maximum.at(mx, io.job, io.write)
    return mx, exact_bin_sums(io.job, io.write_amount, nj)
