"""The live node-samples path (docs/state.md, "Node samples"): DFS write load per minute and
hot-zone episodes (seed 003 §5.2), the same numbers as ``drainwatch replay --format samples``.

The job-events path's machinery with samples as the records (:class:`JobsPipeline`): the
``node-samples`` agent checks each message (one node's sweep: trace lines, one per process),
dead-letters bad lines with their reason and forwards the good samples with their offset to
``samples-partials``; the combiner's :class:`~models.samples.merge.SampleMerger` releases them
in time order once every partition is past them, into :class:`~models.samples.dfslive.DfsStream`,
which makes the minutes before the released time final. Every ``flush_interval`` the final
minutes go to InfluxDB (``dfs``) and ``metrics.dfs``, the ended episodes to ``hot_zone``, the
hot-zone alert changes to ``alerts``; then the merger and the model are saved and only then
are the partials acked.
"""

from __future__ import annotations

import math
import pickle
from typing import Any

import numpy as np
import orjson

from models.alerts import Alert
from models.formats.samplelines import parse_lines
from models.formats.sampletrace import parse_sample, sample_from_row
from models.records.reject import Reject
from models.samples.batch import MAGIC, SampleBatch
from models.samples.dfslive import DfsStream, FsStreams
from models.samples.merge import SampleMerger
from models.samples.utillive import JobUtilStream
from streams.config import Settings
from streams.jobagents import JobsPipeline
from streams.sinks.influx import InfluxSink
from streams.sinks.jobpoints import row_messages, table_lines, timed_line
from streams.stages.samples import (
    DFS_MINUTELY,
    DFS_MINUTELY_FS,
    GIB_KB,
    HOT_ZONES,
    HOT_ZONES_FS,
    JOB_UTILIZATION,
    _zone_row,
)

STATE_KEY = "samples"
# 2: the merger (holding columns) pickled as it is (format 1, a dict of records, still reads)
STATE_FORMAT = 2


