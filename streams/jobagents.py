"""The live job-events path (docs/state.md, "Job events"): every job analytic of
``drainwatch replay --format swf|sacct|...`` on the stream, and its alerts.

* ``job-events`` agent (``concurrency=1``; the partitions this worker owns): decodes each
  message into a JobEvent (bad ones and implausible times go to the dead-letter topic with
  their reason) and keeps it with its offset. As it takes them (and at every flush) it sends
  each partition's new events to ``jobs-partials`` (at most ``PARTIAL_EVENTS`` per message),
  then acks the events once the broker has them. It holds no other state: the merger below
  recognises a re-sent event by (partition, offset).
* ``jobs-partials`` agent: the :class:`~models.jobs.merge.JobEventMerger` releases events in
  the replay's order once every partition is past them (event time), cut at the zone's day
  edges as the replay cuts them, into the replay's own stages (usage, short-job penalties,
  turnover, run-time predictions, capability, fair share) and :class:`~models.alerts.JobAlerts`.
  Its InfluxDB points go to a write queue (streams/sinks/writequeue.py), handed over as soon
  as ``HAND_OVER_POINTS`` wait. Every ``flush_interval`` the rest of the points and the metric
  messages go out, the alert changes to ``alerts``; once the queue has written every point
  handed over, the merger, the stages and the open alerts are saved to ``worker-state`` and
  only then are the partials acked (the drain path's invariant). Between two flushes, the
  rows are written without the state and the acks (a write-out: a restart from the last saved
  state writes the same points again, and they overwrite themselves) once ``FLUSH_POINTS``
  points or messages wait, and once the combiner has caught up with its input (no partials for
  ``WRITE_OUT_IDLE`` s, checked every ``WRITE_OUT_EVERY`` s).
"""

from __future__ import annotations

import asyncio
import pickle
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from models.alerts import Alert, JobAlerts
from models.drain.jobjoin import DrainJobJoin
from models.drain.jobs import size_groups
from models.jobs.capability import DEFAULT_FRACTION, CapabilityUse, DayCalendar
from models.jobs.fairshare import DEFAULT_HALF_LIFE_S, FairShareUsage
from models.jobs.merge import JobEventMerger
from models.jobs.runtime import RuntimePredictor
from models.jobs.shortjobs import ShortJobPenalty
from models.jobs.turnover import SlotTurnover
from models.jsonbytes import json_bytes
from models.records.jobevent import (
    JobEvent,
    JobEventError,
    jobevent_from_own_dict,
    jobevent_from_row,
    jobevent_row,
)
from models.records.reject import Reject
from streams.agents import fatal_errors, send_many
from streams.config import Settings
from streams.sinks.adjust import AdjustTableFile
from streams.sinks.influx import InfluxSink
from streams.sinks.jobpoints import (
    alert_line,
    alert_message,
    row_messages,
    table_lines,
    timed_line,
    timed_lines,
)
from streams.sinks.statestore import StateStore
from streams.sinks.writequeue import WriteQueue
from streams.sources.jobevents import day_batches
from streams.stages.drain import DRAIN_JOBS_WITH_EVENTS, SIZE_GROUPS, size_group_row
from streams.stages.jobs import (
    CAPABILITY_DAILY,
    RELEASE_FORECAST,
    RUNTIME_PREDICTIONS,
    SHORTJOBS,
    CapabilityStage,
    FairShareStage,
    ReleaseForecastStage,
    RuntimeStage,
    ShortJobsStage,
    TurnoverStage,
    UsageStage,
)
from streams.topics import dead_letter_message

_native_rows: Callable[[bytes, float, float], list[bytes | None]] | None
try:
    from drainwatch_native import jobevent_rows as _native_rows
except ImportError:  # pragma: no cover - the pure-Python path (tests force it too)
    _native_rows = None

