"""Metric-topic messages: every topic's messages fit its schema and read back; the bytes are the
public contract."""

from __future__ import annotations

from datetime import date
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.drain.live import LiveJob, LiveWindow
from streams.codecs import metrics
from streams.tables.jobs import CAPABILITY_DAILY, SHORTJOBS
from streams.tables.samples import DFS_MINUTELY, DFS_MINUTELY_FS
from tests.streams.codecs.helpers import refused, validator

WINDOW = LiveWindow(
    "hour",
    3_600_000,
    3_600_000,
    12,
    43_200_000,
    1_000,
    2_000,
    3_000,
    500,
    0.25,
    None,
    3600.0,
    "ok",
    True,
    {"Idle": [1_500, 0, 2_000, 0]},
)
JOB = LiveJob("1292428", 7_250, 3, 3_600_000, 3_660_000, 2, 3_600_000)


def test_window_and_job_messages() -> None:
    value = metrics.encode_window("c", WINDOW)
    doc = orjson.loads(value)
    validator("metrics.drain").validate(doc)
    assert doc["start"] == "1970-01-01T01:00:00.000Z" and doc["v"] == 1
    assert doc["node_states"] == {"Idle": {"none": 1.5, "rsv": 2.0}}
    assert (
        metrics.decode_metric("metrics.drain", value) == doc == metrics.window_message("c", WINDOW)
    )
    value = metrics.encode_job("c", JOB)
    doc = orjson.loads(value)
    validator("metrics.jobs").validate(doc)
    assert doc == {
        "v": 1,
        "cluster": "c",
        "job": "1292428",
        "drain_node_seconds": 7.25,
        "nodes_charged": 3,
        "first_charged": "1970-01-01T01:00:00.000Z",
        "last_charged": "1970-01-01T01:01:00.000Z",
        "nodes_running": 2,
    }
    assert metrics.decode_metric("metrics.jobs", value) == doc


_num = st.floats(-1e12, 1e12, allow_nan=False)
_opt = st.none() | _num
_text = st.text(max_size=10)
_ms = st.integers(0, 2**42)
ROWS: dict[str, tuple[Any, Any]] = {
    "metrics.shortjobs": (
        SHORTJOBS,
        st.tuples(
            st.floats(0, 4e9),
            st.sampled_from(["user", "group"]),
            _text,
            st.integers(0, 10**6),
            _num,
            _num,
        ),
    ),
    "metrics.capability": (
        CAPABILITY_DAILY,
        st.tuples(st.dates(date(1970, 1, 1), date(2100, 1, 1)), _num, _num, *[_opt] * 7),
    ),
    "metrics.dfs": (DFS_MINUTELY, st.tuples(_ms, _num, _num, st.integers(0, 10**6))),
}


@settings(max_examples=40, deadline=None)
@given(st.data())
@pytest.mark.parametrize("topic", [*ROWS, "metrics.dfs (fs)"])
def test_table_rows_fit_their_schema_and_read_back(topic: str, data: st.DataObject) -> None:
    if topic == "metrics.dfs (fs)":
        topic, table = "metrics.dfs", DFS_MINUTELY_FS
        rows = data.draw(st.lists(st.tuples(_text, _ms, _num, _num, st.integers(0, 99))))
    else:
        table, strategy = ROWS[topic]
        rows = data.draw(st.lists(strategy, max_size=5))
    values = metrics.row_messages("c", table, rows)
    assert values == [orjson.dumps(metrics.row_message("c", table, r)) for r in rows]
    v = validator(topic)
    for r, value in zip(rows, values, strict=True):
        doc = orjson.loads(value)
        v.validate(doc)
        assert metrics.decode_metric(topic, value) == doc
        assert doc["v"] == 1 and doc["cluster"] == "c" and len(doc) >= len(r) + 2


def test_refusals() -> None:
    job = metrics.job_message("c", JOB)
    dec = metrics.decode_metric
    refused(lambda b: dec("metrics.jobs", b), b"nope", "bad_json")
    refused(lambda b: dec("metrics.jobs", b), orjson.dumps({**job, "v": 2}), "bad_version")
    refused(
        lambda b: dec("metrics.jobs", b),
        orjson.dumps({**job, "nodes_charged": "3"}),
        "bad_message",
        "nodes_charged",
    )
    refused(lambda b: dec("metrics.jobs", b), orjson.dumps({**job, "x": 1}), "bad_message", "x")
    no_job = {k: v for k, v in job.items() if k != "job"}
    refused(lambda b: dec("metrics.jobs", b), orjson.dumps(no_job), "bad_message", "job")
    with pytest.raises(ValueError, match="not a metric topic"):
        dec("alerts", orjson.dumps(job))
