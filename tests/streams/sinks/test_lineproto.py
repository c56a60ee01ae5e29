"""Line protocol written directly (streams/sinks/lineproto.py) equals what influxdb-client's
``Point.to_line_protocol`` writes for the same point: the reference below builds every
measurement's point the way the sinks built them before, with ``Point`` objects, and generated
rows (escapes, empty values, NaN and infinities, numpy scalars) must give the same text."""

from __future__ import annotations

import math
import zlib
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from influxdb_client import Point, WritePrecision

from models.alerts import Alert
from models.drain.live import LiveJob, LiveWindow
from streams.sinks.influx import job_point, state_points, window_point
from streams.sinks.lineproto import line
from streams.sinks.points import MEASUREMENTS, Measurement, alert_line

UTC = ZoneInfo("UTC")
ZONES = [UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("America/Chicago")]

# ---- the reference: the Point-based serialisation --------------------------------------------


def reference_point(
    m: Measurement,
    cluster: str,
    row: Any,
    tz: ZoneInfo,
    ts: float | None = None,
    extra: dict[str, Any] | None = None,
) -> str:
    p = Point(m.name).tag("cluster", cluster)
    tags = dict((t, dict(m.rename).get(t, t)) for t in m.tags)
    t = 0.0
    for c, v in zip(m.table.columns, row, strict=True):
        if c.name == m.time:
            t = m._time_s(v, tz)
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
        elif c.kind in ("instant", "instant_ms"):
            p = p.field(c.name + "_s", float(v) / (1000 if c.kind == "instant_ms" else 1))
        elif c.kind == "text":
            p = p.field(c.name, str(v))
        else:
            p = p.field(c.name, float(v))
    for k, v in (extra or {}).items():
        p = p.field(k, v)
    return str(
        p.time(m.time_ns(t if ts is None else ts, row), WritePrecision.NS).to_line_protocol()
    )


# ---- generated values ------------------------------------------------------------------------

texts = st.one_of(
    st.sampled_from(
        [
            "",
            "a",
            "user 1",
            "a,b",
            "k=v",
            'q"uote',
            "back\\",
            "tab\t",
            "nl\nx",
            "ümlaut",
            "#hash",
            "\\",
            "a\\ b",
            "r\r",
        ]
    ),
    st.text(max_size=12),
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 100.0, 1e16, 1e-7, 2.5, 1 / 3]),
    st.integers(-(2**53), 2**53).map(float),
)
ints = st.integers(-(2**62), 2**62)
DAY = st.dates(date(1971, 1, 2), date(2099, 12, 30))


def _value(kind: str) -> st.SearchStrategy[Any]:
    if kind == "text":
        return st.one_of(st.none(), texts)
    if kind == "int":
        return st.one_of(st.none(), ints, ints.map(np.int64))
    if kind == "seconds_ms":
        return st.one_of(st.none(), ints)
    if kind == "day":
        return st.one_of(DAY, DAY.map(str))
    if kind in ("instant", "instant_ms"):
        return st.one_of(st.none(), st.floats(0, 4e12), st.integers(0, 4 * 10**12))
    return st.one_of(st.none(), floats, floats.map(np.float64), ints)


def _time_value(kind: str) -> st.SearchStrategy[Any]:
    if kind == "day":
        return st.one_of(DAY, DAY.map(str))
    return st.one_of(st.floats(0, 4e12), st.integers(0, 4 * 10**12))


@st.composite
def measured_rows(draw: Any) -> tuple[Measurement, tuple[Any, ...]]:
    m = draw(st.sampled_from(list(MEASUREMENTS.values())))
    row = tuple(
        draw(_time_value(c.kind) if c.name == m.time else _value(c.kind)) for c in m.table.columns
    )
    return m, row


@settings(max_examples=600, deadline=None)
@given(measured_rows(), texts.filter(bool), st.sampled_from(ZONES), st.floats(0, 4e9))
def test_a_measurement_row_is_the_reference_points_line(
    mr: Any, cluster: str, tz: ZoneInfo, ts: float
) -> None:
    m, row = mr
    at = None if m.time else ts
    assert m.line(cluster, row, tz, at) == reference_point(m, cluster, row, tz, at)


@settings(max_examples=200, deadline=None)
@given(measured_rows(), st.sampled_from([0, 1]), st.floats(0, 4e9))
def test_extra_fields_are_merged_in_key_order(mr: Any, final: int, ts: float) -> None:
    m, row = mr
    at = None if m.time else ts
    extra = {"final": final, "zz_last": 1.5, "a_first": "x y"}
    assert m.line("c", row, UTC, at, extra) == reference_point(m, "c", row, UTC, at, extra)


