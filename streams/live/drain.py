"""The drain family (seed 000) on the live flow (docs/state.md, "Two stages").

* Forward step, per ``node-status`` partition: a :class:`~models.drain.live.PartitionDrain`
  (the replay's accountant with minute windows, a reorder buffer, an event-time watermark);
  bad messages and late records are dead-lettered with their reason; its partial (absolute
  totals of what changed) goes to ``drain-partials``; its snapshot is the accountant as npz.
* Combine step: the :class:`~models.drain.live.DrainCombiner` sums the partitions' partials;
  changed and newly closed windows and changed jobs go to InfluxDB, ``metrics.drain``,
  ``metrics.jobs`` (and to ``jobs-partials`` for the join when the job path runs), alerts to
  ``alerts``.
"""

from __future__ import annotations

from typing import Any

import orjson

from models.alerts import DrainAlerts
from models.drain.live import DrainCombiner, PartitionDrain
from models.records.nodestatus import NodeStatusBatch
from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams.codecs import CodecError
from streams.codecs.control import decode_control
from streams.codecs.deadletter import encode_dead_letter, message_text
from streams.codecs.nodestatus import Decoder
from streams.codecs.partials import (
    JOIN_KEY,
    decode_drain_partial,
    encode_drain_partials,
    encode_drain_totals,
)
from streams.format import instant_ms
from streams.live.checkpoint import Outbox
from streams.live.context import WorkerContext
from streams.stages.drain import live_job_rows, live_window_rows
from streams.tables.drain import LIVE_JOBS, LIVE_WINDOW_STATES, LIVE_WINDOWS

TAKE = 512
TAKE_WITHIN = 0.5  # node-status takes are numpy batches: larger takes, fewer of them


def _dead(out: Outbox, ctx: WorkerContext, r: Reject, **where: Any) -> None:
    ctx.counts["dead_letters"] += 1
    ctx.counts[f"dead_letters_{r.reason}"] += 1
    out.dead.append((r.source.encode(), encode_dead_letter(r, **where)))


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


class DrainForward:
    """Node-status partitions through their :class:`PartitionDrain`. A shipper's marker is
    recorded per partition and shipper; an ``end`` (or version 1's flush) ends the
    partition's input; a ``watermark`` never moves the partition's watermark (the accountant
    accrues a node's time only when its next record comes: see
    :class:`~models.drain.live.PartitionDrain`)."""

    name = "node-status"
    take = TAKE
    within = TAKE_WITHIN
    stateful = True
    forward_each_part = False  # partials go out with the timers' publishes
    part_records = 0

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        s = ctx.settings
        self.decoders: dict[int, Decoder] = {}
        self.fresh: set[int] = set()  # partitions with records not yet in a partial
        self.bounds = TimeBounds(
            s.bounds.not_before, s.bounds.not_after, round(s.bounds.max_jump * 1000)
        )

    def topic(self) -> Any:
        return self.ctx.topics.node_status

    def partials_topic(self) -> Any:
        return self.ctx.topics.drain_partials

    def records_in(self, value: Any) -> int:
        return 1

    def new_state(self, p: int) -> PartitionDrain:
        s = self.ctx.settings
        st = PartitionDrain(
            p,
            s.accounting.tz,
            round(s.accounting.max_gap * 1000),
            round(s.worker.lateness * 1000),
            round(s.bounds.reorder_window * 1000),
        )
        self.decoders[p] = Decoder(st.book)
        return st

    def restore(self, p: int, tree: Any) -> PartitionDrain:
        st = PartitionDrain.loads(tree["partition"])
        if st.partition != p:
            raise ValueError(f"the snapshot is of partition {st.partition}, not {p}")
        self.decoders[p] = Decoder(st.book)
        return st

    def snapshot(self, p: int, st: PartitionDrain) -> Any:
        return {"partition": st.dumps()}

    def offset(self, st: PartitionDrain) -> int:
        return st.offset

    def add(self, p: int, off: int, value: bytes, st: PartitionDrain, out: Outbox) -> None:
        ctx = self.ctx
        where = {"topic": self.topic().get_topic_name(), "partition": p, "offset": off}
        st.offset = off
        self.fresh.add(p)
        try:
            mk = decode_control(value)
        except CodecError as e:  # a marker of another version or action
            _dead(out, ctx, Reject(e.reason, "node-status", 0, message_text(value)), **where)
            return
        if mk is not None:  # a shipper's marker: only an end ends the input (PartitionDrain)
            ctx.counts["markers"] += 1
            if mk.end:
                st.end_of_input()
            return
        try:
            source, batch, bad = self.decoders[p].decode(value, self.bounds)
        except CodecError as e:
            _dead(out, ctx, Reject(e.reason, "node-status", 0, message_text(value)), **where)
            return
        for reason, text in bad:
            _dead(out, ctx, Reject(reason, source, 0, text), **where)
        ctx.counts["records"] += len(batch)
        late = st.add(batch)
        for r in _late_rejects(source, late, st):
            _dead(out, ctx, r, **where)

    def partials(self, p: int, st: PartitionDrain | None) -> list[bytes]:
        if st is None or p not in self.fresh:
            return []
        self.fresh.discard(p)
        # in parts of at most message_max_bytes, applied in order (only the last one carries
        # the watermark): a backlog's partial holds every minute window since the last one
        parts = encode_drain_partials(st.partial(), self.ctx.settings.kafka.message_max_bytes)
        self.ctx.counts["drain_partial_parts"] += len(parts)
        return parts

    def forget(self, p: int) -> None:
        self.decoders.pop(p, None)
        self.fresh.discard(p)

    def waiting_partitions(self) -> set[int]:
        return set()


