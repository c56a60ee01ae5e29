"""The job stages' rows as InfluxDB points and metric-topic messages (docs/influxdb.md).

One :class:`Measurement` per output table says which columns are tags and which one is the
point's time; every other column is a field typed by its column kind (``int`` -> integer,
``number`` -> float, ``text`` -> string; an empty value is left out, not written as 0). A
point's series and time identify the row, so a row written again (a day re-written as jobs that
ran on it end, at-least-once delivery after a restart) overwrites itself.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from models.alerts import Alert
from streams.format import instant
from streams.stages.drain import DRAIN_JOBS_WITH_EVENTS, SIZE_GROUPS
from streams.stages.jobs import (
    CAPABILITY_DAILY,
    FAIRSHARE_USAGE,
    RELEASE_FORECAST,
    RUNTIME_PREDICTIONS,
    SHORTJOBS,
    TURNOVER,
    USAGE_DAILY,
)
from streams.stages.samples import (
    DFS_MINUTELY,
    DFS_MINUTELY_FS,
    HOT_ZONES,
    HOT_ZONES_FS,
    JOB_UTILIZATION,
)
from streams.tables import Row, Table


@dataclass(frozen=True, slots=True)
class Measurement:
    name: str
    table: Table
    time: str  # the column that is the point's time (instant, or day: its local midnight)
    tags: tuple[str, ...]  # columns written as tags (besides cluster)
    rename: tuple[tuple[str, str], ...] = ()  # column -> tag name, where they differ
    # a per-job row: the job id is a field, not a tag (InfluxDB 1.x refuses a tag's 100,001st
    # value, and a series per job is costly in any version), and the nanoseconds below the
    # point's millisecond carry crc32(job id) % 10**6, so two jobs at one millisecond are two
    # points while a job's re-written row still overwrites its own
    per_job: bool = False
    time_kind: str = field(init=False, default="")
    tag_names: dict[str, str] = field(init=False, default_factory=dict)
    job_col: int = field(init=False, default=0)  # the column of the job id (per_job)

    def __post_init__(self) -> None:  # looked up once, not per point
        kinds = {c.name: c.kind for c in self.table.columns}
        object.__setattr__(self, "time_kind", kinds.get(self.time, ""))
        names = [c.name for c in self.table.columns]
        object.__setattr__(self, "job_col", names.index("job") if "job" in names else 0)
        renamed = dict(self.rename)
        object.__setattr__(self, "tag_names", {t: renamed.get(t, t) for t in self.tags})

    def _time_s(self, v: Any, tz: ZoneInfo) -> float:
        kind = self.time_kind
        if kind == "day":
            d = v if isinstance(v, date) else date.fromisoformat(v)
            return datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()
        return float(v) / 1000 if kind == "instant_ms" else float(v)

    def point(self, cluster: str, row: Row, tz: ZoneInfo) -> Any:
        from influxdb_client import Point, WritePrecision

        p = Point(self.name).tag("cluster", cluster)
        tags = self.tag_names
        t = 0.0
        for c, v in zip(self.table.columns, row, strict=True):
            if c.name == self.time:
                t = self._time_s(v, tz)
                if c.kind == "day":
                    p = p.tag("day", str(v))
                continue
            if c.name in tags:
                p = p.tag(tags[c.name], "" if v is None else str(v))
            elif v is None:
                continue
            elif c.kind == "int":
                p = p.field(c.name, int(v))
            elif c.kind == "seconds_ms":
                p = p.field(c.name, int(v) / 1000)
            elif c.kind in ("instant", "instant_ms"):  # another time: POSIX seconds
                p = p.field(c.name + "_s", float(v) / (1000 if c.kind == "instant_ms" else 1))
            elif c.kind == "text":
                p = p.field(c.name, str(v))
            else:
                p = p.field(c.name, float(v))
        return p.time(self.time_ns(t, row), WritePrecision.NS)

    def time_ns(self, t: float, row: Row) -> int:
        ns = round(t * 1000) * 1_000_000
        if self.per_job:
            ns += zlib.crc32(str(row[self.job_col]).encode()) % 1_000_000
        return ns


MEASUREMENTS: dict[str, Measurement] = {
    m.table.file: m
    for m in (
        Measurement("usage", USAGE_DAILY, "day", ("resource",)),
        Measurement(
            "shortjobs", SHORTJOBS, "ts", ("holder_kind", "holder"), (("holder_kind", "kind"),)
        ),  # fmt: skip
        Measurement("turnover", TURNOVER, "window_start", ()),
        # time: the job's end (the row is final then)
        Measurement(
            "runtime_prediction", RUNTIME_PREDICTIONS, "", ("user", "partition"), per_job=True
        ),
        Measurement("capability", CAPABILITY_DAILY, "day", ()),
        Measurement(
            "fairshare",
            FAIRSHARE_USAGE,
            "ts",
            ("holder_kind", "holder"),
            (("holder_kind", "kind"),),
        ),  # fmt: skip
        Measurement("dfs", DFS_MINUTELY, "minute", ()),
        # time: the job's first measure (set by the caller)
        Measurement("job_util", JOB_UTILIZATION, "", (), per_job=True),
        # time: the job's stamp (set by the caller: models.drain.jobjoin), fixed for the job,
        # so every later row overwrites the point; the first charge itself can move earlier
        Measurement("job", DRAIN_JOBS_WITH_EVENTS, "", (), per_job=True),
        Measurement("hot_zone", HOT_ZONES, "start", ()),
        Measurement("dfs_fs", DFS_MINUTELY_FS, "minute", ("fs",)),
        Measurement("hot_zone_fs", HOT_ZONES_FS, "start", ("fs",)),
        # time: the submit (the forecast is made then); a step of the forecast a point: the
        # row written at the job's start (or end, if cancelled) overwrites the submit's
        Measurement("release_forecast", RELEASE_FORECAST, "ts", ("step",), per_job=True),
        # time: the join's event time when the group changed (a cumulative gauge; last() is now)
        Measurement("drain_size_group", SIZE_GROUPS, "", ("group",)),
    )
}


def timed_point(table: Table, cluster: str, row: Row, ts: float, tz: ZoneInfo) -> Any:
    """A point of a table without a time column (``runtime_prediction``: the job's end;
    ``job_util``: its first measure; ``job``: the join's stamp of the job) at ``ts``."""
    from influxdb_client import WritePrecision

    m = MEASUREMENTS[table.file]
    return m.point(cluster, row, tz).time(m.time_ns(ts, row), WritePrecision.NS)


def runtime_point(cluster: str, row: Row, end: float, tz: ZoneInfo) -> Any:
    return timed_point(RUNTIME_PREDICTIONS, cluster, row, end, tz)


def row_message(cluster: str, table: Table, row: Row) -> dict[str, Any]:
    """A metric-topic message of one row: its columns by name; an instant column as ISO 8601
    UTC, with its POSIX time beside it as ``<name>_s`` (seconds), or ``<name>_ms`` for a
    millisecond column."""
    d: dict[str, Any] = {"v": 1, "cluster": cluster}
    for c, v in zip(table.columns, row, strict=True):
        if c.kind in ("instant", "instant_ms"):
            ts = v if v is None or c.kind == "instant" else v / 1000
            d[c.name] = None if ts is None else instant(ts)
            d[c.name + ("_s" if c.kind == "instant" else "_ms")] = v
        else:
            d[c.name] = v
    return d


def alert_message(cluster: str, a: Alert) -> dict[str, Any]:
    return {
        "v": 1,
        "cluster": cluster,
        **a.to_dict(),
        "since_iso": instant(a.since),
        "at_iso": instant(a.at),
    }


def alert_point(cluster: str, a: Alert) -> Any:
    """One ``alerts`` point at the change's event time; series = kind + subject + state, so a
    re-sent change overwrites itself."""
    from influxdb_client import Point, WritePrecision

    p = (
        Point("alerts")
        .tag("cluster", cluster)
        .tag("kind", a.kind)
        .tag("subject", a.subject)
        .tag("state", a.state)
        .tag("severity", a.severity)
        .field("id", a.id)
        .field("since_s", float(a.since))
        .field("firing", 1 if a.state == "firing" else 0)
        .field("window", a.window)
        .field("details", orjson.dumps(dict(a.details)).decode())
    )
    if a.value is not None:
        p = p.field("value", float(a.value))
    if a.threshold is not None:
        p = p.field("threshold", float(a.threshold))
    return p.time(round(a.at * 1000), WritePrecision.MS)


def table_points(cluster: str, table: Table, rows: Sequence[Row], tz: ZoneInfo) -> list[Any]:
    m = MEASUREMENTS[table.file]
    return [m.point(cluster, r, tz) for r in rows]
