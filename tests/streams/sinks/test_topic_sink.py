"""TopicSink under the Sink contract: each table's rows become the messages the live paths
send today (topic, key, value), handed to ``send`` at the commit; abort drops them."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from models.drain.live import LiveJob, LiveWindow
from models.jsonbytes import json_bytes
from streams.codecs.metrics import job_message, row_messages, window_message
from streams.sinks.topics import Message, TopicSink
from streams.stages.drain import live_job_rows, live_window_rows
from streams.tables.drain import (
    DRAIN_DAILY,
    LIVE_JOBS,
    LIVE_TABLES,
    LIVE_WINDOW_STATES,
    LIVE_WINDOWS,
)
from streams.tables.jobs import CAPABILITY_DAILY, SHORTJOBS, USAGE_DAILY
from streams.tables.samples import DFS_MINUTELY, DFS_MINUTELY_FS
from streams.topics import topic_names

NAMES = topic_names("dw.")
SHORT = [
    (1_700_000_000.0, "user", "alice", 3, 12.5, 1.25),
    (1_700_000_000.0, "group", "a:b c", 1, 2.0, 0.2),
]
CAPABILITY = [(date(2024, 3, 31), 10.0, 5.0, None, 0.66, None, None, None, None, 0.14)]
DFS = [(1_700_000_040_000, 93.5, 1.0, 3), (1_700_000_100_000, 0.0, 0.0, 0)]
DFS_FS = [("scratch", 1_700_000_040_000, 93.5, 1.0, 3)]
WINDOWS = [
    LiveWindow("minute", 60_000, 60_000, 2, 120_000, 5_500, 0, 0, 0, 4.6, 4.6, 60.0, "ok", False),
    LiveWindow(
        "hour",
        0,
        3_600_000,
        3,
        7_200_000,
        12_345,
        100,
        7,
        1,
        None,
        0.17,
        2400.0,
        "short",
        True,
        {"Idle": [0, 0, 3_500, 0], "Busy": [10, 2_000, 0, 9]},
    ),
]
JOBS = [LiveJob("1001", 5_000, 2, 1_000, 3_000, 0, 1_000)]


def collected() -> tuple[TopicSink, list[Message]]:
    sent: list[Message] = []
    return TopicSink(NAMES, "c", sent.extend), sent


def test_table_rows_are_the_messages_the_job_and_sample_paths_send() -> None:
    sink, sent = collected()
    for t in (SHORTJOBS, CAPABILITY_DAILY, DFS_MINUTELY, DFS_MINUTELY_FS):
        sink.declare(t)
    assert sink.write(SHORTJOBS, SHORT) == 2
    sink.write(CAPABILITY_DAILY, iter(CAPABILITY))
    sink.write(DFS_MINUTELY, DFS)
    sink.write(DFS_MINUTELY_FS, DFS_FS)
    assert sent == []  # nothing before the commit
    sink.commit()
    # the keys streams/live/jobs.py's _step and streams/live/samples.py's _dfs_out make
    want = [
        (NAMES.metrics_shortjobs, f"{r[1]}:{r[2]}".encode(), m)
        for r, m in zip(SHORT, row_messages("c", SHORTJOBS, SHORT), strict=True)
    ]
    want += [
        (NAMES.metrics_capability, str(r[0]).encode(), m)
        for r, m in zip(CAPABILITY, row_messages("c", CAPABILITY_DAILY, CAPABILITY), strict=True)
    ]
    want += [
        (NAMES.metrics_dfs, str(r[0]).encode(), m)
        for r, m in zip(DFS, row_messages("c", DFS_MINUTELY, DFS), strict=True)
    ]
    want += [
        (NAMES.metrics_dfs, f"{r[0]}:{r[1]}".encode(), m)
        for r, m in zip(DFS_FS, row_messages("c", DFS_MINUTELY_FS, DFS_FS), strict=True)
    ]
    assert sent == want
    assert sink.sent == len(want)
    sink.commit()  # cleared: nothing sent again
    assert len(sent) == len(want)


def test_drain_rows_are_the_drain_paths_window_and_job_messages() -> None:
    sink, sent = collected()
    for t in LIVE_TABLES:
        sink.declare(t)
    rows, states = live_window_rows(WINDOWS)
    sink.write(LIVE_WINDOWS, rows)
    sink.write(LIVE_WINDOW_STATES, states)
    sink.write(LIVE_JOBS, live_job_rows(JOBS))
    sink.commit()
    # the messages streams/live/drain.py's flush_rows sends
    want = [
        (NAMES.metrics_drain, f"{w.unit}:{w.start_ms}".encode(), json_bytes(window_message("c", w)))
        for w in WINDOWS
    ]
    want += [(NAMES.metrics_jobs, j.job.encode(), json_bytes(job_message("c", j))) for j in JOBS]
    assert sent == want


def test_other_tables_and_documents_are_ignored() -> None:
    sink, sent = collected()
    for t in (DRAIN_DAILY, USAGE_DAILY):
        sink.declare(t)
        assert sink.write(t, [tuple(range(len(t.columns)))]) == 0
    sink.document("summary_jobs.json", b"{}")
    sink.commit()
    assert sent == []


def test_abort_drops_and_a_failed_send_keeps_the_messages() -> None:
    sink, sent = collected()
    sink.write(SHORTJOBS, SHORT)
    sink.abort()
    sink.commit()
    assert sent == []

    calls: list[list[Message]] = []

    def failing(messages: list[Message]) -> Any:
        calls.append(messages)
        if len(calls) == 1:
            raise ConnectionError("broker down")

    sink = TopicSink(NAMES, "c", failing)
    sink.write(SHORTJOBS, SHORT)
    with pytest.raises(ConnectionError):
        sink.commit()
    sink.commit()  # the same messages again
    assert len(calls) == 2 and calls[0] == calls[1] and len(calls[1]) == 2
