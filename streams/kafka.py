"""Kafka plumbing shared by the shippers and the worker: topics, reachability, state reads.

``ensure_topics`` creates every drainwatch topic that is missing with the partitions and cleanup
policy of :data:`streams.topics.TOPICS` (compacted topics keep the latest value per key).
``wait_for_kafka`` retries with exponential backoff, logging one line per attempt (rate-limited
by streams/logs.py: an outage writes a line per 10 s, with the count of the others), and gives up
with :class:`Unreachable` after ``connect_timeout`` (issue policy 8: no traceback).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from streams import logs
from streams.config import Settings
from streams.topics import TOPICS

# The largest message a drainwatch program sends (kafka.message_max_bytes is at most this; the
# worker's messages are at most that setting by construction, a shipper's at most this).
MAX_MESSAGE_BYTES = 1_000_000
# What the producers may send and the topics accept: above MAX_MESSAGE_BYTES by room for a
# record's key, headers and batch overhead, so a message of MAX_MESSAGE_BYTES always goes.
HEADROOM_BYTES = 100_000
LIMIT_BYTES = MAX_MESSAGE_BYTES + HEADROOM_BYTES  # producer max_request_size, max.message.bytes


class Unreachable(RuntimeError):
    """A server stayed unreachable for the configured time (a one-line error)."""


def _kw(settings: Settings) -> dict[str, Any]:
    kw = settings.aiokafka_kwargs()
    kw["request_timeout_ms"] = 10_000
    return kw


class Backoff:
    """The one retry policy for servers that do not answer: waits of 0.5 s doubling to 10 s,
    one warning per failed attempt, :class:`Unreachable` once ``timeout_s`` has passed.

    ``what`` names the command (``drainwatch worker``, ``drainwatch ship moab``): its logger is
    that component (``worker``, ``ship.moab``); credentials in ``server`` and in each reason are
    masked (:func:`streams.logs.mask`), in the log lines and in the Unreachable message alike."""

    def __init__(self, what: str, server: str, timeout_s: float) -> None:
        self.what, self.server, self.timeout_s = what, logs.mask(server), timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.delay, self.attempt = 0.5, 1
        self.log = logs.get(component_of(what))

    def failed(self, reason: str) -> float:
        """Seconds to wait before the next attempt (raises Unreachable when out of time)."""
        left = self.deadline - time.monotonic()
        reason = logs.mask(reason)
        if left <= 0:
            raise Unreachable(f"{self.server} unreachable for {self.timeout_s:g} s ({reason})")
        wait = min(self.delay, left)
        self.log.warning(
            "%s not reachable (attempt %d: %s); retrying in %.1f s",
            self.server,
            self.attempt,
            reason,
            wait,
        )
        self.delay, self.attempt = min(self.delay * 2, 10.0), self.attempt + 1
        return wait


def component_of(what: str) -> str:
    """The log component of a command name: ``drainwatch ship moab`` -> ``ship.moab``."""
    words = what.split()
    if words and words[0] == "drainwatch":
        words = words[1:]
    return ".".join(words) or "drainwatch"


async def wait_for_kafka(settings: Settings, what: str = "drainwatch") -> None:
    """Return once the brokers answer (retried by :class:`Backoff`)."""
    from aiokafka.admin import AIOKafkaAdminClient

    backoff = Backoff(what, f"Kafka at {settings.kafka.bootstrap}", settings.worker.connect_timeout)
    while True:
        admin = AIOKafkaAdminClient(**_kw(settings))
        try:
            await admin.start()
            await admin.list_topics()
            return
        except Exception as e:  # any failure to connect is retried the same way
            # masked before it is cut: a cut must not leave half a password unmasked
            reason = logs.mask(f"{type(e).__name__}: {e}".splitlines()[0])[:200]
        finally:
            await admin.close()
        await asyncio.sleep(backoff.failed(reason))


async def ensure_topics(settings: Settings) -> dict[str, int]:
    """Create the missing drainwatch topics; return topic -> partitions of every one."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(**_kw(settings))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        new = []
        for t in TOPICS:
            name = settings.kafka.topic_prefix + t.name
            if name in existing:
                continue
            config = {"max.message.bytes": str(LIMIT_BYTES)}
            if t.compacted:
                config.update(
                    {
                        "cleanup.policy": "compact",
                        "segment.ms": "600000",
                        "min.cleanable.dirty.ratio": "0.1",
                    }
                )
            new.append(
                NewTopic(
                    name,
                    num_partitions=1 if t.single_partition else settings.kafka.topic_partitions,
                    replication_factor=settings.kafka.topic_replication_factor,
                    topic_configs=config,
                )
            )
        if new:
            try:
                await admin.create_topics(new)
            except TopicAlreadyExistsError:  # a concurrent worker or shipper made them
                pass
        # right after creation the metadata can list no partitions yet (a count of 0 would
        # make the job merger wait for nothing): ask again until every topic has them
        names = [settings.kafka.topic_prefix + t.name for t in TOPICS]
        deadline = time.monotonic() + settings.worker.connect_timeout
        while True:
            meta = await admin.describe_topics(names)
            out = {m["topic"]: len(m["partitions"]) for m in meta}
            if all(out.get(n, 0) > 0 for n in names):
                return out
            if time.monotonic() > deadline:
                missing = sorted(n for n in names if out.get(n, 0) == 0)
                raise Unreachable(f"topics without partitions after creation: {missing}")
            await asyncio.sleep(0.2)
    finally:
        await admin.close()


async def read_latest(settings: Settings, topic: str, prefix: bytes) -> dict[bytes, bytes]:
    """Latest value of every key starting with ``prefix`` in a (compacted) one-partition topic,
    read from the beginning to the end offset it had when called; deleted keys are absent."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    # auto_offset_reset "earliest" and an explicit seek: with the default "latest", the reset
    # that assign() starts can finish after seek_to_beginning() and leave the position at the
    # end, so nothing is read and a saved snapshot looks absent (seen: a restarted worker
    # began from an empty state)
    consumer = AIOKafkaConsumer(
        **_kw(settings), enable_auto_commit=False, group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]
        consumer.seek(tp, (await consumer.beginning_offsets([tp]))[tp])
        out: dict[bytes, bytes] = {}
        while await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=10_000)
            for r in batch.get(tp, []):
                if r.key is None or not r.key.startswith(prefix):
                    continue
                if r.value is None:
                    out.pop(r.key, None)
                else:
                    out[r.key] = r.value
        return out
    finally:
        await consumer.stop()
