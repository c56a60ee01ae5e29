"""The checkpoint protocol, written once for every family (docs/state.md).

The invariant: **an offset is acknowledged only when the state that includes its records is
durable, and the snapshot before it too.** A checkpoint of a state:

1. hands its InfluxDB points to the write queue and sends its messages and dead letters, then
   waits until InfluxDB and the broker have all of them;
2. saves the state's snapshot (chunks, then the manifest: streams/sinks/statestore.py);
3. acknowledges the events the *previous* snapshot covers, in offset order per partition.

Acks trail one snapshot, so the generation before the newest is always a whole state whose
records after it are still uncommitted in Kafka: a newest snapshot that cannot be read
(truncated, of an unknown version, crafted) is refused and the previous one restored, and the
records after it come again. A stateless step (the job and sample forwarders) acks once the
broker has what it forwarded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from models.alerts import Alert
from models.state import pack, unpack
from streams.codecs.alerts import encode_alert
from streams.errors import error_line
from streams.live.context import Message, WorkerContext
from streams.sinks.influx import LineSink
from streams.sinks.points import alert_line
from streams.sinks.topics import TopicSink
from streams.topics import topic_names

T = TypeVar("T")


class Held:
    """Events taken and not yet acknowledged, per partition, in offset order."""

    __slots__ = ("now", "trailing")

    def __init__(self) -> None:
        self.now: dict[int, list[Any]] = {}  # since the last snapshot
        self.trailing: dict[int, list[Any]] = {}  # covered by the last snapshot only

    def add(self, p: int, ev: Any) -> None:
        held = self.now.get(p)
        if held is None:
            held = self.now[p] = []
        held.append(ev)

    def partitions(self) -> list[int]:
        return sorted(p for p, evs in self.now.items() if evs)

    def take(self, p: int) -> list[Any]:
        """Partition ``p``'s events, no longer held (a stateless step acks them itself)."""
        return self.now.pop(p, [])

    def saved(self, p: int, events: list[Any]) -> None:
        """A snapshot of ``p`` including ``events`` is durable: ack what the snapshot before
        it covered, keep ``events`` for the next one."""
        for ev in self.trailing.pop(p, ()):
            ev.ack()
        self.trailing[p] = events

    def drop(self, p: int) -> None:
        """``p`` was revoked: its acks are void (Faust forgets them)."""
        self.now.pop(p, None)
        self.trailing.pop(p, None)

    def clear(self) -> None:
        self.now.clear()
        self.trailing.clear()


@dataclass(slots=True, eq=False)
class Outbox:
    """What processing made and a checkpoint writes: InfluxDB points (line protocol),
    messages (topic name, key, value), alert records (sent as soon as they are made) and dead
    letters (key, value). A family writes its table rows through the outbox's sinks (the
    :class:`~streams.contracts.Sink` contract): ``influx`` turns them into points,
    ``metrics`` into metric-topic messages; :meth:`settle` commits both into the outbox."""

    points: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    alerts: list[tuple[bytes, bytes]] = field(default_factory=list)
    dead: list[tuple[bytes, bytes]] = field(default_factory=list)
    influx: Any = None  # streams.sinks.influx.LineSink into points
    metrics: Any = None  # streams.sinks.topics.TopicSink into messages

    @classmethod
    def of(cls, ctx: WorkerContext) -> Outbox:
        """An outbox with its sinks, for ``ctx``'s cluster, zone and topics."""
        out = cls()
        s = ctx.settings
        out.influx = LineSink(
            s.accounting.cluster, s.accounting.tz, lambda lines: out.points.extend(lines), 1
        )
        names = topic_names(s.kafka.topic_prefix)
        out.metrics = TopicSink(names, s.accounting.cluster, lambda ms: out.messages.extend(ms))
        return out

    def settle(self) -> None:
        """The sinks' rows into the outbox (points, messages)."""
        if self.influx is not None:
            self.influx.commit()
            self.metrics.commit()

    def waiting(self) -> bool:
        return bool(self.points or self.messages or self.dead)

    def mark(self) -> tuple[int, int, int, int]:
        """Where the outbox is now, for :meth:`undo` (its sinks hold nothing: settled)."""
        return len(self.points), len(self.messages), len(self.alerts), len(self.dead)

    def undo(self, mark: tuple[int, int, int, int]) -> None:
        """Drop what was made since ``mark`` (a message whose processing failed)."""
        points, messages, alerts, dead = mark
        del self.points[points:], self.messages[messages:], self.alerts[alerts:]
        del self.dead[dead:]
        if self.influx is not None:
            self.influx.abort()
            self.metrics.abort()

    def add_alerts(self, cluster: str, alerts: list[Alert]) -> int:
        """Alert changes: their records (sent as soon as the combiner's message is done) and
        their points (with the next write)."""
        for a in alerts:
            self.points.append(alert_line(cluster, a))
            self.alerts.append((a.id.encode(), encode_alert(cluster, a)))
        return len(alerts)


CRASH_KIND = "poison"  # a crash record's state-document kind (models/state.py)


@dataclass(frozen=True, slots=True)
class Crash:
    """The input message a step was applying when the worker stopped on an error."""

    step: str
    topic: str
    partition: int
    offset: int
    reason: str


async def save_crash(ctx: WorkerContext, owner: str, crash: Crash) -> None:
    """Keep ``crash`` under ``<owner>/poison`` in the state store (versioned data)."""
    assert ctx.store is not None
    tree = {k: getattr(crash, k) for k in Crash.__slots__}
    await ctx.store.save(f"{owner}/poison", pack(CRASH_KIND, 1, tree))


async def load_crash(ctx: WorkerContext, owner: str, log: logging.Logger) -> Crash | None:
    """The crash record under ``<owner>/poison``; None when there is none or none reads (one
    log line: a record is a hint, never a reason to stop)."""
    store = ctx.store
    assert store is not None
    try:
        found = await store.candidates(f"{owner}/poison")
    except Exception as e:  # noqa: BLE001 (see above)
        log.error("crash record %s unreadable: %s", owner, error_line(e))
        return None
    for _gen, data in found:
        try:
            _v, t = unpack(data, CRASH_KIND, (1,))
            ints = int(t["partition"]), int(t["offset"])
            return Crash(str(t["step"]), str(t["topic"]), *ints, str(t["reason"]))
        except Exception as e:  # noqa: BLE001 (a record is data: anything wrong refuses it)
            log.error("crash record %s refused: %s", owner, error_line(e))
    return None


async def load_state(
    ctx: WorkerContext, owner: str, restore: Callable[[bytes], T], log: logging.Logger
) -> T | None:
    """The newest snapshot of ``owner`` that restores, the one before it if the newest is
    refused; None when there is none (or none restores: the records after the committed
    offset are processed from an empty state). A refusal is one log line and counted."""
    store = ctx.store
    assert store is not None
    store.refused.clear()
    found = await store.candidates(owner)
    for reason in store.refused:
        ctx.counts["state_refused"] += 1
        log.error("state %s refused: %s", owner, reason)
    for gen, data in found:
        try:
            state = restore(data)
        except Exception as e:  # noqa: BLE001 (a snapshot is data: anything wrong refuses it)
            ctx.counts["state_refused"] += 1
            reason = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            log.error("state %s (generation %s) refused: %s", owner, gen, reason)
            continue
        store.restored(owner, gen)
        ctx.counts["snapshots_loaded"] += 1
        return state
    return None
