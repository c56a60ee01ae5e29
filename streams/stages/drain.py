"""Drain stages (seed 000): node-status batches -> drain by day, hour, node state and job.

:class:`DrainStage` feeds every NodeStatusBatch to :class:`models.drain.accountant.DrainAccountant`
and, at the end of the input, writes the window reports, the node-state breakdown and the per-job
drain; with job events (:class:`JobTimesStage`, ``replay --jobs``) also sizes, runtimes, the
size groups, the still-sliding jobs and failure to launch (seed 000 §IV-§V).
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
from streams.contracts import Output, Row, Table, cols
from streams.format import instant_ms

_WINDOW_COLS = cols(
    ("accounted_node_seconds", "seconds_ms", "node-seconds accrued to any state"),
    ("drain_node_seconds", "seconds_ms", "node-seconds Idle with a reservation (drain)"),
    ("unallocated_idle_node_seconds", "seconds_ms", "node-seconds Idle with rsvlist 'none'"),
    ("down_node_seconds", "seconds_ms", "node-seconds in state Down"),
    ("unaccounted_node_seconds", "seconds_ms", "node-seconds of intervals over --max-gap"),
    ("drain_pct_static", "number", "drain / (basis nodes x window length) x 100"),
    ("drain_pct_dynamic", "number", "drain / (accounted - Down) x 100"),
    ("basis_seconds_per_node", "number", "mean accounted seconds per node seen"),
    ("data_quality", "text", "`ok`, or `short` below --quality-min x length per node"),
)
DRAIN_DAILY = Table(
    "drain_daily.csv",
    (*cols(("day", "day", "calendar day in the configured zone")), *_WINDOW_COLS),
    "Drain per calendar day of the configured zone (DST days are 23 or 25 h long).",
)
DRAIN_HOURLY = Table(
    "drain_hourly.csv",
    (*cols(("hour", "instant_ms", "start of the hour")), *_WINDOW_COLS),
    "Drain per hour.",
)
NODE_STATES = Table(
    "node_states.csv",
    cols(
        ("node", "text", "node name"),
        ("state", "text", "Moab state (unknown states kept as written)"),
        ("has_rsv", "int", "1 if rsvlist was not 'none'"),
        ("has_job", "int", "1 if joblist was not 'none'"),
        ("seconds", "seconds_ms", "seconds accrued to this combination"),
    ),
    "Seconds per node, state and (reservation, job) combination (seed 000 §III-B.1).",
)
_JOB_COLS = cols(
    ("job", "text", "job or reservation id charged (first of rsvlist)"),
    ("drain_node_seconds", "seconds_ms", "idle node-seconds held for it"),
    ("nodes_charged", "int", "distinct nodes that were held for it"),
    ("first_charged", "instant_ms", "first record charged to it"),
    ("last_charged", "instant_ms", "last record charged to it"),
)
_JOB_EVENT_COLS = cols(
    ("size", "int", "nodes of the job (job events, else nodes seen running it)"),
    ("runtime", "number", "seconds from start to end (empty: not ended)"),
    ("drain_per_node", "number", "drain node-seconds / size"),
    ("drain_runtime_ratio", "number", "drain node-seconds / (size x runtime)"),
)
DRAIN_JOBS = Table(
    "drain_jobs.csv",
    _JOB_COLS,
    "Drain per job, largest first (ties by job id).",
)
DRAIN_JOBS_WITH_EVENTS = Table(
    "drain_jobs.csv",
    (*_JOB_COLS, *_JOB_EVENT_COLS),
    "Drain per job, largest first, with the job's size and runtime.",
    when="with --jobs",
)
SIZE_GROUPS = Table(
    "size_groups.csv",
    cols(
        ("group", "text", "size group of seed 000 §V-D"),
        ("jobs", "int", "jobs charged drain in the group"),
        ("drain_node_seconds", "number", "their drain"),
        ("mean_drain_node_seconds", "number", "mean drain per job"),
        ("mean_drain_per_node", "number", "mean drain per node of the job"),
        ("nodes_lo", "int", "smallest job size in the group on this machine"),
        ("nodes_hi", "int", "largest job size in the group (empty: no bound)"),
        ("scale", "text", "`absolute` (the seed's sizes) or `relative` (to the machine)"),
    ),
    "Drain by job size group (seed 000 §V-D). `--size-groups absolute`: the seed's sizes "
    "(Tiny 1-128 ... 16k+), made for Blue Waters; `relative`: the same boundaries as fractions "
    "of Blue Waters' 26,846 nodes, scaled to the machine (--nodes, else the nodes seen); "
    "`auto` (default): relative below 5,000 nodes. The summary's `size_groups` says which.",
    when="when any job was charged",
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


SLIDING_JOBS = Table(
    "sliding_jobs.csv",
    cols(
        ("rank", "int", "1 = largest drain per node"),
        ("job", "text", "job id"),
        ("drain_node_seconds", "number", "drain charged so far"),
        ("size", "int", "nodes (empty: unknown)"),
        ("drain_per_node", "number", "drain / size (or / nodes charged)"),
        ("nodes_charged", "int", "distinct nodes held for it"),
        ("first_charged", "instant_ms", "first record charged"),
        ("last_charged", "instant_ms", "last record charged"),
    ),
    "Perpetually sliding jobs: charged drain but never seen running (seed 000 §V-B).",
    when="when any job was charged",
)
FAILURE_TO_LAUNCH = Table(
    "failure_to_launch.csv",
    cols(
        ("job", "text", "job id"),
        ("drain_node_seconds", "number", "drain charged to it"),
        ("size", "int", "nodes"),
        ("runtime", "number", "seconds it ran"),
        ("drain_runtime_ratio", "number", "drain / (size x runtime)"),
    ),
    "Jobs drained for, then ran less than --ftl-threshold seconds (seed 000 §V-C).",
    when="with --jobs",
)
BACKFILL_DAILY = Table(
    "backfill_daily.csv",
    cols(
        ("day", "day", "calendar day in the configured zone"),
        (
            "backfill_node_seconds",
            "seconds_ms",
            "node-seconds of backfilled jobs in the day, running ones up to the end of the log "
            "(empty: the job events do not say which jobs were backfilled)",
        ),
        ("drain_node_seconds", "seconds_ms", "drain of the day (drain_daily.csv)"),
        (
            "backfill_efficiency",
            "number",
            "backfill / (backfill + drain) (empty: unknown, or neither in the day)",
        ),
    ),
    "Back-fill recovery per day (seed 000 §VI-A): how much of the node-time held for "
    "upcoming jobs was given back to backfilled jobs. Needs job events that flag backfilled "
    "jobs (sacct Flags, the simulator); a job without the flag counts as not backfilled.",
    when="with --jobs",
)
BACKLOG_HOURLY = Table(
    "backlog_hourly.csv",
    cols(
        ("hour", "instant_ms", "start of the hour"),
        ("idle_unallocated_node_seconds", "seconds_ms", "node-seconds Idle with rsvlist 'none'"),
        ("mean_idle_nodes", "number", "unallocated idle node-seconds / hour length"),
        ("jobs_queued", "int", "jobs queued (submitted, not started) at some time in the hour"),
        ("queued_node_seconds", "seconds_ms", "their nodes x time queued in the hour"),
        ("mean_queue_length", "number", "queued job-seconds / hour length"),
        ("smallest_queued_nodes", "int", "nodes of the smallest job queued in the hour"),
        (
            "verdict",
            "text",
            "`no_idle`; `no_backlog` (idle, nothing queued: lack of workload); `backlog_fits` "
            "(the smallest queued job fits in the mean idle nodes: room the scheduler did not "
            "use); `backlog_too_large` (every queued job needs more nodes than were idle)",
        ),
    ),
    "Unallocated idle time beside the queue, per hour (seed 000 §VI-B): is idle node-time a "
    "lack of suitable workload or room the scheduler left? The verdicts are a first "
    "classification of ours (the seed leaves it open).",
    when="with --jobs",
)
TABLES = (
    DRAIN_DAILY,
    DRAIN_HOURLY,
    NODE_STATES,
    DRAIN_JOBS,
    DRAIN_JOBS_WITH_EVENTS,
    SIZE_GROUPS,
    SLIDING_JOBS,
    FAILURE_TO_LAUNCH,
    BACKFILL_DAILY,
    BACKLOG_HOURLY,
)
FILES = sorted({t.file for t in TABLES} | {"summary_drain.json"})

# The rows the live worker writes to InfluxDB (docs/influxdb.md: ``drain``, ``node_states``,
# ``drain_job``), as tables: ``DrainStage(live=True)`` (``replay --influx``) writes them beside
# the reports, and the worker's combiner makes the same rows of its windows and jobs. They are
# InfluxDB's alone: no file (``replay`` keeps them out of --out), not in TABLES.
_LIVE_WHEN = "replay --influx (InfluxDB only, no file)"
_PROVISIONAL = ("provisional", "int", "true while the window ends after the last record")
LIVE_WINDOWS = Table(
    "drain_windows",
    (
        *cols(
            ("window", "text", "minute, hour or day"),
            ("start", "instant_ms", "start of the window"),
            ("length_seconds", "seconds_ms", "length of the window"),
            ("nodes", "int", "nodes seen in the window"),
        ),
        *_WINDOW_COLS,
        *cols(_PROVISIONAL),
    ),
    "Drain per minute, hour and day as the live worker writes it (measurement ``drain``).",
    when=_LIVE_WHEN,
)
LIVE_WINDOW_STATES = Table(
    "drain_window_states",
    cols(
        ("window", "text", "hour or day"),
        ("start", "instant_ms", "start of the window"),
        ("state", "text", "Moab state"),
        ("has_rsv", "int", "1 if rsvlist was not 'none'"),
        ("has_job", "int", "1 if joblist was not 'none'"),
        ("node_seconds", "seconds_ms", "node-seconds in this state and combination"),
        _PROVISIONAL,
    ),
    "Node-seconds per state and (reservation, job) combination of an hour or day, every "
    "node together (measurement ``node_states``).",
    when=_LIVE_WHEN,
)
LIVE_JOBS = Table(
    "drain_job_totals",
    cols(
        ("job", "text", "job or reservation id charged"),
        ("drain_node_seconds", "seconds_ms", "idle node-seconds held for it"),
        ("nodes_charged", "int", "distinct nodes that were held for it"),
        ("first_charged_ms", "int", "first record charged to it (POSIX ms)"),
        ("last_charged_ms", "int", "last record charged to it (POSIX ms)"),
        ("nodes_running", "int", "nodes seen running it"),
        ("time", "instant_ms", "the point's time: its first charge as first reported"),
    ),
    "A job's running drain totals (measurement ``drain_job``): every later total of the job "
    "overwrites the same point.",
    when=_LIVE_WHEN,
)
LIVE_TABLES = (LIVE_WINDOWS, LIVE_WINDOW_STATES, LIVE_JOBS)


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
