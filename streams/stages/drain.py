"""Drain stages (seed 000): node-status batches -> drain by day, hour, node state and job.

:class:`DrainStage` feeds every NodeStatusBatch to :class:`models.drain.accountant.DrainAccountant`
and, at the end of the input, writes the window reports, the node-state breakdown and the per-job
drain; with job events (:class:`JobTimesStage`, ``replay --jobs``) also sizes, runtimes, the
size groups, the still-sliding jobs and failure to launch (seed 000 §IV-§V). The tables are
declared in :mod:`streams.tables.drain`; the row helpers here shape the live worker's rows too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from models.drain.accountant import DrainAccountant, WindowRow
from models.drain.basis import QUALITY_MIN, static_basis_node_hours, window_basis
from models.drain.jobs import (
    FAILURE_TO_LAUNCH_S,
    JobDrain,
    JobTimes,
    SizeGroupRow,
    SizeGroups,
    by_size_group,
    drain_jobs_row,
    failure_to_launch,
    job_times,
    size_groups,
    sliding_jobs,
)
from models.drain.live import LiveJob, LiveWindow
from models.drain.recovery import Span, backfill_efficiency, backlog
from models.records.jobevent import JobEvent
from models.records.nodestatus import KNOWN_STATES, Codebook, NodeStatusBatch
from models.records.reorder import ReorderBuffer
from streams.contracts import Output, Row, Table
from streams.format import instant_ms
from streams.tables.drain import (
    BACKFILL_DAILY,
    BACKLOG_HOURLY,
    DRAIN_DAILY,
    DRAIN_HOURLY,
    DRAIN_JOBS,
    DRAIN_JOBS_WITH_EVENTS,
    FAILURE_TO_LAUNCH,
    LIVE_JOBS,
    LIVE_TABLES,
    LIVE_WINDOW_STATES,
    LIVE_WINDOWS,
    NODE_STATES,
    SIZE_GROUPS,
    SLIDING_JOBS,
)


def size_group_row(g: SizeGroupRow) -> tuple[object, ...]:
    """``size_groups.csv``'s row of a group (the replay's and the live join's)."""
    return (
        g.group,
        g.jobs,
        g.drain_s,
        g.mean_drain_s,
        g.mean_drain_per_node,
        g.nodes_lo,
        g.nodes_hi,
        g.scale,
    )


def live_window_rows(windows: Iterable[LiveWindow]) -> tuple[list[Row], list[Row]]:
    """Rows of LIVE_WINDOWS and LIVE_WINDOW_STATES of the windows (a state breakdown's
    combinations without node-seconds left out)."""
    rows: list[Row] = []
    states: list[Row] = []
    for w in windows:
        rows.append(
            (
                w.unit,
                w.start_ms,
                w.length_ms,
                w.nodes,
                w.accounted_ms,
                w.drain_ms,
                w.idle_unallocated_ms,
                w.down_ms,
                w.unaccounted_ms,
                w.drain_pct_static,
                w.drain_pct_dynamic,
                w.basis_seconds_per_node,
                w.data_quality,
                w.provisional,
            )
        )
        for state, combos in (w.states or {}).items():
            states += [
                (w.unit, w.start_ms, state, i >> 1, i & 1, ms, w.provisional)
                for i, ms in enumerate(combos)
                if ms
            ]
    return rows, states


def live_job_rows(jobs: Iterable[LiveJob]) -> list[Row]:
    """Rows of LIVE_JOBS of the jobs' totals."""
    return [
        (
            j.job,
            j.drain_ms,
            j.nodes_charged,
            j.first_charged_ms,
            j.last_charged_ms,
            j.nodes_running,
            j.time_ms,
        )
        for j in jobs
    ]


def _span(
    start: float | None, end: float | None, nodes: int | None, first_ms: int, last_ms: int
) -> Span | None:
    """[start, end) in ms on ``nodes`` nodes, inside the log's [first_ms, last_ms] (no end: up
    to ``last_ms``); None when unknown or outside."""
    if start is None or not nodes:
        return None
    lo = max(round(start * 1000), first_ms)
    hi = last_ms if end is None else min(round(end * 1000), last_ms)
    return Span(lo, hi, nodes) if hi > lo else None