PARTIAL_EVENTS = 2000  # records per partials message (~300 kB; a batch of 500 more at most)
COMBINE_TAKE = 8  # partials messages the combiner takes at once (a flush can come between)
# seconds a take waits to fill before it goes with what it has: at 0.5 s a backlog smaller
# than a take (the KTH trace's 176 messages) waited all of it before its first forward, and a
# burst's last partials before the combiner took them (alert latency p50 0.41 -> 0.06 s, p99
# 1.02 -> 0.20 s). The drain path keeps 0.5 s: its node-status takes are numpy batches, and at
# 0.05 s its records/s fell ~12 % (bench/bench_live.py, alternated)
TAKE_WITHIN = 0.05
# points or messages waiting that start a write-out before the timer's flush (the state is
# saved by the timer's flush only: pickling it at every 20,000 points cost ~0.5 us a job event,
# KTH x 3)
FLUSH_POINTS = 20_000
# points the combiner hands to the write queue itself (two requests of InfluxSink's batch)
HAND_OVER_POINTS = 10_000
# points handed over and not yet written at which the combiner waits for InfluxDB (down, or
# behind): its partials wait in Kafka, not in the worker's memory (~40 MB of lines)
WRITE_BACKLOG_POINTS = 200_000
# a combiner without partials for WRITE_OUT_IDLE s writes what waits (checked every
# WRITE_OUT_EVERY s): a burst's last rows are in InfluxDB ~0.1 s after it, not at the next flush
WRITE_OUT_EVERY, WRITE_OUT_IDLE = 0.1, 0.05
STATE_KEY = "jobs"
# 2: the stages themselves (pickled: they are the replay's objects; the state topic is the
# worker's own, written and read by the same release)
STATE_FORMAT = 2


def _chunks(
    entries: list[list[Any]], size: Callable[[Any], int] = len
) -> Iterator[list[list[Any]]]:
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
    """The replay's job stages with the seeds' defaults and the settings' thresholds, by name;
    capability and the node-release forecast only with a section size (``jobs.section_nodes``,
    else ``accounting.nodes``); the forecast also writes its rows at the submit (provisional)."""
    tz = settings.tz
    stages: dict[str, Any] = {
        "usage": UsageStage(tz, settings.cluster),
        "shortjobs": ShortJobsStage(ShortJobPenalty()),
        "turnover": TurnoverStage(SlotTurnover(), tz),
        "runtime": RuntimeStage(
            RuntimePredictor(overrun_margin=settings.alert_overrun_margin), keep=False
        ),
        "fairshare": FairShareStage(FairShareUsage(DEFAULT_HALF_LIFE_S, ("NODE_FAIL",)), tz),
    }
    section = settings.section_nodes or settings.nodes
    if section:
        use = CapabilityUse(section, DEFAULT_FRACTION, tz, settings.backfill_flags == "yes")
        stages["capability"] = CapabilityStage(use, tz, "setting", "live: no Red/Black partitions")
        stages["release"] = ReleaseForecastStage(section, provisional=True)
    return stages


