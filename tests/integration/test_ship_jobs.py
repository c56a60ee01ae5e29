"""`drainwatch ship jobs` on the real local Kafka: every event the replay would read arrives,
in batches of JSON lines per partition, a job's events on one partition (crc32 of its id) in
order, each valid under the job-events schema; bad lines are dead-lettered with their
reasons. Between the batches, the shipper's markers (issue 30): each after the events it covers,
the end of input last on every partition."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import uuid
import zlib
from pathlib import Path

import jsonschema
import orjson
import pytest

from streams.driver import RejectLog
from streams.sources.jobevents import read_job_events
from streams.topics import TOPICS
from tests.golden.make_golden import INPUTS
from tests.integration.kafka_read import read_topic
from tests.integration.markers import check_file_markers, data_messages
from tests.paths import REPO

pytestmark = pytest.mark.integration


def test_ship_jobs_publishes_what_the_replay_reads(stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes()).splitlines(keepends=True)
    bad = [
        b"not json\n",
        b'{"type": "start", "ts": "soon", "job": "x"}\n',
        b'{"type": "end", "ts": 99999999999, "job": "far"}\n',
    ]
    path = tmp_path / "jobs.jsonl"
    path.write_bytes(b"".join(good[:100] + bad[:1] + good[100:400] + bad[1:] + good[400:]))
    prefix = f"t{uuid.uuid4().hex[:8]}."
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env.update(
        {
            "DRAINWATCH_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
            "DRAINWATCH_TOPIC_PREFIX": prefix,
            "DRAINWATCH_STATE_DIR": str(tmp_path / "state"),
        }
    )
    # no round by the wall clock in this short run (a round cuts every partition's batch); by
    # event time a round waits for ROUND_EVENTS events, more than this file has
    env["DRAINWATCH_MARKER_INTERVAL"] = "86400"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "ship",
            "jobs",
            "--format",
            "jobevents",
            str(path),
            "--no-progress",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    expect, _ = read_job_events("jobevents", [str(path)], RejectLog())
    assert len(expect) == len(good) and f"{len(expect):,} events" in run.stderr
    assert "3 dead letters" in run.stderr

    topic = read_topic(stack.kafka_bootstrap, prefix + "job-events")
    n = check_file_markers(topic, 8)
    assert n == 8 and f"{n:,} markers" in run.stderr  # the end of input, on every partition
    got = data_messages(topic)
    # a batch is cut at 500 events or by a marker round (every partition's batch)
    assert len(got) <= n + (len(expect) + len(bad)) // 500 + 8
    schema = jsonschema.Draft202012Validator(
        next(t.schema for t in TOPICS if t.name == "job-events")
    )
    lines = [(line, part) for k, v, part in got for line in v.split(b"\n")]
    assert all(k == f"p{part}".encode() for k, _, part in got)
    assert max(v.count(b"\n") + 1 for _, v, _ in got) <= 500
    assert len(got) < len(lines) / 10  # batches, not one message per event
    docs = [orjson.loads(line) for line, _ in lines]
    for d in docs:
        schema.validate(d)
    assert sorted(orjson.dumps(d) for d in docs) == sorted(e.to_json() for e in expect)
    order = {"submit": 0, "start": 1, "end": 2}
    by_job: dict[str, list[tuple[int, float, int]]] = {}
    for line, part in lines:
        d = orjson.loads(line)
        assert part == zlib.crc32(d["job"].encode()) % 8
        by_job.setdefault(d["job"], []).append((part, d["ts"], order[d["type"]]))
    for evs in by_job.values():
        assert len({p for p, _, _ in evs}) == 1  # one job, one partition
        assert evs == sorted(evs)  # in time order, submit before start before end

    dead = [
        orjson.loads(v) for _, v, _ in read_topic(stack.kafka_bootstrap, prefix + "dead-letter")
    ]
    assert sorted(d["reason"] for d in dead) == sorted(["bad_json", "bad_ts", "implausible_time"])
    assert all(d["source"] == str(path) and d["text"] for d in dead)
