"""`drainwatch replay --format samples|llview`: job utilisation, DFS load and hot zones.

samples: node-sample traces (JSON lines, models.formats.sampletrace; gzip detected), I/O in MB
(10**6 bytes) and MB/s. llview: LLview job directories (or their LoadMem / FSusage / PCOREusage
files), I/O in LLview's MiB and MiB/s. Writes to --out:

* job_utilization.csv: job,nodes,cores,measures,core_util_mean,mem_mean_ratio,
  mem_max_core_ratio,swap_kb_max,sa_core_seconds,write_max_node_mb_s,write_total_mb
  (ratios as fractions, 1.0 = 100 %; empty = unknown);
* dfs_minutely.csv: minute,write_mb_s,read_mb_s,jobs_writing (minute = its start, --tz);
* hot_zones.csv: start,end,peak_mb_s,minutes,top_jobs (end = end of the last hot minute;
  top_jobs = ``job:share`` of the data written in the hot minutes, ``;``-separated);
* job_write_series.csv: job,minute,write_mb_s,read_mb_s (each job's speed summed over nodes);
* dfs_minutely_fs.csv / hot_zones_fs.csv: the same two reports per file system (fs column
  first) when the source has per-file-system series (LLview FSusage_<job>_<fs>, sample
  fs_rates); thresholds per file system with --hot-zone-fs FS=MBps;
* summary.json: units, thresholds, per-class SA ratios and histograms.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import orjson

from models.formats import llview
from models.formats.sampletrace import parse_trace
from models.records.nodesample import Interner, to_arrays
from models.records.reject import Reject, count_reasons
from models.samples.dfs import (
    IoRates,
    dfs_minutely,
    hot_zone_threshold,
    hot_zones,
    io_from_rates,
    job_minutely,
    job_write_stats,
)
from models.samples.utilization import (
    MEM_EDGES,
    UTIL_EDGES,
    JobUtilization,
    NodeMeasures,
    class_sa_ratios,
    histogram,
    job_utilization,
    measures_from_samples,
)
from streams.sources.files import read_text, write_csv

JOB_COLUMNS = [
    "job",
    "nodes",
    "cores",
    "measures",
    "core_util_mean",
    "mem_mean_ratio",
    "mem_max_core_ratio",
    "swap_kb_max",
    "sa_core_seconds",
    "write_max_node_mb_s",
    "write_total_mb",
]
DFS_COLUMNS = ["minute", "write_mb_s", "read_mb_s", "jobs_writing"]
HOT_COLUMNS = ["start", "end", "peak_mb_s", "minutes", "top_jobs"]
GIB_KB = 1024.0 * 1024.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("samples / llview (seed 003: utilisation and DFS hot zones)")
    g.add_argument(
        "--mem-per-core",
        type=float,
        default=None,
        metavar="GB",
        help="theoretical memory per core, GiB (node memory / cores; seed: 6). "
        "Without it the memory ratios are left empty",
    )
    g.add_argument(
        "--hot-zone",
        type=float,
        default=None,
        metavar="MBps",
        help="DFS hot-zone threshold in the source's unit/s (default 93, the seed's "
        "Gofree NFS: IOR 98 +- 5 MB/s)",
    )
    g.add_argument(
        "--hot-zone-bw",
        default=None,
        metavar="MEAN,STD",
        help="threshold from a bandwidth test: MEAN - STD (e.g. 98,5 -> 93)",
    )
    g.add_argument(
        "--hot-zone-fs",
        action="append",
        default=[],
        metavar="FS=MBps",
        help="hot-zone threshold of one file system (repeatable; others use --hot-zone)",
    )
    g.add_argument(
        "--hot-zone-gap",
        type=int,
        default=0,
        metavar="MIN",
        help="hot minutes at most this many minutes apart form one episode (0)",
    )
    g.add_argument(
        "--hot-zone-top",
        type=int,
        default=3,
        metavar="N",
        help="jobs named per hot-zone episode (3)",
    )
    g.add_argument(
        "--cores-per-node",
        type=float,
        default=None,
        help="allocated cores per node when the data does not say (samples without "
        "'cores'; llview without PCOREusage)",
    )
    g.add_argument(
        "--sample-period",
        type=float,
        default=60.0,
        metavar="S",
        help="sampling period of node-sample traces, seconds (60)",
    )
    g.add_argument(
        "--util-below",
        type=float,
        default=0.25,
        help="SA ratio reported for jobs under this core utilisation (0.25)",
    )


def _threshold(args: argparse.Namespace) -> float:
    if args.hot_zone_bw:
        mean, std = (float(x) for x in args.hot_zone_bw.split(","))
        return hot_zone_threshold(mean, std)
    return 93.0 if args.hot_zone is None else float(args.hot_zone)


def _load_samples(
    args: argparse.Namespace, rejects: list[Reject]
) -> tuple[NodeMeasures, IoRates, np.ndarray, str]:
    from models.samples.dfs import io_from_samples

    samples = []
    for p in args.paths:
        samples.extend(parse_trace(read_text(Path(p)).splitlines(), p, rejects))
    arr = to_arrays(samples)
    if len(arr) == 0:
        raise SystemExit("replay samples: no usable samples")
    m = measures_from_samples(arr, args.sample_period)
    io = io_from_samples(arr, args.sample_period)
    minutes = np.unique(np.floor(arr.ts / 60).astype(np.int64))
    return m, io, minutes, "MB", _fs_from_rates(samples, arr, args.sample_period)


def _fs_from_rates(samples: list, arr, period: float) -> dict[str, IoRates]:
    """Per file system, from sources that give per-file-system speeds (NodeSample.fs_rates)."""
    rows: dict[str, list[tuple[int, int, float, float, float]]] = {}
    jix = {n: i for i, n in enumerate(arr.jobs)}
    nix = {n: i for i, n in enumerate(arr.nodes)}
    for smp in samples:
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
            np.full(len(rs), period),
            arr.jobs,
            arr.nodes,
        )
    return out


def _llview_files(paths: list[str]) -> list[dict[str, Path]]:
    """Group LLview files by job directory: {'loadmem', 'fs', 'pcore', 'report'}."""
    groups: dict[Path, dict[str, Path]] = {}
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.iterdir()) if p.is_dir() else [p])
    for f in files:
        g = groups.setdefault(f.parent, {})
        n = f.name
        if n.startswith("LoadMem_"):
            g["loadmem"] = f
        elif n.startswith("FSusage_") and n.endswith("_all_node.dat"):
            g["fs"] = f
        elif n.startswith("FSusage_") and n.endswith("_node.dat"):
            # FSusage_<job>_<file system>_node.dat
            g["fs:" + n[len("FSusage_") : -len("_node.dat")].split("_", 1)[-1]] = f
        elif n.startswith("PCOREusage_"):
            g["pcore"] = f
        elif n.startswith("jobreport_") and n.endswith(".json"):
            g["report"] = f
    return [g for g in groups.values() if "loadmem" in g]


def _load_llview(
    args: argparse.Namespace, rejects: list[Reject]
) -> tuple[NodeMeasures, IoRates, np.ndarray, str]:
    jobs, nodes, classes = Interner(), Interner(), Interner()
    parts_m: list[NodeMeasures] = []
    parts_io: list[IoRates] = []
    fs_parts: dict[str, list[IoRates]] = {}
    minutes: list[np.ndarray] = []
    groups = _llview_files(args.paths)
    if not groups:
        raise SystemExit("replay llview: no LoadMem_<job>_node.dat among the inputs")
    for g in groups:
        lm = llview.parse_series(read_text(g["loadmem"]), str(g["loadmem"]), rejects)
        cpn = args.cores_per_node
        if cpn is None and "pcore" in g:
            per = llview.cores_from_pcore(
                llview.parse_series(read_text(g["pcore"]), str(g["pcore"]), rejects)
            )
            cpn = max(per.values()) if per else None
        if cpn is None:
            raise SystemExit(
                f"replay llview: {g['loadmem'].parent}: cores per node unknown "
                "(no PCOREusage file): give --cores-per-node"
            )
        cls = "normal"
        if "report" in g:
            cls = llview.parse_job_report(g["report"].read_bytes()).queue or cls
        parts_m.append(llview.measures_from_loadmem(lm, cpn, jobs, nodes, cls, classes))
        minutes.append(np.unique(np.floor(lm.num["ts"] / 60).astype(np.int64)))
        if "fs" in g:
            fs = llview.parse_series(read_text(g["fs"]), str(g["fs"]), rejects)
            parts_io.append(llview.io_from_fsusage(fs, lm.num["ts"], jobs, nodes))
        for key in sorted(k for k in g if k.startswith("fs:")):
            fs = llview.parse_series(read_text(g[key]), str(g[key]), rejects)
            fs_parts.setdefault(key[3:], []).append(
                llview.io_from_fsusage(fs, lm.num["ts"], jobs, nodes)
            )
    cat = np.concatenate
    nj = len(jobs.names)
    jc = np.zeros(nj, dtype=np.int64)
    for pm in parts_m:
        present = np.unique(pm.job)
        jc[present] = pm.job_class[present]
    m = NodeMeasures(
        job=cat([x.job for x in parts_m]),
        node=cat([x.node for x in parts_m]),
        # measure ids must not collide between jobs: offset each part
        measure=cat([x.measure + i * 10**9 for i, x in enumerate(parts_m)]),
        ts=cat([x.ts for x in parts_m]),
        cores=cat([x.cores for x in parts_m]),
        core_used=cat([x.core_used for x in parts_m]),
        mem_kb=cat([x.mem_kb for x in parts_m]),
        swap_kb=cat([x.swap_kb for x in parts_m]),
        jobs=jobs.names,
        nodes=nodes.names,
        job_class=jc,
        classes=classes.names,
        period=float(np.median([x.period for x in parts_m])),
    )
    io = _concat_io(parts_io, jobs.names, nodes.names)
    per_fs = {fs: _concat_io(parts, jobs.names, nodes.names) for fs, parts in fs_parts.items()}
    return m, io, np.unique(cat(minutes)), "MiB", per_fs


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


def _fs_thresholds(args: argparse.Namespace) -> dict[str, float]:
    out = {}
    for item in args.hot_zone_fs:
        fs, _, value = item.partition("=")
        try:
            out[fs.strip()] = float(value)
        except ValueError:
            raise SystemExit(f"--hot-zone-fs {item!r}: expected FS=MBps") from None
    return out


def _num(x: float, nd: int = 6) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.{nd}f}".rstrip("0").rstrip(".")


def _iso(minute: int, tz: ZoneInfo) -> str:
    return datetime.fromtimestamp(minute * 60, tz).isoformat()


def _write_jobs(path: Path, u: JobUtilization, wmax: np.ndarray, wtot: np.ndarray) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(JOB_COLUMNS)
        for j, name in enumerate(u.jobs):
            if u.measures[j] == 0:
                continue
            w.writerow(
                [
                    name,
                    int(u.nodes[j]),
                    _num(u.cores[j]),
                    int(u.measures[j]),
                    _num(u.core_util_mean[j]),
                    _num(u.mem_mean_ratio[j]),
                    _num(u.mem_max_core_ratio[j]),
                    _num(u.swap_kb_max[j]),
                    _num(u.sa_core_seconds[j]),
                    _num(wmax[j]),
                    _num(wtot[j]),
                ]
            )


def run(args: argparse.Namespace) -> int:
    rejects: list[Reject] = []
    tz = ZoneInfo(args.tz)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.format == "llview":
        m, io, minutes, unit, per_fs = _load_llview(args, rejects)
    else:
        m, io, minutes, unit, per_fs = _load_samples(args, rejects)
    mpc = None if args.mem_per_core is None else args.mem_per_core * GIB_KB
    u = job_utilization(m, mpc, args.cores_per_node)
    wmax, wtot = job_write_stats(io)
    _write_jobs(out / "job_utilization.csv", u, wmax, wtot)
    dm = dfs_minutely(io, minutes)
    with open(out / "dfs_minutely.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(DFS_COLUMNS)
        for k in range(dm.minute.shape[0]):
            w.writerow(
                [
                    _iso(int(dm.minute[k]), tz),
                    _num(dm.write[k]),
                    _num(dm.read[k]),
                    int(dm.jobs_writing[k]),
                ]
            )
    thr = _threshold(args)
    zones = hot_zones(dm, io, thr, top=args.hot_zone_top, max_gap=args.hot_zone_gap)
    with open(out / "hot_zones.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HOT_COLUMNS)
        for z in zones:
            w.writerow(
                [
                    _iso(z.start, tz),
                    _iso(z.end + 1, tz),
                    _num(z.peak),
                    z.minutes,
                    ";".join(f"{j}:{s:.4f}" for j, s in z.top_jobs),
                ]
            )
    jc, jm, jw, jr = job_minutely(io)
    write_csv(
        out / "job_write_series.csv",
        ["job", "minute", "write_mb_s", "read_mb_s"],
        (
            [u.jobs[j], _iso(int(mi), tz), _num(w_), _num(r_)]
            for j, mi, w_, r_ in zip(
                jc.tolist(), jm.tolist(), jw.tolist(), jr.tolist(), strict=True
            )
        ),
    )
    fs_thr = _fs_thresholds(args)
    fs_zones: dict[str, int] = {}
    if per_fs:
        fs_rows, zone_rows = [], []
        for fs in sorted(per_fs):
            fio = per_fs[fs]
            fdm = dfs_minutely(fio, minutes)
            fs_rows += [
                [
                    fs,
                    _iso(int(fdm.minute[k]), tz),
                    _num(fdm.write[k]),
                    _num(fdm.read[k]),
                    int(fdm.jobs_writing[k]),
                ]
                for k in range(fdm.minute.shape[0])
            ]
            fz = hot_zones(
                fdm, fio, fs_thr.get(fs, thr), top=args.hot_zone_top, max_gap=args.hot_zone_gap
            )
            fs_zones[fs] = len(fz)
            zone_rows += [
                [
                    fs,
                    _iso(z.start, tz),
                    _iso(z.end + 1, tz),
                    _num(z.peak),
                    z.minutes,
                    ";".join(f"{j}:{sh:.4f}" for j, sh in z.top_jobs),
                ]
                for z in fz
            ]
        write_csv(out / "dfs_minutely_fs.csv", ["fs", *DFS_COLUMNS], fs_rows)
        write_csv(out / "hot_zones_fs.csv", ["fs", *HOT_COLUMNS], zone_rows)
    summary = {
        "format": args.format,
        "file_systems": {
            fs: {"threshold": fs_thr.get(fs, thr), "hot_zone_episodes": n}
            for fs, n in fs_zones.items()
        },
        "io_unit": unit,
        "rate_unit": f"{unit}/s",
        "hot_zone_threshold": thr,
        "hot_zone_episodes": len(zones),
        "hot_zone_minutes": int(sum(z.minutes for z in zones)),
        "jobs": int((u.measures > 0).sum()),
        "minutes": int(dm.minute.shape[0]),
        "classes": class_sa_ratios(u, args.util_below),
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
        "rejects": dict(count_reasons(rejects)),
    }
    (out / "summary.json").write_bytes(
        orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    )
    if args.rejects:
        with open(args.rejects, "w") as f:
            f.writelines(r.tsv() for r in rejects)
    print(
        f"replay {args.format}: {summary['jobs']} jobs, {summary['minutes']} minutes, "
        f"{len(zones)} hot-zone episodes above {thr:g} {unit}/s, {len(rejects)} rejects "
        f"-> {out}",
        file=sys.stderr,
    )
    return 0
