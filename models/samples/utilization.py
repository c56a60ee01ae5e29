"""Per-job resource utilisation: core use, memory vs theoretical memory, swap, squashed area.

Seed 003 (Emeras et al., JSSPP 2013), §5:

* core: core_consumption_j(t_i) = sum over allocated cores of the core consumed at measure i;
  core_utilization_mean_j = sum_i core_consumption_j(t_i) / (allocated_cores_j x n), n = number
  of measures of job j.
* memory: theoretical_memory_per_core = node memory / cores per node (6 GB on Foehn and Gofree);
  a job's theoretical memory = theoretical_memory_per_core x allocated_cores_j. Two ratios: the
  mean memory used (same averaging as core) vs the theoretical memory, and the maximum memory used
  on an allocated core vs theoretical_memory_per_core (over 100 % = may disturb other jobs).
  Per-process /proc data does not say which core a process used, so "memory on a core" is taken
  per node: the job's memory on a node / the cores allocated to it there.
* squashed area SA = sum over jobs of allocated_cores_j x run_time_j, and the SA ratio of a subset
  of a class = SA(subset) / SA(class) (e.g. Foehn normal jobs under 25 % core use: 53.7 %).

The unit of work is :class:`NodeMeasures`: one row per (job, node, measure). It is built from
process samples (:func:`measures_from_samples`) or directly by a reader of node-level series
(:mod:`models.formats.llview`). Everything is vectorised numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.records.nodesample import SampleArrays, exact_bin_sums, group_codes, sort_order


@dataclass(slots=True)
class NodeMeasures:
    """One row per (job, node, measure). ``measure`` is an integer measure id, increasing with
    time (the sampling-period bucket); ``ts`` its time (s). ``cores`` = CPUs allocated to the job
    on the node (0 = unknown), ``core_used`` = cores consumed (sum of process core % / 100),
    ``mem_kb`` / ``swap_kb`` = memory of the job on the node (KiB; swap NaN if unknown).
    ``job_class[j]`` is the class code of job j (index into ``classes``). ``period`` is the
    sampling period in seconds (each measure stands for that much run time)."""

    job: np.ndarray
    node: np.ndarray
    measure: np.ndarray
    ts: np.ndarray
    cores: np.ndarray
    core_used: np.ndarray
    mem_kb: np.ndarray
    swap_kb: np.ndarray
    jobs: list[str]
    nodes: list[str]
    job_class: np.ndarray
    classes: list[str]
    period: float


def measures_from_samples(arr: SampleArrays, period: float = 60.0) -> NodeMeasures:
    """Process samples -> per (job, node, measure) rows. A measure is the sampling-period bucket
    floor(ts / period); when a process was sampled twice in one bucket its last sample counts
    (levels such as memory must not be added twice)."""
    if period <= 0:
        raise ValueError("period must be > 0")
    bucket = np.floor(arr.ts / period).astype(np.int64)
    n = len(arr)
    jnb = group_codes(arr.job, arr.node, bucket)  # dense, in (job, node, bucket) order
    proc = group_codes(arr.node, arr.pid, arr.start)
    # last sample of each (job, node, bucket, process)
    order = sort_order(jnb, proc, arr.ts)
    key = jnb[order] * (int(proc.max()) + 1 if n else 1) + proc[order]
    last = np.empty(n, dtype=bool)
    if n:
        last[-1] = True
        np.not_equal(key[1:], key[:-1], out=last[:-1])
    idx = order[last]
    gid = jnb[idx]
    ng = int(jnb.max()) + 1 if n else 0
    first = np.full(ng, 0, dtype=np.int64)
    first[gid[::-1]] = idx[::-1]  # any row of the group: job/node/bucket are constant in it
    job, node, b = arr.job[first], arr.node[first], bucket[first]
    # exact sums (order-free): the live worker sums the same values as they come
    core_used = exact_bin_sums(gid, arr.core[idx] / 100.0, ng)
    mem = exact_bin_sums(gid, arr.vm_rss_kb[idx], ng)
    swap = exact_bin_sums(gid, arr.vm_swap_kb[idx], ng)
    cores = np.zeros(ng)
    np.maximum.at(cores, gid, arr.cores[idx])
    ts = np.zeros(ng)
    np.maximum.at(ts, gid, arr.ts[idx])
    job_class = np.zeros(len(arr.jobs), dtype=np.int64)
    job_class[arr.job] = arr.job_class
    return NodeMeasures(
        job=job,
        node=node,
        measure=b,
        ts=ts,
        cores=cores,
        core_used=core_used,
        mem_kb=mem,
        swap_kb=swap,
        jobs=arr.jobs,
        nodes=arr.nodes,
        job_class=job_class,
        classes=arr.classes,
        period=period,
    )


@dataclass(slots=True)
class JobUtilization:
    """Per-job results, one entry per job code in ``jobs`` order (jobs without measures: NaN)."""

    jobs: list[str]
    job_class: np.ndarray
    classes: list[str]
    nodes: np.ndarray
    cores: np.ndarray
    measures: np.ndarray
    core_util_mean: np.ndarray
    mem_mean_ratio: np.ndarray
    mem_max_core_ratio: np.ndarray
    swap_kb_max: np.ndarray
    sa_core_seconds: np.ndarray
    run_seconds: np.ndarray


def job_utilization(
    m: NodeMeasures, mem_per_core_kb: float | None = None, cores_per_node: float | None = None
) -> JobUtilization:
    """Seed 003 §5 per-job metrics. Allocated cores of a job on a node = the largest ``cores``
    seen there, else ``cores_per_node`` (NaN if neither is known). Run time = (last - first
    measure time) + period. Memory ratios are NaN when ``mem_per_core_kb`` is None."""
    nj = len(m.jobs)
    nn = max(len(m.nodes), 1)
    # per (job, node): allocated cores
    jn = m.job * nn + m.node
    ujn, inv = np.unique(jn, return_inverse=True)
    jn_cores = np.zeros(ujn.shape[0])
    np.maximum.at(jn_cores, inv, m.cores)
    if cores_per_node is not None:
        jn_cores = np.where(jn_cores > 0, jn_cores, float(cores_per_node))
    jn_cores = np.where(jn_cores > 0, jn_cores, np.nan)
    jn_job = ujn // nn
    nodes = np.bincount(jn_job, minlength=nj).astype(np.int64)
    cores = np.bincount(jn_job, jn_cores, nj)
    cores[nodes == 0] = np.nan
    # per (job, measure)
    jm_key = m.job.astype(np.int64) * (
        int(m.measure.max() - m.measure.min()) + 1 if m.measure.size else 1
    ) + (m.measure - (m.measure.min() if m.measure.size else 0))
    ujm, jm_inv = np.unique(jm_key, return_inverse=True)
    jm_job = np.zeros(ujm.shape[0], dtype=np.int64)
    jm_job[jm_inv] = m.job
    n = np.bincount(jm_job, minlength=nj).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        core_sum = exact_bin_sums(m.job, m.core_used, nj)
        core_util = core_sum / (cores * n)
        if mem_per_core_kb is None:
            mem_mean = np.full(nj, np.nan)
            mem_max = np.full(nj, np.nan)
        else:
            mem_sum = exact_bin_sums(m.job, m.mem_kb, nj)
            mem_mean = mem_sum / n / (mem_per_core_kb * cores)
            per_core = m.mem_kb / jn_cores[inv]
            mem_max = np.full(nj, -np.inf)
            np.maximum.at(mem_max, m.job, per_core)
            mem_max = mem_max / mem_per_core_kb
            mem_max[n == 0] = np.nan
        swap_jm = exact_bin_sums(jm_inv, m.swap_kb, ujm.shape[0])
        swap_max = np.full(nj, -np.inf)
        np.maximum.at(swap_max, jm_job, swap_jm)
        swap_max[n == 0] = np.nan
        t0 = np.full(nj, np.inf)
        t1 = np.full(nj, -np.inf)
        np.minimum.at(t0, m.job, m.ts)
        np.maximum.at(t1, m.job, m.ts)
        run = np.where(n > 0, t1 - t0 + m.period, np.nan)
    return JobUtilization(
        jobs=m.jobs,
        job_class=m.job_class,
        classes=m.classes,
        nodes=nodes,
        cores=cores,
        measures=n,
        core_util_mean=core_util,
        mem_mean_ratio=mem_mean,
        mem_max_core_ratio=mem_max,
        swap_kb_max=swap_max,
        sa_core_seconds=cores * run,
        run_seconds=run,
    )


def squashed_area(cores: np.ndarray, run_seconds: np.ndarray) -> float:
    """SA = sum_j allocated_cores_j x run_time_j (seed 003 §5, after Song et al. 2005)."""
    return float(np.nansum(np.asarray(cores, float) * np.asarray(run_seconds, float)))


def sa_ratio(sa: np.ndarray, subset: np.ndarray, within: np.ndarray | None = None) -> float:
    """SA of ``subset`` over SA of ``within`` (its class; all jobs if None). NaN SA counts as 0.
    ``subset`` is restricted to ``within``. 0 / 0 gives NaN."""
    sa = np.nan_to_num(np.asarray(sa, float))
    within = np.ones(sa.shape, bool) if within is None else np.asarray(within, bool)
    total = sa[within].sum()
    part = sa[within & np.asarray(subset, bool)].sum()
    return float(part / total) if total > 0 else float("nan")


def class_sa_ratios(u: JobUtilization, below: float = 0.25) -> dict[str, dict[str, float]]:
    """Per class: jobs, SA and the SA ratio of the jobs whose core_util_mean < ``below``
    (and of those >= 0.9, the seed's "high utilisation peak")."""
    out: dict[str, dict[str, float]] = {}
    for code in sorted(set(u.job_class.tolist())):
        cls = u.job_class == code
        valid = cls & ~np.isnan(u.sa_core_seconds)
        util = u.core_util_mean
        with np.errstate(invalid="ignore"):
            low = util < below
            high = util >= 0.9
        out[u.classes[code]] = {
            "jobs": int(valid.sum()),
            "sa_core_seconds": float(np.nansum(u.sa_core_seconds[valid])),
            f"sa_ratio_util_below_{below:g}": sa_ratio(u.sa_core_seconds, low, valid),
            "sa_ratio_util_at_least_0.9": sa_ratio(u.sa_core_seconds, high, valid),
        }
    return out


# Fixed bins so histograms from different runs and nodes add up: 0, 5, ..., 100 % and overflow.
UTIL_EDGES = np.concatenate([np.round(np.linspace(0.0, 1.0, 21), 10), [np.inf]])
MEM_EDGES = np.concatenate([np.round(np.linspace(0.0, 2.0, 41), 10), [np.inf]])


def histogram(
    values: np.ndarray, edges: np.ndarray = UTIL_EDGES, weights: np.ndarray | None = None
) -> np.ndarray:
    """Counts (or weight sums, e.g. SA per bin) of ``values`` per bin [edges[k], edges[k+1]), the
    last bin closed, as numpy.histogram; NaN values are left out. With the default edges a
    utilisation of exactly 1.0 falls in the bin [1.0, inf]."""
    v = np.asarray(values, float)
    ok = ~np.isnan(v)
    w = None if weights is None else np.nan_to_num(np.asarray(weights, float))[ok]
    counts, _ = np.histogram(v[ok], bins=edges, weights=w)
    return counts