class JobsPipeline:
    def __init__(
        self, app: Any, settings: Settings, sink: InfluxSink | None, partitions: int | None
    ) -> None:
        self.app = app
        self.partitions = partitions  # of job-events: the merger waits for each of them
        self.settings = settings
        self.topics = app.drainwatch_topics
        self.sink = sink
        # points go to InfluxDB in order from a thread of their own, handed over as soon as
        # HAND_OVER_POINTS wait (streams/sinks/writequeue.py); a flush waits for them written
        self.writes = WriteQueue(sink.write, self.SOURCE) if sink is not None else None
        self.store = StateStore(settings, self.topics.worker_state.get_topic_name(),
                                app.conf.id, self._send_state)  # fmt: skip
        self.pending: dict[int, list[list[Any]]] = {}  # partition -> [offset, event dict]
        self.held: dict[int, list[Any]] = {}
        self.flights: list[asyncio.Future[None]] = []  # publishes waiting for the broker
        self.dead: list[tuple[bytes, bytes]] = []  # dead letters (key, value) not yet sent
        self.lock = asyncio.Lock()
        self.merger: JobEventMerger | None = None
        self.stages: dict[str, Any] | None = None
        self.join: DrainJobJoin | None = None  # the jobs path only
        self.alerts = JobAlerts()
        self.cal = DayCalendar(settings.tz)
        self.zone = ZoneInfo(settings.tz)
        self.adjust = AdjustTableFile(settings.adjust_out) if settings.adjust_out else None
        self.offset = -1  # last jobs-partials offset in the merger's state
        self.comb_held: list[Any] = []
        self.points: list[Any] = []  # InfluxDB points of the rows since the last flush
        self.last_partials = 0.0  # time.monotonic() when the combiner last took partials
        self.messages: list[tuple[Any, bytes, bytes]] = []  # (topic, key, value)
        self.alert_messages: list[tuple[bytes, bytes]] = []  # sent after each message
        self.comb_lock = asyncio.Lock()
        self.flush_lock = asyncio.Lock()  # one flush at a time
        self.io_idle = asyncio.Event()  # clear while a flush writes what it took
        self.io_idle.set()
        self.suspect = False  # jobs-partials was revoked since the state was last checked
        self.counts: Counter[str] = Counter()
        # the compiled reader compares ts x 1000 with the bounds as doubles: exact for these
        self._bounds_exact = all(float(b) == b for b in (settings.not_before, settings.not_after))

    async def _send_state(self, key: bytes, value: bytes) -> None:
        await (await self.topics.worker_state.send(key=key, value=value))

    def _dead_letter(self, r: Reject, **where: Any) -> None:
        self.counts["dead_letters"] += 1
        self.dead.append((r.source.encode(), json_bytes(dead_letter_message(r, **where))))

    # ---- job-events -------------------------------------------------------------------------
    SOURCE = "job-events"
    INPUT_TAKE = 512  # input messages the first stage takes at once
    IN_FLIGHT = 4  # publishes whose acks may wait while the next part is read
    PUBLISH_RECORDS = 8 * PARTIAL_EVENTS  # forwarded once read, before the rest of a take
    STATE_KEY = STATE_KEY

    def _input_topic(self) -> Any:
        return self.topics.job_events

    def _partials_topic(self) -> Any:
        return self.topics.jobs_partials

    def _records(self, value: bytes, where: dict[str, Any]) -> Any:
        """One message's events for the partials, as rows in JSON (a message holds one event,
        or several as JSON lines: ``drainwatch ship jobs`` sends a partition's events in
        batches); each bad line is dead-lettered with its reason. None: nothing usable. The
        common line is read and written by ``native/`` where it is built (jobevents.rs, the
        same rows: tests/streams/test_jobrows.py); every other line by :meth:`_row`."""
        s = self.settings
        native = _native_rows if self._bounds_exact else None
        if native is not None:
            got = native(value, float(s.not_before), float(s.not_after))
            if None not in got:
                self.counts["job_events"] += len(got)
                return got or None
            lines = value.splitlines() if b"\n" in value else [value]
            out = []
            for r, line in zip(got, lines, strict=True):
                if r is None:
                    row = self._row(line, where)
                    if row is not None:
                        out.append(orjson.dumps(row))
                else:
                    out.append(r)
        else:
            out = []
            for line in value.splitlines() if b"\n" in value else (value,):
                row = self._row(line, where)
                if row is not None:
                    out.append(orjson.dumps(row))
        self.counts["job_events"] += len(out)
        return out or None

    def _row(self, line: bytes, where: dict[str, Any]) -> list[Any] | None:
        """One line's row (models.records.jobevent.jobevent_row), within the replay's absolute
        time bounds (ms; no time-jump rule here); None for a blank line, or a bad one, which
        is dead-lettered with its reason."""
        s = self.settings
        try:
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                if not line.strip():
                    return None
                raise JobEventError("bad_json", str(e)) from e
            row = jobevent_row(d)
            if not s.not_before <= row[1] * 1000 < s.not_after:
                raise JobEventError("implausible_time", repr(row[1]))
        except JobEventError as err:
            text = line[:4096].decode("utf-8", "replace")
            self._dead_letter(Reject(err.reason, self.SOURCE, 0, text), **where)
            return None
        return row

    def input_parts(self, events: list[Any]) -> Iterator[list[Any]]:
        """A take of input messages in runs of about ``PUBLISH_RECORDS`` records (a message of
        several holds them as lines), each forwarded before the next is read: a take of a
        backlog's 512 messages held about 250,000 job events, all read before the combiner
        had any."""
        run: list[Any] = []
        n = 0
        for ev in events:
            run.append(ev)
            v = ev.value
            n += v.count(b"\n") + 1 if isinstance(v, bytes | bytearray) else 1
            if n >= self.PUBLISH_RECORDS:
                yield run
                run, n = [], 0
        if run:
            yield run

    def _size(self, rec: Any) -> int:
        """How many records a forwarded entry holds."""
        return len(rec)

    def _encode_partial(self, p: int, entries: list[list[Any]]) -> bytes:
        """A partials message: a partition's [offset, records] entries, the records rows
        already in JSON: ``{"partition": p, "events": [[offset, [row, ...]], ...]}``."""
        events = b",".join(b"[%d,[%b]]" % (off, b",".join(rows)) for off, rows in entries)
        return b'{"partition":%d,"events":[%b]}' % (p, events)

    def _decode_partial(self, value: bytes) -> dict[str, Any]:
        d: dict[str, Any] = orjson.loads(value)
        return d

    async def on_input(self, events: Iterable[Any]) -> None:
        drain = getattr(self.app, "drainwatch_pipeline", None)
        if drain is not None:  # the stalled-pipeline alert's clock
            drain.input_seen(self._input_topic().get_topic_name())
        async with self.lock:
            for ev in events:
                msg = ev.message
                p, off = msg.tp.partition, msg.offset
                value = ev.value if isinstance(ev.value, bytes) else bytes(ev.value or b"")
                rec = self._records(value, {"topic": msg.topic, "partition": p, "offset": off})
                if rec is not None:
                    self.pending.setdefault(p, []).append([off, rec])
                self.held.setdefault(p, []).append(ev)

    async def publish(self, wait: bool = True) -> None:
        """Send every partition's new events to jobs-partials, then ack them once the broker
        has them. A backlog goes out with the partitions' messages interleaved (the first of
        each, then the second...): the combiner releases events only once every partition is
        past them, so one partition's whole backlog before the next one's would hold everything
        until the last arrived. ``wait=False`` (the job-events agent, between the parts of a
        take): the sends are queued and their acks happen in order once the broker has them,
        while the next part is read; at most ``IN_FLIGHT`` publishes wait so; a failed send
        stops the agent at its next publish (nothing after it is acked)."""
        async with self.lock:
            dead, self.dead = self.dead, []
            parts = sorted(set(self.held) | set(self.pending))
            runs = {p: list(_chunks(self.pending.pop(p, []), self._size)) for p in parts}
            topic, partials = self.topics.dead_letter, self._partials_topic()
            queued = [await topic.send(key=k, value=v) for k, v in dead]  # queued in order
            for i in range(max((len(r) for r in runs.values()), default=0)):
                for p in parts:
                    if i < len(runs[p]):  # each send made only as it is awaited
                        value = self._encode_partial(p, runs[p][i])
                        queued.append(await partials.send(key=str(p).encode(), value=value))
            held = [self.held.pop(p) for p in parts if p in self.held]
            flight = asyncio.ensure_future(self._acked(self.flights[-1:], queued, held))
            self.flights.append(flight)
        while self.flights and (wait or len(self.flights) > self.IN_FLIGHT
                                or self.flights[0].done()):  # fmt: skip
            first = self.flights[0]
            await first  # raises a failed send's error
            if self.flights and self.flights[0] is first:  # (the flush timer publishes too)
                self.flights.pop(0)

    @staticmethod
    async def _acked(before: list[asyncio.Future[None]], queued: list[Any],
                     held: list[list[Any]]) -> None:  # fmt: skip
        """Once the publish before (if any) has acked its events and the broker has every
        one of ``queued``: ack the ``held`` events (per partition, ascending offsets)."""
        if before:
            await before[0]
        if queued:
            await asyncio.gather(*queued)
        for events in held:
            for ev in events:
                ev.ack()

    async def revoked(self, tps: Iterable[Any]) -> None:
        """Nothing is dropped: events this worker still holds are forwarded anyway, unacked (a
        new owner forwarding them too is harmless: the merger keeps one copy per (partition,
        offset)), and the merger's state stays until its next message shows whether it is
        still current (see :meth:`on_partials`)."""
        je = self._input_topic().get_topic_name()
        jp = self._partials_topic().get_topic_name()
        tps = list(tps)
        async with self.lock:
            if self.flights:  # publishes under way ack their events first
                await asyncio.gather(*self.flights, return_exceptions=True)
            for tp in tps:
                if tp.topic == je:  # its events are still forwarded; their acks are void
                    self.held.pop(tp.partition, None)
        if any(tp.topic == jp for tp in tps):
            async with self.comb_lock:
                self.suspect = True

    # ---- jobs-partials ----------------------------------------------------------------------
    async def _state(self) -> tuple[JobEventMerger, dict[str, Any]]:
        if self.merger is None or self.stages is None:
            data = await self.store.load(self.STATE_KEY)
            s = self.settings
            self.alerts = JobAlerts(None, s.alert_shortjob_flood, s.alert_cup40_target,
                                    s.alert_overrun_margin, s.tz)  # fmt: skip
            self.join = DrainJobJoin(s.alert_ftl_node_hours)
            if data is None:
                self.merger = JobEventMerger(s.lateness, self.partitions)
                self.stages, self.offset = live_stages(s), -1
            else:
                try:
                    d = pickle.loads(data)  # noqa: S301 (the worker's own state topic)
                except Exception:
                    d = None
                if not isinstance(d, dict) or d.get("format") != STATE_FORMAT:
                    raise ValueError("job state: not format 2, not readable by this release")
                self.merger = JobEventMerger.from_dict(d["merger"])
                self.merger.partitions = self.partitions
                self.stages, self.offset = d["stages"], int(d["offset"])
                fresh = live_stages(s)  # a stage this release added starts empty
                for name in fresh.keys() - self.stages.keys():
                    self.stages[name] = fresh[name]
                self.alerts.restore(d["alerts"])
                self.join = d["join"]
            self.join.configure(size_groups(s.size_groups, s.nodes), s.alert_sliding_top_k,
                                s.alert_sliding_rank_node_hours)  # fmt: skip
            self.stages["shortjobs"].on_tick = self.adjust
        return self.merger, self.stages

    def _alerts(self, alerts: list[Alert]) -> None:
        """Alert changes: their records go out as soon as the message that made them is
        processed (:meth:`send_alerts`), their points with the next flush. A worker restarted
        before its state was saved sends the same records again (same id, state and times)."""
        cluster = self.settings.cluster
        for a in alerts:
            self.points.append(alert_line(cluster, a))
            self.alert_messages.append((a.id.encode(), json_bytes(alert_message(cluster, a))))
        self.counts["alert_changes"] += len(alerts)

    async def send_alerts(self) -> None:
        if self.alert_messages:
            msgs, self.alert_messages = self.alert_messages, []
            await send_many(self.app, [(self.topics.alerts, k, v) for k, v in msgs])

    def _step(self, stages: dict[str, Any], batch: list[JobEvent]) -> None:
        """One day-bounded batch through every stage: rows to points and messages, alerts."""
        cluster, zone, ja = self.settings.cluster, self.zone, self.alerts
        alerts: list[Alert] = []
        ends: dict[str, float] | None = None
        for stage in stages.values():
            for table, rows in stage.step(batch):
                self.counts["rows"] += len(rows)
                if table is RUNTIME_PREDICTIONS:  # at the job's end
                    if ends is None:
                        ends = {e.job: e.ts for e in batch if e.type == "end"}
                    times = [ends[r[0]] for r in rows]
                    self.points += timed_lines(RUNTIME_PREDICTIONS, cluster, rows, times, zone)
                    alerts += ja.overrun_ended(rows, ends)
                    continue
                self.points += table_lines(cluster, table, rows, zone)
                if table is SHORTJOBS:
                    alerts += ja.shortjobs(rows)
                    topic = self.topics.metrics_shortjobs
                    self.messages += [
                        (topic, f"{r[1]}:{r[2]}".encode(), m)
                        for r, m in zip(rows, row_messages(cluster, table, rows), strict=True)
                    ]
                elif table is CAPABILITY_DAILY:
                    alerts += ja.capability(rows)
                    topic = self.topics.metrics_capability
                    self.messages += [
                        (topic, str(r[0]).encode(), m)
                        for r, m in zip(rows, row_messages(cluster, table, rows), strict=True)
                    ]
        self._alerts(alerts)

    def _take(self, merger: Any, p: int, off: int, rec: Any) -> list[Any]:
        """The message's records (rows, checked by the forwarding agent; objects from a
        release before rows) into the merger; returns the late ones."""
        if rec and isinstance(rec[0], dict):
            events = [jobevent_from_own_dict(d) for d in rec]
        else:
            events = [jobevent_from_row(r) for r in rec]
        return merger.add_many(p, off, events)  # type: ignore[no-any-return]

    def _released(self, stages: dict[str, Any], released: list[Any]) -> None:
        for batch in day_batches(self.cal, released):
            self._step(stages, batch)
        if self.join is not None:
            self.join.events(released)
        if released:  # the new event time: jobs past their estimate, floods decayed
            now = released[-1].ts
            running = stages["runtime"].m.running(now)
            self._alerts(self.alerts.overrun_started(running, now))
            self._alerts(self.alerts.advance(stages["shortjobs"].m.last_tick_ts))

    async def on_partials(self, events: Iterable[Any]) -> None:
        self.last_partials = time.monotonic()
        async with self.comb_lock:
            for ev in events:
                off = ev.message.offset
                if self.suspect and self.merger is not None and off > self.offset + 1:
                    # another worker took messages this state has not seen: start again from
                    # the last saved state (what this worker held unacked comes again), once
                    # a flush under way has saved its own
                    await self.io_idle.wait()
                    self.merger, self.stages, self.comb_held = None, None, []
                    self.points, self.messages, self.alert_messages = [], [], []
                    self.counts["state_reloads"] += 1
                self.suspect = False
                merger, stages = await self._state()
                if off <= self.offset:
                    ev.ack()
                    continue
                d = self._decode_partial(ev.value)
                p = int(d["partition"])
                if "drain" in d:  # the drain combiner's job totals, to join
                    if self.join is not None:
                        self.join.drain(d["drain"], d.get("watermark_ms"))
                    self.offset = off
                    self.comb_held.append(ev)
                    continue
                for src_off, rec in d["events"]:
                    for r in self._take(merger, p, int(src_off), rec):  # late: not taken
                        text = orjson.dumps(merger.encode(r)).decode()
                        self._dead_letter(Reject("late", self.SOURCE, 0, text),
                                          topic=self._input_topic().get_topic_name(),
                                          partition=p, offset=int(src_off))  # fmt: skip
                self._released(stages, merger.release())
                if len(self.points) >= HAND_OVER_POINTS:  # InfluxDB writes them meanwhile
                    self._hand_over()
                self.offset = off
                self.comb_held.append(ev)
            await self.send_alerts()
        self.last_partials = time.monotonic()

    def _flush_rows(self) -> None:
        """Rows made at a flush rather than a step: the usage days jobs ending changed, and
        the jobs whose drain or events changed (the join with the drain stream)."""
        assert self.stages is not None
        cluster, zone = self.settings.cluster, self.zone
        release = self.stages.get("release")
        if release is not None:  # forecasts of jobs still pending, overwritten at their start
            rows = release.provisional_rows()
            self.points += table_lines(cluster, RELEASE_FORECAST, rows, zone)
        for table, rows in self.stages["usage"].changed():
            self.points += table_lines(cluster, table, rows, zone)
        if self.join is not None:
            rows, alerts, stamps = self.join.take()
            # at the job's stamp: its first charge moves as partitions report
            times = [ms / 1000 for ms in stamps]
            self.points += timed_lines(DRAIN_JOBS_WITH_EVENTS, cluster, rows, times, zone)
            at = self.join.clock()
            self.points += [
                timed_line(SIZE_GROUPS, cluster, size_group_row(g), at, zone)
                for g in self.join.size_group_rows()
            ]
            self._alerts(alerts)

    def _hand_over(self) -> None:
        """The points waiting to the write queue (in order; none without InfluxDB)."""
        points, self.points = self.points, []
        if self.writes is not None:
            self.writes.submit(points)
        self.counts["points_written"] += len(points)

    async def keep_up(self) -> None:
        """Wait until the write queue has written what was handed over when more than
        ``WRITE_BACKLOG_POINTS`` wait for it (InfluxDB down or behind)."""
        w = self.writes
        if w is not None and w.handed - w.written > WRITE_BACKLOG_POINTS:
            self.counts["write_waits"] += 1
            await w.barrier()

    def _saved(self) -> bytes:
        assert self.merger is not None
        state = {
            "format": STATE_FORMAT,
            "merger": self.merger.to_dict(),
            "stages": self.stages,
            "alerts": self.alerts.to_dict(),
            "join": self.join,
            "offset": self.offset,
        }
        return pickle.dumps(state, protocol=5)

    def due(self) -> bool:
        """Enough rows or messages wait to write them now rather than at the timer's next
        flush (the combiner hands most points over itself)."""
        return len(self.points) + len(self.messages) >= FLUSH_POINTS

    def waiting(self) -> bool:
        """Rows, messages or dead letters wait for a write."""
        return bool(self.points or self.messages or self.dead)

    def caught_up(self) -> bool:
        """Something waits for a write and no partials came for ``WRITE_OUT_IDLE`` seconds
        (the worker's clock)."""
        return time.monotonic() - self.last_partials >= WRITE_OUT_IDLE and self.waiting()

    async def flush(self, save: bool = True) -> None:
        """Write the new rows and alert changes, save the state, then ack the partials;
        ``save=False`` (a write-out): the rows and messages only, the state and the acks wait
        for the next flush.

        The rows, the state and the partials they cover are taken under the combiner's lock
        (alert records are sent there too, in order with the combiner's own); the points go to
        the write queue, which the combiner feeds too between flushes (:meth:`_hand_over`);
        waiting for them, sending the messages and saving the state run outside the lock, so
        the combiner goes on with the next partials meanwhile. One flush at a time: writes keep
        their order. A failed send or save puts the messages back for the next flush (nothing
        was acked); a failed point write fails every later flush (the worker stops)."""
        async with self.flush_lock:
            async with self.comb_lock:
                if self.merger is None or self.stages is None or not self.comb_held:
                    return
                if not save and not self.waiting():
                    return
                self._flush_rows()
                await self.send_alerts()  # the join's, made at this flush
                self._hand_over()
                written = self.writes.barrier() if self.writes is not None else None
                messages, held = self.messages, self.comb_held
                self.messages = []
                if save:
                    self.comb_held = []
                else:
                    held = []
                dead, self.dead = self.dead, []
                state = self._saved() if save else None
                self.io_idle.clear()
            try:
                # the points (InfluxDB, the write queue's thread) and the messages (the broker)
                # at once; the state only once both are written
                dl = self.topics.dead_letter
                writes: list[Awaitable[None]] = [
                    send_many(self.app, [*messages, *((dl, k, v) for k, v in dead)])
                ]
                if written is not None:
                    writes.append(written)
                await _all(writes)
                if state is not None:
                    await self.store.save(self.STATE_KEY, state)
            except BaseException:
                # the points stay handed over (a failed write stops the worker: the write
                # queue fails every later barrier); the rest is sent again at the next flush
                async with self.comb_lock:
                    self.messages[:0] = messages
                    self.comb_held[:0], self.dead[:0] = held, dead
                raise
            finally:
                self.io_idle.set()
            for ev in held:
                ev.ack()


