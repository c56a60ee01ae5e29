"""The job family (seeds 001, 002, 004 and Open XDMoD usage) on the live flow (docs/state.md,
"Job events"): every job analytic of ``drainwatch replay --format swf|sacct|...`` and its
alerts.

* Forward step: each ``job-events`` message (one event, or several as JSON lines) is read
  into rows (bad lines and implausible times dead-lettered with their reason) and forwarded
  with its offset to ``jobs-partials``; nothing else is kept.
* Combine step: the :class:`~models.jobs.merge.JobEventMerger` releases events in the replay's
  order once every partition is past them (event time), cut at the zone's day edges as the
  replay cuts them, into the replay's own stages and :class:`~models.alerts.JobAlerts`; the
  drain combiner's job totals (key ``drain``) feed the :class:`~models.drain.jobjoin.DrainJobJoin`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from models.alerts import Alert, JobAlerts, shipper_alerts
from models.drain.jobjoin import DrainJobJoin
from models.drain.jobs import size_groups
from models.jobs.capability import DayCalendar
from models.jobs.merge import JobEventMerger
from models.records.jobevent import JobEvent, JobEventError, jobevent_row
from models.records.reject import Reject
from streams.codecs.base import CodecError
from streams.codecs.control import Marker, decode_marker, is_marker
from streams.codecs.deadletter import encode_dead_letter, message_text
from streams.codecs.partials import (
    DrainTotals,
    decode_job_partial,
    job_marker_entry,
    split_job_partial,
)
from streams.config import Settings
from streams.errors import Poison
from streams.live.checkpoint import Outbox
from streams.live.context import WorkerContext
from streams.live.runner import PoisonGuard, lines_in
from streams.sinks.adjust import AdjustTableFile
from streams.sources.jobevents import day_batches
from streams.stages.drain import size_group_row
from streams.stages.jobs import live_job_stages
from streams.tables.drain import DRAIN_JOBS_WITH_EVENTS, SIZE_GROUPS
from streams.tables.jobs import CAPABILITY_DAILY, RELEASE_FORECAST, RUNTIME_PREDICTIONS, SHORTJOBS

_native_rows: Callable[[bytes, float, float], list[bytes | None]] | None
try:
    from drainwatch_native import jobevent_rows as _native_rows
except ImportError:  # pragma: no cover - the pure-Python path (tests force it too)
    _native_rows = None

PARTIAL_EVENTS = 2000  # records per partials message (~300 kB; a batch of 500 more at most)
TAKE_WITHIN = 0.05  # a take goes with what it has after this: a small backlog waits for no more
INPUT_TAKE = 512
COMBINE_TAKE = 8  # partials messages the combiner takes at once


def chunks(entries: list[list[Any]], size: Callable[[Any], int] = len) -> Iterator[list[list[Any]]]:
    """[offset, records] entries in runs of about ``PARTIAL_EVENTS`` records (a message's
    records stay together: they share its offset)."""
    run: list[list[Any]] = []
    n = 0
    for e in entries:
        run.append(e)
        n += size(e[1])
        if n >= PARTIAL_EVENTS:
            yield run
            run, n = [], 0
    if run:
        yield run


def live_stages(settings: Settings) -> dict[str, Any]:
    """The replay's job stages as the worker runs them (:func:`live_job_stages`: the seeds'
    defaults, the settings' thresholds; capability and the node-release forecast only with a
    section size, ``jobs.section_nodes`` else ``accounting.nodes``)."""
    return live_job_stages(
        settings.accounting.tz,
        settings.accounting.cluster,
        settings.jobs.section_nodes or settings.accounting.nodes,
        settings.jobs.backfill_flags == "yes",
        settings.alerts.overrun_margin,
    )


def dead_letter(ctx: WorkerContext, out: Outbox, r: Reject, **where: Any) -> None:
    ctx.counts["dead_letters"] += 1
    out.dead.append((r.source.encode(), encode_dead_letter(r, **where)))


def dead_letter_late(
    ctx: WorkerContext, out: Outbox, merger: Any, late: list[Any], source: str, where: Any
) -> None:
    """Records a merger refused as late (behind what it released), each dead-lettered with
    the input message they came in (``where``: topic, partition, offset)."""
    for r in late:
        text = orjson.dumps(merger.encode(r)).decode()
        dead_letter(ctx, out, Reject("late", source, 0, text), **where)


def in_offset_order(
    entries: list[tuple[int, Any]], markers: list[tuple[int, Marker]]
) -> Iterator[tuple[int, Any]]:
    """A partial's record entries and shipper markers as one run in source-offset order (a
    marker is a message of its own, so no offset is both)."""
    return heapq.merge(entries, markers, key=itemgetter(0))


class JobsForward:
    name = "job-events"
    take = INPUT_TAKE
    within = TAKE_WITHIN
    stateful = False
    forward_each_part = True
    part_records = 8 * PARTIAL_EVENTS  # a backlog's take is forwarded in parts of this many

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        s = ctx.settings
        self.pending: dict[int, list[list[Any]]] = {}  # partition -> [offset, rows]
        # the compiled reader compares ts x 1000 with the bounds as doubles: exact for these
        self._bounds_exact = all(float(b) == b for b in (s.bounds.not_before, s.bounds.not_after))

    def topic(self) -> Any:
        return self.ctx.topics.job_events

    def partials_topic(self) -> Any:
        return self.ctx.topics.jobs_partials

    records_in = staticmethod(lines_in)

    def waiting_partitions(self) -> set[int]:
        return set(self.pending)

    def add(self, p: int, off: int, value: bytes, state: Any, out: Outbox) -> None:
        where = {"topic": self.topic().get_topic_name(), "partition": p, "offset": off}
        if is_marker(value):  # a shipper's marker: passed on in its place among the events
            try:
                m = decode_marker(value)
            except CodecError as e:
                bad = Reject(e.reason, self.name, 0, message_text(value))
                dead_letter(self.ctx, out, bad, **where)
                return
            if m is not None:
                self.ctx.counts["markers"] += 1
                self.pending.setdefault(p, []).append([off, job_marker_entry(m)])
            return
        rows = self.rows(value, where, out)
        if rows:
            self.pending.setdefault(p, []).append([off, rows])

    def rows(self, value: bytes, where: dict[str, Any], out: Outbox) -> list[bytes]:
        """One message's events as rows in JSON (models.records.jobevent.jobevent_row); each
        bad line is dead-lettered with its reason. The common line is read by ``native/``
        where it is built (jobevents.rs, the same rows); every other line by :meth:`row`."""
        s = self.ctx.settings
        native = _native_rows if self._bounds_exact else None
        if native is not None:
            got = native(value, float(s.bounds.not_before), float(s.bounds.not_after))
            if None not in got:
                self.ctx.counts["job_events"] += len(got)
                return got  # type: ignore[return-value]
            lines = value.splitlines() if b"\n" in value else [value]
            rows = []
            for r, line in zip(got, lines, strict=True):
                if r is None:
                    row = self.row(line, where, out)
                    if row is not None:
                        rows.append(orjson.dumps(row))
                else:
                    rows.append(r)
        else:
            rows = []
            for line in value.splitlines() if b"\n" in value else (value,):
                row = self.row(line, where, out)
                if row is not None:
                    rows.append(orjson.dumps(row))
        self.ctx.counts["job_events"] += len(rows)
        return rows

    def row(self, line: bytes, where: dict[str, Any], out: Outbox) -> list[Any] | None:
        """One line's row within the replay's absolute time bounds (ms; no time-jump rule
        here); None for a blank line, or a bad one, which is dead-lettered with its reason."""
        s = self.ctx.settings
        try:
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                if not line.strip():
                    return None
                raise JobEventError("bad_json", str(e)) from e
            row = jobevent_row(d)
            if not s.bounds.not_before <= row[1] * 1000 < s.bounds.not_after:
                raise JobEventError("implausible_time", repr(row[1]))
        except JobEventError as err:
            text = message_text(line)
            dead_letter(self.ctx, out, Reject(err.reason, self.name, 0, text), **where)
            return None
        return row

    def partials(self, p: int, state: Any) -> list[bytes]:
        """Runs of about PARTIAL_EVENTS records, each cut further to message_max_bytes."""
        cap = self.ctx.settings.kafka.message_max_bytes
        runs = chunks(self.pending.pop(p, []))
        return [v for run in runs for v in split_job_partial(p, run, cap)]


class JobsCombine:
    name = "jobs"
    owner = "jobs"
    kind = "jobs"
    version = 1
    take = COMBINE_TAKE
    within = TAKE_WITHIN

    def __init__(self, ctx: WorkerContext, partitions: int | None) -> None:
        self.ctx = ctx
        s = ctx.settings
        self.partitions = partitions  # of job-events: the merger waits for each of them
        self.cal = DayCalendar(s.accounting.tz)
        self.zone = ZoneInfo(s.accounting.tz)
        self.adjust = AdjustTableFile(s.jobs.adjust_out) if s.jobs.adjust_out else None
        self.merger = JobEventMerger(s.worker.lateness, partitions, s.worker.shipper_timeout)
        self.stages: dict[str, Any] = {}
        self.alerts = JobAlerts()
        self.join: DrainJobJoin | None = None

    def topic(self) -> Any:
        return self.ctx.topics.jobs_partials

    def fresh(self) -> None:
        s = self.ctx.settings
        self.merger = JobEventMerger(s.worker.lateness, self.partitions, s.worker.shipper_timeout)
        self.stages = live_stages(s)
        self.alerts = JobAlerts(
            None,
            s.alerts.shortjob_flood,
            s.alerts.cup40_target,
            s.alerts.overrun_margin,
            s.accounting.tz,
        )
        self.join = DrainJobJoin(s.alerts.ftl_node_hours)
        self._configure()

    def _configure(self) -> None:
        s = self.ctx.settings
        assert self.join is not None
        self.join.configure(
            size_groups(s.jobs.size_groups, s.accounting.nodes),
            s.alerts.sliding_top_k,
            s.alerts.sliding_rank_node_hours,
        )
        self.stages["shortjobs"].on_tick = self.adjust

    def restore(self, version: int, tree: Any) -> None:
        self.fresh()
        self.merger.restore(tree["merger"])
        self.merger.partitions = self.partitions
        for name, st in tree["stages"].items():
            if name in self.stages:  # a stage a later release dropped is ignored
                self.stages[name].restore(st)
        self.alerts.restore(tree["alerts"])
        assert self.join is not None
        self.join.restore(tree["join"])
        self._configure()

    def snapshot(self) -> Any:
        assert self.join is not None
        return {
            "merger": self.merger.snapshot(),
            "stages": {name: st.snapshot() for name, st in self.stages.items()},
            "alerts": self.alerts.snapshot(),
            "join": self.join.snapshot(),
        }

    def has_news(self) -> bool:
        return False

    def add(self, off: int, value: bytes, out: Outbox) -> None:
        m = decode_job_partial(value)
        if isinstance(m, DrainTotals):  # the drain combiner's job totals, to join
            if self.join is not None:
                self.join.drain(m.rows, m.watermark_ms)
            return
        merger, ctx, p = self.merger, self.ctx, m.partition
        topic = ctx.topics.job_events.get_topic_name()
        for src_off, item in in_offset_order(m.events, m.markers):
            if isinstance(item, Marker):
                self._marker(p, src_off, item, out)
                continue
            late = merger.add_many(p, src_off, item)  # not taken
            where = {"topic": topic, "partition": p, "offset": int(src_off)}
            dead_letter_late(ctx, out, merger, late, JobsForward.name, where)
        self._released(merger.release(), out)
        if merger.end_due():  # every shipper's input ended: the replay's end of input
            self._released(merger.end(), out)
            self._finish(out)

    def _marker(self, p: int, off: int, mk: Marker, out: Outbox) -> None:
        """A shipper's marker to the merger; a shipper silent past the timeout (or back) is a
        ``data_quality`` alert."""
        s = self.ctx.settings
        changes = self.merger.add_marker(p, off, mk.source, mk.ts, mk.sent, mk.end)
        if changes:
            topic = self.ctx.topics.job_events.get_topic_name()
            self._alerts(
                shipper_alerts(self.alerts.book, topic, changes, s.worker.shipper_timeout), out
            )

    def _finish(self, out: Outbox) -> None:
        """The end of every shipper's input: each stage's ``finish()`` rows, as the replay
        writes them at its end (the last short-job tick, the last days and turnover windows,
        every usage day, the jobs still pending), with their alerts."""
        ctx = self.ctx
        alerts: list[Alert] = []
        for stage in self.stages.values():
            for table, rows in stage.finish():
                if not isinstance(rows, list):  # a document (the adjust tables): no point
                    continue
                ctx.counts["rows"] += len(rows)
                alerts += self._write(table, rows, out)
        self._alerts(alerts, out)

    def _write(self, table: Any, rows: list[Any], out: Outbox) -> list[Alert]:
        """A stage's rows (not the run-time predictions) to points, and to the metric topics
        with their alerts for the short-job and capability tables."""
        out.influx.write(table, rows)
        if table is SHORTJOBS:
            out.metrics.write(table, rows)
            return self.alerts.shortjobs(rows)
        if table is CAPABILITY_DAILY:
            out.metrics.write(table, rows)
            return self.alerts.capability(rows)
        return []

    def watermark_lag(self) -> float | None:
        """How far the merger's watermark trails the newest event or marker time (s)."""
        return self.merger.lag()

    def _released(self, released: list[JobEvent], out: Outbox) -> None:
        """Released events through the stages, the join and the alerts. An error is a
        :class:`Poison` naming the stage and the events it stepped; while the runner cures
        one, its guard leaves out the poison and releases each suspect on its own (a release
        may end anywhere: the stages give the same state however it is cut)."""
        guard = self.poison_guard()
        for part in guard.pieces(released) if guard.active() else (released,):
            stage = "release"
            try:
                for batch in day_batches(self.cal, part):
                    self._step(batch, out)
                stage = "join"
                if self.join is not None:
                    self.join.events(part)
                stage = "alerts"
                if part:  # the new event time: jobs past their estimate, floods decayed
                    now = part[-1].ts
                    running = self.stages["runtime"].m.running(now)
                    self._alerts(self.alerts.overrun_started(running, now), out)
                    self._alerts(self.alerts.advance(self.stages["shortjobs"].m.last_tick_ts), out)
            except Poison:
                raise
            except Exception as e:
                raise Poison(stage, part, e) from e

    def origin(self, event: JobEvent, messages: list[bytes]) -> tuple[str, int, int] | None:
        """Where a poison ``event`` was read (job-events topic, partition, offset): the first
        of the partials ``messages`` (newest first) that holds it; None when none does."""
        key = (event.job, event.type, event.ts)
        topic = self.ctx.topics.job_events.get_topic_name()
        for value in messages:
            try:
                m = decode_job_partial(value)
            except CodecError:
                continue
            if isinstance(m, DrainTotals):
                continue
            for src_off, events in m.events:
                if any((e.job, e.type, e.ts) == key for e in events):
                    return (topic, m.partition, int(src_off))
        return None

    def poison_guard(self) -> PoisonGuard:
        """What the runner steers :meth:`_released` with while it cures a poison message
        (streams/live/runner.py): job events named by (job, type, time)."""
        guard: PoisonGuard | None = self.__dict__.get("_guard")
        if guard is None:
            guard = self._guard = PoisonGuard(lambda e: (e.job, e.type, e.ts))
        return guard

    def _alerts(self, alerts: list[Alert], out: Outbox) -> None:
        self.ctx.counts["alert_changes"] += out.add_alerts(
            self.ctx.settings.accounting.cluster, alerts
        )

    def _step(self, batch: list[JobEvent], out: Outbox) -> None:
        """One day-bounded batch through every stage: rows to points and messages, alerts. A
        stage's error is a :class:`Poison` naming the stage and the batch."""
        ctx, ja = self.ctx, self.alerts
        alerts: list[Alert] = []
        ends: dict[str, float] | None = None
        for name, stage in self.stages.items():
            try:
                for table, rows in stage.step(batch):
                    ctx.counts["rows"] += len(rows)
                    if table is RUNTIME_PREDICTIONS:  # at the job's end
                        if ends is None:
                            ends = {e.job: e.ts for e in batch if e.type == "end"}
                        times = [ends[r[0]] for r in rows]
                        out.influx.write_timed(RUNTIME_PREDICTIONS, rows, times)
                        alerts += ja.overrun_ended(rows, ends)
                        continue
                    alerts += self._write(table, rows, out)
            except Exception as e:
                raise Poison(name, batch, e) from e
        self._alerts(alerts, out)

    def flush_rows(self, out: Outbox) -> None:
        """Rows made at a flush rather than a step: the forecasts of jobs still pending, the
        usage days jobs ending changed, and the jobs whose drain or events changed (the join
        with the drain stream)."""
        release = self.stages.get("release")
        if release is not None:  # overwritten at their start
            out.influx.write(RELEASE_FORECAST, release.provisional_rows())
        for table, rows in self.stages["usage"].changed():
            out.influx.write(table, rows)
        if self.join is not None:
            rows, alerts, stamps = self.join.take()
            # at the job's stamp: its first charge moves as partitions report
            out.influx.write_timed(DRAIN_JOBS_WITH_EVENTS, rows, [ms / 1000 for ms in stamps])
            groups = [size_group_row(g) for g in self.join.size_group_rows()]
            out.influx.write_timed(SIZE_GROUPS, groups, [self.join.clock()] * len(groups))
            self._alerts(alerts, out)
