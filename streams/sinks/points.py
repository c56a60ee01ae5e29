"""Output tables' rows as InfluxDB points, by family: the drain, job and sample tables, and the
alerts (line protocol: streams/sinks/lineproto.py; docs/influxdb.md). Their metric-topic
messages are streams/codecs/metrics.py's.

One :class:`Measurement` per output table says which columns are tags and which one is the
point's time; every other column is a field typed by its column kind (``int`` -> integer,
``number`` -> float, ``text`` -> string; an empty value is left out, not written as 0). A
point's series and time identify the row, so a row written again (a day re-written as jobs that
ran on it end, at-least-once delivery after a restart) overwrites itself.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from models.alerts import Alert
from streams.contracts import Row, Table
from streams.sinks.lineproto import (
    KEY_TABLE,
    STRING_TABLE,
    field_text,
    float_text,
    key,
    measurement_prefix,
    string_text,
    tag_value,
)
from streams.tables.drain import (
    DRAIN_JOBS_WITH_EVENTS,
    LIVE_JOBS,
    LIVE_WINDOW_STATES,
    LIVE_WINDOWS,
    SIZE_GROUPS,
)
from streams.tables.jobs import (
    CAPABILITY_DAILY,
    FAIRSHARE_USAGE,
    RELEASE_FORECAST,
    RUNTIME_PREDICTIONS,
    SHORTJOBS,
    TURNOVER,
    USAGE_DAILY,
)
from streams.tables.samples import (
    DFS_MINUTELY,
    DFS_MINUTELY_FS,
    HOT_ZONES,
    HOT_ZONES_FS,
    JOB_UTILIZATION,
)

_native_lines: Callable[..., list[str | None]] | None
try:
    from drainwatch_native import lp_lines as _native_lines
except ImportError:  # pragma: no cover - the pure-Python path (tests force it too)
    _native_lines = None

_CLUSTER = -1  # the cluster tag's place in a tag plan


# a field's text by its column kind (an empty value never reaches it): the plan carries the
# code, and :meth:`Measurement.line` formats inline (the live job path's hottest loop)
_FLOAT, _INT, _TEXT, _SECONDS_MS, _INSTANT_MS, _BOOL = range(6)
_KIND_CODE = {"int": _INT, "text": _TEXT, "seconds_ms": _SECONDS_MS, "instant_ms": _INSTANT_MS}


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
    # columns of True/False written as boolean fields (the drain windows' ``provisional``);
    # the compiled code leaves them to :meth:`line`
    flags: tuple[str, ...] = ()
    time_kind: str = field(init=False, default="")
    job_col: int = field(init=False, default=0)  # the column of the job id (per_job)
    time_col: int = field(init=False, default=-1)
    width: int = field(init=False, default=0)
    prefix: str = field(init=False, default="")
    # looked up once, not per point: (escaped tag key, column or _CLUSTER) in key order, and
    # (field name, escaped key, column, text of a value) in name order
    tag_plan: tuple[tuple[str, int], ...] = field(init=False, default=())
    field_plan: tuple[tuple[str, str, int, int], ...] = field(init=False, default=())
    native_fields: tuple[tuple[str, int, int], ...] = field(init=False, default=())  # lines()
    # the plans compiled into one function (cluster, row) -> (measurement and tags, fields)
    fast: Callable[[str, Row], tuple[str, list[str]]] = field(
        init=False,
        default=None,
        repr=False,
        compare=False,  # type: ignore[assignment]
    )

    def __post_init__(self) -> None:
        cols = self.table.columns
        names = [c.name for c in cols]
        kinds = {c.name: c.kind for c in cols}
        renamed = dict(self.rename)
        tags: list[tuple[str, int]] = [("cluster", _CLUSTER)]
        fields = []
        for i, c in enumerate(cols):
            if c.name == self.time:
                if c.kind == "day":  # the day is also a tag: a row per day is a series
                    tags.append(("day", i))
            elif c.name in self.tags:
                tags.append((renamed.get(c.name, c.name), i))
            else:
                instant = c.kind in ("instant", "instant_ms")  # another time: POSIX seconds
                fname = c.name + "_s" if instant else c.name
                code = _BOOL if c.name in self.flags else _KIND_CODE.get(c.kind, _FLOAT)
                fields.append((fname, key(fname) + "=", i, code))
        put = object.__setattr__
        put(self, "time_kind", kinds.get(self.time, ""))
        put(self, "job_col", names.index("job") if "job" in names else 0)
        put(self, "time_col", names.index(self.time) if self.time in names else -1)
        put(self, "width", len(cols))
        put(self, "prefix", measurement_prefix(self.name))
        put(self, "tag_plan", tuple(("," + key(k) + "=", i) for k, i in sorted(tags)))
        put(self, "field_plan", tuple(sorted(fields, key=lambda f: f[0])))
        put(self, "native_fields", tuple((k, i, kind) for _n, k, i, kind in self.field_plan))
        put(self, "fast", self._compile())

    def _compile(self) -> Callable[[str, Row], tuple[str, list[str]]]:
        """The tag and field plans as straight-line code: the live job path writes a point
        per row, and a loop over the plan with a branch per kind cost half of its time. The
        rules are :meth:`line`'s loop (the reference test checks both against the client)."""
        code = ["def fast(cluster, row):", "    head = PREFIX"]
        for n, (_k, i) in enumerate(self.tag_plan):
            v = "cluster" if i == _CLUSTER else f"row[{i}]"
            code += [
                f"    v = {v}",
                "    if v is not None:",
                "        t = str(v).translate(KEY_TABLE)",
                "        if t:",
                f"            head += K{n} + (t + ' ' if t[-1] == '\\\\' else t)",
            ]
        code.append("    f = []")
        for n, (_name, _k, i, kind) in enumerate(self.field_plan):
            code += [f"    v = row[{i}]", "    if v is not None:"]
            if kind == _INT:
                code.append(f"        f.append(F{n} + str(int(v)) + 'i')")
            elif kind == _TEXT:
                code.append(f"        f.append(F{n} + '\"' + str(v).translate(STRING) + '\"')")
            elif kind == _BOOL:
                code.append(f"        f.append(F{n} + ('true' if v else 'false'))")
            else:
                x = {_FLOAT: "float(v)", _SECONDS_MS: "int(v) / 1000"}.get(kind, "float(v) / 1000")
                code += [
                    f"        x = {x}",
                    "        if x - x == 0.0:",  # NaN and infinities are left out
                    "            t = REPR(x)",
                    f"            f.append(F{n} + (t[:-2] if t.endswith('.0') else t))",
                ]
        code.append("    return head, f")
        scope: dict[str, Any] = {
            "PREFIX": self.prefix,
            "KEY_TABLE": KEY_TABLE,
            "STRING": STRING_TABLE,
            "REPR": float.__repr__,
        }
        scope.update({f"K{n}": k for n, (k, _i) in enumerate(self.tag_plan)})
        scope.update({f"F{n}": f[1] for n, f in enumerate(self.field_plan)})
        exec("\n".join(code), scope)  # noqa: S102 (code made above from the table's columns)
        return scope["fast"]  # type: ignore[no-any-return]

    def _time_s(self, v: Any, tz: ZoneInfo) -> float:
        kind = self.time_kind
        if kind == "day":
            d = v if isinstance(v, date) else date.fromisoformat(v)
            return datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()
        return float(v) / 1000 if kind == "instant_ms" else float(v)

    def line(
        self,
        cluster: str,
        row: Row,
        tz: ZoneInfo,
        ts: float | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """The row as one line of line protocol (streams/sinks/lineproto.py) at its time
        column, or at ``ts`` (POSIX seconds) for a table without one; ``extra``: more fields
        (name -> value, typed by the value)."""
        if len(row) != self.width:
            raise ValueError(f"{self.name}: a row of {len(row)} columns, not {self.width}")
        if not extra:
            head, fast_fields = self.fast(cluster, row)
            if not fast_fields:
                return ""
            if ts is None:
                ts = self._time_s(row[self.time_col], tz)
            return f"{head} {','.join(fast_fields)} {self.time_ns(ts, row)}"
        parts = [self.prefix]
        for k, i in self.tag_plan:
            v = cluster if i == _CLUSTER else row[i]
            if v is not None:
                t = str(v).translate(KEY_TABLE)
                if t:
                    parts.append(k + t + " " if t[-1] == "\\" else k + t)
        fields: list[str] = []
        if extra:
            plan = [(f[0], f[1], row[f[2]], f[3]) for f in self.field_plan]
            plan += [(n, key(n) + "=", v, -1) for n, v in extra.items()]
            plan.sort(key=lambda f: f[0])
        else:
            plan = [(f[0], f[1], row[f[2]], f[3]) for f in self.field_plan]
        for _n, k, v, code in plan:
            if v is None:
                continue
            if code == _FLOAT or code == _SECONDS_MS or code == _INSTANT_MS:
                x = (
                    float(v)
                    if code == _FLOAT
                    else int(v) / 1000
                    if code == _SECONDS_MS
                    else float(v) / 1000
                )
                if x - x != 0.0:  # NaN or an infinity: left out
                    continue
                t = float.__repr__(x)
                fields.append(k + t[:-2] if t.endswith(".0") else k + t)
            elif code == _INT:
                fields.append(f"{k}{int(v)}i")
            elif code == _TEXT:
                fields.append(k + string_text(v))
            elif code == _BOOL:
                fields.append(k + ("true" if v else "false"))
            else:
                t2 = field_text(v)
                if t2 is not None:
                    fields.append(k + t2)
        if not fields:
            return ""
        if ts is None:
            ts = self._time_s(row[self.time_col], tz)
        return f"{''.join(parts)} {','.join(fields)} {self.time_ns(ts, row)}"

    def lines(
        self, cluster: str, rows: Sequence[Row], tz: ZoneInfo, times: Sequence[float] | None = None
    ) -> list[str]:
        """:meth:`line` of each row (``times``: each row's ``ts``), compiled where
        ``native/`` is built (its rows must be tuples or lists): the same text, checked
        against :meth:`line` on generated rows; a row with a value the compiled code leaves
        to Python (a date, a float tag, an integer beyond 2^53 as seconds) is :meth:`line`'s."""
        native = _native_lines
        if native is None or not rows or self.flags:
            if times is None:
                return [self.line(cluster, r, tz) for r in rows]
            return [self.line(cluster, r, tz, t) for r, t in zip(rows, times, strict=True)]
        if times is None and self.time_kind == "day":
            times = [self._time_s(r[self.time_col], tz) for r in rows]
        div = 1000.0 if self.time_kind == "instant_ms" else 1.0
        if not isinstance(rows, list):
            rows = list(rows)
        # a row of another width is None there, and :meth:`line` refuses it
        job = self.job_col if self.per_job else -1
        out = native(
            self.prefix,
            self.tag_plan,
            self.native_fields,
            cluster,
            rows,
            times,
            self.time_col,
            div,
            job,
            self.width,
        )
        for i, s in enumerate(out):
            if s is None:
                out[i] = self.line(cluster, rows[i], tz, None if times is None else times[i])
        return out  # type: ignore[return-value]

    def time_ns(self, t: float, row: Row) -> int:
        ns = round(t * 1000) * 1_000_000
        if self.per_job:
            ns += zlib.crc32(str(row[self.job_col]).encode()) % 1_000_000
        return ns


def _by_file(*measurements: Measurement) -> dict[str, Measurement]:
    return {m.table.file: m for m in measurements}


# The job engine's tables (streams.tables.jobs).
JOB_MEASUREMENTS = _by_file(
    Measurement("usage", USAGE_DAILY, "day", ("resource",)),
    Measurement(
        "shortjobs", SHORTJOBS, "ts", ("holder_kind", "holder"), (("holder_kind", "kind"),)
    ),
    Measurement("turnover", TURNOVER, "window_start", ()),
    # time: the job's end (the row is final then)
    Measurement("runtime_prediction", RUNTIME_PREDICTIONS, "", ("user", "partition"), per_job=True),
    Measurement("capability", CAPABILITY_DAILY, "day", ()),
    Measurement(
        "fairshare", FAIRSHARE_USAGE, "ts", ("holder_kind", "holder"), (("holder_kind", "kind"),)
    ),
    # time: the submit (the forecast is made then); a step of the forecast a point: the row
    # written at the job's start (or end, if cancelled) overwrites the submit's
    Measurement("release_forecast", RELEASE_FORECAST, "ts", ("step",), per_job=True),
)
# The sample engine's tables (streams.tables.samples).
SAMPLE_MEASUREMENTS = _by_file(
    Measurement("dfs", DFS_MINUTELY, "minute", ()),
    # time: the job's first measure (set by the caller)
    Measurement("job_util", JOB_UTILIZATION, "", (), per_job=True),
    Measurement("hot_zone", HOT_ZONES, "start", ()),
    Measurement("dfs_fs", DFS_MINUTELY_FS, "minute", ("fs",)),
    Measurement("hot_zone_fs", HOT_ZONES_FS, "start", ("fs",)),
)
# The drain engine's tables the live job path writes from its drain/job join
# (models.drain.jobjoin).
DRAIN_JOIN_MEASUREMENTS = _by_file(
    # time: the job's stamp (set by the caller: models.drain.jobjoin), fixed for the job, so
    # every later row overwrites the point; the first charge itself can move earlier
    Measurement("job", DRAIN_JOBS_WITH_EVENTS, "", (), per_job=True),
    # time: the join's event time when the group changed (a cumulative gauge; last() is now)
    Measurement("drain_size_group", SIZE_GROUPS, "", ("group",)),
)
# Every measurement whose fields follow the column kinds alone.
MEASUREMENTS = {**JOB_MEASUREMENTS, **SAMPLE_MEASUREMENTS, **DRAIN_JOIN_MEASUREMENTS}

# The drain path's windows, their node-state breakdowns and job totals (streams.tables.drain
# LIVE_TABLES): the points the drain combiner writes, field for field. Apart from MEASUREMENTS:
# here ``provisional`` is a boolean field.
LIVE_DRAIN_MEASUREMENTS = _by_file(
    Measurement("drain", LIVE_WINDOWS, "start", ("window",), flags=("provisional",)),
    Measurement(
        "node_states",
        LIVE_WINDOW_STATES,
        "start",
        ("window", "state", "has_rsv", "has_job"),
        flags=("provisional",),
    ),
    Measurement("drain_job", LIVE_JOBS, "time", (), per_job=True),
)
_ALL_MEASUREMENTS = {**MEASUREMENTS, **LIVE_DRAIN_MEASUREMENTS}


def measurement_of(table: Table) -> Measurement | None:
    """The measurement of ``table``'s rows; None for a table InfluxDB does not take (two
    tables may share a file name, as drain_jobs.csv with and without job events: only the
    measurement's own table is its)."""
    m = _ALL_MEASUREMENTS.get(table.file)
    return m if m is not None and m.table == table else None


def timed_line(
    table: Table,
    cluster: str,
    row: Row,
    ts: float,
    tz: ZoneInfo,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """A row of a table without a time column (``runtime_prediction``: the job's end;
    ``job_util``: its first measure; ``job``: the join's stamp of the job) at ``ts``."""
    return _ALL_MEASUREMENTS[table.file].line(cluster, row, tz, ts, extra)


def timed_lines(
    table: Table, cluster: str, rows: Sequence[Row], times: Sequence[float], tz: ZoneInfo
) -> list[str]:
    """:func:`timed_line` of each row at its time (POSIX seconds)."""
    return _ALL_MEASUREMENTS[table.file].lines(cluster, rows, tz, times)


def runtime_prediction_line(cluster: str, row: Row, end: float, tz: ZoneInfo) -> str:
    """A ``runtime_predictions.csv`` row's point at the job's end."""
    return timed_line(RUNTIME_PREDICTIONS, cluster, row, end, tz)


_ALERT_TAGS = ("cluster", "kind", "severity", "state", "subject")  # in key order


def alert_line(cluster: str, a: Alert) -> str:
    """One ``alerts`` point at the change's event time (to the millisecond); series = kind +
    subject + state, so a re-sent change overwrites itself. Written directly (the job path
    writes one per alert change): the same text as :func:`~streams.sinks.lineproto.line` of
    the tags and fields in tests/streams/sinks/test_lineproto.py."""
    head = "alerts"
    for k, v in zip(_ALERT_TAGS, (cluster, a.kind, a.severity, a.state, a.subject), strict=True):
        if v is not None:
            t = tag_value(v)
            if t:
                head += "," + k + "=" + t
    fields = [
        "details=" + string_text(orjson.dumps(dict(a.details)).decode()),
        "firing=1i" if a.state == "firing" else "firing=0i",
    ]
    if a.id is not None:
        fields.append("id=" + string_text(a.id))
    for k, x in (("since_s", a.since), ("threshold", a.threshold), ("value", a.value)):
        if x is not None:
            ft = float_text(float(x))
            if ft is not None:
                fields.append(k + "=" + ft)
    if a.window is not None:
        fields.append("window=" + string_text(a.window))
    return f"{head} {','.join(fields)} {round(a.at * 1000) * 1_000_000}"


def table_lines(cluster: str, table: Table, rows: Sequence[Row], tz: ZoneInfo) -> list[str]:
    """The rows of a table with a time column as lines ('' for a row without fields)."""
    return _ALL_MEASUREMENTS[table.file].lines(cluster, rows, tz)
