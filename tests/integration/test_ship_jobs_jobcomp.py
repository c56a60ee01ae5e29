"""`drainwatch ship jobs --jobcomp-topic` on the real local Kafka: records in Slurm's
jobcomp/kafka format (tests/models/formats/test_jobcomp.py's record) become job events on
<prefix>job-events as `replay --format jobcomp` reads them, unknown fields ignored; bad records
are dead-lettered with topic, partition and offset; a restart of the group reads nothing
again (offsets committed after the events were acknowledged)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest

from models.formats.jobcomp import iter_jobcomp_events
from tests.integration.kafka_read import read_topic
from tests.integration.markers import data_messages, markers
from tests.models.formats.test_jobcomp import record
from tests.paths import REPO

pytestmark = pytest.mark.integration


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    async def go() -> None:
        from aiokafka import AIOKafkaProducer

        prod = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await prod.start()
        try:
            for v in values:
                await (await prod.send(topic, v))
        finally:
            await prod.stop()

    asyncio.run(go())


def test_jobcomp_topic_to_job_events(stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prefix = f"t{uuid.uuid4().hex[:8]}."
    source = f"{prefix}slurm-jobcomp"
    good = [
        orjson.dumps(
            record(
                jobid=100 + i,
                **{"@end": f"2025-03-04T11:{30 + i:02d}:00"},
                new_field_of_a_later_slurm={"x": i},
            )
        )
        for i in range(20)
    ]
    bad = [
        b"not json",
        orjson.dumps(record(jobid=None)),
        orjson.dumps(record(jobid=7, **{"@end": "2400-01-01T00:00:00"})),
    ]
    _produce(stack.kafka_bootstrap, source, good[:10] + bad + good[10:])
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
        "--jobcomp-topic",
        source,
        "--group",
        f"g{prefix}",
    ]
    dry = subprocess.run(
        [*argv, "--count", "23", "--dry-run"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dry.returncode == 0, dry.stderr
    assert len(dry.stdout.splitlines()) == 62 and "3 dead letters" in dry.stderr
    # the dry run committed nothing: the real run reads every record
    run = subprocess.run(
        [*argv, "--count", "23"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    # job 7's end (year 2400) is rejected, its submit and start kept, as replay does
    assert "23 jobcomp records, 62 events" in run.stderr and "3 dead letters" in run.stderr

    expect = list(iter_jobcomp_events(good))
    expect += [e for e in iter_jobcomp_events(bad[2:]) if e.type != "end"]
    topic = read_topic(stack.kafka_bootstrap, prefix + "job-events")
    got = data_messages(topic)
    lines = [line for _, v, _ in got for line in v.split(b"\n")]
    assert sorted(lines) == sorted(e.to_json() for e in expect)
    marks = markers(topic)  # the shipper's watermark markers, on every partition
    assert sorted(marks) == list(range(8))
    assert len({m.source for ms in marks.values() for m in ms}) == 1
    dead = [
        orjson.loads(v) for _, v, _ in read_topic(stack.kafka_bootstrap, prefix + "dead-letter")
    ]
    assert sorted(d["reason"] for d in dead) == ["bad_json", "implausible_time", "missing_jobid"]
    assert sorted(d["offset"] for d in dead) == [10, 11, 12]
    assert all(d["topic"] == source and d["partition"] == 0 for d in dead)

    _produce(stack.kafka_bootstrap, source, [orjson.dumps(record(jobid=999))])
    again = subprocess.run(
        [*argv, "--count", "1"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert "1 jobcomp records, 3 events" in again.stderr  # only the new record
