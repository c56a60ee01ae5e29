"""LLview (Jülich Supercomputing Centre) per-node job series and the job report JSON.

LLview's job reports come with whitespace-separated per-node series, one header line then rows:

* ``LoadMem_<job>_node.dat``: jobid ts nodeid load used_mem usage used_cores used_cores_phys
  used_cores_logic currentwatts avewatts (used_mem in GiB, printed to 0.01; usage in % of the
  node's cores, printed to 0.01);
* ``FSusage_<job>_<fs>_node.dat``: jobid ts nodeid MbwR MbrR ocR (write / read MiB/s, open+close
  per s) for fs in all, home, project, scratch, fastdata. Rows appear only when a node did I/O;
* ``Fabric_<job>_node.dat``: jobid ts nodeid mbin mbout pckin pckout;
* ``PCOREusage_<job>_node.dat``: ts nodeid coreid usage1_avg usage2_avg (one row per core).

What the job report JSON's numbers are, checked against job 9438058
(tests/models/formats/test_llview.py):
``cpu.<col>_avg/_min/_max`` are the mean / min / max over all LoadMem rows (all nodes and times)
of the unrounded values (used_mem in MiB there, GiB in the file); ``fs.fs_<fs>_<col>_max`` is the
max of that column over the FSusage rows; ``num_datapoints.fs_<fs>_ndps`` the number of distinct
time stamps in that file, ``ld_ndps`` in LoadMem; ``fs.fs_<fs>_Mbw_sum`` is within 0.01 % of
sum(MbwR x seconds since the previous LoadMem time stamp) x 1.048576, i.e. the written data in
MB (10**6 bytes) while the rates are MiB/s.

Pure: functions take text. Rows that cannot be used become :class:`models.records.reject.Reject`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from models.records.nodestatus import Interner
from models.records.reject import Reject
from models.samples.dfs import IoRates, io_from_rates
from models.samples.utilization import NodeMeasures

_TEXT_COLS = {"jobid", "nodeid"}
GIB_KB = 1024.0 * 1024.0


@dataclass(slots=True)
class LlviewSeries:
    """Columns of one series file. ``text`` holds jobid / nodeid columns (lists of str),
    ``num`` the numeric columns (float64, ``ts`` included)."""

    columns: list[str]
    text: dict[str, list[str]]
    num: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.num["ts"].shape[0]) if "ts" in self.num else 0


def parse_series(text: str, source: str = "-", rejects: list[Reject] | None = None) -> LlviewSeries:
    """One LLview ``*_node.dat`` file. Needs a header line with a ``ts`` column and no column
    named twice; ValueError otherwise."""
    lines = text.splitlines()
    if not lines:
        raise ValueError(f"{source}: empty LLview series")
    cols = lines[0].split()
    if "ts" not in cols:
        raise ValueError(f"{source}: no ts column in header {lines[0]!r}")
    if len(set(cols)) != len(cols):  # one list per name: its columns would not line up
        raise ValueError(f"{source}: a column named twice in header {lines[0][:200]!r}")
    txt: dict[str, list[str]] = {c: [] for c in cols if c in _TEXT_COLS}
    nums: dict[str, list[float]] = {c: [] for c in cols if c not in _TEXT_COLS}
    for lineno, line in enumerate(lines[1:], 2):
        f = line.split()
        if not f:
            continue
        if len(f) != len(cols):
            if rejects is not None:
                rejects.append(Reject("wrong_field_count", source, lineno, line))
            continue
        try:
            vals = [float(x) if c not in _TEXT_COLS else 0.0 for c, x in zip(cols, f, strict=True)]
        except ValueError:
            if rejects is not None:
                rejects.append(Reject("bad_number", source, lineno, line))
            continue
        if not all(np.isfinite(vals)):
            if rejects is not None:
                rejects.append(Reject("bad_number", source, lineno, line))
            continue
        for c, x, v in zip(cols, f, vals, strict=True):
            if c in _TEXT_COLS:
                txt[c].append(x)
            else:
                nums[c].append(v)
    return LlviewSeries(cols, txt, {c: np.asarray(v, np.float64) for c, v in nums.items()})


def summary(series: LlviewSeries, col: str) -> tuple[float, float, float]:
    """(mean, min, max) of a column over all rows, as the job report gives them."""
    v = series.num[col]
    return float(v.mean()), float(v.min()), float(v.max())


@dataclass(slots=True, frozen=True)
class JobReport:
    jobid: str
    nodes: tuple[str, ...]
    runtime_s: float
    queue: str
    sections: dict[str, Any]


def parse_job_report(text: str | bytes) -> JobReport:
    """The job report JSON (sections job, cpu, fs, fabric, gpu, num_datapoints, rc...).
    ValueError (orjson.JSONDecodeError is one) when it is not JSON or not a job report: not an
    object, ``job`` / ``rc`` not objects, ``nodelist`` not a string, the run time not a finite
    non-negative number."""
    d = orjson.loads(text)
    if not isinstance(d, dict):
        raise ValueError("a job report is a JSON object")
    job = d.get("job", {})
    rc = d.get("rc", {})
    if not isinstance(job, dict) or not isinstance(rc, dict):
        raise ValueError("job and rc of a job report are objects")
    wallh = rc.get("rc_wallh")
    hours = wallh if wallh is not None else job.get("runtime", 0)
    try:
        if isinstance(hours, bool) or not isinstance(hours, int | float | str):
            raise TypeError
        runtime = float(hours) * 3600.0
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"job report run time {hours!r} is not a number") from None
    if not math.isfinite(runtime) or runtime < 0:
        raise ValueError(f"job report run time {hours!r} is not a finite duration")
    nodelist = job.get("nodelist", "")
    if not isinstance(nodelist, str):
        raise ValueError(f"job report nodelist {nodelist!r} is not a string")
    return JobReport(
        jobid=str(job.get("jobid", "")),
        nodes=tuple(nodelist.split()),
        runtime_s=runtime,
        queue=str(job.get("queue", "")),
        sections=d,
    )


def _codes(names: list[str], interner: Interner) -> np.ndarray:
    return np.fromiter((interner.code(x) for x in names), dtype=np.int64, count=len(names))


def measures_from_loadmem(
    lm: LlviewSeries,
    cores_per_node: float,
    jobs: Interner,
    nodes: Interner,
    job_class: str = "normal",
    classes: Interner | None = None,
) -> NodeMeasures:
    """LoadMem rows -> per (job, node, time stamp) measures: cores consumed = usage / 100 x
    cores_per_node (usage is % of the node's cores), memory = used_mem GiB -> KiB (node-level:
    it includes the OS), swap unknown (NaN). Each distinct time stamp is one measure; the period
    is the median spacing of the time stamps."""
    classes = classes if classes is not None else Interner()
    ts = lm.num["ts"]
    g, _ = np.unique(ts, return_inverse=True)
    measure = np.searchsorted(g, ts)
    job = _codes(lm.text["jobid"], jobs)
    node = _codes(lm.text["nodeid"], nodes)
    period = float(np.median(np.diff(g))) if g.size > 1 else 60.0
    jc = np.zeros(len(jobs.names), dtype=np.int64)
    jc[np.unique(job)] = classes.code(job_class)
    n = ts.shape[0]
    return NodeMeasures(
        job=job,
        node=node,
        measure=measure.astype(np.int64),
        ts=ts,
        cores=np.full(n, float(cores_per_node)),
        core_used=lm.num["usage"] / 100.0 * cores_per_node,
        mem_kb=lm.num["used_mem"] * GIB_KB,
        swap_kb=np.full(n, np.nan),
        jobs=jobs.names,
        nodes=nodes.names,
        job_class=jc,
        classes=classes.names,
        period=period,
    )


def io_from_fsusage(
    fs: LlviewSeries, grid_ts: np.ndarray, jobs: Interner, nodes: Interner
) -> IoRates:
    """FSusage rows -> :class:`models.samples.dfs.IoRates` in MiB/s; each row stands for the seconds
    since the previous time stamp of ``grid_ts`` (the LoadMem time stamps of the job)."""
    g = np.unique(grid_ts)
    ts = fs.num["ts"]
    k = np.searchsorted(g, ts, side="left")
    prev = g[np.maximum(k - 1, 0)] if g.size else ts
    row_dt = np.where(k > 0, ts - prev, 0.0)
    job = _codes(fs.text["jobid"], jobs)
    node = _codes(fs.text["nodeid"], nodes)
    return io_from_rates(
        job, node, ts, fs.num["MbwR"], fs.num["MbrR"], row_dt, jobs.names, nodes.names
    )


def cores_from_pcore(pc: LlviewSeries) -> dict[str, int]:
    """Cores per node listed in a PCOREusage file (distinct core ids per node)."""
    out: dict[str, set[float]] = {}
    for n, c in zip(pc.text["nodeid"], pc.num["coreid"].tolist(), strict=True):
        out.setdefault(n, set()).add(c)
    return {n: len(s) for n, s in out.items()}
