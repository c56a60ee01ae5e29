"""The worker's view of itself: the stalled-pipeline alert (the one alert on the worker's
clock), the ``pipeline`` measurement every ``PIPELINE_INTERVAL_S`` and ``/metrics``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from models.alerts import Alert, AlertBook, StallWatch
from streams.codecs.alerts import encode_alert
from streams.live.context import WorkerContext
from streams.sinks.lineproto import line
from streams.sinks.points import alert_line

PIPELINE_INTERVAL_S = 10.0


class Health:
    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self.log = ctx.log.getChild("health")
        self.stall = StallWatch(ctx.settings.alerts.stalled_after, ctx.worker)
        self.changes: list[Alert] = []
        self.loaded = False
        self.forwarders: list[Any] = []  # streams.live.runner.Forwarder of each family
        self.combiners: list[Any] = []  # streams.live.runner.Combiner of each family
        self.drain: Any = None  # the drain forwarder: per-partition late counts and offsets
        self._last_pipeline = (time.time(), 0)
        self._last_sink = (0, 0.0)  # the sink's writes and seconds at the last pipeline point

    def input_seen(self, topic: str) -> None:
        """Input arrived on ``topic`` (the stalled-pipeline alert's clock)."""
        self.changes += self.stall.seen(topic, time.time())

    async def check_stalls(self) -> None:
        """Send the stalled-pipeline changes (worker clock); the firing ones are kept in the
        state store, so a restarted worker resolves an episode its predecessor raised. Best
        effort: while Kafka or InfluxDB cannot take them (a broker restarting), the changes
        wait for the next tick; this timer never stops the worker."""
        ctx = self.ctx
        pending = self.changes + self.stall.check(time.time())
        self.changes = []
        key = f"stalled/{ctx.worker}"
        assert ctx.store is not None
        try:
            if not self.loaded:
                data = await ctx.store.load(key)
                if data is not None:  # episodes a predecessor raised, still open
                    saved = AlertBook.from_dict(orjson.loads(data))
                    for aid, a in saved.open.items():
                        self.stall.book.open.setdefault(aid, a)
                self.loaded = True
            if not pending:
                return
            cluster = ctx.settings.accounting.cluster
            if ctx.sink is not None:
                points = [alert_line(cluster, a) for a in pending]
                await asyncio.to_thread(ctx.sink.write_lines, points)
            topic = ctx.topics.alerts.get_topic_name()
            await ctx.send_many([(topic, a.id.encode(), encode_alert(cluster, a)) for a in pending])
            await ctx.store.save(key, orjson.dumps(self.stall.book.to_dict()))
        except Exception as e:  # noqa: BLE001 (retried at the next tick)
            self.changes = pending + self.changes
            ctx.counts["stall_check_errors"] += 1
            self.log.warning("stalled-pipeline alerts wait: %r", e)
            return
        ctx.counts["alert_changes"] += len(pending)

    def _late(self) -> int:
        return sum(st.late for st in self.drain.states.values()) if self.drain else 0

    def _last_snapshot(self) -> float:
        times = [f.last_snapshot for f in self.forwarders if f.fam.stateful]
        times += [c.last_snapshot for c in self.combiners]
        return max(times, default=time.time())

    async def write_pipeline(self) -> None:
        """One ``pipeline`` point (wall-clock time: it describes the worker, not the data)."""
        ctx = self.ctx
        if ctx.sink is None:
            return
        now = time.time()
        dt = max(now - self._last_pipeline[0], 1e-9)
        records = ctx.counts["records"]
        try:
            lag = sum(self._lag().values())
        except Exception:  # noqa: BLE001 (lag is best effort while rebalancing)
            lag = -1
        st = ctx.sink.stats
        writes, seconds = st.writes - self._last_sink[0], st.seconds - self._last_sink[1]
        fields: dict[str, Any] = {
            "records": records,
            "records_per_s": (records - self._last_pipeline[1]) / dt,
            "dead_letters": ctx.counts["dead_letters"],
            "late": self._late(),
            "consumer_lag": lag,
            "sink_retries": st.retries,
            "snapshot_age_s": now - self._last_snapshot(),
            # mean seconds per InfluxDB write since the last point, retries included
            "sink_latency_s": seconds / writes if writes > 0 else None,
        }
        for family, wl in self.watermark_lags().items():  # event-time seconds
            fields[f"watermark_lag_{family}_s"] = wl
        tags = {"cluster": ctx.settings.accounting.cluster, "worker": ctx.worker}
        p = line("pipeline", tags, fields, round(now * 1000) * 1_000_000)
        self._last_sink = (st.writes, st.seconds)
        self._last_pipeline = (now, records)
        await asyncio.to_thread(ctx.sink.write_lines, [p])

    def metrics_text(self) -> str:
        """Prometheus text exposition of the worker's counters."""
        ctx = self.ctx
        lines = []

        def put(name: str, value: float, help_: str, labels: str = "") -> None:
            lines.append(f"# HELP drainwatch_{name} {help_}")
            lines.append(f"drainwatch_{name}{labels} {value:.15g}")

        c = ctx.counts
        put("records_total", c["records"], "node records accounted or late")
        put("job_events_total", c["job_events"], "job events forwarded")
        put("samples_total", c["samples"], "node samples forwarded")
        put("dead_letters_total", c["dead_letters"], "records and messages rejected")
        put("poison_total", c["poison"], "messages and records a step failed on, dead-lettered")
        put("state_refused_total", c["state_refused"], "saved states refused as unreadable")
        put("snapshots_saved_total", c["snapshots_saved"], "states saved")
        put(
            "snapshot_age_seconds",
            time.time() - self._last_snapshot(),
            "age of the last checkpoint",
        )
        put("windows_written_total", c["windows_written"], "window rows written")
        put("markers_total", c["markers"], "shipper markers forwarded")
        for family, wl in self.watermark_lags().items():
            label = f'{{family="{family}"}}'
            put("watermark_lag_seconds", wl, "newest event time - the merger's watermark", label)
        if ctx.sink is not None:
            st = ctx.sink.stats
            put("sink_retries_total", st.retries, "InfluxDB write retries")
            put("sink_seconds_total", st.seconds, "time spent writing to InfluxDB")
            put("sink_points_total", st.points, "points written to InfluxDB")
        if self.drain is not None:
            for p, part in sorted(self.drain.states.items()):
                put("partition_late_total", part.late, "late records", f'{{partition="{p}"}}')
                put("partition_offset", part.offset, "last offset in state", f'{{partition="{p}"}}')
        try:
            for tp, lag in self._lag().items():
                put("consumer_lag", lag, "records behind the log end", f'{{partition="{tp}"}}')
        except Exception:  # noqa: BLE001 (lag is best effort while rebalancing)
            pass
        return "\n".join(lines) + "\n"

    def watermark_lags(self) -> dict[str, float]:
        """Per family (drain, jobs, samples): how far its watermark trails the newest
        event or marker time it saw (event-time seconds, the lateness included; 0 once every
        shipper's input ended and all was released). A family without one yet is left out."""
        out: dict[str, float] = {}
        for c in self.combiners:
            lag = getattr(c.fam, "watermark_lag", None)
            value = lag() if lag is not None else None
            if value is not None:
                out[getattr(c.fam, "family", c.fam.name)] = value
        return out

    def _lag(self) -> dict[int, int]:
        if self.drain is None:
            return {}
        consumer = self.ctx.app.consumer
        name = self.drain.fam.topic().get_topic_name()
        out = {}
        for tp in consumer.assignment():
            if tp.topic != name:
                continue
            hw = consumer.highwater(tp)
            st = self.drain.states.get(tp.partition)
            if hw is not None:
                out[tp.partition] = max(0, int(hw) - 1 - (st.offset if st else -1))
        return out


def attach_health(ctx: WorkerContext) -> Health:
    """The stall check, the pipeline point and /metrics on the worker's app."""
    app, settings = ctx.app, ctx.settings
    health = Health(ctx)
    ctx.health = health

    @app.timer(PIPELINE_INTERVAL_S)
    async def pipeline() -> None:
        await health.write_pipeline()

    @app.page("/metrics")
    async def metrics(web: Any, request: Any) -> Any:
        return web.text(health.metrics_text(), content_type="text/plain; version=0.0.4")

    @app.timer(max(1.0, min(PIPELINE_INTERVAL_S, settings.alerts.stalled_after / 5)))
    async def stalls() -> None:
        await health.check_stalls()

    return health
