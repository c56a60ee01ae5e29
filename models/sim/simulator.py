"""Workload -> EASY scheduler -> Moab node-status lines and job events (the simulator's glue).

Each scheduler iteration writes one line per node, in node order, in the Moab format of seed 000
(section III.A):

    2014-12-31T00:03:19.696-0600 21166 INFO  Node '27453' status: state='Idle' \
rsvlist='1292428,1292433' joblist='none'      (one line)

Timestamps are local time of an IANA zone with its UTC offset, millisecond precision; an
iteration's lines start a little after the nominal iteration time (uniform 0-1 s) and advance by a
few milliseconds per line, as a real scheduler writes them one after another. The second field is
a pid-like number, constant for a run. Job events are :class:`models.records.jobevent.JobEvent`
records; a job that waited for an EASY reservation (it became the queue head and could not
start at once) carries the reservation's start (the shadow time computed then) as
``reserved_start`` on its start event: its submit is written before the reservation exists, and
events stream out in time order. Everything is produced as a generator of chunks (one per
iteration) so a writer can stream it with flat memory. Pure: no files, no clock; times come
from the configuration.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np

from models.formats.swf import SwfJob
from models.records.jobevent import JobEvent
from models.records.nodestatus import KNOWN_STATES
from models.sim.lublin import LublinModel
from models.sim.scheduler import EasyScheduler, IterationState, NodeInterval, Workload


@dataclass(slots=True)
class SimConfig:
    """``start`` is POSIX seconds of the first iteration; ``warmup`` seconds of workload run
    before it (no lines are written for them) so the machine is not empty at the start."""

    nodes: int
    days: float
    start: float
    period: float = 120.0
    tz: str = "America/Chicago"
    seed: int = 0
    warmup: float = 86400.0
    depth: int = 1
    node_base: int = 1
    job_base: int = 1_000_000
    pid: int | None = None
    n_users: int = 64

    @property
    def end(self) -> float:
        return self.start + self.days * 86400.0


@dataclass(slots=True)
class SimChunk:
    """One iteration's Moab lines (joined, newline-terminated) and the job events before it."""

    moab: str
    n_lines: int
    events: list[JobEvent]
    ts: float | None


@dataclass(slots=True)
class SwfSelection:
    """How SWF jobs were turned into a workload: counts by reason for jobs left out."""

    used: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def _users(rng: np.random.Generator, n: int, n_users: int) -> list[str]:
    # a few heavy users and a long tail (Zipf-like ranks), as in real centres
    ranks = np.minimum(rng.zipf(1.6, n), n_users)
    return [f"user{r:03d}" for r in ranks.tolist()]


def workload_from_lublin(model: LublinModel, cfg: SimConfig) -> Workload:
    """Lublin jobs submitted during warmup + days; model time 0 is ``cfg.start - cfg.warmup``."""
    jobs = model.generate(duration=cfg.warmup + cfg.days * 86400.0)
    t0 = cfg.start - cfg.warmup
    n = len(jobs)
    rng = np.random.default_rng([cfg.seed, 0x05E5])
    return Workload(
        job_id=[str(cfg.job_base + i) for i in range(n)],
        submit=np.round(t0 + jobs.submit, 3),
        nodes=jobs.nodes.astype(np.int64),
        runtime=jobs.runtime.astype(np.float64),
        req_walltime=jobs.req_walltime.astype(np.float64),
        user=_users(rng, n, cfg.n_users),
    )


def workload_from_swf(
    jobs: Iterable[SwfJob], cfg: SimConfig, skip_seconds: float = 0.0
) -> tuple[Workload, SwfSelection]:
    """Replay an SWF trace: submit times (relative to the trace start, from ``skip_seconds`` on)
    mapped to ``cfg.start - cfg.warmup``; size = requested processors (else allocated) as nodes;
    requested walltime = requested time (else the run time). Jobs larger than the machine, or
    without size or run time, are skipped and counted by reason."""
    sel = SwfSelection()
    span = cfg.warmup + cfg.days * 86400.0
    t0 = cfg.start - cfg.warmup
    ids: list[str] = []
    sub: list[float] = []
    size: list[int] = []
    run: list[float] = []
    req: list[float] = []
    users: list[str] = []
    for j in jobs:
        rel = j.submit - skip_seconds
        if rel < 0 or rel >= span:
            continue
        n = j.procs_req if j.procs_req else j.procs_alloc
        if not n:
            sel.skipped["missing_size"] += 1
            continue
        if n > cfg.nodes:
            sel.skipped["larger_than_machine"] += 1
            continue
        if j.run is None:
            sel.skipped["missing_runtime"] += 1
            continue
        ids.append(str(cfg.job_base + j.job))
        sub.append(round(t0 + rel, 3))
        size.append(int(n))
        run.append(float(j.run))
        req.append(float(j.time_req) if j.time_req else float(max(j.run, 1)))
        users.append("unknown" if j.user is None else f"user{j.user:03d}")
    sel.used = len(ids)
    return Workload(
        ids,
        np.asarray(sub, dtype=np.float64),
        np.asarray(size, dtype=np.int64),
        np.asarray(run, dtype=np.float64),
        np.asarray(req, dtype=np.float64),
        users,
    ), sel


