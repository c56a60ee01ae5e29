"""iter_job_events dispatch and sort_events ordering."""

from __future__ import annotations

import orjson
import pytest

from models.formats.jobsource import FORMATS, iter_job_events, sort_events
from models.records.jobevent import JobEvent
from models.records.reject import Reject

SACCT = (
    "7|7|c|p|q|a|g|1|u|2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:10|"
    "2024-01-01T00:01:10|00:01:00|0:0|COMPLETED|1|4|4|1000Mn|cpu=4|cpu=4|01:00:00|n1|job"
)


def test_formats() -> None:
    assert FORMATS == ("sacct", "jobcomp", "swf", "jobevents")
    assert [e.type for e in iter_job_events("sacct", [SACCT])] == ["submit", "start", "end"]
    rec = {
        "jobid": 1,
        "@submit": "2024-01-01T00:00:00",
        "@start": "2024-01-01T00:00:05",
        "@end": "2024-01-01T00:00:09",
        "nodes": "n1",
        "state": "COMPLETED",
    }
    assert [e.ts for e in iter_job_events("jobcomp", [orjson.dumps(rec)])] == [
        1704067200.0,
        1704067205.0,
        1704067209.0,
    ]
    swf = ["; UnixStartTime: 100", "1 0 5 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1"]
    assert [e.ts for e in iter_job_events("swf", swf)] == [100.0, 105.0, 115.0]
    line = JobEvent("start", 3.0, "j", nodes=2).to_json()
    assert list(iter_job_events("jobevents", [line, b"\n"])) == [
        JobEvent("start", 3.0, "j", nodes=2)
    ]


def test_options_and_errors() -> None:
    ev = list(iter_job_events("sacct", [SACCT], input_tz="Europe/Berlin"))
    assert ev[0].ts == 1704067200.0 - 3600
    assert (
        len(
            list(
                iter_job_events(
                    "swf", ["1 0 5 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1"], procs_per_node=None
                )
            )
        )
        == 3
    )
    with pytest.raises(ValueError, match="unknown job-event format"):
        iter_job_events("moab", [])
    with pytest.raises(TypeError, match="takes no option"):
        iter_job_events("swf", [], tz="UTC")


def test_rejects_per_format() -> None:
    for fmt, bad in (
        ("sacct", "x|y"),
        ("jobcomp", "{"),
        ("swf", "1 2"),
        ("jobevents", '{"type": "explode"}'),
    ):
        rejects: list[Reject] = []
        assert list(iter_job_events(fmt, [bad], source="s", rejects=rejects)) == []
        assert len(rejects) == 1 and rejects[0].source == "s" and rejects[0].lineno == 1, fmt


def test_sort_events() -> None:
    ev = [
        JobEvent("end", 5.0, "b"),
        JobEvent("start", 5.0, "b"),
        JobEvent("submit", 5.0, "c"),
        JobEvent("start", 5.0, "a"),
        JobEvent("submit", 1.0, "z"),
    ]
    assert [(e.ts, e.type, e.job) for e in sort_events(ev)] == [
        (1.0, "submit", "z"),
        (5.0, "submit", "c"),
        (5.0, "start", "a"),
        (5.0, "start", "b"),
        (5.0, "end", "b"),
    ]
