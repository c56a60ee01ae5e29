"""Topic schemas describe the records the code really produces."""

from __future__ import annotations

import gzip

import jsonschema
import orjson
import pytest

from models.formats.jobsource import iter_job_events
from models.formats.sampletrace import parse_trace, sample_to_dict
from models.records.nodestatus import NodeStatus
from models.records.reject import Reject
from streams.topics import (
    DEAD_LETTER_SCHEMA,
    JOB_EVENT_SCHEMA,
    NODE_SAMPLE_SCHEMA,
    NODE_STATUS_SCHEMA,
    TOPICS,
    dead_letter_message,
    node_status_message,
    topic_names,
)
from tests.golden.make_golden import INPUTS


@pytest.mark.parametrize("spec", TOPICS, ids=lambda t: t.name)
def test_every_schema_is_valid_json_schema(spec) -> None:
    jsonschema.Draft202012Validator.check_schema(spec.schema)


def test_topic_names_follow_the_specs() -> None:
    names = topic_names("x.")
    assert names.all() == tuple(f"x.{t.name}" for t in TOPICS)


def test_job_events_of_every_simulated_event_validate() -> None:
    v = jsonschema.Draft202012Validator(JOB_EVENT_SCHEMA)
    lines = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes()).decode().splitlines()
    events = list(iter_job_events("jobevents", lines, source="jobs"))
    assert len(events) == len(lines) > 800
    for e in events:
        v.validate(orjson.loads(e.to_json()))
    with pytest.raises(jsonschema.ValidationError):
        v.validate({"type": "begin", "ts": 1.0, "job": "1"})


def test_node_samples_validate() -> None:
    v = jsonschema.Draft202012Validator(NODE_SAMPLE_SCHEMA)
    lines = gzip.decompress((INPUTS / "samples.jsonl.gz").read_bytes()).decode().splitlines()
    samples = list(parse_trace(lines, "s", []))
    assert len(samples) == len(lines) - 1  # one bad line in the input
    for s in samples[:500]:
        v.validate(orjson.loads(orjson.dumps(sample_to_dict(s))))


def test_node_status_message_validates() -> None:
    recs = [
        NodeStatus(1_425_708_000_000 + i, f"n{i}", "Idle", ("12", "13") if i % 2 else (), ())
        for i in range(5)
    ]
    msg = node_status_message("moab:test", recs)
    jsonschema.Draft202012Validator(NODE_STATUS_SCHEMA).validate(msg)
    assert msg["rsvlist"] == ["", "12,13", "", "12,13", ""]


def test_dead_letter_message_validates() -> None:
    r = Reject("bad_timestamp", "moab.log", 7, "2014-13-01 ... Node '1' status: ...")
    msg = dead_letter_message(r)
    jsonschema.Draft202012Validator(DEAD_LETTER_SCHEMA).validate(msg)
    assert msg == {"source": "moab.log", "line": 7, "reason": "bad_timestamp", "text": r.text}
