"""DFS write load per minute and hot-zone episodes from samples as they come (seed 003 §5.2).

The streaming form of :func:`models.samples.dfs.io_from_samples`, :func:`dfs_minutely` and
:func:`hot_zones`, with the same rules and the same numbers: samples in time order, the byte
deltas of each process (node, pid, start) from its previous sample (the first one counts its
whole counter when the process started within a sampling period of it, else it is the
baseline; a counter that goes down restarted from zero), summed per (job, node, minute) as
whole bytes (exact), then per minute in unit/s (``math.fsum`` over the minute's rows, the
replay's order-free sum). :meth:`DfsStream.close` makes the minutes before a given one final:
their rows, and the hot-zone episodes no later hot minute can join any more (hot minutes at
most ``max_gap`` minutes apart are one episode; its top jobs by share of the data written in
its hot minutes).

Alert (issue 13): ``hot_zone`` fires when an episode has ``alert_minutes`` consecutive hot
minutes (at the end of the last of them, naming the top jobs so far) and resolves when the
episode is final (at the end of its last hot minute). Memory: the open minutes, the open
episode, and per process its last counters (forgotten ``forget_s`` after its last sample).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.alerts import FIRING, Alert, AlertBook
from models.jobs.usage import add_exact
from models.records.nodesample import NodeSample, group_codes
from models.samples.batch import (
    SampleBatch,
    as_batch,
    names_from_tree,
    names_tree,
    ragged_from_tree,
    ragged_tree,
    tree_array,
    tree_float,
    tree_get,
    tree_int,
    tree_list,
    tree_number,
    tree_opt_float,
    tree_opt_int,
    tree_pairs,
    tree_str,
    tree_strs,
)
from models.samples.dfs import MINUTE
from models.state import StateFormatError


@dataclass(slots=True)
class MinuteRow:
    minute: int  # epoch minute
    write: float  # unit/s over all jobs and nodes
    read: float
    jobs_writing: int


@dataclass(slots=True)
class ZoneRow:
    start: int  # first hot minute
    end: int  # last hot minute (inclusive)
    peak: float
    minutes: int
    top_jobs: list[tuple[str, float]]


@dataclass(slots=True)
class _Episode:
    start: int
    last: int
    peak: float
    minutes: int
    run_start: int  # first minute of the current run of consecutive hot minutes
    per_job: dict[str, list[float]] = field(default_factory=dict)  # exact partials


class DfsStream:
    __slots__ = (
        "period",
        "unit",
        "threshold",
        "top",
        "max_gap",
        "alert_minutes",
        "forget_s",
        "book",
        "_procs",
        "_last",
        "_minutes",
        "_closed",
        "_ep",
        "_forget_at",
        "job_io",
        "subject",
    )

    def __init__(
        self,
        period: float = 60.0,
        unit: float = 1e6,
        threshold: float = 93.0,
        top: int = 3,
        max_gap: int = 0,
        alert_minutes: int = 5,
        forget_s: float = 6 * 3600.0,
        subject: str = "dfs",
    ) -> None:
        self.subject = subject  # of the hot_zone alert: "dfs", or "fs:<name>"
        self.period = period
        self.unit = unit
        self.threshold = threshold
        self.top = top
        self.max_gap = max_gap
        self.alert_minutes = alert_minutes
        self.forget_s = forget_s
        self.book = AlertBook()
        # (node, pid, start) -> its column in _last: last ts, write bytes, read bytes
        self._procs: dict[tuple[str, int, float], int] = {}
        self._last = np.zeros((3, 0))
        # minute -> {(job, node): [write bytes, read bytes]} (FsRateStream: [speeds], [speeds])
        self._minutes: dict[int, dict[tuple[str, str], list[Any]]] = {}
        self._closed: int | None = None  # every minute before it is final
        self._ep: _Episode | None = None
        self._forget_at: float | None = None
        # job -> [fastest write of one node in one minute, exact partials of data written]
        self.job_io: dict[str, list[Any]] = {}

    def update(self, samples: SampleBatch | Iterable[NodeSample]) -> None:
        """Samples in time order (a process's samples in its own order), as columns."""
        b = as_batch(samples)
        n = len(b)
        if not n:
            return
        # rows by process (node, pid, start), each process's rows in the order they came
        g = group_codes(b.node, b.pid, b.start)
        order = np.argsort(g, kind="stable")
        g = g[order]
        first = np.empty(n, bool)
        first[0] = True
        np.not_equal(g[1:], g[:-1], out=first[1:])
        last = np.empty(n, bool)
        last[-1] = True
        last[:-1] = first[1:]
        ts = b.ts[order]
        w, r = b.write[order].astype(np.float64), b.read[order].astype(np.float64)
        # each row's previous counters: the row before it, or the process's saved ones
        pw, pr = np.empty(n), np.empty(n)
        pw[1:], pr[1:] = w[:-1], r[:-1]
        fi, li = np.flatnonzero(first), np.flatnonzero(last)
        nodes, procs = b.nodes, self._procs
        keys = list(
            zip(
                [nodes[c] for c in b.node[order[fi]].tolist()],
                b.pid[order[fi]].tolist(),
                b.start[order[fi]].tolist(),
                strict=True,
            )
        )
        get = procs.get
        slot = np.array([get(k, -1) for k in keys], np.int64)
        known = slot >= 0
        fresh_procs = np.flatnonzero(~known)
        if fresh_procs.size:  # new processes get the next columns
            n0 = len(procs)
            for j, i in enumerate(fresh_procs.tolist()):
                procs[keys[i]] = n0 + j
            slot[fresh_procs] = np.arange(n0, n0 + fresh_procs.size)
            if len(procs) > self._last.shape[1]:
                grown = np.zeros((3, max(2 * len(procs), 1024)))
                grown[:, : self._last.shape[1]] = self._last
                self._last = grown
        last_ts, last_w, last_r = self._last
        pw[fi] = np.where(known, last_w[slot], 0.0)
        pr[fi] = np.where(known, last_r[slot], 0.0)
        last_ts[slot], last_w[slot], last_r[slot] = ts[li], w[li], r[li]
        dw = np.where(w >= pw, w - pw, w)
        dr = np.where(r >= pr, r - pr, r)
        # a process's first sample: its whole counter if it started within a period, else 0
        fresh = fi[~known]
        if fresh.size:
            st, t0 = b.start[order[fresh]], ts[fresh]
            new = (st > 0) & (st > t0 - self.period)
            dw[fresh] = np.where(new, w[fresh], 0.0)
            dr[fresh] = np.where(new, r[fresh], 0.0)
        # whole bytes per (minute, job, node): exact in any order
        minute = np.floor(ts / MINUTE).astype(np.int64)
        job, node = b.job[order], b.node[order]
        key = group_codes(minute, job, node)
        _u, at = np.unique(key, return_index=True)
        sw = np.bincount(key, dw, at.size).tolist()
        sr = np.bincount(key, dr, at.size).tolist()
        jobs, minutes = b.jobs, self._minutes
        for m, j, nd, a, c in zip(
            minute[at].tolist(), job[at].tolist(), node[at].tolist(), sw, sr, strict=True
        ):
            rows = minutes.get(m)
            if rows is None:
                rows = minutes[m] = {}
            jn = (jobs[j], nodes[nd])
            acc = rows.get(jn)
            if acc is None:
                rows[jn] = [a, c]
            else:
                acc[0] += a
                acc[1] += c

    def close(self, until_minute: int) -> tuple[list[MinuteRow], list[ZoneRow], list[Alert]]:
        """Minutes before ``until_minute`` are final: their rows, the episodes that ended, and
        the hot-zone alert changes."""
        out: list[MinuteRow] = []
        zones: list[ZoneRow] = []
        alerts: list[Alert] = []
        for m in sorted(k for k in self._minutes if k < until_minute):
            rows = self._minutes.pop(m)
            rates = self._rates(rows)
            write = math.fsum(w for w, _ in rates.values())
            read = math.fsum(r for _, r in rates.values())
            writers = {j for (j, _n), (w, _r) in rates.items() if w > 0}
            out.append(MinuteRow(m, write, read, len(writers)))
            if write > self.threshold:
                self._hot(m, write, rates, zones, alerts)
        self._end_episode(until_minute, zones, alerts)
        if self._closed is None or until_minute > self._closed:
            self._closed = until_minute
        self._forget(until_minute * MINUTE)
        return out, zones, alerts

    def _rates(
        self, rows: dict[tuple[str, str], list[Any]]
    ) -> dict[tuple[str, str], tuple[float, float]]:
        """(write, read) unit/s per (job, node) of a final minute, the replay's arithmetic:
        bytes / unit / 60; and the jobs' I/O totals (:meth:`io_of`)."""
        unit = self.unit
        rates = {jn: (a[0] / unit / MINUTE, a[1] / unit / MINUTE) for jn, a in rows.items()}
        for (job, _node), a in rows.items():
            io = self.job_io.get(job)
            if io is None:
                io = self.job_io[job] = [0.0, []]
            io[0] = max(io[0], a[0] / unit / MINUTE)
            add_exact(io[1], a[0] / unit)
        return rates

    def _hot(
        self,
        m: int,
        write: float,
        rates: dict[tuple[str, str], tuple[float, float]],
        zones: list[ZoneRow],
        alerts: list[Alert],
    ) -> None:
        ep = self._ep
        if ep is not None and m - ep.last > self.max_gap + 1:
            self._final(zones, alerts)
            ep = None
        if ep is None:
            ep = self._ep = _Episode(m, m, write, 0, m)
        elif m != ep.last + 1:
            ep.run_start = m
        ep.last, ep.minutes, ep.peak = m, ep.minutes + 1, max(ep.peak, write)
        for (job, _node), (w, _r) in rates.items():
            add_exact(ep.per_job.setdefault(job, []), w)
        if m - ep.run_start + 1 == self.alert_minutes:
            details = {"top_jobs": self._top(ep)}
            a = self.book.fire(
                "hot_zone",
                self.subject,
                (m + 1) * MINUTE,
                ep.peak,
                self.threshold,
                f"{self.alert_minutes} min",
                severity="critical",
                details=details,
                since=ep.start * MINUTE,
            )
            if a is not None:
                alerts.append(a)

    def _top(self, ep: _Episode) -> list[list[Any]]:
        """The top jobs by share of the episode's writes (exact sums; ties by job id), as the
        replay's :func:`~models.samples.dfs.hot_zones` ranks them."""
        sums = {j: math.fsum(p) for j, p in ep.per_job.items()}
        total = math.fsum(sums.values())
        if total <= 0:
            return []
        ranked = sorted(sums, key=lambda j: (-sums[j], j))[: self.top]
        return [[j, sums[j] / total] for j in ranked if sums[j] > 0]

    def _end_episode(self, until_minute: int, zones: list[ZoneRow], alerts: list[Alert]) -> None:
        ep = self._ep
        if ep is not None and until_minute > ep.last + self.max_gap + 1:
            self._final(zones, alerts)

    def _final(self, zones: list[ZoneRow], alerts: list[Alert]) -> None:
        ep = self._ep
        assert ep is not None
        top = [(j, s) for j, s in self._top(ep)]
        zones.append(ZoneRow(ep.start, ep.last, ep.peak, ep.minutes, top))
        a = self.book.resolve("hot_zone", self.subject, (ep.last + 1) * MINUTE, ep.peak)
        if a is not None:
            alerts.append(a)
        self._ep = None

    def forget_jobs(self, jobs: Iterable[str]) -> None:
        """Jobs that ended leave memory (their I/O totals)."""
        for job in jobs:
            self.job_io.pop(job, None)

    def io_of(self, job: str) -> tuple[float, float]:
        """(fastest write of one node in one minute, data written) of a job, unit/s and unit."""
        io = self.job_io.get(job)
        return (0.0, 0.0) if io is None else (io[0], math.fsum(io[1]))

    def finish(self) -> tuple[list[MinuteRow], list[ZoneRow], list[Alert]]:
        """End of a finite input: every minute is final."""
        last = max(self._minutes, default=self._closed or 0)
        return self.close(last + self.max_gap + 2)

    def _forget(self, now_s: float) -> None:
        if self._forget_at is not None and now_s < self._forget_at:
            return
        self._forget_at = now_s + self.forget_s / 8
        cut = now_s - self.forget_s
        keep = [(k, i) for k, i in self._procs.items() if self._last[0, i] >= cut]
        self._last = self._last[:, [i for _k, i in keep]]
        self._procs = {k: j for j, (k, _i) in enumerate(keep)}

    # ---- durable state ----------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The stream's state as a tree (:mod:`models.state`): the open hot-zone alert, per
        process its key and last counters (parallel arrays), the open minutes' rows (parallel
        arrays), the open episode, and per job its I/O totals. The constructor's arguments are
        configuration, not state."""
        keys = list(self._procs)
        node, pid, start = zip(*keys, strict=True) if keys else ((), (), ())
        slots = np.fromiter(self._procs.values(), np.int64, len(keys))
        return {
            "alerts": [_alert_tree(a) for a in self.book.open.values()],
            "procs": {
                "node": names_tree(node),
                "pid": np.array(pid, np.int64),
                "start": np.array(start, np.float64),
                "last": self._last[:, slots],  # ts, write bytes, read bytes (a copy)
            },
            "minutes": self._minutes_tree(),
            "closed": self._closed,
            "episode": None if self._ep is None else _episode_tree(self._ep),
            "forget_at": self._forget_at,
            "job_io": {
                "job": list(self.job_io),
                "top": np.array([io[0] for io in self.job_io.values()], np.float64),
                "written": ragged_tree([io[1] for io in self.job_io.values()]),
            },
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """:meth:`snapshot`'s state into this stream (built with its configuration); read whole
        before any of it is set."""
        book = AlertBook()
        for x in tree_list(tree_get(tree, "alerts"), "dfs alerts"):
            a = _alert_from(x)
            book.open[a.id] = a
        p = tree_get(tree, "procs")
        pid = tree_array(tree_get(p, "pid"), "i", "dfs procs pid").tolist()
        n = len(pid)
        node = names_from_tree(tree_get(p, "node"), "dfs procs node", n)
        start = tree_array(tree_get(p, "start"), "f", "dfs procs start", (n,)).tolist()
        last = np.array(tree_array(tree_get(p, "last"), "f", "dfs procs last", (3, n)))
        procs = {k: i for i, k in enumerate(zip(node, pid, start, strict=True))}
        if len(procs) != n:
            raise StateFormatError("state: dfs procs: a process twice")
        minutes = self._minutes_from(tree_get(tree, "minutes"))
        closed = tree_opt_int(tree_get(tree, "closed"), "dfs closed")
        ep = tree_get(tree, "episode")
        episode = None if ep is None else _episode_from(ep)
        forget_at = tree_opt_float(tree_get(tree, "forget_at"), "dfs forget_at")
        j = tree_get(tree, "job_io")
        jobs = tree_strs(tree_get(j, "job"), "dfs job_io job")
        top = tree_array(tree_get(j, "top"), "f", "dfs job_io top", (len(jobs),)).tolist()
        written = ragged_from_tree(tree_get(j, "written"), "dfs job_io written", len(jobs))
        job_io: dict[str, list[Any]] = {
            job: [t, w] for job, t, w in zip(jobs, top, written, strict=True)
        }
        if len(job_io) != len(jobs):
            raise StateFormatError("state: dfs job_io: a job twice")
        self.book, self._procs, self._last, self._minutes = book, procs, last, minutes
        self._closed, self._ep, self._forget_at, self.job_io = closed, episode, forget_at, job_io

    def _minutes_tree(self) -> dict[str, Any]:
        """The open minutes (a minute may have no rows) and their rows, in order."""
        mins = self._minutes
        keys = [k for rows in mins.values() for k in rows]
        job, node = zip(*keys, strict=True) if keys else ((), ())
        return {
            "minute": np.fromiter(mins, np.int64, len(mins)),
            "rows": np.fromiter(map(len, mins.values()), np.int64, len(mins)),
            "job": names_tree(job),
            "node": names_tree(node),
            "acc": self._accs_tree([a for rows in mins.values() for a in rows.values()]),
        }

    def _minutes_from(self, tree: Any) -> dict[int, dict[tuple[str, str], list[Any]]]:
        minute = tree_array(tree_get(tree, "minute"), "i", "dfs minutes").tolist()
        counts = tree_array(tree_get(tree, "rows"), "i", "dfs minute rows", (len(minute),))
        if (counts < 0).any():
            raise StateFormatError("state: dfs minute rows below 0")
        n = int(counts.sum())
        job = names_from_tree(tree_get(tree, "job"), "dfs minute job", n)
        node = names_from_tree(tree_get(tree, "node"), "dfs minute node", n)
        accs = self._accs_from(tree_get(tree, "acc"), n)
        keys = list(zip(job, node, strict=True))
        out: dict[int, dict[tuple[str, str], list[Any]]] = {}
        at = 0
        for m, c in zip(minute, counts.tolist(), strict=True):
            rows = out[m] = dict(zip(keys[at : at + c], accs[at : at + c], strict=True))
            if len(rows) != c:
                raise StateFormatError(f"state: dfs minute {m}: a (job, node) twice")
            at += c
        if len(out) != len(minute):
            raise StateFormatError("state: dfs minutes: a minute twice")
        return out

    def _accs_tree(self, accs: list[list[Any]]) -> dict[str, Any]:
        """Per (minute, job, node) row its whole bytes written and read."""
        return {"bytes": np.array(accs, np.float64).reshape(len(accs), 2)}

    def _accs_from(self, tree: Any, n: int) -> list[list[Any]]:
        b = tree_array(tree_get(tree, "bytes"), "f", "dfs minute bytes", (n, 2))
        out: list[list[Any]] = b.tolist()
        return out


class FsRateStream(DfsStream):
    """One file system's load from samples that give speeds per file system (``fs_rates``):
    the streaming form of the replay's :func:`models.samples.dfs.io_from_rates` per file
    system. Per (job, node, minute) the mean of the samples' speeds (``math.fsum`` / count, as
    the replay's), then the minute's sum, episodes and alert as :class:`DfsStream`'s, with the
    file system's own threshold and the alert subject ``fs:<name>``."""

    __slots__ = ()

    def add(self, minute: int, job: str, node: str, write: float, read: float) -> None:
        rows = self.touch(minute)
        acc = rows.get((job, node))
        if acc is None:
            rows[(job, node)] = [[write], [read]]
        else:
            acc[0].append(write)
            acc[1].append(read)

    def touch(self, minute: int) -> dict[tuple[str, str], list[Any]]:
        """A minute some sample was taken in: reported (0 when no job wrote to this system)."""
        rows = self._minutes.get(minute)
        if rows is None:
            rows = self._minutes[minute] = {}
        return rows

    def _rates(
        self, rows: dict[tuple[str, str], list[Any]]
    ) -> dict[tuple[str, str], tuple[float, float]]:
        return {jn: (math.fsum(w) / len(w), math.fsum(r) / len(r)) for jn, (w, r) in rows.items()}

    def _accs_tree(self, accs: list[list[Any]]) -> dict[str, Any]:
        """Per (minute, job, node) row its samples' write and read speeds."""
        return {
            "write": ragged_tree([w for w, _r in accs]),
            "read": ragged_tree([r for _w, r in accs]),
        }

    def _accs_from(self, tree: Any, n: int) -> list[list[Any]]:
        write = ragged_from_tree(tree_get(tree, "write"), "fs minute write", n)
        read = ragged_from_tree(tree_get(tree, "read"), "fs minute read", n)
        if any(len(w) != len(r) for w, r in zip(write, read, strict=True)):
            raise StateFormatError("state: fs minute: unequal numbers of write and read speeds")
        return [[w, r] for w, r in zip(write, read, strict=True)]


