"""`drainwatch ship jobs --sacct` on the real local Kafka: polls walking through the public
phillips.log dump (a stand-in sacct serving it by end time, some records reaching the
database late; see tests/streams/ship/test_sacct.py) put on <prefix>job-events exactly
the events a one-shot read of the dump gives, each once; a restart from the checkpoint sends
no event again. After each poll, a round of watermark markers (issue 30) at the poller's
guarantee: every job that ended before it was sent, so no end event follows a marker past it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest

from streams.codecs.control import decode_marker
from streams.driver import RejectLog
from streams.ship.sacct import _iso
from streams.sources.jobevents import read_job_events
from tests.integration.kafka_read import read_topic
from tests.integration.markers import data_messages, markers
from tests.paths import REPO
from tests.streams.ship.test_sacct import DUMP, STAND_IN, _ends

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not DUMP.exists(), reason=f"{DUMP} (public test data) absent"),
]


def test_sacct_polls_through_kafka_equal_a_one_shot_read(stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    late = tmp_path / "late"
    late.write_text("1500")
    sacct = tmp_path / "sacct"
    sacct.write_text(STAND_IN.format(python=sys.executable, dump=DUMP, late=late))
    sacct.chmod(0o755)
    first, _last = _ends()
    prefix = f"t{uuid.uuid4().hex[:8]}."
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env.update(
        {
            "DRAINWATCH_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
            "DRAINWATCH_TOPIC_PREFIX": prefix,
            "DRAINWATCH_STATE_DIR": str(tmp_path / "state"),
        }
    )
    argv = [
        sys.executable,
        "-m",
        "streams.cli",
        "ship",
        "jobs",
        "--sacct",
        str(sacct),
        "--since",
        _iso(first - 60) + "Z",
        "--overlap",
        "1800",
        "--max-window",
        "21600",
        "--period",
        "0.1",
    ]
    run = subprocess.run(
        [*argv, "--count", "16"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "16 sacct polls (0 failed)" in run.stderr and "0 dead letters" in run.stderr

    expect, _ = read_job_events("sacct", [str(DUMP)], RejectLog())
    topic = read_topic(stack.kafka_bootstrap, prefix + "job-events")
    got = data_messages(topic)
    lines = [line for _, v, _ in got for line in v.split(b"\n")]
    assert sorted(lines) == sorted(e.to_json() for e in expect)  # none lost, none twice
    assert f"{len(expect):,} events" in run.stderr
    assert "0 seen again" not in run.stderr  # the overlaps did see records twice
    source = _check_markers(topic)

    again = subprocess.run(
        [*argv, "--count", "2"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert " 0 events" in again.stderr
    topic = read_topic(stack.kafka_bootstrap, prefix + "job-events")
    assert len(data_messages(topic)) == len(got)
    assert _check_markers(topic) == source  # named by its checkpoint: the same shipper
    cp = orjson.loads((tmp_path / "state" / "ship" / "sacct.json").read_bytes())
    assert cp["hwm"] > first


def _check_markers(topic: list[tuple[bytes | None, bytes, int]]) -> str:
    """Watermark markers on every partition, a round per poll and one when it stops, of one
    shipper (its id returned), their times never going back; and every job end after a marker
    is at or past the marker's time."""
    marks = markers(topic)
    assert sorted(marks) == list(range(8))
    assert len({m.source for ms in marks.values() for m in ms}) == 1
    claimed: dict[int, float] = {}
    for _, v, p in topic:
        mk = decode_marker(v)
        if mk is not None:
            assert mk.action == "watermark" and mk.ts is not None
            assert mk.ts >= claimed.get(p, -math.inf)
            claimed[p] = mk.ts
            continue
        events = [orjson.loads(line) for line in v.split(b"\n")]
        ends = [d["ts"] for d in events if d["type"] == "end"]
        assert min(ends, default=math.inf) >= claimed.get(p, -math.inf)
    assert min(len(ms) for ms in marks.values()) >= 17
    return next(iter(marks.values()))[0].source
