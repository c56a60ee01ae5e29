"""The live flow, written once: every family is two steps run by this module.

1. :class:`Forwarder`: the family's input topic (many partitions) -> decode -> per-partition
   work -> the family's partials topic. The drain family keeps state per partition (its
   accountant) and snapshots it; the job and sample families keep none and ack what the
   broker has.
2. :class:`Combiner`: the partials topic (one partition) -> the replay's own stages -> InfluxDB
   points (through the write queue), metric messages, alert records -> checkpoint.

A family is an adapter (streams/live/drain.py, jobs.py, samples.py) declaring its topics, how
a message is decoded and fed, what its partials are and what its state is. Takes, held events,
acks, snapshots, revocation, write-outs and backpressure are here and in
streams/live/checkpoint.py only. docs/state.md has the design and its invariant.

Poison input (docs/state.md, "Poison input"): a message whose application raises is
dead-lettered with the error's one-line reason and the worker goes on. A step applies a message
all or nothing: on an error it rolls back (the state document of its last checkpoint, kept in
memory, restored and the messages applied since applied again), isolates the poison (a family
that raises :class:`~streams.errors.Poison` names the records it stepped; they are released
one at a time to find the one, which is then left out) and applies the message again without
it. An error the rollback cannot cure stops the worker as before, but first records the message
it was applying (``<owner>/poison``): the restarted worker dead-letters that message.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Iterator
from typing import Any, Protocol, cast

import orjson

from models.records.reject import Reject
from models.state import pack, unpack
from streams.codecs.deadletter import encode_dead_letter, message_text
from streams.errors import Poison, error_line
from streams.live.checkpoint import Crash, Held, Outbox, load_crash, load_state, save_crash
from streams.live.context import WorkerContext

AGENT_CONCURRENCY = 1  # faust-streaming #606: with more, an offset can be committed too early
# points or messages waiting that start a write-out before the timer's flush
FLUSH_POINTS = 20_000
# points the combiner hands to the write queue itself (two requests of InfluxSink's batch)
HAND_OVER_POINTS = 10_000
# points handed over and not yet written at which the combiner waits for InfluxDB (down, or
# behind): its partials wait in Kafka, not in the worker's memory
WRITE_BACKLOG_POINTS = 200_000
# a combiner without partials for WRITE_OUT_IDLE s writes what waits (checked every
# WRITE_OUT_EVERY s), so a burst's last rows do not wait for the next flush
WRITE_OUT_EVERY, WRITE_OUT_IDLE = 0.1, 0.05
IN_FLIGHT = 4  # forwarder publishes whose acks may wait while the next part is read
MAX_CURES = 8  # poison records isolated in one message before the whole message is dead-lettered
CRASH_SAVE_S = 10.0  # a stopping worker waits at most this long to record its crash


class ForwardFamily(Protocol):
    """The first step of a family (see the module docstring)."""

    name: str  # the agent's name and the dead letters' source
    take: int  # input messages taken at once
    within: float  # seconds a take waits to fill
    stateful: bool  # keeps state per partition (snapshotted) or none (acks once forwarded)
    forward_each_part: bool  # publish after every part of a take, not only on the timers
    part_records: int  # a take is processed in parts of about this many records (0: whole)

    def topic(self) -> Any: ...

    def partials_topic(self) -> Any: ...

    def records_in(self, value: Any) -> int: ...

    def add(self, p: int, off: int, value: bytes, state: Any, out: Outbox) -> None:
        """Decode one message and feed it (to ``state``, None for a stateless family); its
        dead letters go to ``out``."""

    def partials(self, p: int, state: Any) -> list[bytes]:
        """The partials messages of partition ``p`` since the last call."""

    def waiting_partitions(self) -> set[int]:
        """Partitions with records to forward that no held event names (a revoked one's)."""


class StatefulForward(ForwardFamily, Protocol):
    """A forward step with state per partition (``stateful = True``), snapshotted."""

    def new_state(self, p: int) -> Any: ...

    def restore(self, p: int, tree: Any) -> Any: ...

    def snapshot(self, p: int, state: Any) -> Any: ...

    def offset(self, state: Any) -> int: ...

    def forget(self, p: int) -> None: ...


def lines_in(value: Any) -> int:
    """How many records a message of lines holds (one per line)."""
    return value.count(b"\n") + 1 if isinstance(value, bytes | bytearray) else 1


class CombineFamily(Protocol):
    """The second step of a family (see the module docstring)."""

    name: str  # the agent's name
    owner: str  # the state's key in worker-state
    kind: str  # the state document's kind (models/state.py)
    version: int  # the state document's version this release writes
    take: int
    within: float

    def topic(self) -> Any: ...

    def fresh(self) -> None: ...

    def restore(self, version: int, tree: Any) -> None: ...

    def snapshot(self) -> Any: ...

    def add(self, off: int, value: bytes, out: Outbox) -> None: ...

    def flush_rows(self, out: Outbox) -> None: ...

    def has_news(self) -> bool: ...


def _value(ev: Any) -> bytes:
    v = ev.value
    return v if isinstance(v, bytes) else bytes(v or b"")


class PoisonGuard:
    """How the runner steers a family's releases while it cures a poison message: records left
    out (``skip``, until the next checkpoint) and records released one at a time
    (``suspects``), each named by ``key``. A family that has one offers it as
    ``poison_guard()`` and raises :class:`~streams.errors.Poison` naming its records."""

    __slots__ = ("key", "skip", "suspects")

    def __init__(self, key: Callable[[Any], Hashable]) -> None:
        self.key = key
        self.skip: set[Hashable] = set()
        self.suspects: set[Hashable] = set()

    def active(self) -> bool:
        return bool(self.skip or self.suspects)

    def pieces(self, records: list[Any]) -> list[list[Any]]:
        """``records`` without the skipped ones, each suspect a piece of its own."""
        key, skip, suspects = self.key, self.skip, self.suspects
        out: list[list[Any]] = []
        run: list[Any] = []
        for r in records:
            k = key(r)
            if k in skip:
                continue
            if k in suspects:
                if run:
                    out.append(run)
                    run = []
                out.append([r])
            else:
                run.append(r)
        if run:
            out.append(run)
        return out


def _record_text(record: Any) -> str:
    """A poison record as its dead letter's text: its fields as JSON where it has them."""
    to_dict = getattr(record, "to_dict", None)
    if to_dict is None:
        return repr(record)
    return orjson.dumps(to_dict(), default=repr).decode()


STAGE_ERROR = "stage_error"  # the dead letters' reason: a record made a stage raise
CRASHED_WORKER = "crashed_worker"  # a message that stopped a worker before


def _dead_letter(
    ctx: WorkerContext,
    out: Outbox,
    source: str,
    error: str,
    text: str,
    where: tuple[str, int, int],
    reason: str = STAGE_ERROR,
) -> None:
    """A poison message or record: dead-lettered with the error's one line, counted, logged."""
    topic, p, off = where
    ctx.counts["dead_letters"] += 1
    ctx.counts["poison"] += 1
    ctx.log.error("poison in %s at %s[%d]@%d: %s", source, topic, p, off, error)
    r = Reject(reason, source, 0, text)
    dl = encode_dead_letter(r, topic=topic, partition=p, offset=off, error=error)
    out.dead.append((source.encode(), dl))


def _stage(step: str, exc: BaseException) -> str:
    """The dead letter's source: the step, and the stage a :class:`Poison` names."""
    return f"{step}/{exc.stage}" if isinstance(exc, Poison) else step


async def _record_crash(
    ctx: WorkerContext, owner: str, step: str, applying: tuple[str, int, int] | None, exc: Exception
) -> None:
    """Before the worker stops: the message it was applying (if any), so the restarted worker
    dead-letters it instead of stopping on it again. Best effort (one log line if it fails)."""
    if applying is None:
        return
    crash = Crash(step, *applying, error_line(exc))
    try:
        await asyncio.wait_for(save_crash(ctx, owner, crash), CRASH_SAVE_S)
    except Exception as e:  # noqa: BLE001 (the worker stops anyway)
        ctx.log.error("crash record %s not saved: %s", owner, error_line(e))


class Forwarder:
    def __init__(self, ctx: WorkerContext, fam: ForwardFamily) -> None:
        self.ctx, self.fam = ctx, fam
        self.log = ctx.log.getChild(fam.name)
        self.held = Held()
        self.states: dict[int, Any] = {}
        self.out = Outbox.of(ctx)
        self.lock = asyncio.Lock()
        self.flights: list[asyncio.Future[None]] = []  # publishes waiting for the broker
        self.last_snapshot = time.time()
        self.kind = f"{fam.name}-partition"
        # stateful: per partition, the state document of the last checkpoint (None: a new
        # state), the messages applied since (a rollback applies them again) and a token
        # that a revocation drops (a save under way then acks nothing)
        self.bases: dict[int, bytes | None] = {}
        self.since: dict[int, list[tuple[int, bytes]]] = {}
        self.tokens: dict[int, object] = {}
        self.crashed: dict[tuple[int, int], str] | None = None  # (partition, offset): reason
        self.applying: tuple[str, int, int] | None = None  # (topic, partition, offset)

    def parts(self, events: list[Any]) -> Iterator[list[Any]]:
        """A take in parts of about ``part_records`` records, each forwarded before the next
        is read (a backlog's take holds far more than the combiner should wait for)."""
        limit = self.fam.part_records
        if not limit:
            yield events
            return
        run: list[Any] = []
        n = 0
        for ev in events:
            run.append(ev)
            n += self.fam.records_in(ev.value)
            if n >= limit:
                yield run
                run, n = [], 0
        if run:
            yield run

    async def _state(self, p: int) -> Any:
        st = self.states.get(p)
        if st is None:
            fam = cast(StatefulForward, self.fam)

            def restore(data: bytes) -> Any:
                _v, tree = unpack(data, self.kind, (1,))
                st = fam.restore(p, tree)
                self.bases[p] = data
                return st

            self.bases[p] = None
            st = await load_state(self.ctx, f"{fam.name}/{p}", restore, self.log)
            if st is None:
                st = fam.new_state(p)
            self.states[p] = st
            self.since[p] = []
            self.tokens[p] = object()
        return st

    async def _crashes(self) -> dict[tuple[int, int], str]:
        """The message a stopped worker was applying (its crash record), by (partition,
        offset)."""
        crash = await load_crash(self.ctx, self.fam.name, self.log)
        name = self.fam.topic().get_topic_name()
        if crash is None or crash.topic != name:
            return {}
        return {(crash.partition, crash.offset): crash.reason}

    def _apply(self, p: int, off: int, value: bytes, st: Any, out: Outbox) -> None:
        """Feed one message, all or nothing: on an error its dead letters are dropped, a
        stateful partition rolled back to before it (:meth:`_roll_back`), and the message
        dead-lettered with the error's reason. A stateless family changes nothing before it
        has read a whole message."""
        fam = self.fam
        self.applying = (fam.topic().get_topic_name(), p, off)
        mark = out.mark()
        try:
            fam.add(p, off, value, st, out)
        except Exception as exc:  # noqa: BLE001 (poison: dead-lettered, the worker goes on)
            out.undo(mark)
            if fam.stateful:
                self._roll_back(p)
            source, text = _stage(fam.name, exc), message_text(value)
            _dead_letter(self.ctx, out, source, error_line(exc), text, self.applying)
        else:
            if fam.stateful:
                self.since[p].append((off, value))
        self.applying = None

    def _roll_back(self, p: int) -> None:
        """Partition ``p`` back to its last checkpoint's state and the messages since (their
        dead letters, made again, dropped: the outbox has them)."""
        fam = cast(StatefulForward, self.fam)
        base = self.bases.get(p)
        st = fam.new_state(p) if base is None else fam.restore(p, unpack(base, self.kind, (1,))[1])
        scratch = Outbox.of(self.ctx)
        for off, value in self.since[p]:
            fam.add(p, off, value, st, scratch)
        self.states[p] = st
        self.ctx.counts["rollbacks"] += 1

    async def on_events(self, events: Iterable[Any]) -> None:
        fam, held, out = self.fam, self.held, self.out
        health = getattr(self.ctx, "health", None)
        if health is not None:  # the stalled-pipeline alert's clock
            health.input_seen(fam.topic().get_topic_name())
        async with self.lock:
            if self.crashed is None:
                self.crashed = await self._crashes()
            for ev in events:
                msg = ev.message
                p, off = msg.tp.partition, msg.offset
                st = await self._state(p) if fam.stateful else None
                if st is not None and off <= cast(StatefulForward, fam).offset(st):
                    # already in the loaded snapshot
                    held.add(p, ev)
                    continue
                value = _value(ev)
                crashed = self.crashed.pop((p, off), None)
                if crashed is not None:  # it stopped a worker: never applied again
                    where = (fam.topic().get_topic_name(), p, off)
                    why = f"crashed the worker before: {crashed}"
                    _dead_letter(
                        self.ctx, out, fam.name, why, message_text(value), where, CRASHED_WORKER
                    )
                else:
                    self._apply(p, off, value, st, out)
                held.add(p, ev)

    async def publish(self, save: bool = False, wait: bool = True) -> None:
        """Send the dead letters and every partition's partials (a backlog's partitions
        interleaved: the combiner releases only what every partition is past); then, stateless,
        ack the events once the broker has all of it (``wait=False``: at most ``IN_FLIGHT``
        publishes wait so, in order), or, stateful with ``save``, snapshot each partition
        with new events and ack what the snapshot before covered."""
        fam, ctx = self.fam, self.ctx
        snapshots = None
        async with self.lock:
            dead, self.out.dead = self.out.dead, []
            parts = sorted(set(self.held.now) | set(self.states) | fam.waiting_partitions())
            runs = {p: fam.partials(p, self.states.get(p)) for p in parts}
            dl, partials = ctx.topics.dead_letter, fam.partials_topic()
            queued = [await dl.send(key=k, value=v) for k, v in dead]  # queued in order
            for i in range(max((len(r) for r in runs.values()), default=0)):
                for p in parts:
                    if i < len(runs[p]):  # each send made only as it is awaited
                        v = runs[p][i]
                        queued.append(await partials.send(key=str(p).encode(), value=v))
            if not fam.stateful:
                held = [self.held.take(p) for p in parts]
                flight = asyncio.ensure_future(_acked(self.flights[-1:], queued, held))
                self.flights.append(flight)
            else:
                if queued:
                    await asyncio.gather(*queued)
                if save:
                    snapshots = self._snapshots()
        if snapshots is not None:  # saved outside the lock: the partitions go on meanwhile
            await self._save(*snapshots)
        while self.flights and (wait or len(self.flights) > IN_FLIGHT or self.flights[0].done()):
            first = self.flights[0]
            await first  # raises a failed send's error
            if self.flights and self.flights[0] is first:  # (the flush timer publishes too)
                self.flights.pop(0)

    def _snapshots(self) -> tuple[list[int], list[bytes], list[list[Any]], list[Any]]:
        """Each partition with new events: its snapshot and the events it covers, taken (no
        longer held), and its state (to tell, once saved, whether it is still this worker's)."""
        fam = cast(StatefulForward, self.fam)
        parts = self.held.partitions()
        docs = [pack(self.kind, 1, fam.snapshot(p, self.states[p])) for p in parts]
        for p, doc in zip(parts, docs, strict=True):  # a rollback's state from now on
            self.bases[p], self.since[p] = doc, []
        return parts, docs, [self.held.take(p) for p in parts], [self.tokens[p] for p in parts]

    async def _save(
        self, parts: list[int], docs: list[bytes], held: list[list[Any]], states: list[Any]
    ) -> None:
        """Save the snapshots at once; then, per partition still owned (the same token), ack
        what its snapshot before covered (a failed save keeps its events held; a partition
        revoked meanwhile has no acks to give)."""
        ctx, name = self.ctx, self.fam.name
        assert ctx.store is not None
        saves = (ctx.store.save(f"{name}/{p}", d) for p, d in zip(parts, docs, strict=True))
        results = await asyncio.gather(*saves, return_exceptions=True)
        failed = None
        async with self.lock:
            for p, events, st, r in zip(parts, held, states, results, strict=True):
                if self.tokens.get(p) is not st:
                    continue  # revoked since
                if isinstance(r, BaseException):
                    self.held.now[p] = events + self.held.now.get(p, [])
                    failed = failed or r
                else:
                    self.held.saved(p, events)
                    ctx.counts["snapshots_saved"] += 1
            self.last_snapshot = time.time()
        if failed is not None:
            raise failed

    async def record_crash(self, exc: Exception) -> None:
        await _record_crash(self.ctx, self.fam.name, self.fam.name, self.applying, exc)

    async def revoked(self, tps: Iterable[Any]) -> None:
        """Partitions this worker no longer owns: their acks are void (Faust forgets them), a
        stateful step forgets their state (the new owner loads the last snapshot); a
        stateless one still forwards what it took (a second copy is harmless: the merger
        keeps one per (partition, offset))."""
        name = self.fam.topic().get_topic_name()
        async with self.lock:
            if self.flights:  # publishes under way ack their events first
                await asyncio.gather(*self.flights, return_exceptions=True)
            for tp in tps:
                if tp.topic == name:
                    self.held.drop(tp.partition)
                    if self.fam.stateful:
                        self.states.pop(tp.partition, None)
                        for d in (self.bases, self.since, self.tokens):
                            d.pop(tp.partition, None)
                        cast(StatefulForward, self.fam).forget(tp.partition)


async def _acked(
    before: list[asyncio.Future[None]], queued: list[Any], held: list[list[Any]]
) -> None:
    """Once the publish before (if any) has acked its events and the broker has every one of
    ``queued``: ack the ``held`` events (per partition, ascending offsets)."""
    if before:
        await before[0]
    if queued:
        await asyncio.gather(*queued)
    for events in held:
        for ev in events:
            ev.ack()


class Combiner:
    def __init__(self, ctx: WorkerContext, fam: CombineFamily) -> None:
        self.ctx, self.fam = ctx, fam
        self.log = ctx.log.getChild(fam.name)
        self.loaded = False
        self.offset = -1  # the last partials offset in the state
        self.held = Held()  # one partition: 0
        self.out = Outbox.of(ctx)
        self.last_partials = 0.0  # time.monotonic() when partials were last taken
        self.lock = asyncio.Lock()
        self.flush_lock = asyncio.Lock()  # one flush at a time: writes keep their order
        self.io_idle = asyncio.Event()  # clear while a flush writes what it took
        self.io_idle.set()
        self.suspect = False  # the partials topic was revoked since the state was checked
        self.last_snapshot = time.time()
        # a rollback's state: the document of the last checkpoint (None: a fresh state) and
        # the messages applied since, (offset, value)
        self.base: bytes | None = None
        self.since: list[tuple[int, bytes]] = []
        make_guard = getattr(fam, "poison_guard", None)
        self.guard: PoisonGuard | None = make_guard() if make_guard is not None else None
        self.crashed: dict[int, str] = {}  # offsets that stopped a worker: reason
        self.applying: tuple[str, int, int] | None = None  # (topic, partition, offset)

    async def _ensure(self) -> None:
        if self.loaded:
            return
        fam = self.fam

        def restore(data: bytes) -> int:
            version, tree = unpack(data, fam.kind, range(1, fam.version + 1))
            fam.restore(version, tree["state"])
            self.base = data
            return int(tree["offset"])

        self.base = None
        offset, crash = await asyncio.gather(
            load_state(self.ctx, fam.owner, restore, self.log),
            load_crash(self.ctx, fam.owner, self.log),
        )
        if offset is None:
            fam.fresh()
            offset = -1
        self.since = []
        if self.guard is not None:
            self.guard.skip.clear()
        name = fam.topic().get_topic_name()
        self.crashed = {}
        if crash is not None and crash.topic == name and crash.offset > offset:
            self.crashed[crash.offset] = crash.reason
        self.offset, self.loaded = offset, True

    async def on_partials(self, events: Iterable[Any]) -> None:
        self.last_partials = time.monotonic()
        fam, out, held = self.fam, self.out, self.held
        async with self.lock:
            for ev in events:
                off = ev.message.offset
                if self.suspect and self.loaded and off > self.offset + 1:
                    # another worker took messages this state has not seen: start again from
                    # the last saved state (what this worker held unacked comes again), once
                    # a flush under way has saved its own
                    await self.io_idle.wait()
                    self.loaded = False
                    self.held.clear()
                    self.out = out = Outbox.of(self.ctx)
                    self.ctx.counts["state_reloads"] += 1
                self.suspect = False
                await self._ensure()
                if off <= self.offset:  # already in the loaded state
                    held.add(0, ev)
                    continue
                value = _value(ev)
                crashed = self.crashed.pop(off, None)
                if crashed is not None:  # it stopped a worker: never applied again
                    where = (fam.topic().get_topic_name(), 0, off)
                    why = f"crashed the worker before: {crashed}"
                    _dead_letter(
                        self.ctx, out, fam.name, why, message_text(value), where, CRASHED_WORKER
                    )
                else:
                    self._apply(off, value, out)
                out.settle()
                if len(out.points) >= HAND_OVER_POINTS:  # InfluxDB writes them meanwhile
                    self._hand_over()
                self.offset = off
                held.add(0, ev)
            await self._send_alerts()
        self.last_partials = time.monotonic()

    def _apply(self, off: int, value: bytes, out: Outbox) -> None:
        """Apply one message, all or nothing (:meth:`_cure` on an error)."""
        self.applying = (self.fam.topic().get_topic_name(), 0, off)
        mark = out.mark()
        try:
            self.fam.add(off, value, out)
        except Exception as exc:  # noqa: BLE001 (poison: dead-lettered, the worker goes on)
            out.undo(mark)
            self._cure(off, value, exc, out)
        else:
            self.since.append((off, value))
        self.applying = None

    def _cure(self, off: int, value: bytes, exc: Exception, out: Outbox) -> None:
        """``exc`` was raised applying message ``off`` (its rows already dropped): roll back
        to the state before it, and apply it again without its poison. With a
        :class:`Poison` naming several records, they are released one at a time (its rows
        discarded) to find the one that raises; after another rollback the message is
        applied without that one, which is dead-lettered. Otherwise (or after
        ``MAX_CURES`` poisons in the message) the whole message is dead-lettered. Raises
        when the rollback itself fails: nothing then can be trusted, the worker stops."""
        fam, guard, ctx = self.fam, self.guard, self.ctx
        where = (fam.topic().get_topic_name(), 0, off)
        for _ in range(MAX_CURES):
            self._roll_back()
            if not isinstance(exc, Poison) or guard is None or not exc.suspects:
                break
            if len(exc.suspects) > 1:  # which one: each suspect released on its own
                guard.suspects = {guard.key(r) for r in exc.suspects}
                try:
                    fam.add(off, value, Outbox.of(ctx))
                except Exception as e:  # noqa: BLE001 (the one, or another error)
                    exc = e
                else:  # raised in a batch, not alone: nothing to isolate
                    exc = RuntimeError(f"{error_line(exc)} (not one record alone)")
                finally:
                    guard.suspects = set()
                continue
            poison = exc.suspects[0]
            guard.skip.add(guard.key(poison))
            reason = error_line(exc.cause)
            # where the record was read, when the family can tell (else the partials message)
            origin = getattr(fam, "origin", None)
            messages = [value, *(v for _, v in reversed(self.since))]
            at = (origin(poison, messages) if origin is not None else None) or where
            _dead_letter(ctx, out, _stage(fam.name, exc), reason, _record_text(poison), at)
            mark = out.mark()
            try:
                fam.add(off, value, out)
            except Exception as e:  # noqa: BLE001 (another poison in the same message)
                out.undo(mark)
                exc = e
                continue
            self.since.append((off, value))
            return
        else:
            self._roll_back()
        cause = exc.cause if isinstance(exc, Poison) else exc
        text = message_text(value)
        _dead_letter(ctx, out, _stage(fam.name, exc), error_line(cause), text, where)

    def _roll_back(self) -> None:
        """The family back to its last checkpoint's state and the messages since (their rows,
        made again, dropped: the outbox has them)."""
        fam = self.fam
        if self.base is None:
            fam.fresh()
        else:
            version, tree = unpack(self.base, fam.kind, range(1, fam.version + 1))
            fam.restore(version, tree["state"])
        scratch = Outbox.of(self.ctx)
        for off, value in self.since:
            fam.add(off, value, scratch)
        self.ctx.counts["rollbacks"] += 1

    async def record_crash(self, exc: Exception) -> None:
        await _record_crash(self.ctx, self.fam.owner, self.fam.name, self.applying, exc)

    async def _send_alerts(self) -> None:
        """Alert records go out as soon as the message that made them is processed (their
        points with the next write). A restart before the state was saved sends the same
        records again (same id, state and times)."""
        if self.out.alerts:
            alerts, self.out.alerts = self.out.alerts, []
            topic = self.ctx.topics.alerts.get_topic_name()
            await self.ctx.send_many([(topic, k, v) for k, v in alerts])

    def _hand_over(self) -> None:
        points, self.out.points = self.out.points, []
        if self.ctx.writes is not None:
            self.ctx.writes.submit(points)
        self.ctx.counts["points_written"] += len(points)

    async def keep_up(self) -> None:
        """Wait until the write queue has written what was handed over when more than
        ``WRITE_BACKLOG_POINTS`` wait for it (InfluxDB down or behind)."""
        w = self.ctx.writes
        if w is not None and w.handed - w.written > WRITE_BACKLOG_POINTS:
            self.ctx.counts["write_waits"] += 1
            await w.barrier()

    def due(self) -> bool:
        """Enough rows or messages wait to write them now rather than at the next flush."""
        return len(self.out.points) + len(self.out.messages) >= FLUSH_POINTS

    def waiting(self) -> bool:
        return self.out.waiting()

    def caught_up(self) -> bool:
        """Something waits for a write and no partials came for ``WRITE_OUT_IDLE`` seconds."""
        return time.monotonic() - self.last_partials >= WRITE_OUT_IDLE and self.out.waiting()

    async def flush(self, save: bool = True) -> None:
        """A checkpoint (streams/live/checkpoint.py): the rows made at a flush, the points
        handed over and written, the messages and dead letters sent, then the state saved and
        the partials acked. ``save=False`` (a write-out): the rows and messages only.

        What is written, the state and the partials it covers are taken under the lock;
        the waiting runs outside it, so the combiner goes on meanwhile. A failed send or save
        puts the messages back for the next flush; a failed point write fails every later
        flush (the write queue keeps the error) and stops the worker."""
        fam, ctx = self.fam, self.ctx
        async with self.flush_lock:
            async with self.lock:
                if not self.loaded or not (self.held.now.get(0) or fam.has_news()):
                    return
                if not save and not self.out.waiting():
                    return
                fam.flush_rows(self.out)
                self.out.settle()
                await self._send_alerts()
                self._hand_over()
                written = ctx.writes.barrier() if ctx.writes is not None else None
                messages, dead = self.out.messages, self.out.dead
                self.out.messages, self.out.dead = [], []
                held = self.held.take(0) if save else []
                state = None
                if save:
                    tree = {"offset": self.offset, "state": fam.snapshot()}
                    state = pack(fam.kind, fam.version, tree)
                    self.base, self.since = state, []  # a rollback's state from now on
                    if self.guard is not None:
                        self.guard.skip.clear()  # what it skipped is behind this state
                self.io_idle.clear()
            try:
                dl = ctx.topics.dead_letter.get_topic_name()
                writes: list[Awaitable[None]] = [
                    ctx.send_many([*messages, *((dl, k, v) for k, v in dead)])
                ]
                if written is not None:
                    writes.append(written)
                await _all(writes)
                if state is not None:
                    assert ctx.store is not None
                    await ctx.store.save(fam.owner, state)
            except BaseException:
                async with self.lock:
                    self.out.messages[:0] = messages
                    self.out.dead[:0] = dead
                    self.held.now.setdefault(0, [])[:0] = held
                raise
            finally:
                self.io_idle.set()
            if state is not None:
                self.held.saved(0, held)
                self.last_snapshot = time.time()
                ctx.counts["snapshots_saved"] += 1

    async def revoked(self, tps: Iterable[Any]) -> None:
        """The state stays until the next message shows whether it is still current (see
        :meth:`on_partials`)."""
        name = self.fam.topic().get_topic_name()
        if any(tp.topic == name for tp in tps):
            async with self.lock:
                self.suspect = True


async def _all(aws: list[Any]) -> None:
    """Await every one of ``aws``, all of them even when one fails (the flush puts its rows
    back only once nothing it started still runs), then raise the first failure."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r


@contextlib.asynccontextmanager
async def fatal_errors(ctx: WorkerContext, name: str, step: Any = None) -> AsyncIterator[None]:
    """An agent's unexpected error stops the worker (exit 1), so a supervisor restarts it from
    its last saved state and committed offsets; left alone, Faust would restart the agent
    without the events it had taken, and the worker would look healthy while losing them.
    ``step`` (a :class:`Forwarder` or :class:`Combiner`) first records the message it was
    applying, which the restarted worker dead-letters instead of stopping on it again."""
    try:
        yield
    except Exception as exc:
        ctx.log.critical("agent %s failed: %r; stopping", name, exc)
        if step is not None:
            await step.record_crash(exc)
        await ctx.app.crash(exc)
        raise


def attach(
    ctx: WorkerContext, fwd: ForwardFamily, comb: CombineFamily
) -> tuple[Forwarder, Combiner]:
    """A family's two agents, its timers and its revoke hook on the worker's app."""
    app, settings = ctx.app, ctx.settings
    forwarder, combiner = Forwarder(ctx, fwd), Combiner(ctx, comb)

    @app.agent(fwd.topic(), concurrency=AGENT_CONCURRENCY, name=f"drainwatch.{fwd.name}")
    async def forward(stream: Any) -> None:
        async with fatal_errors(ctx, fwd.name, forwarder):
            async for events in stream.noack_take(fwd.take, within=fwd.within):
                for part in forwarder.parts(events):
                    await forwarder.on_events(part)
                    if fwd.forward_each_part:  # at once: the combiner waits for no timer
                        await forwarder.publish(wait=False)

    @app.agent(comb.topic(), concurrency=AGENT_CONCURRENCY, name=f"drainwatch.{comb.name}")
    async def combine(stream: Any) -> None:
        async with fatal_errors(ctx, comb.name, combiner):
            flushing: asyncio.Future[None] | None = None
            async for events in stream.noack_take(comb.take, within=comb.within):
                # one message at a time, the event loop's turn after each: a write-out's
                # writes are seen done and the next one starts within a message, not a take
                for ev in events:
                    await combiner.on_partials([ev])
                    if flushing is not None and flushing.done():
                        flushing.result()  # a failed write-out stops the worker
                        flushing = None
                    if flushing is None and combiner.due():  # writes overlap the next partials
                        flushing = asyncio.ensure_future(combiner.flush(save=False))
                    await combiner.keep_up()
                    await asyncio.sleep(0)

    @app.timer(settings.worker.flush_interval, name=f"drainwatch.{comb.name}.flush")
    async def flush() -> None:
        await forwarder.publish()
        await combiner.flush()

    if fwd.stateful:

        @app.timer(settings.worker.checkpoint_interval, name=f"drainwatch.{fwd.name}.checkpoint")
        async def checkpoint() -> None:
            await forwarder.publish(save=True)

    @app.timer(WRITE_OUT_EVERY, name=f"drainwatch.{comb.name}.write-out")
    async def write_out() -> None:
        if combiner.caught_up() and not combiner.flush_lock.locked():
            await combiner.flush(save=False)

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, revoked: Any, **kw: Any) -> None:
        revoked = list(revoked)
        await forwarder.revoked(revoked)
        await combiner.revoked(revoked)

    return forwarder, combiner
