"""The node-samples family (seed 003 §5.2) on the live flow (docs/state.md, "Node samples"):
DFS write load per minute, hot-zone episodes and job utilisation, the same numbers as
``drainwatch replay --format samples``.

* Forward step: each ``node-samples`` message (one node's sweep: trace lines, one per
  process) is read into columns (bad lines dead-lettered with their reason) and the good
  samples forwarded with their offset to ``samples-partials`` as one binary batch.
* Combine step: the :class:`~models.samples.merge.SampleMerger` releases samples in time order
  once every partition is past them, into :class:`~models.samples.dfslive.DfsStream` (and one
  per file system) and :class:`~models.samples.utillive.JobUtilStream`; the minutes before the
  released time are final.
* Shippers' markers (``streams.codecs.control``) go through in their place among the samples
  (samples-partials ``markers``) to the merger: a partition's bound is the lowest marker of
  the live shippers on it, a silent shipper is a ``data_quality`` alert, and once every
  shipper's input ended the merger releases all and the streams finish as the replay does at
  the end of its input (every minute, episode and job final).
"""

from __future__ import annotations

import math
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from models.alerts import Alert, AlertBook, shipper_alerts
from models.formats.samplelines import parse_lines
from models.records.reject import Reject
from models.samples.dfslive import DfsStream, FsStreams
from models.samples.merge import SampleMerger
from models.samples.utillive import JobUtilStream
from streams.codecs.base import CodecError
from streams.codecs.control import Marker, decode_marker, is_marker
from streams.codecs.deadletter import message_text
from streams.codecs.partials import (
    decode_sample_partial,
    sample_entry_weight,
    split_sample_partial,
)
from streams.live.checkpoint import Outbox
from streams.live.context import WorkerContext
from streams.live.jobs import TAKE_WITHIN, chunks, dead_letter, dead_letter_late, in_offset_order
from streams.live.runner import lines_in
from streams.sinks.points import timed_line
from streams.stages.samples import GIB_KB, _zone_row
from streams.tables.samples import (
    DFS_MINUTELY,
    DFS_MINUTELY_FS,
    HOT_ZONES,
    HOT_ZONES_FS,
    JOB_UTILIZATION,
)

INPUT_TAKE = 32  # messages of up to ~0.5 MB: 16 MB of lines at once
COMBINE_TAKE = 8


class SamplesForward:
    name = "node-samples"
    take = INPUT_TAKE
    within = TAKE_WITHIN
    stateful = False
    forward_each_part = True
    part_records = 16_000

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self.pending: dict[int, list[list[Any]]] = {}  # partition -> [offset, SampleBatch]

    def topic(self) -> Any:
        return self.ctx.topics.node_samples

    def partials_topic(self) -> Any:
        return self.ctx.topics.samples_partials

    records_in = staticmethod(lines_in)

    def waiting_partitions(self) -> set[int]:
        return set(self.pending)

    def add(self, p: int, off: int, value: bytes, state: Any, out: Outbox) -> None:
        """Sweeps: one sample per line, read into columns (:func:`parse_lines`); each bad
        line is dead-lettered on its own."""
        ctx, s = self.ctx, self.ctx.settings
        where = {"topic": self.topic().get_topic_name(), "partition": p, "offset": off}
        if is_marker(value):  # a shipper's marker: passed on in its place among the samples
            try:
                m = decode_marker(value)
            except CodecError as e:
                dead_letter(ctx, out, Reject(e.reason, self.name, 0, message_text(value)), **where)
                return
            if m is not None:
                ctx.counts["markers"] += 1
                self.pending.setdefault(p, []).append([off, m])
            return
        parsed = parse_lines(value)
        for a, b, reason, _detail in parsed.rejects:
            text = message_text(value[a:b])
            dead_letter(ctx, out, Reject(reason, self.name, 0, text), **where)
        batch = parsed.batch
        ms = batch.ts * 1000
        ok = (s.bounds.not_before <= ms) & (ms < s.bounds.not_after)
        if not ok.all():
            for k in np.flatnonzero(~ok).tolist():
                a, b = parsed.bounds[k].tolist()
                text = message_text(value[a:b])
                dead_letter(ctx, out, Reject("implausible_time", self.name, 0, text), **where)
            batch = batch.take(ok)
        ctx.counts["samples"] += len(batch)
        if len(batch):
            self.pending.setdefault(p, []).append([off, batch])

    def partials(self, p: int, state: Any) -> list[bytes]:
        """Runs of about PARTIAL_EVENTS samples, each cut further to message_max_bytes."""
        cap = self.ctx.settings.kafka.message_max_bytes
        runs = chunks(self.pending.pop(p, []), sample_entry_weight)
        return [v for run in runs for v in split_sample_partial(p, run, cap)]