class DrainCombine:
    name = "combiner"
    family = "drain"  # its name on /metrics and in the pipeline point
    owner = "combiner"
    kind = "drain-combiner"
    version = 1
    take = TAKE
    within = TAKE_WITHIN

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self.comb: DrainCombiner | None = None
        self.alerts = self._alerts()

    def _alerts(self) -> DrainAlerts:
        s = self.ctx.settings
        return DrainAlerts(None, s.alerts.sliding_node_hours, s.alerts.sliding_quiet)

    def topic(self) -> Any:
        return self.ctx.topics.drain_partials

    def fresh(self) -> None:
        s = self.ctx.settings
        self.comb = DrainCombiner(s.accounting.tz, s.accounting.nodes)
        self.alerts = self._alerts()

    def restore(self, version: int, tree: Any) -> None:
        self.fresh()
        assert self.comb is not None
        self.comb.restore(tree["combiner"])
        self.alerts.restore(tree["alerts"])

    def snapshot(self) -> Any:
        assert self.comb is not None
        return {"combiner": self.comb.dumps(), "alerts": self.alerts.to_dict()}

    def add(self, off: int, value: bytes, out: Outbox) -> None:
        assert self.comb is not None
        self.comb.add(decode_drain_partial(value))

    def has_news(self) -> bool:
        return self.comb is not None and bool(self.comb.dirty_windows)

    def watermark_lag(self) -> float | None:
        """How far the combiner's watermark trails the newest record time of the partitions
        (s, the lateness included); None before both are known."""
        comb = self.comb
        if comb is None or comb.watermark_ms is None:
            return None
        top = comb.newest_ms()
        return None if top is None else max(0, top - comb.watermark_ms) / 1000

    def flush_rows(self, out: Outbox) -> None:
        """Changed windows and jobs: points, metric messages, the join's drain totals, and
        the alert changes they make."""
        comb, ctx = self.comb, self.ctx
        assert comb is not None
        rows, jobs = comb.take()
        cluster, t = ctx.settings.accounting.cluster, ctx.topics
        windows, states = live_window_rows(rows)
        job_rows = live_job_rows(jobs)
        for sink in (out.influx, out.metrics):
            sink.write(LIVE_WINDOWS, windows)
            sink.write(LIVE_WINDOW_STATES, states)
            sink.write(LIVE_JOBS, job_rows)
        da = self.alerts
        changes = da.jobs(jobs) + da.windows(w for w in rows if w.unit != "minute")
        changes += da.quiet(comb.watermark_ms)
        if jobs and ctx.settings.worker.live_jobs == "on":  # the job-events side joins them
            cap = ctx.settings.kafka.message_max_bytes
            for v in encode_drain_totals(jobs, comb.watermark_ms, cap):
                out.messages.append((t.jobs_partials.get_topic_name(), JOIN_KEY, v))
        ctx.counts["alert_changes"] += out.add_alerts(cluster, changes)
        ctx.counts["windows_written"] += len(rows)
        ctx.counts["jobs_written"] += len(jobs)
