"""Sample stages (seed 003): job utilisation, DFS load per minute, hot zones and their jobs.

:class:`SampleTraceStage` takes node-sample traces (I/O in MB = 10**6 bytes, rates in MB/s);
:class:`LlviewStage` takes LLview job directories (MiB, MiB/s: the unit stays the source's).
Both reduce their input to the same arrays (``NodeMeasures``, ``IoRates`` per minute) and write
the same tables (:mod:`streams.tables.samples`); utilisation needs each process's whole series,
so the arrays are built at the end of the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.formats import llview
from models.records.nodesample import NodeSample, to_arrays
from models.records.nodestatus import Interner
from models.samples.dfs import (
    IoRates,
    Rate,
    dfs_minutely,
    hot_zone_threshold,
    hot_zones,
    io_from_rates,
    io_from_samples,
    job_minutely,
    job_write_stats,
)
from models.samples.utilization import (
    MEM_EDGES,
    UTIL_EDGES,
    NodeMeasures,
    class_sa_ratios,
    histogram,
    job_utilization,
    measures_from_samples,
)
from models.samples.writesize import write_sizes
from streams.contracts import LlviewJob, Output, Table
from streams.tables.samples import (
    DFS_MINUTELY,
    DFS_MINUTELY_FS,
    HOT_ZONES,
    HOT_ZONES_FS,
    JOB_UTILIZATION,
    JOB_WRITE_SERIES,
    WRITE_SIZES,
)

GIB_KB = 1024.0 * 1024.0
# seed 003 §5.2's example: Gofree's NFS, IOR 98 +- 5 MB/s -> 93 MB/s (converted for MiB/s sources)
DEFAULT_HOT_ZONE = Rate(hot_zone_threshold(98.0, 5.0), "MB/s")
DEFAULT_HOT_ZONE_ORIGIN = "seed 003 example (Gofree NFS, IOR 98 - 5 MB/s); calibrate yours"


@dataclass(frozen=True, slots=True)
class HotZoneOptions:
    """Thresholds with their units (a plain-number :class:`Rate` = the source's unit/s):
    ``threshold`` for the whole DFS and every file system without its own in ``per_fs``;
    ``origin`` says where ``threshold`` came from (in the summary)."""

    threshold: Rate = DEFAULT_HOT_ZONE
    per_fs: tuple[tuple[str, Rate], ...] = ()
    gap_minutes: int = 0
    top: int = 3
    origin: str = DEFAULT_HOT_ZONE_ORIGIN


@dataclass(slots=True)
class _Reduced:
    m: NodeMeasures
    io: IoRates
    minutes: np.ndarray
    unit: str
    per_fs: dict[str, IoRates]


class _SamplesBase:
    name = "samples"

    def __init__(
        self,
        mem_per_core_gib: float | None,
        cores_per_node: float | None,
        hot: HotZoneOptions,
        util_below: float,
    ) -> None:
        self.mpc = None if mem_per_core_gib is None else mem_per_core_gib * GIB_KB
        self.cores_per_node = cores_per_node
        self.hot = hot
        self.util_below = util_below
        self._summary: dict[str, Any] = {}

    def tables(self) -> Sequence[Table]:
        """The per-file-system tables are declared when the input turns out to have them."""
        return (JOB_UTILIZATION, DFS_MINUTELY, HOT_ZONES, JOB_WRITE_SERIES)

    def summary(self) -> dict[str, Any]:
        return self._summary

    def _reduce(self) -> _Reduced:
        raise NotImplementedError

    def _empty(self) -> bool:
        raise NotImplementedError

    def finish(self) -> Iterable[Output]:
        if self._empty():  # nothing usable: the headers only; replay exits 3 and says so
            return
        r = self._reduce()
        u = job_utilization(r.m, self.mpc, self.cores_per_node)
        wmax, wtot = job_write_stats(r.io)
        yield (
            JOB_UTILIZATION,
            [
                (
                    name,
                    int(u.nodes[j]),
                    u.cores[j],
                    int(u.measures[j]),
                    u.core_util_mean[j],
                    u.mem_mean_ratio[j],
                    u.mem_max_core_ratio[j],
                    u.swap_kb_max[j],
                    u.sa_core_seconds[j],
                    wmax[j],
                    wtot[j],
                )
                for j, name in enumerate(u.jobs)
                if u.measures[j] != 0
            ],
        )
        dm = dfs_minutely(r.io, r.minutes)
        yield DFS_MINUTELY, _dfs_rows(dm)
        rate_unit = f"{r.unit}/s"
        thr = self.hot.threshold.to(rate_unit)
        zones = hot_zones(dm, r.io, thr, top=self.hot.top, max_gap=self.hot.gap_minutes)
        yield HOT_ZONES, [_zone_row(z) for z in zones]
        jc, jm, jw, jr = job_minutely(r.io)
        yield (
            JOB_WRITE_SERIES,
            [
                (u.jobs[j], mi * 60_000, w, rd)
                for j, mi, w, rd in zip(
                    jc.tolist(), jm.tolist(), jw.tolist(), jr.tolist(), strict=True
                )
            ],
        )
        fs_given = dict(self.hot.per_fs)
        fs_thr = {fs: rate.to(rate_unit) for fs, rate in fs_given.items()}
        fs_zones: dict[str, int] = {}
        if r.per_fs:
            fs_rows: list[tuple[Any, ...]] = []
            zone_rows: list[tuple[Any, ...]] = []
            for fs in sorted(r.per_fs):
                fio = r.per_fs[fs]
                fdm = dfs_minutely(fio, r.minutes)
                fs_rows += [(fs, *row) for row in _dfs_rows(fdm)]
                fz = hot_zones(
                    fdm, fio, fs_thr.get(fs, thr), top=self.hot.top, max_gap=self.hot.gap_minutes
                )
                fs_zones[fs] = len(fz)
                zone_rows += [(fs, *_zone_row(z)) for z in fz]
            yield DFS_MINUTELY_FS, fs_rows
            yield HOT_ZONES_FS, zone_rows
        self._summary = {
            "io_unit": r.unit,
            "rate_unit": rate_unit,
            "hot_zone_threshold": thr,
            "hot_zone_unit": rate_unit,
            "hot_zone_given": _given(self.hot.threshold, rate_unit),
            "hot_zone_origin": self.hot.origin,
            "hot_zone_episodes": len(zones),
            "hot_zone_minutes": int(sum(z.minutes for z in zones)),
            "file_systems": {
                fs: {
                    "threshold": fs_thr.get(fs, thr),
                    "unit": rate_unit,
                    "given": _given(fs_given.get(fs, self.hot.threshold), rate_unit),
                    "origin": "--hot-zone-fs" if fs in fs_given else self.hot.origin,
                    "hot_zone_episodes": n,
                }
                for fs, n in fs_zones.items()
            },
            # --hot-zone-fs names the input has no series for: a typo, or another system's
            "hot_zone_fs_unused": sorted(set(fs_given) - set(fs_zones)),
            "jobs": int((u.measures > 0).sum()),
            "minutes": int(dm.minute.shape[0]),
            "classes": class_sa_ratios(u, self.util_below),
            "histograms": {
                "util_edges": UTIL_EDGES.tolist(),
                "core_util_mean_jobs": histogram(u.core_util_mean, UTIL_EDGES).tolist(),
                "core_util_mean_sa": histogram(
                    u.core_util_mean, UTIL_EDGES, u.sa_core_seconds
                ).tolist(),
                "mem_edges": MEM_EDGES.tolist(),
                "mem_mean_ratio_jobs": histogram(u.mem_mean_ratio, MEM_EDGES).tolist(),
                "mem_max_core_ratio_jobs": histogram(u.mem_max_core_ratio, MEM_EDGES).tolist(),
            },
        }


def _given(rate: Rate, rate_unit: str) -> str:
    """A threshold as the user gave it, with its unit (a plain number is the source's)."""
    return f"{rate.value:g} {rate.unit or rate_unit}"


def _dfs_rows(dm: Any) -> list[tuple[Any, ...]]:
    return [
        (int(dm.minute[k]) * 60_000, dm.write[k], dm.read[k], int(dm.jobs_writing[k]))
        for k in range(dm.minute.shape[0])
    ]


def _zone_row(z: Any) -> tuple[Any, ...]:
    top = ";".join(f"{j}:{s:.4f}" for j, s in z.top_jobs)
    return (z.start * 60_000, (z.end + 1) * 60_000, z.peak, z.minutes, top)


class SampleTraceStage(_SamplesBase):
    """Node-sample traces (models.formats.sampletrace): MB and MB/s."""

    def __init__(self, sample_period: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.period = sample_period
        self.samples: list[NodeSample] = []

    def tables(self) -> Sequence[Table]:
        return (*super().tables(), WRITE_SIZES)

    def step(self, batch: list[NodeSample]) -> Iterable[Output]:
        self.samples += batch
        return ()

    def finish(self) -> Iterable[Output]:
        yield from super().finish()
        if self.samples:
            yield WRITE_SIZES, _write_size_rows(self.samples)

    def _empty(self) -> bool:
        return not self.samples

    def _reduce(self) -> _Reduced:
        arr = to_arrays(self.samples)
        m = measures_from_samples(arr, self.period)
        io = io_from_samples(arr, self.period)
        minutes = np.unique(np.floor(arr.ts / 60).astype(np.int64))
        return _Reduced(m, io, minutes, "MB", self._fs_from_rates(arr))

    def _fs_from_rates(self, arr: Any) -> dict[str, IoRates]:
        """Per file system, from samples that carry per-file-system speeds (fs_rates)."""
        rows: dict[str, list[tuple[int, int, float, float, float]]] = {}
        jix = {n: i for i, n in enumerate(arr.jobs)}
        nix = {n: i for i, n in enumerate(arr.nodes)}
        for smp in self.samples:
            for fs, w, r in smp.fs_rates:
                rows.setdefault(fs, []).append((jix[smp.job], nix[smp.node], smp.ts, w, r))
        out = {}
        for fs, rs in rows.items():
            a = np.array(rs, dtype=float)
            out[fs] = io_from_rates(
                a[:, 0].astype(np.int64),
                a[:, 1].astype(np.int64),
                a[:, 2],
                a[:, 3],
                a[:, 4],
                np.full(len(rs), self.period),
                arr.jobs,
                arr.nodes,
            )
        return out


def _write_size_rows(samples: list[NodeSample]) -> list[tuple[Any, ...]]:
    ws = write_sizes(samples)
    bpc = ws.bytes_per_call()
    measure = ws.measure()
    return [
        (
            name,
            int(ws.intervals[j]),
            ws.calls[j],
            ws.bytes[j],
            bpc[j],
            measure[j],
            *ws.bucket_calls[j].tolist(),
            *ws.bucket_bytes[j].tolist(),
        )
        for j, name in enumerate(ws.jobs)
        if ws.intervals[j] > 0
    ]


class LlviewStage(_SamplesBase):
    """LLview job directories (models.formats.llview): MiB and MiB/s."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.jobs, self.nodes, self.classes = Interner(), Interner(), Interner()
        self.parts_m: list[NodeMeasures] = []
        self.parts_io: list[IoRates] = []
        self.fs_parts: dict[str, list[IoRates]] = {}
        self.minutes: list[np.ndarray] = []

    def step(self, batch: LlviewJob) -> Iterable[Output]:
        lm = batch.loadmem
        self.parts_m.append(
            llview.measures_from_loadmem(
                lm, batch.cores_per_node, self.jobs, self.nodes, batch.job_class, self.classes
            )
        )
        self.minutes.append(np.unique(np.floor(lm.num["ts"] / 60).astype(np.int64)))
        if batch.fs_all is not None:
            self.parts_io.append(
                llview.io_from_fsusage(batch.fs_all, lm.num["ts"], self.jobs, self.nodes)
            )
        for fs, series in batch.fs_by_name.items():
            self.fs_parts.setdefault(fs, []).append(
                llview.io_from_fsusage(series, lm.num["ts"], self.jobs, self.nodes)
            )
        return ()

    def _empty(self) -> bool:
        return not any(len(p.job) for p in self.parts_m)

    def _reduce(self) -> _Reduced:
        cat = np.concatenate
        parts = self.parts_m
        jc = np.zeros(len(self.jobs.names), dtype=np.int64)
        for pm in parts:
            present = np.unique(pm.job)
            jc[present] = pm.job_class[present]
        m = NodeMeasures(
            job=cat([x.job for x in parts]),
            node=cat([x.node for x in parts]),
            # measure ids must not collide between jobs: offset each part
            measure=cat([x.measure + i * 10**9 for i, x in enumerate(parts)]),
            ts=cat([x.ts for x in parts]),
            cores=cat([x.cores for x in parts]),
            core_used=cat([x.core_used for x in parts]),
            mem_kb=cat([x.mem_kb for x in parts]),
            swap_kb=cat([x.swap_kb for x in parts]),
            jobs=self.jobs.names,
            nodes=self.nodes.names,
            job_class=jc,
            classes=self.classes.names,
            period=float(np.median([x.period for x in parts])),
        )
        jobs, nodes = self.jobs.names, self.nodes.names
        io = _concat_io(self.parts_io, jobs, nodes)
        per_fs = {fs: _concat_io(p, jobs, nodes) for fs, p in self.fs_parts.items()}
        return _Reduced(m, io, np.unique(cat(self.minutes)), "MiB", per_fs)


def _concat_io(parts: list[IoRates], jobs: list[str], nodes: list[str]) -> IoRates:
    z = np.zeros(0)
    zi = np.zeros(0, dtype=np.int64)
    cat = np.concatenate
    return IoRates(
        job=cat([x.job for x in parts] or [zi]),
        node=cat([x.node for x in parts] or [zi]),
        minute=cat([x.minute for x in parts] or [zi]),
        write=cat([x.write for x in parts] or [z]),
        read=cat([x.read for x in parts] or [z]),
        write_amount=cat([x.write_amount for x in parts] or [z]),
        read_amount=cat([x.read_amount for x in parts] or [z]),
        jobs=jobs,
        nodes=nodes,
    )