class SamplesCombine:
    name = "samples"
    owner = "samples"
    kind = "samples"
    version = 1
    take = COMBINE_TAKE
    within = TAKE_WITHIN

    def __init__(self, ctx: WorkerContext, partitions: int | None) -> None:
        self.ctx = ctx
        self.partitions = partitions
        self.zone = ZoneInfo(ctx.settings.accounting.tz)
        self.fresh()

    def topic(self) -> Any:
        return self.ctx.topics.samples_partials

    def fresh(self) -> None:
        s = self.ctx.settings
        self.merger = SampleMerger(s.worker.lateness, self.partitions, s.worker.shipper_timeout)
        self.shipper_book = AlertBook()  # the shippers' data_quality alerts
        self.dfs = DfsStream(
            s.samples.period, 1e6, s.alerts.hot_zone, 3, 0, s.alerts.hot_zone_minutes
        )
        mpc = None if s.samples.mem_per_core is None else s.samples.mem_per_core * GIB_KB
        self.util = JobUtilStream(
            s.samples.period, mpc, s.samples.cores_per_node, s.worker.lateness
        )
        self.fs = FsStreams(
            dict(s.alerts.hot_zone_fs or ()),
            s.alerts.hot_zone,
            period=s.samples.period,
            alert_minutes=s.alerts.hot_zone_minutes,
        )

    def restore(self, version: int, tree: Any) -> None:
        self.fresh()
        self.merger.restore(tree["merger"])
        self.merger.partitions = self.partitions
        self.dfs.restore(tree["dfs"])
        self.util.restore(tree["util"])
        self.fs.restore(tree["fs"])
        if "shippers" in tree:  # none in a state saved before markers
            self.shipper_book = AlertBook.from_dict(tree["shippers"])

    def snapshot(self) -> Any:
        return {
            "merger": self.merger.snapshot(),
            "dfs": self.dfs.snapshot(),
            "util": self.util.snapshot(),
            "fs": self.fs.snapshot(),
            "shippers": self.shipper_book.to_dict(),
        }

    def watermark_lag(self) -> float | None:
        """How far the merger's watermark trails the newest sample or marker time (s)."""
        return self.merger.lag()

    def has_news(self) -> bool:
        return False

    def flush_rows(self, out: Outbox) -> None:
        pass  # every row is final when it is made

    def add(self, off: int, value: bytes, out: Outbox) -> None:
        m = decode_sample_partial(value)
        p, events = m.partition, m.events
        ctx, merger = self.ctx, self.merger
        topic = ctx.topics.node_samples.get_topic_name()
        for src_off, item in in_offset_order(events, m.markers):
            if isinstance(item, Marker):
                self._marker(p, src_off, item, out)
                continue
            late = item.take(merger.add_many(p, src_off, item)).to_samples()
            where = {"topic": topic, "partition": p, "offset": src_off}
            dead_letter_late(ctx, out, merger, late, SamplesForward.name, where)
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
            topic = self.ctx.topics.node_samples.get_topic_name()
            alerts = shipper_alerts(self.shipper_book, topic, changes, s.worker.shipper_timeout)
            self.ctx.counts["alert_changes"] += out.add_alerts(s.accounting.cluster, alerts)

    def _finish(self, out: Outbox) -> None:
        """The end of every shipper's input, as the replay ends: every minute and episode
        final (the whole machine's and each file system's), every job's last row final."""
        self._dfs_out(None, *self.dfs.finish(), out=out)
        for fs, fminutes, fzones, falerts in self.fs.finish():
            self._dfs_out(fs, fminutes, fzones, falerts, out=out)
        self._util_out(math.inf, out)

    def _released(self, released: Any, out: Outbox) -> None:
        if not len(released):
            return
        dfs = self.dfs
        dfs.update(released)
        # every sample at or before the released time is in: the minutes before its are final
        assert self.merger.released_to is not None
        until = math.floor(self.merger.released_to / 60)
        self._dfs_out(None, *dfs.close(until), out=out)
        self.fs.update(released)
        for fs, fminutes, fzones, falerts in self.fs.close(until):
            self._dfs_out(fs, fminutes, fzones, falerts, out=out)
        self.util.update(released)
        self._util_out(self.merger.released_to, out)

    def _util_out(self, until: float, out: Outbox) -> None:
        """Per-job utilisation rows of the buckets ending by ``until``: the jobs with new
        measures, provisional until quiet (``until`` infinite: every job final)."""
        cluster, zone, dfs = self.ctx.settings.accounting.cluster, self.zone, self.dfs
        util = self.util
        changed, final = util.close(until)
        done = set(final)
        for job in sorted(set(changed) | done):
            row = util.row(job, dfs.io_of(job))
            is_final = {"final": int(job in done)}
            out.points.append(
                timed_line(JOB_UTILIZATION, cluster, row, util.first_ts(job), zone, is_final)
            )
        util.forget(final)
        dfs.forget_jobs(final)

    def _dfs_out(
        self, fs: str | None, minutes: list[Any], zones: list[Any], alerts: list[Alert], out: Outbox
    ) -> None:
        """A DFS stream's final minutes (InfluxDB and metrics.dfs, keyed ``<minute_ms>``, or
        ``<fs>:<minute_ms>`` for a file system's), ended episodes and alert changes."""
        ctx = self.ctx
        cluster = ctx.settings.accounting.cluster
        head: tuple[str, ...] = () if fs is None else (fs,)
        mt, zt = (DFS_MINUTELY, HOT_ZONES) if fs is None else (DFS_MINUTELY_FS, HOT_ZONES_FS)
        rows = [(*head, m.minute * 60_000, m.write, m.read, m.jobs_writing) for m in minutes]
        out.influx.write(mt, rows)
        out.metrics.write(mt, rows)
        zrows = [(*head, *_zone_row(z)) for z in zones]
        out.influx.write(zt, zrows)
        ctx.counts["rows"] += len(rows) + len(zrows)
        ctx.counts["alert_changes"] += out.add_alerts(cluster, alerts)
