"""`drainwatch ship samples --kafka` on the real local Kafka: one message per sweep, keyed by
node, in the sample-files format; while the broker cannot be reached (a port nothing listens
on) sweeps wait in the bounded buffer, the oldest dropped only past its cap and counted, and
the rest arrive in order once the broker answers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
import zlib
from pathlib import Path
from typing import Any

import pytest

from models.formats.sampletrace import parse_sample
from streams.ship.sampler import Sampler, resolver_by_name
from streams.ship.samples import SampleKafkaShipper, run_sampler
from tests.integration.kafka_read import read_topic
from tests.integration.markers import data_messages
from tests.paths import REPO

pytestmark = pytest.mark.integration


def test_sweeps_to_node_samples(stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prefix = f"t{uuid.uuid4().hex[:8]}."
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env.update(
        {
            "DRAINWATCH_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
            "DRAINWATCH_TOPIC_PREFIX": prefix,
            "DRAINWATCH_STATE_DIR": str(tmp_path / "state"),
        }
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "ship",
            "samples",
            "--kafka",
            "--resolver",
            "cgroup",
            "--node",
            "node007",
            "--count",
            "2",
            "--period",
            "0.3",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "2 sweeps, 2 sent" in run.stderr and "0 dropped" in run.stderr
    topic = read_topic(stack.kafka_bootstrap, prefix + "node-samples")
    got = data_messages(topic)  # the sweeps; the shipper's markers besides
    assert len(got) == 2 and len(got) < len(topic)
    times = []
    for key, value, part in got:
        assert key == b"node007" and part == zlib.crc32(b"node007") % 8
        samples = [parse_sample(line) for line in value.split(b"\n")]
        assert samples and {s.node for s in samples} == {"node007"}
        assert len({s.ts for s in samples}) == 1  # one sweep a message
        times.append(samples[0].ts)
    assert times[0] < times[1]


def test_buffer_while_unreachable_then_delivered(stack, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from aiokafka import AIOKafkaProducer

    topic = f"t{uuid.uuid4().hex[:8]}.node-samples"
    target = {"bootstrap": "127.0.0.1:1"}  # nothing listens there: connection refused

    async def connect() -> Any:
        p = AIOKafkaProducer(
            bootstrap_servers=target["bootstrap"], acks="all", request_timeout_ms=3000
        )
        try:
            await p.start()
        except BaseException:
            await p.stop()
            raise
        return p

    sampler = Sampler(resolver_by_name("cgroup"), node="node003")
    shipper = SampleKafkaShipper(connect, topic, buffer_max=3, send_timeout=10)

    async def go() -> None:
        await run_sampler(sampler, shipper, period=0.05, count=5)
        assert (shipper.stats.sent_sweeps, len(shipper.buffer)) == (0, 3)
        assert shipper.stats.dropped_sweeps == 2 and shipper.stats.dropped_samples > 0
        assert shipper.stats.send_failures == 6  # every sweep, and the last try
        target["bootstrap"] = stack.kafka_bootstrap  # the broker answers again
        await run_sampler(sampler, shipper, period=0.05, count=1)
        await shipper.close()

    asyncio.run(go())
    st = shipper.stats
    # the 6th sweep joined a full buffer: one more of the oldest was dropped
    assert (st.sweeps, st.sent_sweeps, len(shipper.buffer), st.dropped_sweeps) == (6, 3, 0, 3)
    got = read_topic(stack.kafka_bootstrap, topic)
    ts = [parse_sample(v.split(b"\n")[0]).ts for _, v, _ in got]
    assert len(ts) == 3 and ts == sorted(ts)  # the 3 newest sweeps, in order
    assert sum(v.count(b"\n") + 1 for _, v, _ in got) == st.sent_samples