# no np.bool_: the reference refuses it
field_values = st.one_of(
    st.none(), st.booleans(), ints, floats, texts, ints.map(np.int64), floats.map(np.float64)
)


@settings(max_examples=500, deadline=None)
@given(
    texts.filter(lambda s: bool(s) and not s.startswith("#")),
    st.dictionaries(texts.filter(bool), st.one_of(st.none(), texts), max_size=4),
    st.dictionaries(texts.filter(bool), field_values, max_size=6),
    st.integers(0, 2**62),
)
def test_a_plain_point_is_the_reference_points_line(
    name: str, tags: dict[str, Any], fields: dict[str, Any], ns: int
) -> None:
    p = Point(name)
    for k, v in tags.items():
        p = p.tag(k, v)
    for k, v in fields.items():
        p = p.field(k, v)
    want = p.time(ns, WritePrecision.NS).to_line_protocol()
    assert line(name, tags, fields, ns) == want


def test_an_unsupported_field_type_is_an_error() -> None:
    with pytest.raises(TypeError, match="list"):
        line("m", {}, {"x": [1]}, 0)


def test_a_point_without_fields_is_no_line_and_the_sink_drops_it() -> None:
    assert line("m", {"cluster": "c"}, {"x": None, "y": math.nan}, 5) == ""


def test_alert_and_drain_points_equal_the_reference() -> None:
    a = Alert(
        id="hot_zone:dfs",
        kind="hot_zone",
        subject="dfs 1",
        severity="warning",
        state="firing",
        value=120.5,
        threshold=93.0,
        window="5m",
        since=1_700_000_000.25,
        at=1_700_000_060.5,
        details={"top": ["j 1", 'q"']},
    )
    ref = (
        Point("alerts")
        .tag("cluster", "c")
        .tag("kind", a.kind)
        .tag("subject", a.subject)
        .tag("state", a.state)
        .tag("severity", a.severity)
        .field("id", a.id)
        .field("since_s", a.since)
        .field("firing", 1)
        .field("window", a.window)
        .field("details", '{"top":["j 1","q\\""]}')
        .field("value", 120.5)
        .field("threshold", 93.0)
        .time(round(a.at * 1000), WritePrecision.MS)
    )
    ms = ref.to_line_protocol()
    head, t = ms.rsplit(" ", 1)
    assert alert_line("c", a) == f"{head} {int(t) * 1_000_000}"  # ns: the same instant

    j = LiveJob("10 01", 5_500, 2, 1_000, 3_000, 1, 1_000)
    assert job_point("c", j) == (
        'drain_job,cluster=c drain_node_seconds=5.5,first_charged_ms=1000i,job="10 01",'
        f"last_charged_ms=3000i,nodes_charged=2i,nodes_running=1i "
        f"{1_000 * 1_000_000 + zlib.crc32(b'10 01') % 1_000_000}"
    )
    w = _window()
    lines = [window_point("c", w), *state_points("c", w)]
    assert lines[0].startswith("drain,cluster=c,window=hour accounted_node_seconds=7200,")
    assert "provisional=true" in lines[0] and "drain_pct_static" not in lines[0]
    assert lines[1] == (
        "node_states,cluster=c,has_job=0,has_rsv=1,state=Idle,window=hour "
        "node_seconds=3.5,provisional=true 3600000000000"
    )


def _window() -> LiveWindow:
    return LiveWindow(
        "hour",
        3_600_000,
        3_600_000,
        2,
        7_200_000,
        0,
        0,
        0,
        0,
        None,
        None,
        3600.0,
        "ok",
        True,
        {"Idle": [0, 0, 3_500, 0]},
    )


# ---- many rows at once: Measurement.lines (compiled where native/ is built) -----------------


@st.composite
def measured_batches(draw: Any) -> tuple[Measurement, list[Any]]:
    m = draw(st.sampled_from(list(MEASUREMENTS.values())))
    n = draw(st.integers(0, 6))
    rows = [
        tuple(
            draw(_time_value(c.kind) if c.name == m.time else _value(c.kind))
            for c in m.table.columns
        )
        for _ in range(n)
    ]
    if draw(st.booleans()):  # lists as well as tuples
        rows = [list(r) for r in rows]
    return m, rows


@settings(max_examples=600, deadline=None)
@given(measured_batches(), texts.filter(bool), st.sampled_from(ZONES), st.data())
def test_lines_of_many_rows_are_each_rows_line(
    mb: Any, cluster: str, tz: ZoneInfo, data: Any
) -> None:
    m, rows = mb
    if m.time:
        assert m.lines(cluster, rows, tz) == [m.line(cluster, r, tz) for r in rows]
    else:
        times = [data.draw(st.floats(0, 4e9)) for _ in rows]
        want = [m.line(cluster, r, tz, t) for r, t in zip(rows, times, strict=True)]
        assert m.lines(cluster, rows, tz, times) == want


