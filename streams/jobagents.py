"""The live job-events path (docs/state.md, "Job events"): short-job penalties (seed 002) first.

* ``job-events`` agent (``concurrency=1``; the partitions this worker owns): decodes each
  message into a JobEvent (bad ones and implausible times go to the dead-letter topic with
  their reason) and keeps it with its offset. Every ``flush_interval`` it sends each partition's
  new events to ``jobs-partials`` (at most ``PARTIAL_EVENTS`` per message), waits for the
  broker's acknowledgement, then acks the events. It holds no other state: the merger below
  recognises a re-sent event by (partition, offset).
* ``jobs-partials`` agent: the :class:`~models.jobs.merge.JobEventMerger` releases events in
  the replay's order once every partition is past them (event time), into the same
  ``ShortJobsStage`` ``drainwatch replay`` runs. Every ``flush_interval`` the new tick rows go
  to InfluxDB (``shortjobs``) and ``metrics.shortjobs``; then the merger and the model are
  saved to ``worker-state`` and only then are the partials acked (the drain path's invariant).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from typing import Any

import orjson

from models.jobs.merge import JobEventMerger
from models.jobs.shortjobs import ShortJobPenalty, ShortJobRow
from models.records.jobevent import JobEvent, JobEventError, jobevent_from_dict, parse_jobevent_line
from models.records.reject import Reject
from streams.agents import _sent
from streams.config import Settings
from streams.format import instant
from streams.sinks.influx import InfluxSink
from streams.sinks.statestore import StateStore
from streams.stages.jobs import ShortJobsStage
from streams.topics import dead_letter_message

PARTIAL_EVENTS = 2000  # events per jobs-partials message (~300 kB)
STATE_KEY = "jobs"
STATE_FORMAT = 1


def shortjob_message(cluster: str, r: ShortJobRow) -> dict[str, Any]:
    return {
        "v": 1,
        "cluster": cluster,
        "ts": instant(r.ts),
        "ts_s": r.ts,
        "holder_kind": r.holder_kind,
        "holder": r.holder,
        "n_short": r.n_short,
        "penalty_seconds": r.penalty_s,
        "adjust": r.adjust,
    }


def shortjob_point(cluster: str, r: ShortJobRow) -> Any:
    """One ``shortjobs`` point; time = the tick, so a re-written row overwrites."""
    from influxdb_client import Point, WritePrecision

    return (
        Point("shortjobs")
        .tag("cluster", cluster)
        .tag("kind", r.holder_kind)
        .tag("holder", r.holder)
        .field("n_short", r.n_short)
        .field("penalty_seconds", float(r.penalty_s))
        .field("adjust", float(r.adjust))
        .time(round(r.ts * 1000), WritePrecision.MS)
    )


class JobsPipeline:
    def __init__(
        self, app: Any, settings: Settings, sink: InfluxSink | None, partitions: int | None
    ) -> None:
        self.app = app
        self.partitions = partitions  # of job-events: the merger waits for each of them
        self.settings = settings
        self.topics = app.drainwatch_topics
        self.sink = sink
        self.store = StateStore(settings, self.topics.worker_state.get_topic_name(),
                                app.conf.id, self._send_state)  # fmt: skip
        self.pending: dict[int, list[list[Any]]] = {}  # partition -> [offset, event dict]
        self.held: dict[int, list[Any]] = {}
        self.dead: list[Any] = []
        self.lock = asyncio.Lock()
        self.merger: JobEventMerger | None = None
        self.stage: ShortJobsStage | None = None
        self.offset = -1  # last jobs-partials offset in the merger's state
        self.comb_held: list[Any] = []
        self.rows: list[ShortJobRow] = []
        self.comb_lock = asyncio.Lock()
        self.suspect = False  # jobs-partials was revoked since the state was last checked
        self.counts: Counter[str] = Counter()

    async def _send_state(self, key: bytes, value: bytes) -> None:
        await (await self.topics.worker_state.send(key=key, value=value))

    def _dead_letter(self, r: Reject, **where: Any) -> None:
        self.counts["dead_letters"] += 1
        value = orjson.dumps(dead_letter_message(r, **where))
        self.dead.append(self.topics.dead_letter.send(key=r.source.encode(), value=value))

    # ---- job-events -------------------------------------------------------------------------
    def _event(self, value: bytes) -> JobEvent:
        e = parse_jobevent_line(value)
        s = self.settings  # the replay's absolute bounds (ms); no time-jump rule on a stream
        if not s.not_before <= e.ts * 1000 < s.not_after:
            raise JobEventError("implausible_time", repr(e.ts))
        return e

    async def on_job_events(self, events: Iterable[Any]) -> None:
        async with self.lock:
            for ev in events:
                msg = ev.message
                p, off = msg.tp.partition, msg.offset
                value = ev.value if isinstance(ev.value, bytes) else bytes(ev.value or b"")
                try:
                    e = self._event(value)
                except JobEventError as err:
                    text = value[:4096].decode("utf-8", "replace")
                    self._dead_letter(Reject(err.reason, "job-events", 0, text),
                                      topic=msg.topic, partition=p, offset=off)  # fmt: skip
                else:
                    self.pending.setdefault(p, []).append([off, e.to_dict()])
                    self.counts["job_events"] += 1
                self.held.setdefault(p, []).append(ev)

    async def publish(self) -> None:
        """Send every partition's new events to jobs-partials, then ack them."""
        async with self.lock:
            await _sent(self.dead)
            self.dead.clear()
            for p in sorted(set(self.held) | set(self.pending)):
                held = self.held.get(p, [])
                evs = self.pending.pop(p, [])
                futs = [
                    self.topics.jobs_partials.send(
                        key=str(p).encode(),
                        value=orjson.dumps(
                            {"partition": p, "events": evs[i : i + PARTIAL_EVENTS]}
                        ),  # fmt: skip
                    )
                    for i in range(0, len(evs), PARTIAL_EVENTS)
                ]
                await _sent(futs)
                for ev in held:  # ascending offsets, no holes
                    ev.ack()
                held.clear()

    async def revoked(self, tps: Iterable[Any]) -> None:
        """Nothing is dropped: events this worker still holds are forwarded anyway, unacked (a
        new owner forwarding them too is harmless: the merger keeps one copy per (partition,
        offset)), and the merger's state stays until its next message shows whether it is
        still current (see :meth:`on_partials`)."""
        je = self.topics.job_events.get_topic_name()
        jp = self.topics.jobs_partials.get_topic_name()
        tps = list(tps)
        async with self.lock:
            for tp in tps:
                if tp.topic == je:  # its events are still forwarded; their acks are void
                    self.held.pop(tp.partition, None)
        if any(tp.topic == jp for tp in tps):
            async with self.comb_lock:
                self.suspect = True

    # ---- jobs-partials ----------------------------------------------------------------------
    async def _state(self) -> tuple[JobEventMerger, ShortJobsStage]:
        if self.merger is None or self.stage is None:
            data = await self.store.load(STATE_KEY)
            lateness = self.settings.lateness
            if data is None:
                self.merger = JobEventMerger(lateness, self.partitions)
                model, last_ts, self.offset = None, None, -1
            else:
                d = orjson.loads(data)
                if d.get("format") != STATE_FORMAT:
                    raise ValueError(f"job state format {d.get('format')!r}: not readable")
                self.merger = JobEventMerger.from_dict(d["merger"])
                self.merger.partitions = self.partitions
                model, last_ts = ShortJobPenalty.from_dict(d["shortjobs"]), d["last_ts"]
                self.offset = int(d["offset"])
            self.stage = ShortJobsStage(model or ShortJobPenalty())
            self.stage.last_ts = last_ts
        return self.merger, self.stage

    async def on_partials(self, events: Iterable[Any]) -> None:
        async with self.comb_lock:
            for ev in events:
                off = ev.message.offset
                if self.suspect and self.merger is not None and off > self.offset + 1:
                    # another worker took messages this state has not seen: start again from
                    # the last saved state (what this worker held unacked comes again)
                    self.merger, self.stage, self.comb_held, self.rows = None, None, [], []
                    self.counts["state_reloads"] += 1
                self.suspect = False
                merger, stage = await self._state()
                if off <= self.offset:
                    ev.ack()
                    continue
                d = orjson.loads(ev.value)
                p = int(d["partition"])
                for src_off, e in d["events"]:
                    event = jobevent_from_dict(e)
                    why = merger.add(p, int(src_off), event)
                    if why == "late":
                        self._dead_letter(Reject("late", "job-events", 0, orjson.dumps(e).decode()),
                                          topic=self.topics.job_events.get_topic_name(),
                                          partition=p, offset=int(src_off))  # fmt: skip
                for _, rows in stage.step(merger.release()):
                    if not isinstance(rows, bytes):  # shortjobs rows (no document mid-stream)
                        self.rows += [ShortJobRow(*r) for r in rows]
                self.offset = off
                self.comb_held.append(ev)

    async def flush(self) -> None:
        """Write the new tick rows, save the state, then ack the partials it holds."""
        async with self.comb_lock:
            if self.merger is None or self.stage is None or not self.comb_held:
                return
            rows, cluster = self.rows, self.settings.cluster
            if self.sink is not None and rows:
                await asyncio.to_thread(self.sink.write, [shortjob_point(cluster, r) for r in rows])
            await _sent([
                self.topics.metrics_shortjobs.send(
                    key=f"{r.holder_kind}:{r.holder}".encode(),
                    value=orjson.dumps(shortjob_message(cluster, r)),
                )
                for r in rows
            ])  # fmt: skip
            await _sent(self.dead)
            self.dead.clear()
            state = {
                "format": STATE_FORMAT,
                "merger": self.merger.to_dict(),
                "shortjobs": self.stage.m.to_dict(),
                "last_ts": self.stage.last_ts,
                "offset": self.offset,
            }
            await self.store.save(STATE_KEY, orjson.dumps(state))
            for ev in self.comb_held:
                ev.ack()
            self.comb_held.clear()
            self.counts["shortjob_rows_written"] += len(rows)
            self.rows = []


def attach_jobs(
    app: Any, settings: Settings, sink: InfluxSink | None, partitions: int | None = None
) -> JobsPipeline:
    """The job-events and jobs-partials agents and their flush timer on ``app``;
    ``partitions``: of job-events (the merger waits until every one has reported)."""
    from streams.app import AGENT_CONCURRENCY

    pipe = JobsPipeline(app, settings, sink, partitions)
    t = app.drainwatch_topics

    @app.agent(t.job_events, concurrency=AGENT_CONCURRENCY, name="drainwatch.job-events")
    async def job_events(stream: Any) -> None:
        async for events in stream.noack_take(512, within=0.5):
            await pipe.on_job_events(events)

    @app.agent(t.jobs_partials, concurrency=AGENT_CONCURRENCY, name="drainwatch.jobs")
    async def jobs(stream: Any) -> None:
        async for events in stream.noack_take(64, within=0.5):
            await pipe.on_partials(events)

    @app.timer(settings.flush_interval)
    async def flush() -> None:
        await pipe.publish()
        await pipe.flush()

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, revoked: Any, **kw: Any) -> None:
        await pipe.revoked(revoked)

    app.drainwatch_jobs = pipe
    return pipe