async def _all(aws: list[Any]) -> None:
    """Await every one of ``aws``, all of them even when one fails (the flush puts its rows
    back only once nothing it started still runs), then raise the first failure."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r


def wire(app: Any, settings: Settings, pipe: JobsPipeline, source: Any, partials: Any,
         name: str) -> None:  # fmt: skip
    """A pipeline's two agents (``concurrency=1``), flush timer and revoke hook on ``app``."""
    from streams.app import AGENT_CONCURRENCY

    @app.agent(source, concurrency=AGENT_CONCURRENCY, name=f"drainwatch.{pipe.SOURCE}")
    async def forward(stream: Any) -> None:
        async with fatal_errors(app, pipe.SOURCE):
            async for events in stream.noack_take(pipe.INPUT_TAKE, within=TAKE_WITHIN):
                for part in pipe.input_parts(events):  # a backlog's take: forwarded in parts
                    await pipe.on_input(part)
                    await pipe.publish(wait=False)  # at once: the combiner waits for no timer

    @app.agent(partials, concurrency=AGENT_CONCURRENCY, name=f"drainwatch.{name}")
    async def combine(stream: Any) -> None:
        async with fatal_errors(app, name):
            flushing: asyncio.Future[None] | None = None
            async for events in stream.noack_take(COMBINE_TAKE, within=TAKE_WITHIN):
                # one message at a time (~2,000 records, ~20 ms), the event loop's turn after
                # each: a flush's writes are seen done and the next one starts within a message,
                # not a take (InfluxDB had sat idle a quarter of the time, KTH x 3)
                for ev in events:
                    await pipe.on_partials([ev])
                    if flushing is not None and flushing.done():
                        flushing.result()  # a failed flush stops the worker
                        flushing = None
                    if flushing is None and pipe.due():  # writes overlap the next partials
                        flushing = asyncio.ensure_future(pipe.flush(save=False))
                    await pipe.keep_up()
                    await asyncio.sleep(0)

    @app.timer(settings.flush_interval, name=f"drainwatch.{name}.flush")
    async def flush() -> None:
        await pipe.publish()
        await pipe.flush()

    @app.timer(WRITE_OUT_EVERY, name=f"drainwatch.{name}.write-out")
    async def write_out() -> None:
        # the combiner has caught up: what waits goes out now, not at the next flush
        if pipe.caught_up() and not pipe.flush_lock.locked():
            await pipe.flush(save=False)

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, revoked: Any, **kw: Any) -> None:
        await pipe.revoked(revoked)


def attach_jobs(
    app: Any, settings: Settings, sink: InfluxSink | None, partitions: int | None = None
) -> JobsPipeline:
    """The job-events and jobs-partials agents and their flush timer on ``app``;
    ``partitions``: of job-events (the merger waits until every one has reported)."""
    pipe = JobsPipeline(app, settings, sink, partitions)
    t = app.drainwatch_topics
    wire(app, settings, pipe, t.job_events, t.jobs_partials, "jobs")
    app.drainwatch_jobs = pipe
    return pipe