def test_lines_without_the_compiled_code_are_each_rows_line(monkeypatch: Any) -> None:
    from streams.sinks import points

    m = MEASUREMENTS["release_forecast.csv"]
    rows = [
        (
            1_700_000_000.5,
            "j 1",
            4,
            2,
            2,
            1,
            "h",
            "n,x",
            2,
            1_700_000_100.0,
            4,
            0,
            1_700_000_100.0,
            99.5,
            None,
            None,
        )
    ]
    with_native = m.lines("c", rows, UTC)
    monkeypatch.setattr(points, "_native_lines", None)
    assert m.lines("c", rows, UTC) == with_native == [m.line("c", rows[0], UTC)]


def test_a_row_of_the_wrong_width_is_refused_by_lines() -> None:
    m = MEASUREMENTS["turnover.csv"]
    with pytest.raises(ValueError, match="columns"):
        m.lines("c", [(1.0, 2.0)], UTC)


try:
    import drainwatch_native as native
except ImportError:  # pragma: no cover - CI builds native/
    native = None
needs_native = pytest.mark.skipif(
    native is None,
    reason="native/ is not built: no compiled "
    "float text to compare; Measurement.line is checked above",
)


@needs_native
@settings(max_examples=3000, deadline=None)
@given(st.one_of(floats, st.floats(-1e17, 1e17), st.integers(-(2**53), 2**53).map(lambda i: i / 8)))
def test_the_compiled_float_text_is_reprs(x: float) -> None:
    if x - x != 0.0:
        return
    t = float.__repr__(x)
    assert native is not None
    assert native.lp_float(x) == (t[:-2] if t.endswith(".0") else t)


@needs_native
def test_a_tie_in_the_last_digit_goes_to_even_as_in_repr() -> None:
    # both are exactly halfway between two shortest 16- and 17-digit texts
    assert native is not None
    assert native.lp_float(744571527333723.25) == "744571527333723.2" == repr(744571527333723.25)
    assert native.lp_float(-17033558519929.5625) == repr(-17033558519929.5625)


@settings(max_examples=300, deadline=None)
@given(measured_batches(), texts)
def test_row_messages_are_each_rows_message(mb: Any, cluster: str) -> None:
    """The metric-topic messages of many rows (one dict display per table, instants made
    once per call) are row_message's, byte for byte."""
    import orjson

    from streams.codecs.metrics import row_message, row_messages

    m, rows = mb
    rows = [tuple(r) for r in rows]
    try:  # numpy scalars and instants beyond year 9999 are refused either way
        want = [orjson.dumps(row_message(cluster, m.table, r)) for r in rows]
    except (TypeError, OverflowError, ValueError) as e:
        with pytest.raises(type(e)):
            row_messages(cluster, m.table, rows)
        return
    assert row_messages(cluster, m.table, rows) == want
    if rows:
        with pytest.raises(ValueError, match="columns"):
            row_messages(cluster, m.table, [rows[0][:-1]])


def _alert_line_reference(cluster: str, a: Alert) -> str:
    """The alert point as the generic ``line`` builds it from its tags and fields."""
    import orjson

    tags = {
        "cluster": cluster,
        "kind": a.kind,
        "subject": a.subject,
        "state": a.state,
        "severity": a.severity,
    }
    fields = {
        "id": a.id,
        "since_s": float(a.since),
        "firing": 1 if a.state == "firing" else 0,
        "window": a.window,
        "details": orjson.dumps(dict(a.details)).decode(),
        "value": None if a.value is None else float(a.value),
        "threshold": None if a.threshold is None else float(a.threshold),
    }
    return line("alerts", tags, fields, round(a.at * 1000) * 1_000_000)


@settings(max_examples=400, deadline=None)
@given(
    texts.filter(bool),
    st.builds(
        Alert,
        id=texts,
        kind=texts,
        subject=texts,
        severity=texts,
        state=st.one_of(st.sampled_from(["firing", "resolved"]), texts),
        value=st.one_of(st.none(), floats, ints),
        threshold=st.one_of(st.none(), floats),
        window=texts,
        since=st.floats(-1e10, 4e9),
        at=st.floats(0, 4e9),
        details=st.dictionaries(
            texts, st.one_of(texts, ints, st.lists(texts, max_size=3)), max_size=3
        ),
    ),
)
def test_an_alert_line_is_the_generic_lines(cluster: str, a: Alert) -> None:
    assert alert_line(cluster, a) == _alert_line_reference(cluster, a)
