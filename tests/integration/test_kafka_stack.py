"""The local Kafka broker is a real one: records survive a broker restart."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

N_RECORDS = 10_000


def _record(i: int) -> tuple[bytes, bytes]:
    key = f"job-{i:05d}".encode()
    value = f"{i}:{hashlib.sha256(key).hexdigest()}".encode()
    return key, value


async def _consume_all(bootstrap: str, topic: str, expected: int) -> list[tuple[int, bytes, bytes]]:
    """Read the topic from the beginning with a new consumer group: (offset, key, value) rows."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"g-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    rows: list[tuple[int, bytes, bytes]] = []
    try:
        deadline = time.monotonic() + 60
        while len(rows) < expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000, max_records=5000)
            for records in batches.values():
                rows.extend((r.offset, r.key, r.value) for r in records)
        # Anything beyond `expected` would be a duplicate: read once more to catch it.
        for records in (await consumer.getmany(timeout_ms=300)).values():
            rows.extend((r.offset, r.key, r.value) for r in records)
        end = await consumer.end_offsets([TopicPartition(topic, 0)])
        assert end[TopicPartition(topic, 0)] == expected
    finally:
        await consumer.stop()
    return rows


def _check(rows: list[tuple[int, bytes, bytes]]) -> None:
    assert len(rows) == N_RECORDS
    assert [offset for offset, _, _ in rows] == list(range(N_RECORDS))
    for offset, key, value in rows:
        assert (key, value) == _record(offset)


async def test_produce_consume_restart_durable(stack, kafka_bootstrap, topic_name):
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic_name, num_partitions=1, replication_factor=1)])
        assert topic_name in await admin.list_topics()
    finally:
        await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        pending = [
            await producer.send(topic_name, value=value, key=key)
            for key, value in map(_record, range(N_RECORDS))
        ]
        metadata = await asyncio.gather(*pending)
    finally:
        await producer.stop()
    assert [m.offset for m in metadata] == list(range(N_RECORDS))
    assert {m.partition for m in metadata} == {0}

    _check(await _consume_all(kafka_bootstrap, topic_name, N_RECORDS))

    # Clean stop (SIGTERM) and start of the broker process on the same log directory.
    await asyncio.to_thread(stack.restart_kafka)

    _check(await _consume_all(kafka_bootstrap, topic_name, N_RECORDS))


def test_ensure_topics_reports_the_partitions_of_topics_it_just_made(stack) -> None:  # type: ignore[no-untyped-def]
    """Right after creation the broker's metadata can list no partitions yet; ensure_topics
    waits for them (a 0 would let the job merger release before every partition reported)."""
    from streams.config import load_settings
    from streams.kafka import ensure_topics
    from streams.topics import TOPICS

    prefix = f"e{uuid.uuid4().hex[:8]}."
    s = load_settings(
        env={
            "DRAINWATCH_KAFKA_BOOTSTRAP": stack.kafka_bootstrap,
            "DRAINWATCH_TOPIC_PREFIX": prefix,
            "DRAINWATCH_TOPIC_PARTITIONS": "3",
        }
    )
    got = asyncio.run(ensure_topics(s))
    assert got == {prefix + t.name: 1 if t.single_partition else 3 for t in TOPICS}
    assert asyncio.run(ensure_topics(s)) == got  # existing topics: the same answer