class SamplesPipeline(JobsPipeline):
    SOURCE = "node-samples"
    INPUT_TAKE = 32  # messages of up to ~0.5 MB: 16 MB of lines at once, not 256 MB

    def _input_topic(self) -> Any:
        return self.topics.node_samples

    def _partials_topic(self) -> Any:
        return self.topics.samples_partials

    def _records(self, value: bytes, where: dict[str, Any]) -> Any:
        """Sweeps: one sample per line, read into columns (:func:`parse_lines`); each bad line
        is dead-lettered on its own."""
        s = self.settings
        parsed = parse_lines(value)
        for a, b, reason, _detail in parsed.rejects:
            text = value[a:b][:4096].decode("utf-8", "replace")
            self._dead_letter(Reject(reason, self.SOURCE, 0, text), **where)
        batch = parsed.batch
        ms = batch.ts * 1000
        ok = (s.not_before <= ms) & (ms < s.not_after)
        if not ok.all():
            for k in np.flatnonzero(~ok).tolist():
                a, b = parsed.bounds[k].tolist()
                text = value[a:b][:4096].decode("utf-8", "replace")
                self._dead_letter(Reject("implausible_time", self.SOURCE, 0, text), **where)
            batch = batch.take(ok)
        self.counts["samples"] += len(batch)
        return batch if len(batch) else None

    def _encode_partial(self, p: int, entries: list[list[Any]]) -> bytes:
        """The entries' samples as one batch of columns (:meth:`SampleBatch.to_bytes`), a
        third of the lines' size and read back without parsing; each entry's offset and
        number of samples in the header."""
        batch = SampleBatch.concat([b for _off, b in entries])
        return batch.to_bytes({"partition": p, "events": [[off, len(b)] for off, b in entries]})

    def _decode_partial(self, value: bytes) -> dict[str, Any]:
        if value[:4] != MAGIC:
            return super()._decode_partial(value)  # an earlier release's (JSON)
        batch, head = SampleBatch.from_bytes(value)
        events, lo = [], 0
        for off, n in head["events"]:
            events.append([off, batch.slice(lo, lo + n)])
            lo += n
        return {"partition": head["partition"], "events": events}

    def _take(self, merger: Any, p: int, off: int, rec: Any) -> list[Any]:
        """The forwarded samples into the merger (checked by the forwarding agent; rows or
        objects from an earlier release); returns the late ones (records with the fields the
        live path keeps, for their dead letters)."""
        if isinstance(rec, SampleBatch):
            batch = rec
        elif rec and isinstance(rec[0], dict):
            batch = SampleBatch.from_samples(parse_sample(orjson.dumps(d)) for d in rec)
        else:
            batch = SampleBatch.from_samples(sample_from_row(r) for r in rec)
        return batch.take(merger.add_many(p, off, batch)).to_samples()

    async def _state(self) -> tuple[Any, dict[str, Any]]:
        if self.merger is None or self.stages is None:
            data = await self.store.load(STATE_KEY)
            s = self.settings
            if data is None:
                self.merger = SampleMerger(s.lateness, self.partitions)
                dfs = DfsStream(s.sample_period, 1e6, s.alert_hot_zone, 3, 0,
                                s.alert_hot_zone_minutes)  # fmt: skip
                mpc = None if s.mem_per_core is None else s.mem_per_core * GIB_KB
                util = JobUtilStream(s.sample_period, mpc, s.cores_per_node, s.lateness)
                self.stages, self.offset = {"dfs": dfs, "util": util, "fs": self._fs()}, -1
            else:
                d = pickle.loads(data)  # noqa: S301 (the worker's own state topic)
                if not isinstance(d, dict) or d.get("format") not in (1, STATE_FORMAT):
                    raise ValueError("samples state: not readable by this release")
                m = d["merger"]  # format 1: the merger as a dict of records
                self.merger = SampleMerger.from_dict(m) if isinstance(m, dict) else m
                self.merger.partitions = self.partitions
                self.stages = {"dfs": d["dfs"], "util": d["util"], "fs": d.get("fs") or self._fs()}
                self.offset = int(d["offset"])
        return self.merger, self.stages

    def _fs(self) -> FsStreams:
        """Per file system (samples with ``fs_rates``): alerts.hot_zone_fs, else hot_zone."""
        s = self.settings
        return FsStreams(dict(s.alert_hot_zone_fs or ()), s.alert_hot_zone, period=s.sample_period,
                         alert_minutes=s.alert_hot_zone_minutes)  # fmt: skip

    def _released(self, stages: dict[str, Any], released: Any) -> None:
        if not len(released):
            return
        dfs: DfsStream = stages["dfs"]
        dfs.update(released)
        # every sample at or before the released time is in: the minutes before its are final
        assert self.merger is not None and self.merger.released_to is not None
        until = math.floor(self.merger.released_to / 60)
        self._dfs_out(None, *dfs.close(until))
        fs_streams: FsStreams = stages["fs"]
        fs_streams.update(released)
        for fs, fminutes, fzones, falerts in fs_streams.close(until):
            self._dfs_out(fs, fminutes, fzones, falerts)
        cluster, zone = self.settings.cluster, self.zone
        # per-job utilisation: the jobs with new measures, provisional until quiet
        util: JobUtilStream = stages["util"]
        util.update(released)
        changed, final = util.close(self.merger.released_to)
        done = set(final)
        for job in sorted(set(changed) | done):
            row = util.row(job, dfs.io_of(job))
            is_final = {"final": int(job in done)}
            self.points.append(timed_line(JOB_UTILIZATION, cluster, row, util.first_ts(job), zone,
                                          is_final))  # fmt: skip
        util.forget(final)
        dfs.forget_jobs(final)

    def _dfs_out(self, fs: str | None, minutes: list[Any], zones: list[Any],
                 alerts: list[Alert]) -> None:  # fmt: skip
        """A DFS stream's final minutes (InfluxDB and metrics.dfs, keyed ``<minute_ms>``, or
        ``<fs>:<minute_ms>`` for a file system's), ended episodes and alert changes."""
        cluster, zone = self.settings.cluster, self.zone
        head: tuple[str, ...] = () if fs is None else (fs,)
        mt, zt = (DFS_MINUTELY, HOT_ZONES) if fs is None else (DFS_MINUTELY_FS, HOT_ZONES_FS)
        rows = [(*head, m.minute * 60_000, m.write, m.read, m.jobs_writing) for m in minutes]
        self.points += table_lines(cluster, mt, rows, zone)
        topic = self.topics.metrics_dfs
        for r, m in zip(rows, row_messages(cluster, mt, rows), strict=True):
            self.messages.append((topic, ":".join([*head, str(r[len(head)])]).encode(), m))
        zrows = [(*head, *_zone_row(z)) for z in zones]
        self.points += table_lines(cluster, zt, zrows, zone)
        self.counts["rows"] += len(rows) + len(zrows)
        self._alerts(alerts)

    def _saved(self) -> bytes:
        assert self.merger is not None and self.stages is not None
        # the merger itself: its held columns pickle as arrays, not as lists of values
        state = {"format": STATE_FORMAT, "merger": self.merger,
                 "dfs": self.stages["dfs"], "util": self.stages["util"], "fs": self.stages["fs"],
                 "offset": self.offset}  # fmt: skip
        return pickle.dumps(state, protocol=5)

    def _flush_rows(self) -> None:
        pass  # every row is final when it is made


def attach_samples(
    app: Any, settings: Settings, sink: InfluxSink | None, partitions: int | None = None
) -> SamplesPipeline:
    """The node-samples and samples-partials agents and their flush timer on ``app``."""
    from streams.jobagents import wire

    pipe = SamplesPipeline(app, settings, sink, partitions)
    t = app.drainwatch_topics
    wire(app, settings, pipe, t.node_samples, t.samples_partials, "samples")
    app.drainwatch_samples = pipe
    return pipe
