"""The drain stream's job totals joined with job events, as they come (seed 000 §V).

The live form of ``drainwatch replay --format moab --jobs FILE``'s per-job rows: each job
charged drain gets its size (job events, else the nodes seen running it), run time, drain per
node and drain / run time (:class:`models.drain.jobs.JobDrain`, the replay's own record), and
is written again whenever either side changes. Both sides arrive in their own order (the drain
combiner's totals as it flushes, job events in event time), so a row is final once both have
stopped changing: the join is eventually the replay's. A job's totals grow as the node-status
partitions report, and its first charge can move earlier (a partition that charged it first
reports after one that charged it later), so a row's point time is not its first charge but
the job's *stamp*: the combiner's point time of the job (its first charge as first reported),
or the first charge as this join first saw it, kept for the job's life in memory. Every row of
a job then overwrites one point.

Alert ``failure_to_launch`` (seed 000 §V-C): a job that was held idle for at least
``ftl_node_hours`` of drain, then ran less than ``ftl_s`` (30 s). It is an event, not a state:
the firing and the resolved record come together, at the job's end, once per job. Its value is
the drain known when the two sides first met the rule (the drain stream can lag the job's end,
so a worker that sees the total later reports it later, with the larger value).

Alert ``sliding_rank`` (seed 000 §V-A.2, the live ranking of perpetually sliding jobs): the
``top_k`` queued jobs (charged drain, never seen running, not ended) with the most drain per
node, among those with at least ``rank_node_hours`` of drain, fire; a job resolves once it is
past rank 2K (hysteresis: two jobs swapping places at rank K do not flap), starts, ends or
leaves memory. The ranking is taken at each :meth:`take`, so its records follow the worker's
flushes; the threshold kind ``sliding_job`` comes from the drain stream alone
(:class:`models.alerts.DrainAlerts`).

Drain by size group (seed 000 §V-D, Figure 2): every job with drain and a known size counts in
its group, with its latest total, cumulative since the worker's state began (jobs leaving
memory keep their part): the live ``size_groups.csv``. Sums are exact (Shewchuk partials), so
the rows equal the replay's ``math.fsum`` figures whatever the order of the updates.

Memory: jobs leave when ``retention_s`` of event time has passed since their last charge and
their end. Event time here is the earlier of the latest job event and the drain stream's
watermark (sent with its totals): the drain stream can lag the job events by much more than
their lateness (a loaded worker, a node-status shipper catching up), and a job's events must
still be there when its drain arrives, or its row would have no size and run time and its
failure to launch would go unseen.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from typing import Any

from models.alerts import Alert, AlertBook
from models.drain.jobs import (
    ABSOLUTE_SIZE_GROUPS,
    FAILURE_TO_LAUNCH_S,
    JobDrain,
    JobTimes,
    SizeGroupRow,
    SizeGroups,
    drain_jobs_row,
    fold_event,
)
from models.jobs.usage import add_exact
from models.records.jobevent import JobEvent
from models.state import StateFormatError
from models.statetree import (
    dict_in,
    float_in,
    floats_in,
    floats_out,
    int_in,
    ints_in,
    ints_out,
    keys_in,
    list_in,
    opt_float_in,
    opt_floats_in,
    opt_floats_out,
    opt_ints_in,
    opt_ints_out,
    str_in,
    strs_out,
)

# (jobs, drain_s partials, drain per node partials)
_GroupSums = tuple[list[int], list[float], list[float]]


class DrainJobJoin:
    __slots__ = (
        "times",
        "drains",
        "dirty",
        "ftl_s",
        "ftl_ms",
        "retention_s",
        "book",
        "alerted",
        "now",
        "_prune_at",
        "groups",
        "top_k",
        "rank_ms",
        "_contrib",
        "_gsums",
        "_gdirty",
        "_ranked",
        "drain_clock",
        "last_charge",
    )

    def __init__(
        self,
        ftl_node_hours: float = 10.0,
        ftl_s: float = FAILURE_TO_LAUNCH_S,
        retention_s: float = 2 * 86400.0,
        book: AlertBook | None = None,
        groups: SizeGroups = ABSOLUTE_SIZE_GROUPS,
        top_k: int = 0,
        rank_node_hours: float = 1.0,
    ) -> None:
        self.times: dict[str, JobTimes] = {}
        # job -> (drain_ms, nodes_charged, first_ms, last_ms, nodes_running, stamp_ms)
        self.drains: dict[str, tuple[int, int, int, int, int, int]] = {}
        self.dirty: set[str] = set()
        self.ftl_s = ftl_s
        self.ftl_ms = ftl_node_hours * 3_600_000.0
        self.retention_s = retention_s
        self.book = book or AlertBook()
        self.alerted: dict[str, float] = {}  # job -> its end: failure to launch already sent
        self.now: float | None = None  # latest job event time
        self._prune_at: float | None = None
        self.groups = groups
        self.top_k = top_k
        self.rank_ms = rank_node_hours * 3_600_000.0
        self._contrib: dict[str, tuple[str, float, float]] = {}  # job -> group, drain, per node
        self._gsums: dict[str, _GroupSums] = {}
        self._gdirty: set[str] = set()
        self._ranked: set[str] = set()  # jobs whose sliding_rank alert is firing
        self.drain_clock: float | None = None  # the drain stream's watermark, seconds
        self.last_charge = 0.0  # the latest last charge of any job's totals, seconds

    def configure(self, groups: SizeGroups, top_k: int, rank_node_hours: float) -> None:
        """Settings (not state): applied again to a join restored from a snapshot."""
        self.groups, self.top_k = groups, top_k
        self.rank_ms = rank_node_hours * 3_600_000.0

    # ---- durable state (the live worker's snapshot) ----------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Both sides, the size groups' exact sums, the alerts sent and open, and the clocks
        as a state tree of columns (models.state); the thresholds and retention are the
        constructor's, the size groups and the ranking's settings :meth:`configure`'s. A
        job's backfill flag is -1 (unknown), 0 or 1; ``drains`` holds 6 values a job (drain_ms,
        nodes_charged, first_ms, last_ms, nodes_running, stamp_ms); sets are saved sorted."""
        ts = list(self.times.values())
        co = list(self._contrib.values())
        gs = list(self._gsums.values())
        return {
            "times": {
                "job": strs_out(list(self.times)),
                "nodes": opt_ints_out([t.nodes for t in ts]),
                "submit": opt_floats_out([t.submit for t in ts]),
                "start": opt_floats_out([t.start for t in ts]),
                "end": opt_floats_out([t.end for t in ts]),
                "backfill": ints_out(-1 if t.backfill is None else int(t.backfill) for t in ts),
            },
            "drain_jobs": strs_out(list(self.drains)),
            "drains": ints_out(x for v in self.drains.values() for x in v),
            "dirty": strs_out(sorted(self.dirty)),
            "alerted": strs_out(list(self.alerted)),
            "alerted_end": floats_out(self.alerted.values()),
            "now": self.now,
            "prune_at": self._prune_at,
            "contrib": {
                "job": strs_out(list(self._contrib)),
                "group": strs_out([c[0] for c in co]),
                "drain_s": floats_out(c[1] for c in co),
                "per_node": floats_out(c[2] for c in co),
            },
            "groups": {
                "group": list(self._gsums),
                "jobs": [g[0][0] for g in gs],
                "drain_s": [g[1] for g in gs],  # exact partial sums (add_exact)
                "per_node": [g[2] for g in gs],
            },
            "groups_dirty": sorted(self._gdirty),
            "ranked": strs_out(sorted(self._ranked)),
            "drain_clock": self.drain_clock,
            "last_charge": self.last_charge,
            "book": self.book.snapshot(),
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) join, made with the snapshot's thresholds (:meth:`configure`
        follows), from :meth:`snapshot`'s tree; a tree of another shape raises
        :class:`~models.state.StateFormatError`."""
        t = dict_in(tree["times"])
        jobs = keys_in(t["job"])
        n = len(jobs)
        flags: list[bool | None] = []
        for f in ints_in(t["backfill"], n):
            if f not in (-1, 0, 1):
                raise StateFormatError(f"job join state: backfill flag {f}")
            flags.append(None if f < 0 else f == 1)
        times = {
            job: JobTimes(nodes, submit, start, end, bf)
            for job, nodes, submit, start, end, bf in zip(
                jobs,
                opt_ints_in(t["nodes"], n),
                opt_floats_in(t["submit"], n),
                opt_floats_in(t["start"], n),
                opt_floats_in(t["end"], n),
                flags,
                strict=True,
            )
        }
        djobs = keys_in(tree["drain_jobs"])
        v = ints_in(tree["drains"], 6 * len(djobs))
        rows = zip(v[0::6], v[1::6], v[2::6], v[3::6], v[4::6], v[5::6], strict=True)
        drains = dict(zip(djobs, rows, strict=True))
        ajobs = keys_in(tree["alerted"])
        alerted = dict(zip(ajobs, floats_in(tree["alerted_end"], len(ajobs)), strict=True))
        c = dict_in(tree["contrib"])
        cjobs = keys_in(c["job"])
        k = len(cjobs)
        cols = zip(
            keys_in(c["group"], k),
            floats_in(c["drain_s"], k),
            floats_in(c["per_node"], k),
            strict=True,
        )
        contrib = dict(zip(cjobs, cols, strict=True))
        g = dict_in(tree["groups"])
        names = [str_in(x) for x in list_in(g["group"])]
        m = len(names)
        gcols = zip(
            names,
            list_in(g["jobs"], m),
            list_in(g["drain_s"], m),
            list_in(g["per_node"], m),
            strict=True,
        )
        gsums: dict[str, _GroupSums] = {
            name: ([int_in(nj)], _partials(ds), _partials(ps)) for name, nj, ds, ps in gcols
        }
        sizes = (len(times), len(drains), len(alerted), len(contrib), len(gsums))
        if sizes != (n, len(djobs), len(ajobs), k, m):
            raise StateFormatError("job join state: a job or a size group twice")
        dirty = set(keys_in(tree["dirty"]))
        gdirty = {str_in(x) for x in list_in(tree["groups_dirty"])}
        ranked = set(keys_in(tree["ranked"]))
        now, prune_at = opt_float_in(tree["now"]), opt_float_in(tree["prune_at"])
        clock, last = opt_float_in(tree["drain_clock"]), float_in(tree["last_charge"])
        self.book.restore(dict_in(tree["book"]))
        self.times, self.drains, self.alerted, self._contrib = times, drains, alerted, contrib
        self._gsums, self.dirty, self._gdirty, self._ranked = gsums, dirty, gdirty, ranked
        self.now, self._prune_at, self.drain_clock, self.last_charge = now, prune_at, clock, last

    def events(self, events: Iterable[JobEvent]) -> None:
        """Job events (as :func:`models.drain.jobs.job_times` folds them: the latest wins)."""
        times, drains, dirty = self.times, self.drains, self.dirty
        now = self.now
        for e in events:
            job = e.job
            jt = times.get(job)
            if jt is None:
                jt = times[job] = JobTimes()
            fold_event(jt, e)
            if job in drains:
                dirty.add(job)
            if now is None or e.ts > now:
                now = e.ts
        self.now = now

    def drain(self, rows: Iterable[Sequence[Any]], watermark_ms: int | None = None) -> None:
        """Totals ``(job, drain_ms, nodes_charged, first_ms, last_ms, nodes_running[,
        stamp_ms])`` (the stamp: the combiner's point time of the job), and the drain stream's
        watermark when known."""
        if watermark_ms is not None:
            wm = watermark_ms / 1000
            if self.drain_clock is None or wm > self.drain_clock:
                self.drain_clock = wm
        drains = self.drains
        for row in rows:
            job, d, charged, first, last, running = row[:6]
            old = drains.get(job)
            stamp = old[5] if old is not None else int(row[6] if len(row) > 6 else first)
            drains[job] = (int(d), int(charged), int(first), int(last), int(running), stamp)
            self.dirty.add(job)
            if last / 1000 > self.last_charge:
                self.last_charge = last / 1000

    def record(self, job: str) -> JobDrain:
        d, charged, first, last, running, _stamp = self.drains[job]
        jt = self.times.get(job)
        size = jt.nodes if jt and jt.nodes else (running or None)
        return JobDrain(
            job,
            d / 1000,
            charged,
            first,
            last,
            size,
            jt.runtime if jt else None,
            running > 0 or bool(jt and jt.start is not None),
        )

    def take(self) -> tuple[list[tuple[Any, ...]], list[Alert], list[int]]:
        """The changed jobs' rows (``drain_jobs.csv`` with job events: job, drain_ms,
        nodes_charged, first_ms, last_ms, size, runtime, drain per node, drain / run time), the
        failure-to-launch records, and each row's point time (the job's stamp, ms)."""
        rows: list[tuple[Any, ...]] = []
        alerts: list[Alert] = []
        stamps: list[int] = []
        for job in sorted(self.dirty):
            j = self.record(job)
            d_ms, stamp = self.drains[job][0], self.drains[job][5]
            rows.append(drain_jobs_row(j, d_ms))
            stamps.append(stamp)
            self._count(j)
            jt = self.times.get(job)
            if (
                j.runtime_s is not None
                and j.runtime_s < self.ftl_s
                and d_ms >= self.ftl_ms
                and job not in self.alerted
                and jt is not None
                and jt.end is not None
            ):
                at = jt.end
                self.alerted[job] = at
                details = {
                    "size": j.size,
                    "runtime_s": j.runtime_s,
                    "nodes_charged": j.nodes_charged,
                }
                for a in (
                    self.book.fire(
                        "failure_to_launch",
                        job,
                        at,
                        d_ms / 3_600_000,
                        self.ftl_ms / 3_600_000,
                        "job",
                        severity="critical",
                        details=details,
                        since=j.first_charged_ms / 1000,
                    ),
                    self.book.resolve("failure_to_launch", job, at),
                ):
                    if a is not None:
                        alerts.append(a)
        if self.top_k > 0:
            alerts += self._rank()
        self.dirty.clear()
        self._prune()
        return rows, alerts, stamps

    # ---- drain by size group ----------------------------------------------------------------
    def _count(self, j: JobDrain) -> None:
        """Put the job's latest total in its size group (and take the last one out)."""
        if not j.size:
            return
        g = self.groups.group(j.size)
        new = (g, j.drain_s, j.drain_s / j.size)
        old = self._contrib.get(j.job)
        if old == new:
            return
        if old is not None:
            n, d, pn = self._gsums[old[0]]
            n[0] -= 1
            add_exact(d, -old[1])
            add_exact(pn, -old[2])
            self._gdirty.add(old[0])
        n, d, pn = self._gsums.setdefault(g, ([0], [], []))
        n[0] += 1
        add_exact(d, new[1])
        add_exact(pn, new[2])
        self._gdirty.add(g)
        self._contrib[j.job] = new

    def size_group_rows(self, changed_only: bool = True) -> list[SizeGroupRow]:
        """``size_groups.csv``'s rows (:func:`models.drain.jobs.by_size_group`): the groups
        that changed since the last call, or all of them."""
        rows = []
        for name, lo, hi in self.groups.groups:
            if changed_only and name not in self._gdirty or name not in self._gsums:
                continue
            n, d, pn = self._gsums[name]
            if n[0] > 0:
                total = math.fsum(d)
                per_node, scale = math.fsum(pn) / n[0], self.groups.scale
                rows.append(SizeGroupRow(name, n[0], total, total / n[0], per_node, lo, hi, scale))
        self._gdirty.clear()
        return rows

    # ---- the live ranking of sliding jobs ---------------------------------------------------
    def _queued(self) -> list[tuple[float, str, JobDrain]]:
        out = []
        for job, (d_ms, *_rest) in self.drains.items():
            if d_ms < self.rank_ms:
                continue
            jt = self.times.get(job)
            if jt is not None and (jt.start is not None or jt.end is not None):
                continue
            j = self.record(job)
            if j.seen_running:
                continue
            out.append((-(j.drain_s / (j.size or max(j.nodes_charged, 1))), job, j))
        return out

    def _rank(self) -> list[Alert]:
        k = self.top_k
        top = heapq.nsmallest(2 * k, self._queued())
        rank = {job: i + 1 for i, (_, job, _j) in enumerate(top)}
        at = self.clock()
        alerts: list[Alert] = []
        for key, job, j in top[:k]:
            if job in self._ranked:
                continue
            self._ranked.add(job)
            a = self.book.fire(
                "sliding_rank",
                job,
                at,
                -key,
                float(k),
                "job",
                details={"rank": rank[job], "drain_node_hours": j.drain_s / 3600, "size": j.size},
                since=j.first_charged_ms / 1000,
            )
            if a is not None:
                alerts.append(a)
        for job in sorted(self._ranked - set(rank)):
            self._ranked.discard(job)
            jt = self.times.get(job)
            started = jt.start if jt is not None and jt.start is not None else None
            a = self.book.resolve("sliding_rank", job, at if started is None else started)
            if a is not None:
                alerts.append(a)
        return alerts

    def clock(self) -> float:
        """Event time of the join: the latest job event or charge, whichever is later (a job
        leaves memory only long after both, so the running maximum is the same as over the jobs
        in memory)."""
        return max(self.last_charge, self.now or 0.0)

    def _prune(self) -> None:
        now = self.now
        if now is not None and self.drain_clock is not None:
            now = min(now, self.drain_clock)
        if now is None or self._prune_at is not None and now < self._prune_at:
            return
        self._prune_at = now + self.retention_s / 8
        cut = now - self.retention_s
        cut_ms = cut * 1000
        self.times = {
            k: v for k, v in self.times.items() if v.end is None or v.end >= cut or k in self.drains
        }
        old = [
            k
            for k, v in self.drains.items()
            if v[3] < cut_ms and (k not in self.times or self.times[k].end is not None)
        ]
        for k in old:
            del self.drains[k]
            self.times.pop(k, None)
            self._contrib.pop(k, None)  # its part stays in its group's sums
        self.alerted = {k: v for k, v in self.alerted.items() if v >= cut}


def _partials(x: Any) -> list[float]:
    """Exact partial sums (add_exact) of a state tree."""
    return [float_in(v) for v in list_in(x)]