class FsStreams:
    """Every file system's :class:`FsRateStream`, made when a sample first names it (its
    minutes start there: the replay also reports the minutes before, as 0). ``thresholds``:
    per file system (alerts.hot_zone_fs), else ``threshold``."""

    __slots__ = ("thresholds", "threshold", "kw", "streams")

    def __init__(self, thresholds: dict[str, float], threshold: float, **kw: Any) -> None:
        self.thresholds, self.threshold, self.kw = dict(thresholds), threshold, kw
        self.streams: dict[str, FsRateStream] = {}

    def _make(self, fs: str) -> FsRateStream:
        thr = self.thresholds.get(fs, self.threshold)
        return FsRateStream(threshold=thr, subject=f"fs:{fs}", **self.kw)

    def update(self, samples: SampleBatch | Iterable[NodeSample]) -> None:
        """Every sample's minute is reported by every stream that exists when it comes; a
        sample's speeds go to its file systems' streams (made at its minute)."""
        b = as_batch(samples)
        if not len(b):
            return
        streams = self.streams
        minute = np.floor(b.ts / MINUTE).astype(np.int64)
        if streams:
            seen = np.unique(minute).tolist()
            for st in streams.values():
                for m in seen:
                    st.touch(m)
        for i in sorted(b.fs):
            m = int(minute[i])
            job, node = b.jobs[int(b.job[i])], b.nodes[int(b.node[i])]
            for fs, w, r in b.fs[i]:
                one = streams.get(fs)
                if one is None:
                    one = streams[fs] = self._make(fs)
                    for k in np.unique(minute[i:]).tolist():  # this sample's and the later ones'
                        one.touch(k)
                one.add(m, job, node, w, r)

    def close(
        self, until_minute: int
    ) -> list[tuple[str, list[MinuteRow], list[ZoneRow], list[Alert]]]:
        return [(fs, *self.streams[fs].close(until_minute)) for fs in sorted(self.streams)]

    def finish(self) -> list[tuple[str, list[MinuteRow], list[ZoneRow], list[Alert]]]:
        return [(fs, *self.streams[fs].finish()) for fs in sorted(self.streams)]

    def snapshot(self) -> dict[str, Any]:
        """Every file system's stream state (:meth:`DfsStream.snapshot`), in the order they
        were made; thresholds and the streams' arguments are configuration, not state."""
        return {"streams": [{"fs": fs, "state": st.snapshot()} for fs, st in self.streams.items()]}

    def restore(self, tree: dict[str, Any]) -> None:
        """:meth:`snapshot`'s streams, each made as :meth:`update` makes it (threshold and
        subject from its name), into this object."""
        streams: dict[str, FsRateStream] = {}
        for x in tree_list(tree_get(tree, "streams"), "fs streams"):
            fs = tree_str(tree_get(x, "fs"), "fs name")
            if fs in streams:
                raise StateFormatError(f"state: fs stream {fs!r} twice")
            one = streams[fs] = self._make(fs)
            one.restore(tree_get(x, "state"))
        self.streams = streams