def random_outages(cfg: SimConfig, n_down: int, n_drained: int) -> list[NodeInterval]:
    """``n_down`` node failures (30 min - 6 h, log-uniform) and ``n_drained`` admin drains
    (2 - 24 h), on random nodes at uniform times within the written span."""
    rng = np.random.default_rng([cfg.seed, 0xD0_3E])
    out: list[NodeInterval] = []
    for kind, k, lo, hi in (
        ("down", n_down, 1800.0, 6 * 3600.0),
        ("drain", n_drained, 2 * 3600.0, 24 * 3600.0),
    ):
        nodes = rng.integers(0, cfg.nodes, k)
        starts = cfg.start + rng.uniform(0.0, cfg.days * 86400.0, k)
        durs = np.exp(rng.uniform(math.log(lo), math.log(hi), k))
        for nd, s, d in zip(nodes.tolist(), starts.tolist(), durs.tolist(), strict=True):
            out.append(NodeInterval(nd, round(s, 3), round(s + d, 3), kind))
    return out


class MoabFormatter:
    """Iteration states -> Moab node-status lines (see module docstring)."""

    def __init__(self, node_names: list[str], tz: str, pid: int, seed: int, period: float) -> None:
        self.tz = ZoneInfo(tz)
        self.rng = np.random.default_rng([seed, 0x7135])
        self.n = len(node_names)
        self.heads = [f" {pid} INFO  Node '{nm}' status: state='" for nm in node_names]
        self.states = [f"{s}' rsvlist='" for s in KNOWN_STATES]  # indexed by state code
        # per-line step 0..max_step ms, so one iteration's lines stay well inside a period
        self.max_step = max(1, min(3, int(period * 250.0 / max(1, self.n))))
        self.ms3 = [f".{i:03d}" for i in range(1000)]
        self._sec_cache: dict[int, tuple[str, str]] = {}

    def _sec(self, s: int) -> tuple[str, str]:
        v = self._sec_cache.get(s)
        if v is None:
            if len(self._sec_cache) > 4096:
                self._sec_cache.clear()
            dt = datetime.fromtimestamp(s, self.tz)
            v = (dt.strftime("%Y-%m-%dT%H:%M:%S"), dt.strftime("%z"))
            self._sec_cache[s] = v
        return v

    def line_times_ms(self, ts: float) -> np.ndarray:
        base = int(round(ts * 1000.0)) + int(self.rng.integers(0, 1000))
        steps = self.rng.integers(0, self.max_step + 1, self.n)
        return base + np.cumsum(steps)

    def format(self, iteration: IterationState) -> str:
        ms = self.line_times_ms(iteration.ts)
        secs = ms // 1000
        frac = (ms - secs * 1000).tolist()
        uniq = np.unique(secs).tolist()
        stamp = {s: self._sec(s) for s in uniq}
        ms3 = self.ms3
        states = self.states
        out = []
        for s, f, h, st, r, j in zip(
            secs.tolist(),
            frac,
            self.heads,
            iteration.state.tolist(),
            iteration.rsvlist,
            iteration.joblist,
            strict=True,
        ):
            a, b = stamp[s]
            out.append(f"{a}{ms3[f]}{b}{h}{states[st]}{r}' joblist='{j}'\n")
        return "".join(out)


def simulate(
    workload: Workload, cfg: SimConfig, outages: Iterable[NodeInterval] = ()
) -> Iterator[SimChunk]:
    """Run the workload through EASY backfilling and yield one chunk per iteration (plus a last
    chunk of events after the last iteration, if any). Jobs larger than the machine raise."""
    sched = EasyScheduler(cfg.nodes, workload, list(outages), depth=cfg.depth)
    names = [str(cfg.node_base + i) for i in range(cfg.nodes)]
    pid = cfg.pid if cfg.pid is not None else 10000 + cfg.seed % 50000
    fmt = MoabFormatter(names, cfg.tz, pid, cfg.seed, cfg.period)
    w = workload
    user = w.user or ["unknown"] * len(w)
    for events, iteration in sched.run(cfg.start, cfg.end, cfg.period):
        evs: list[JobEvent] = []
        for e in events:
            j = e.job
            ts = round(e.ts, 3)
            if e.type == "submit":
                evs.append(
                    JobEvent(
                        type="submit",
                        ts=ts,
                        job=w.job_id[j],
                        user=user[j],
                        nodes=int(w.nodes[j]),
                        req_walltime=float(w.req_walltime[j]),
                    )
                )
            elif e.type == "start":
                evs.append(
                    JobEvent(
                        type="start",
                        ts=ts,
                        job=w.job_id[j],
                        user=user[j],
                        nodes=int(w.nodes[j]),
                        req_walltime=float(w.req_walltime[j]),
                        node_list=tuple(names[i] for i in e.node_ids),
                        backfill=bool(e.backfill),
                        reserved_start=(
                            None if e.reserved_start is None else round(e.reserved_start, 3)
                        ),
                    )
                )
            else:
                evs.append(
                    JobEvent(
                        type="end",
                        ts=ts,
                        job=w.job_id[j],
                        user=user[j],
                        nodes=int(w.nodes[j]),
                        req_walltime=float(w.req_walltime[j]),
                        node_list=tuple(names[i] for i in e.node_ids),
                        state=e.state,
                    )
                )
        if iteration is None:
            yield SimChunk("", 0, evs, None)
        else:
            yield SimChunk(fmt.format(iteration), cfg.nodes, evs, iteration.ts)
