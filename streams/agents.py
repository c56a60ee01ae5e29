"""The live drain pipeline's Faust agents (docs/state.md has the design and its invariant).

* ``node-status`` agent (one per worker, ``concurrency=1``; Faust hands it the partitions the
  worker owns): decodes each message into a batch and feeds it to that partition's
  :class:`~models.drain.live.PartitionDrain`; bad messages and late records go to the
  dead-letter topic with their reason.
* Every ``checkpoint_interval`` a checkpoint, per partition with new records: send its partial
  (absolute totals of what changed) to ``drain-partials``, save its snapshot to ``worker-state``
  (both awaited until the broker acknowledged them), then ack its events in offset order. The
  invariant: **an offset is acked only when the state that includes its records is durable**.
* ``drain-partials`` agent: the :class:`~models.drain.live.DrainCombiner`. Every
  ``flush_interval`` it writes changed and newly closed windows and changed jobs to InfluxDB
  (blocking, with retries, while InfluxDB is down) and to ``metrics.drain``/``metrics.jobs``,
  saves its own snapshot, then acks the partials it consumed.

A restarted or newly assigned partition loads its snapshot, skips (acks) events at or before the
snapshot's offset and processes the rest again: absolute partials and idempotent InfluxDB points
make the repetition harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import orjson

from models.alerts import Alert, AlertBook, DrainAlerts, StallWatch
from models.drain.live import DrainCombiner, LiveJob, LiveWindow, Partial, PartitionDrain
from models.jsonbytes import json_bytes
from models.records.nodestatus import NodeStatusBatch
from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams.app import AGENT_CONCURRENCY
from streams.config import Settings
from streams.format import instant_ms
from streams.sinks.influx import InfluxSink
from streams.sinks.jobpoints import alert_line, alert_message
from streams.sinks.lineproto import line
from streams.sinks.statestore import StateStore
from streams.topics import dead_letter_message
from streams.wire import Decoder, MessageError

TAKE = 512
PIPELINE_INTERVAL_S = 10.0


def window_message(cluster: str, w: LiveWindow) -> dict[str, Any]:
    return {
        "v": 1,
        "cluster": cluster,
        "window": w.unit,
        "start": instant_ms(w.start_ms),
        "start_ms": w.start_ms,
        "length_ms": w.length_ms,
        "nodes": w.nodes,
        **w.node_seconds(),
        "drain_pct_static": w.drain_pct_static,
        "drain_pct_dynamic": w.drain_pct_dynamic,
        "basis_seconds_per_node": w.basis_seconds_per_node,
        "data_quality": w.data_quality,
        "provisional": w.provisional,
        **({"node_states": node_states_seconds(w.states)} if w.states else {}),
    }


COMBOS = ("none", "job", "rsv", "rsv+job")  # has_rsv * 2 + has_job (seed 000 §III-B.1)


def node_states_seconds(states: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    return {
        name: {COMBOS[i]: ms / 1000 for i, ms in enumerate(v) if ms} for name, v in states.items()
    }


def job_message(cluster: str, j: LiveJob) -> dict[str, Any]:
    return {
        "v": 1,
        "cluster": cluster,
        "job": j.job,
        "drain_node_seconds": j.drain_ms / 1000,
        "nodes_charged": j.nodes_charged,
        "first_charged": instant_ms(j.first_charged_ms),
        "last_charged": instant_ms(j.last_charged_ms),
        "nodes_running": j.nodes_running,
    }


def _late_rejects(source: str, b: NodeStatusBatch, st: PartitionDrain) -> list[Reject]:
    names, states, jobs = st.book.nodes.names, st.book.states.names, st.book.jobs
    out = []
    for i in range(len(b)):
        row = {
            "ts": instant_ms(int(b.ts_ms[i])),
            "node": names[int(b.node[i])],
            "state": states[int(b.state[i])],
            "rsv": jobs.name(int(b.rsv[i])) if b.rsv[i] >= 0 else None,
        }
        out.append(Reject("late", source, 0, orjson.dumps(row).decode()))
    return out


class DrainPipeline:
    """State and wiring of the two agents of one worker (see the module docstring)."""

    def __init__(self, app: Any, settings: Settings, sink: InfluxSink | None) -> None:
        self.app = app
        self.settings = settings
        self.topics = app.drainwatch_topics
        self.sink = sink
        self.store = StateStore(settings, self.topics.worker_state.get_topic_name(),
                                app.conf.id, self._send_state)  # fmt: skip
        self.parts: dict[int, PartitionDrain] = {}
        self.decoders: dict[int, Decoder] = {}
        self.held: dict[int, list[Any]] = {}
        self.fresh: set[int] = set()  # partitions with records not yet in a partial
        self.dead: list[tuple[bytes, bytes]] = []  # dead letters (key, value) to send first
        self.lock = asyncio.Lock()
        self.comb: DrainCombiner | None = None
        self.comb_offset = -1
        self.comb_held: list[Any] = []
        self.comb_lock = asyncio.Lock()
        self.alerts = DrainAlerts(None, settings.alert_sliding_node_hours,
                                  settings.alert_sliding_quiet)  # fmt: skip
        self.counts: Counter[str] = Counter()
        self.worker = f"{socket.gethostname()}:{settings.web_port}"
        self.stall = StallWatch(settings.alert_stalled_after, self.worker)
        self.stall_changes: list[Alert] = []
        self.stall_loaded = False
        self.last_snapshot = time.time()
        self._last_pipeline = (time.time(), 0)
        self._last_sink = (0, 0.0)  # the sink's writes and seconds at the last pipeline point
        self.bounds = TimeBounds(settings.not_before, settings.not_after,
                                 round(settings.max_jump * 1000))  # fmt: skip

    # ---- node-status ------------------------------------------------------------------------
    async def _send_state(self, key: bytes, value: bytes) -> None:
        await (await self.topics.worker_state.send(key=key, value=value))

    async def _partition(self, p: int) -> PartitionDrain:
        st = self.parts.get(p)
        if st is None:
            data = await self.store.load(f"node-status/{p}")
            s = self.settings
            if data is not None:
                st = PartitionDrain.loads(data)
                self.counts["snapshots_loaded"] += 1
            else:
                st = PartitionDrain(p, s.tz, round(s.max_gap * 1000), round(s.lateness * 1000),
                                    round(s.reorder_window * 1000))  # fmt: skip
            self.parts[p] = st
            self.decoders[p] = Decoder(st.book)
            self.held[p] = []
        return st

    def _dead_letter(self, r: Reject, **where: Any) -> None:
        self.counts["dead_letters"] += 1
        self.counts[f"dead_letters_{r.reason}"] += 1
        self.dead.append((r.source.encode(), json_bytes(dead_letter_message(r, **where))))

    def input_seen(self, topic: str) -> None:
        """Input arrived on ``topic`` (the stalled-pipeline alert's clock)."""
        self.stall_changes += self.stall.seen(topic, time.time())

    async def check_stalls(self) -> None:
        """Send the stalled-pipeline changes (worker clock); the firing ones are kept in the
        state store, so a restarted worker resolves an episode its predecessor raised. Best
        effort: while Kafka or InfluxDB cannot take them (a broker restarting), the changes
        wait for the next tick; this timer never stops the worker."""
        pending = self.stall_changes + self.stall.check(time.time())
        self.stall_changes = []
        key = f"stalled/{self.worker}"
        try:
            if not self.stall_loaded:
                data = await self.store.load(key)
                if data is not None:  # episodes a predecessor raised, still open
                    saved = AlertBook.from_dict(orjson.loads(data))
                    for aid, a in saved.open.items():
                        self.stall.book.open.setdefault(aid, a)
                self.stall_loaded = True
            if not pending:
                return
            cluster = self.settings.cluster
            if self.sink is not None:
                points = [alert_line(cluster, a) for a in pending]
                await asyncio.to_thread(self.sink.write, points)
            await _sent([self.topics.alerts.send(key=a.id.encode(),
                                                 value=orjson.dumps(alert_message(cluster, a)))
                         for a in pending])  # fmt: skip
            await self.store.save(key, orjson.dumps(self.stall.book.to_dict()))
        except Exception as e:  # noqa: BLE001 (retried at the next tick)
            self.stall_changes = pending + self.stall_changes
            self.counts["stall_check_errors"] += 1
            print(f"drainwatch worker: stalled-pipeline alerts wait: {e!r}", file=sys.stderr,
                  flush=True)  # fmt: skip
            return
        self.counts["alert_changes"] += len(pending)

    async def on_node_status(self, events: Iterable[Any]) -> None:
        self.input_seen(self.topics.node_status.get_topic_name())
        async with self.lock:
            for ev in events:
                msg = ev.message
                p, off = msg.tp.partition, msg.offset
                st = await self._partition(p)
                if off <= st.offset:  # already in the loaded snapshot
                    ev.ack()
                    continue
                self._one(ev, st, p, off)
                st.offset = off
                self.held[p].append(ev)
                self.fresh.add(p)

    def _one(self, ev: Any, st: PartitionDrain, p: int, off: int) -> None:
        where = {"topic": ev.message.topic, "partition": p, "offset": off}
        value = ev.value if isinstance(ev.value, bytes) else bytes(ev.value or b"")
        try:
            ctl = orjson.loads(value) if len(value) < 8192 and b'"control"' in value else None
            if isinstance(ctl, dict) and ctl.get("control") == "flush" and ctl.get("v") == 1:
                st.end_of_input()
                return
            source, batch, bad = self.decoders[p].decode(value, self.bounds)
        except (MessageError, orjson.JSONDecodeError) as e:
            reason = getattr(e, "reason", "bad_json")
            text = value[:4096].decode("utf-8", "replace")
            self._dead_letter(Reject(reason, "node-status", 0, text), **where)
            return
        for reason, text in bad:
            self._dead_letter(Reject(reason, source, 0, text), **where)
        self.counts["records"] += len(batch)
        late = st.add(batch)
        for r in _late_rejects(source, late, st):
            self._dead_letter(r, **where)

    async def publish(self, snapshot: bool) -> None:
        """Send the partial of every partition with news; with ``snapshot`` also save its
        snapshot and then ack its held events (the invariant). Partials are absolute, so
        sending them more often than snapshots (every flush) only makes rows fresher."""
        async with self.lock:
            dead, self.dead = self.dead, []
            await _sent([self.topics.dead_letter.send(key=k, value=v) for k, v in dead])
            for p, held in self.held.items():
                st = self.parts[p]
                if p in self.fresh:
                    value = orjson.dumps(st.partial().to_dict())
                    await (await self.topics.drain_partials.send(key=str(p).encode(), value=value))
                    self.fresh.discard(p)
                if not snapshot or not held:
                    continue
                await self.store.save(f"node-status/{p}", st.dumps())
                for ev in held:  # ascending offsets, no holes: the order they arrived in
                    ev.ack()
                held.clear()
                self.counts["snapshots_saved"] += 1
            if snapshot:
                self.last_snapshot = time.time()

    async def checkpoint(self) -> None:
        await self.publish(snapshot=True)

    async def revoked(self, tps: Iterable[Any]) -> None:
        """Forget the state of partitions this worker no longer owns (their un-acked events
        are re-delivered to the new owner, which loads the last snapshot)."""
        ns = self.topics.node_status.get_topic_name()
        cp = self.topics.drain_partials.get_topic_name()
        async with self.lock:
            for tp in tps:
                if tp.topic == ns:
                    self.parts.pop(tp.partition, None)
                    self.decoders.pop(tp.partition, None)
                    self.held.pop(tp.partition, None)
                    self.fresh.discard(tp.partition)
        if any(tp.topic == cp for tp in tps):
            async with self.comb_lock:
                self.comb, self.comb_offset, self.comb_held = None, -1, []

    # ---- combiner ---------------------------------------------------------------------------
    async def _combiner(self) -> DrainCombiner:
        if self.comb is None:
            s = self.settings
            comb = DrainCombiner(s.tz, s.nodes)
            data = await self.store.load("combiner")
            self.comb_offset = -1
            self.alerts = DrainAlerts(None, s.alert_sliding_node_hours, s.alert_sliding_quiet)
            if data is not None:
                extra = comb.restore(data)
                self.comb_offset = int(extra["offset"])
                if "alerts" in extra:
                    self.alerts.restore(extra["alerts"])
            self.comb = comb
        return self.comb

    async def on_partials(self, events: Iterable[Any]) -> None:
        async with self.comb_lock:
            comb = await self._combiner()
            for ev in events:
                off = ev.message.offset
                if off <= self.comb_offset:
                    ev.ack()
                    continue
                comb.add(Partial.from_dict(orjson.loads(ev.value)))
                self.comb_offset = off
                self.comb_held.append(ev)

    async def flush(self) -> None:
        """Write what changed (InfluxDB, metric topics), snapshot, then ack the partials."""
        async with self.comb_lock:
            comb = self.comb
            if comb is None or not self.comb_held and not comb.dirty_windows:
                return
            rows, jobs = comb.take()
            cluster = self.settings.cluster
            if self.sink is not None and (rows or jobs):
                await asyncio.to_thread(self.sink.write_windows, rows)
                await asyncio.to_thread(self.sink.write_jobs, jobs)
            da = self.alerts
            changes = da.jobs(jobs) + da.windows(w for w in rows if w.unit != "minute")
            changes += da.quiet(comb.watermark_ms)
            if changes and self.sink is not None:
                points = [alert_line(cluster, a) for a in changes]
                await asyncio.to_thread(self.sink.write, points)
            # the sends made from here on are awaited with nothing else between (a stop in
            # between would leave them never awaited)
            futs = [
                self.topics.metrics_drain.send(
                    key=f"{w.unit}:{w.start_ms}".encode(),
                    value=json_bytes(window_message(cluster, w)),
                )
                for w in rows
            ]
            futs += [
                self.topics.metrics_jobs.send(
                    key=j.job.encode(), value=json_bytes(job_message(cluster, j))
                )
                for j in jobs
            ]
            if jobs and self.settings.live_jobs == "on":  # the job-events side joins them
                futs += [
                    self.topics.jobs_partials.send(
                        key=b"drain",
                        value=orjson.dumps({"partition": -1, "drain": [
                            [j.job, j.drain_ms, j.nodes_charged, j.first_charged_ms,
                             j.last_charged_ms, j.nodes_running, j.time_ms]
                            for j in jobs[i : i + 2000]],
                            "watermark_ms": comb.watermark_ms}),
                    )
                    for i in range(0, len(jobs), 2000)
                ]  # fmt: skip
            if changes:
                futs += [
                    self.topics.alerts.send(
                        key=a.id.encode(), value=json_bytes(alert_message(cluster, a))
                    )
                    for a in changes
                ]
                self.counts["alert_changes"] += len(changes)
            await _sent(futs)
            state = {"offset": self.comb_offset, "alerts": da.to_dict()}
            await self.store.save("combiner", comb.dumps(state))
            for ev in self.comb_held:
                ev.ack()
            self.comb_held.clear()
            self.counts["windows_written"] += len(rows)
            self.counts["jobs_written"] += len(jobs)

    # ---- the worker's own metrics -------------------------------------------------------------
    async def write_pipeline(self) -> None:
        """One ``pipeline`` point (wall-clock time: it describes the worker, not the data)."""
        if self.sink is None:
            return
        now = time.time()
        dt = max(now - self._last_pipeline[0], 1e-9)
        records = self.counts["records"]
        try:
            lag = sum(self._lag().values())
        except Exception:  # lag is best effort while rebalancing
            lag = -1
        st = self.sink.stats
        writes, seconds = st.writes - self._last_sink[0], st.seconds - self._last_sink[1]
        fields: dict[str, Any] = {
            "records": records,
            "records_per_s": (records - self._last_pipeline[1]) / dt,
            "dead_letters": self.counts["dead_letters"],
            "late": sum(part.late for part in self.parts.values()),
            "consumer_lag": lag,
            "sink_retries": st.retries,
            "snapshot_age_s": now - self.last_snapshot,
            # mean seconds per InfluxDB write since the last point, retries included
            "sink_latency_s": seconds / writes if writes > 0 else None,
        }
        tags = {"cluster": self.settings.cluster, "worker": self.worker}
        p = line("pipeline", tags, fields, round(now * 1000) * 1_000_000)
        self._last_sink = (st.writes, st.seconds)
        self._last_pipeline = (now, records)
        await asyncio.to_thread(self.sink.write, [p])

    def metrics_text(self) -> str:
        """Prometheus text exposition of the worker's counters."""
        lines = []

        def put(name: str, value: float, help_: str, labels: str = "") -> None:
            lines.append(f"# HELP drainwatch_{name} {help_}")
            lines.append(f"drainwatch_{name}{labels} {value:.15g}")

        put("records_total", self.counts["records"], "node records accounted or late")
        put("dead_letters_total", self.counts["dead_letters"], "records and messages rejected")
        put("snapshot_age_seconds", time.time() - self.last_snapshot, "age of the last checkpoint")
        put("windows_written_total", self.counts["windows_written"], "window rows written")
        if self.sink is not None:
            st = self.sink.stats
            put("sink_retries_total", st.retries, "InfluxDB write retries")
            put("sink_seconds_total", st.seconds, "time spent writing to InfluxDB")
            put("sink_points_total", st.points, "points written to InfluxDB")
        for p, part in sorted(self.parts.items()):
            put("partition_late_total", part.late, "late records", f'{{partition="{p}"}}')
            put("partition_offset", part.offset, "last offset in state", f'{{partition="{p}"}}')
        try:
            for tp, lag in self._lag().items():
                put("consumer_lag", lag, "records behind the log end", f'{{partition="{tp}"}}')
        except Exception:  # lag is best effort while rebalancing
            pass
        return "\n".join(lines) + "\n"

    def _lag(self) -> dict[int, int]:
        consumer = self.app.consumer
        out = {}
        for tp in consumer.assignment():
            if tp.topic != self.topics.node_status.get_topic_name():
                continue
            hw = consumer.highwater(tp)
            st = self.parts.get(tp.partition)
            if hw is not None:
                out[tp.partition] = max(0, int(hw) - 1 - (st.offset if st else -1))
        return out


async def _sent(sends: list[Any]) -> None:
    """Queue every send, then wait until the broker acknowledged all of them. Stopped on the
    way (the worker's shutdown), the sends not yet queued are closed, never left unawaited
    (nothing they cover was acked)."""
    futures = []
    try:
        for s in sends:
            futures.append(await s)
    except BaseException:
        for s in sends[len(futures) :]:
            if hasattr(s, "close"):
                s.close()
        raise
    if futures:
        await asyncio.gather(*futures)


class KeyPartitions:
    """The default partitioner's choice for a key (murmur2 of the key modulo the topic's
    partitions, as Topic.send and the Java client choose it), remembered: aiokafka computes
    murmur2 in pure Python, about 3 us for a short key, and the metric topics' keys (holders,
    days, alert ids) repeat. Bounded: forgotten wholesale past ``limit`` keys."""

    def __init__(self, limit: int = 200_000) -> None:
        from aiokafka.partitioner import DefaultPartitioner

        self.limit = limit
        self.choose = DefaultPartitioner()
        self.known: dict[tuple[bytes, int], int] = {}

    def __call__(self, key: bytes, partitions: list[int]) -> int:
        k = (key, len(partitions))
        p = self.known.get(k)
        if p is None:
            if len(self.known) >= self.limit:
                self.known.clear()
            p = self.known[k] = self.choose(key, partitions, partitions)
        return p


async def send_many(app: Any, messages: Sequence[tuple[Any, bytes, bytes]]) -> None:
    """Send (topic, key, value) messages, each to its key's partition as Topic.send would
    choose it, then wait until the broker acknowledged all of them.

    The messages are appended to record batches that go to the producer whole (aiokafka's
    ``create_batch``/``send_batch``): per message that costs the batch's append, about 1 us,
    where the producer's ``send`` costs about 11 us (and Faust's Topic.send about 72 us) on
    the project's VM, and the job path sends about 0.4 metric and alert messages per job
    event. An app whose producer is not Faust's aiokafka one (a stand-in) gets ``send``."""
    if not messages:
        return
    names: dict[int, str] = {}
    for t, _k, _v in messages:
        if id(t) not in names:
            names[id(t)] = t.get_topic_name()
    ensure = getattr(app.producer, "_ensure_producer", None)
    futures = []
    if ensure is None:
        send = app.producer.send
        for t, k, v in messages:
            futures.append(await send(names[id(t)], k, v, None, None, None))
        await asyncio.gather(*futures)
        return
    kp = ensure()
    chooser = getattr(app, "drainwatch_key_partitions", None)
    if chooser is None:
        chooser = app.drainwatch_key_partitions = KeyPartitions()
    parts = {n: sorted(await kp.partitions_for(n)) for n in set(names.values())}
    groups: dict[tuple[str, int], list[tuple[bytes, bytes]]] = {}
    for t, k, v in messages:
        name = names[id(t)]
        groups.setdefault((name, chooser(k, parts[name])), []).append((k, v))
    for (name, p), kvs in groups.items():
        batch = kp.create_batch()
        for k, v in kvs:
            if batch.append(timestamp=None, key=k, value=v) is None:
                if batch.record_count():
                    futures.append(await kp.send_batch(batch, name, partition=p))
                batch = kp.create_batch()
                if batch.append(timestamp=None, key=k, value=v) is None:  # larger than a batch
                    futures.append(await kp.send(name, v, key=k, partition=p))
                    batch = kp.create_batch()
        if batch.record_count():
            futures.append(await kp.send_batch(batch, name, partition=p))
    await asyncio.gather(*futures)


@contextlib.asynccontextmanager
async def fatal_errors(app: Any, name: str) -> AsyncIterator[None]:
    """An agent's unexpected error stops the worker (exit 1), so a supervisor restarts it from
    its last saved state and committed offsets; left alone, Faust would restart the agent
    without the events it had taken, and the worker would look healthy while losing them."""
    try:
        yield
    except Exception as exc:
        print(f"drainwatch worker: agent {name} failed: {exc!r}; stopping", file=sys.stderr,
              flush=True)  # fmt: skip
        await app.crash(exc)
        raise


def attach(app: Any, settings: Settings, sink: InfluxSink | None) -> DrainPipeline:
    """Define the agents, timers, rebalance hooks and /metrics on ``app``."""
    pipe = DrainPipeline(app, settings, sink)
    t = app.drainwatch_topics

    @app.agent(t.node_status, concurrency=AGENT_CONCURRENCY, name="drainwatch.node-status")
    async def node_status(stream: Any) -> None:
        async with fatal_errors(app, "node-status"):
            async for events in stream.noack_take(TAKE, within=0.5):
                await pipe.on_node_status(events)

    @app.agent(t.drain_partials, concurrency=AGENT_CONCURRENCY, name="drainwatch.combiner")
    async def combiner(stream: Any) -> None:
        async with fatal_errors(app, "combiner"):
            async for events in stream.noack_take(TAKE, within=0.5):
                await pipe.on_partials(events)

    @app.timer(settings.checkpoint_interval)
    async def checkpoint() -> None:
        await pipe.checkpoint()

    @app.timer(settings.flush_interval)
    async def flush() -> None:
        await pipe.publish(snapshot=False)
        await pipe.flush()

    @app.timer(PIPELINE_INTERVAL_S)
    async def pipeline() -> None:
        await pipe.write_pipeline()

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, revoked: Any, **kw: Any) -> None:
        await pipe.revoked(revoked)

    @app.page("/metrics")
    async def metrics(web: Any, request: Any) -> Any:
        return web.text(pipe.metrics_text(), content_type="text/plain; version=0.0.4")

    @app.timer(max(1.0, min(PIPELINE_INTERVAL_S, settings.alert_stalled_after / 5)))
    async def stalls() -> None:
        await pipe.check_stalls()

    app.drainwatch_pipeline = pipe
    return pipe
