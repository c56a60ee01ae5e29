"""Topic schemas describe the records the code really produces."""

from __future__ import annotations

import gzip

import jsonschema
import numpy as np
import orjson
import pytest

from models.formats.jobsource import iter_job_events
from models.formats.sampletrace import parse_trace, sample_to_dict
from models.records.reject import Reject
from streams.codecs.deadletter import dead_letter_message
from streams.topics import (
    DEAD_LETTER_SCHEMA,
    JOB_EVENT_SCHEMA,
    NODE_SAMPLE_SCHEMA,
    NODE_STATUS_SCHEMA,
    SCHEMA_DIR,
    TOPICS,
    schema_files,
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


def test_node_status_messages_of_a_real_log_validate() -> None:
    from models.formats.moab import parse_moab_chunk
    from models.records.nodestatus import Codebook
    from streams.codecs.nodestatus import encode

    book = Codebook()
    b = parse_moab_chunk(gzip.decompress((INPUTS / "moab.log.gz").read_bytes()), book).batch
    v = jsonschema.Draft202012Validator(NODE_STATUS_SCHEMA)
    for lo in range(0, len(b), 5000):
        part = b.take(np.arange(lo, min(lo + 5000, len(b))))
        v.validate(orjson.loads(encode(part, book, "moab:test")))
    v.validate({"v": 1, "source": "moab:x", "control": "flush"})
    with pytest.raises(jsonschema.ValidationError):
        v.validate({"v": 1, "source": "s", "ts_ms": [1]})  # columns come together


def test_schema_files_are_the_schemas_in_the_code() -> None:
    files = schema_files()
    assert sorted(files) == sorted(p.name for p in SCHEMA_DIR.glob("*.json"))
    for name, text in files.items():
        assert (SCHEMA_DIR / name).read_text() == text, f"regenerate streams/schemas/{name}"


def test_dead_letter_message_validates() -> None:
    r = Reject("bad_timestamp", "moab.log", 7, "2014-13-01 ... Node '1' status: ...")
    msg = dead_letter_message(r)
    jsonschema.Draft202012Validator(DEAD_LETTER_SCHEMA).validate(msg)
    assert msg == {"source": "moab.log", "line": 7, "reason": "bad_timestamp", "text": r.text}
    msg = dead_letter_message(r, topic="t", partition=3, offset=99)
    jsonschema.Draft202012Validator(DEAD_LETTER_SCHEMA).validate(msg)


def test_docs_topics_md_is_generated_from_the_topics() -> None:
    from streams.topics import topics_markdown
    from tests.paths import REPO

    assert (REPO / "docs" / "topics.md").read_text() == topics_markdown(), (
        "regenerate with: python -m streams.topics"
    )