class JobTimesStage:
    """Job events -> start, end and size per job, for the drain reports (``replay --jobs``)."""

    name = "job_times"

    def __init__(self) -> None:
        self.events: list[JobEvent] = []
        self._info: dict[str, JobTimes] | None = None

    @property
    def info(self) -> dict[str, JobTimes]:
        """Times per job over every event fed so far."""
        if self._info is None:
            self._info = job_times(self.events)
        return self._info

    def tables(self) -> Sequence[Table]:
        return ()

    def step(self, batch: list[JobEvent]) -> Iterable[Output]:
        self.events += batch
        self._info = None
        return ()

    def finish(self) -> Iterable[Output]:
        return ()

    def summary(self) -> dict[str, Any]:
        return {"events": len(self.events), "jobs": len(self.info)}


class DrainStage:
    name = "drain"

    def __init__(
        self,
        book: Codebook,
        tz: str,
        max_gap_s: float,
        basis_nodes: int | None = None,
        quality_min: float = QUALITY_MIN,
        ftl_threshold: float = FAILURE_TO_LAUNCH_S,
        jobs: JobTimesStage | None = None,
        reorder_window_s: float = 0.0,
        unit: str = "hour",
        size_groups: str = "auto",
        live: bool = False,
    ) -> None:
        """``unit``: the finest window; 'minute' when the rows also go to InfluxDB
        (:meth:`live_rows`), as the live worker writes them. ``size_groups``: auto, absolute or
        relative (models.drain.jobs.size_groups; the machine is ``basis_nodes``). ``live``:
        also write :meth:`live_rows` as LIVE_TABLES' rows (InfluxDB's, ``replay --influx``)."""
        self.book = book
        self.reorder = ReorderBuffer(round(reorder_window_s * 1000))
        self.tz = tz
        self.max_gap_s = max_gap_s
        self.acc = DrainAccountant(book, tz=tz, max_gap_ms=round(max_gap_s * 1000), unit=unit)
        self.basis_nodes_option = basis_nodes
        self.quality_min = quality_min
        self.ftl_threshold = ftl_threshold
        self.jobs = jobs
        self.size_groups_mode = size_groups
        self.live = live

    @property
    def basis_nodes(self) -> int:
        return self.basis_nodes_option or len(self.book.nodes)

    def machine_size_groups(self) -> SizeGroups:
        """The size groups of this machine: --nodes, else the nodes seen so far."""
        return size_groups(self.size_groups_mode, self.basis_nodes or None)

    def tables(self) -> Sequence[Table]:
        t = [DRAIN_DAILY, DRAIN_HOURLY, NODE_STATES]
        t.append(DRAIN_JOBS_WITH_EVENTS if self.jobs else DRAIN_JOBS)
        if self.jobs:
            t += [FAILURE_TO_LAUNCH, BACKFILL_DAILY, BACKLOG_HOURLY]
        if self.live:
            t += LIVE_TABLES
        return t

    def step(self, batch: NodeStatusBatch) -> Iterable[Output]:
        for part in self.reorder.push_parts(batch):
            self.acc.add(part)
        return ()

    def record_counts(self) -> dict[str, int]:
        c = self.acc.counts
        return {
            "duplicates": c.duplicates,
            "out_of_order": c.out_of_order,
            "reordered": self.reorder.reordered,
        }

    def _windows(self, rows: list[WindowRow], label: Any) -> Iterator[tuple[Any, ...]]:
        for w in rows:
            b = window_basis(
                w.drain_ms,
                w.accounted_ms,
                w.down_ms,
                w.nodes,
                w.length_ms,
                self.basis_nodes,
                self.quality_min,
            )
            yield (
                label(w.start_ms),
                w.accounted_ms,
                w.drain_ms,
                w.idle_unallocated_ms,
                w.down_ms,
                w.unaccounted_ms,
                b.drain_pct_static,
                b.drain_pct_dynamic,
                b.seconds_per_node,
                b.quality,
            )

    def _job_records(self) -> tuple[list[JobDrain], dict[str, int]]:
        """Every job charged drain, and its drain in exact node-milliseconds by job id."""
        acc, book = self.acc, self.book
        info = self.jobs.info if self.jobs else {}
        charged = acc.nodes_charged()
        running = acc.nodes_running()
        seen = acc.seen_running()
        out = []
        drain_ms: dict[str, int] = {}
        for j in acc.jobs_charged().tolist():
            name = book.jobs.name(j)
            jt = info.get(name)
            size = jt.nodes if jt and jt.nodes else (int(running[j]) or None)
            drain_ms[name] = int(acc.job_drain_ms[j])
            out.append(
                JobDrain(
                    name,
                    drain_ms[name] / 1000,
                    int(charged[j]),
                    int(acc.job_first_ms[j]),
                    int(acc.job_last_ms[j]),
                    size,
                    jt.runtime if jt else None,
                    bool(seen[j]) or bool(jt and jt.start is not None),
                )
            )
        return out, drain_ms

    def finish(self) -> Iterable[Output]:
        acc, book = self.acc, self.book
        acc.add(self.reorder.flush())
        days, hours = acc.daily(), acc.hourly()
        yield DRAIN_DAILY, list(self._windows(days, acc.days.local_label))
        yield DRAIN_HOURLY, list(self._windows(hours, lambda ms: ms))
        ns = acc.node_state_ms()
        yield (
            NODE_STATES,
            [
                (
                    book.nodes.names[n],
                    book.states.names[s],
                    int(c >> 1),
                    int(c & 1),
                    int(ns[n, s, c]),
                )
                for n, s, c in zip(*ns.nonzero(), strict=True)
            ],
        )
        jobs, j_ms = self._job_records()
        ranked = sorted(jobs, key=lambda j: (-j.drain_s, j.job))
        if self.jobs:
            yield (
                DRAIN_JOBS_WITH_EVENTS,
                [drain_jobs_row(j, j_ms[j.job]) for j in ranked],
            )
        else:
            yield (
                DRAIN_JOBS,
                [
                    (j.job, j_ms[j.job], j.nodes_charged, j.first_charged_ms, j.last_charged_ms)
                    for j in ranked
                ],
            )
        groups = by_size_group(jobs, self.machine_size_groups())
        if groups:
            yield (
                SIZE_GROUPS,
                [size_group_row(g) for g in groups],
            )
        sliding = sliding_jobs(jobs)
        if sliding:
            yield (
                SLIDING_JOBS,
                [
                    (
                        i + 1,
                        j.job,
                        j.drain_s,
                        j.size,
                        j.drain_s / (j.size or max(j.nodes_charged, 1)),
                        j.nodes_charged,
                        j.first_charged_ms,
                        j.last_charged_ms,
                    )
                    for i, j in enumerate(sliding)
                ],
            )
        if self.jobs:
            yield (
                FAILURE_TO_LAUNCH,
                [
                    (j.job, j.drain_s, j.size, j.runtime_s, j.drain_runtime_ratio)
                    for j in failure_to_launch(jobs, self.ftl_threshold)
                ],
            )
            yield from self._recovery(self.jobs.info, days, hours)
        if self.live:
            windows, live_jobs = self.live_rows()
            rows, states = live_window_rows(windows)
            yield LIVE_WINDOWS, rows
            yield LIVE_WINDOW_STATES, states
            yield LIVE_JOBS, live_job_rows(live_jobs)

    def _recovery(
        self, info: dict[str, JobTimes], days: list[WindowRow], hours: list[WindowRow]
    ) -> Iterator[Output]:
        """Back-fill efficiency per day and the backlog per hour (seed 000 §VI)."""
        acc = self.acc
        if acc.last_ms is None or not days:
            yield BACKFILL_DAILY, []
            yield BACKLOG_HOURLY, []
            return
        end = acc.last_ms
        flags = any(jt.backfill is not None for jt in info.values())
        first = days[0].start_ms
        bf = [_span(jt.start, jt.end, jt.nodes, first, end) for jt in info.values() if jt.backfill]
        acc.days.ensure(first, end)
        eff = backfill_efficiency(
            [d.start_ms for d in days],
            [d.drain_ms for d in days],
            [s for s in bf if s],
            acc.days.edges,
        )
        yield (
            BACKFILL_DAILY,
            [
                (
                    acc.days.local_label(w.start_ms),
                    w.backfill_node_ms if flags else None,
                    w.drain_node_ms,
                    w.efficiency if flags else None,
                )
                for w in eff
            ],
        )
        queued = [
            _span(
                jt.submit,
                jt.start if jt.start is not None else jt.end,
                jt.nodes,
                hours[0].start_ms,
                end,
            )
            for jt in info.values()
        ]
        acc.hours.ensure(hours[0].start_ms, end)
        rows = backlog(
            [h.start_ms for h in hours],
            [h.length_ms for h in hours],
            [h.idle_unallocated_ms for h in hours],
            [q for q in queued if q],
            acc.hours.edges,
        )
        yield (
            BACKLOG_HOURLY,
            [
                (
                    w.start_ms,
                    w.idle_unallocated_node_ms,
                    w.mean_idle_nodes,
                    w.jobs_queued,
                    w.queued_node_ms,
                    w.queued_job_ms / w.length_ms,
                    w.smallest_queued_nodes,
                    w.verdict,
                )
                for w in rows
            ],
        )

    def live_rows(self) -> tuple[list[LiveWindow], list[LiveJob]]:
        """The rows the live worker writes for the same records (after :meth:`finish`): every
        window, provisional when it ends after the last record, and every job charged."""
        acc = self.acc
        last = acc.last_ms if acc.last_ms is not None else 0
        units = [("hour", acc.hourly()), ("day", acc.daily())]
        if acc.unit == "minute":
            units.insert(0, ("minute", acc.windows()))
        rows = []
        for unit, ws in units:
            states = acc.state_ms(unit) if unit != "minute" else {}
            rows += [
                LiveWindow.of(
                    unit,
                    w,
                    self.basis_nodes,
                    self.quality_min,
                    w.start_ms + w.length_ms > last,
                    states.get(w.start_ms),
                )
                for w in ws
            ]
        running = acc.nodes_running()
        charged = acc.nodes_charged()
        jobs = [
            LiveJob(
                self.book.jobs.name(j),
                int(acc.job_drain_ms[j]),
                int(charged[j]),
                int(acc.job_first_ms[j]),
                int(acc.job_last_ms[j]),
                int(running[j]),
                int(acc.job_first_ms[j]),
            )
            for j in acc.jobs_charged().tolist()
        ]
        return rows, jobs

    def summary(self) -> dict[str, Any]:
        acc, book = self.acc, self.book
        c = acc.counts
        span_s = 0.0
        if acc.first_ms is not None and acc.last_ms is not None:
            span_s = (acc.last_ms - acc.first_ms) / 1000
        names = book.states.names
        return {
            "records": c.records,
            "intervals": c.intervals,
            "gaps_over_max_gap": c.gaps,
            "max_gap_seconds": self.max_gap_s,
            "nodes": len(book.nodes),
            "basis_nodes": self.basis_nodes,
            "static_basis_node_hours": static_basis_node_hours(self.basis_nodes, span_s),
            "jobs_and_reservations": len(book.jobs),
            "jobs_charged_drain": int(acc.jobs_charged().size),
            "records_by_state": {
                n: int(k) for n, k in zip(names, acc.state_records.tolist(), strict=False)
            },
            "unknown_states": {
                n: int(k)
                for n, k in zip(
                    names[len(KNOWN_STATES) :],
                    acc.state_records[len(KNOWN_STATES) :].tolist(),
                    strict=False,
                )
            },
            "first_record": instant_ms(acc.first_ms) or None,
            "last_record": instant_ms(acc.last_ms) or None,
            "quality_min": self.quality_min,
            "ftl_threshold_seconds": self.ftl_threshold if self.jobs else None,
            **self._size_group_summary(),
        }

    def _size_group_summary(self) -> dict[str, Any]:
        g = self.machine_size_groups()
        return {
            "size_groups": g.scale,
            "size_groups_machine_nodes": g.machine_nodes,
            "size_groups_bounds": {name: [lo, hi] for name, lo, hi in g.groups},
        }