def _alert_tree(a: Alert) -> dict[str, Any]:
    """An open hot-zone alert (its details: the top jobs) as a tree."""
    return a.to_dict()


def _alert_from(tree: Any) -> Alert:
    what = "hot_zone alert"
    if tree_str(tree_get(tree, "state"), f"{what} state") != FIRING:
        raise StateFormatError(f"state: an open {what} that is not firing")
    details = tree_get(tree, "details")
    if not isinstance(details, dict) or set(details) - {"top_jobs"}:
        raise StateFormatError(f"state: {what} details other than top_jobs")
    top = tree_pairs(details.get("top_jobs", []), f"{what} top_jobs")
    return Alert(
        tree_str(tree_get(tree, "id"), f"{what} id"),
        tree_str(tree_get(tree, "kind"), f"{what} kind"),
        tree_str(tree_get(tree, "subject"), f"{what} subject"),
        tree_str(tree_get(tree, "severity"), f"{what} severity"),
        FIRING,
        _opt_number(tree_get(tree, "value"), f"{what} value"),
        _opt_number(tree_get(tree, "threshold"), f"{what} threshold"),
        tree_str(tree_get(tree, "window"), f"{what} window"),
        tree_number(tree_get(tree, "since"), f"{what} since"),
        tree_number(tree_get(tree, "at"), f"{what} at"),
        {"top_jobs": [[tree_str(j, "top job"), tree_float(x, "top share")] for j, x in top]}
        if "top_jobs" in details
        else {},
    )


def _opt_number(v: Any, what: str) -> float | None:
    return None if v is None else tree_number(v, what)


def _episode_tree(ep: _Episode) -> dict[str, Any]:
    return {
        "start": ep.start,
        "last": ep.last,
        "peak": ep.peak,
        "minutes": ep.minutes,
        "run_start": ep.run_start,
        "job": list(ep.per_job),
        "written": ragged_tree(list(ep.per_job.values())),
    }


def _episode_from(tree: Any) -> _Episode:
    what = "dfs episode"
    jobs = tree_strs(tree_get(tree, "job"), f"{what} job")
    written = ragged_from_tree(tree_get(tree, "written"), f"{what} written", len(jobs))
    per_job = dict(zip(jobs, written, strict=True))
    if len(per_job) != len(jobs):
        raise StateFormatError(f"state: {what}: a job twice")
    return _Episode(
        tree_int(tree_get(tree, "start"), f"{what} start"),
        tree_int(tree_get(tree, "last"), f"{what} last"),
        tree_float(tree_get(tree, "peak"), f"{what} peak"),
        tree_int(tree_get(tree, "minutes"), f"{what} minutes"),
        tree_int(tree_get(tree, "run_start"), f"{what} run_start"),
        per_job,
    )
