"""Poison input on the combine step (streams/live/runner.py ``Combiner``, here with the job
family and its real stages): a message that fails to decode, or a job event that makes a stage
raise, is dead-lettered with the error's reason, where it was read and the stage, and the
worker goes on; the state after it is the state of a run without it, and every good event
around it is accounted. An error the rollback cannot cure stops the worker, which first records
the message; the restarted worker dead-letters that message instead of stopping on it again.

Fault injection, named as such: a stage's ``step`` is patched to raise on one event (after it
has stepped the whole batch, so the stage's state is changed when it raises). Stand-ins as in
test_flush.py: topics and producer keep what is sent, the sink keeps the lines, the state
store keeps what is saved (in memory)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import orjson
import pytest

from models.state import pack
from streams.app import AppTopics
from streams.codecs.deadletter import decode_dead_letter
from streams.config import load_settings
from streams.live.jobs import JobsCombine
from streams.live.runner import Combiner, fatal_errors
from streams.topics import topic_names
from tests.streams.live.test_flush import _Event, _job, _kept, _partial, _Sink
from tests.streams.standins import Producer, Topic

T0 = 1_700_000_000.0
FAULT = "fault injected"


class _Store:
    """A state store in memory: the last document saved per owner."""

    def __init__(self) -> None:
        self.docs: dict[str, bytes] = {}
        self.refused: list[str] = []

    async def candidates(self, owner: str) -> list[tuple[str, bytes]]:
        return [("a", self.docs[owner])] if owner in self.docs else []

    async def save(self, owner: str, data: bytes) -> None:
        self.docs[owner] = data

    def restored(self, owner: str, gen: str) -> None:
        pass


class _App(SimpleNamespace):
    crashed: list[BaseException]

    async def crash(self, exc: BaseException) -> None:
        self.crashed.append(exc)


def _pipeline(store: _Store | None = None) -> tuple[Combiner, dict[str, Topic], _Sink, _Store]:
    from streams.live.context import WorkerContext

    settings = load_settings(
        env={"DRAINWATCH_TZ": "UTC", "DRAINWATCH_LIVE_JOBS": "on", "DRAINWATCH_LATENESS": "1"}
    )
    names = topic_names(settings.kafka.topic_prefix)
    topics = {f: Topic(getattr(names, f)) for f in AppTopics.__annotations__}
    producer = Producer({t.name: t for t in topics.values()})
    app = _App(producer=producer, conf=SimpleNamespace(id="t"), crashed=[])
    sink, store = _Sink(), store or _Store()
    ctx = WorkerContext(app, settings, sink, topics=SimpleNamespace(**topics), store=store)  # type: ignore[arg-type]
    return Combiner(ctx, JobsCombine(ctx, 1)), topics, sink, store


def _fault_on(monkeypatch: pytest.MonkeyPatch, stage: str, job: str, kind: str) -> None:
    """Fault injection: stage ``stage`` raises on the ``kind`` event of ``job``, after it has
    stepped the whole batch (its state changed)."""
    settings = load_settings(env={"DRAINWATCH_TZ": "UTC"})
    from streams.live.jobs import live_stages

    cls = type(live_stages(settings)[stage])
    step = cls.step

    def faulty(self: Any, batch: list[Any]) -> Any:
        out = list(step(self, batch))
        if any(e.job == job and e.type == kind for e in batch):
            raise ValueError(f"{FAULT}: job {job}\nsecond line")
        return out

    monkeypatch.setattr(cls, "step", faulty)


def _messages(drop: Callable[[dict[str, Any]], bool] = lambda e: False) -> list[list[Any]]:
    """Four partials messages of job events (one source partition), without ``drop``'s: the
    poison job ``bad`` ends in the third, among good events of other jobs."""
    first = _job("1", T0, 300) + _job("2", T0 + 60, 5)
    second = _job("3", T0 + 600, 60) + _job("bad", T0 + 700, 30)[:2]
    third = [
        *_job("bad", T0 + 700, 30)[2:],
        *_job("4", T0 + 720, 20),
        *_job("5", T0 + 730, 700),
    ]
    fourth = _job("6", T0 + 7200, 60)
    return [[e for e in m if not drop(e)] for m in (first, second, third, fourth)]


def _is_poison(e: dict[str, Any]) -> bool:
    return bool(e["job"] == "bad" and e["type"] == "end")


def _state(pipe: Combiner) -> bytes:
    return pack("jobs", 1, pipe.fam.snapshot())


def _dead(topics: dict[str, Topic]) -> list[Any]:
    return [decode_dead_letter(v) for _k, v in topics["dead_letter"].sent]


async def _run(pipe: Combiner, msgs: list[Any], checkpoint_after: int | None = None) -> None:
    for off, events in enumerate(msgs):
        ev = events if isinstance(events, _Event) else _partial(pipe, off, events)
        await pipe.on_partials([ev])
        if off == checkpoint_after:
            await pipe.flush()
    await pipe.flush()


@pytest.mark.parametrize("checkpoint_after", [None, 0, 1])
def test_a_stage_raising_on_one_event_dead_letters_that_event_only(
    monkeypatch: pytest.MonkeyPatch, checkpoint_after: int | None
) -> None:
    """The poison event's dead letter has the reason, the place and the stage; the state and
    the rows are those of a run without it, whether the rollback starts from a fresh state or
    from a checkpoint's (``checkpoint_after``: the message after which one is saved)."""

    async def run() -> None:
        want, want_topics, want_sink, _ = _pipeline()
        await _run(want, _messages(_is_poison), checkpoint_after)

        _fault_on(monkeypatch, "turnover", "bad", "end")
        pipe, topics, sink, _ = _pipeline()
        await _run(pipe, _messages(), checkpoint_after)

        [dead] = _dead(topics)
        assert dead.reject.reason == "stage_error"
        assert dead.error == f"ValueError: {FAULT}: job bad"  # one line
        assert dead.reject.source == "jobs/turnover"
        # where the poison event was read: its job-events message
        source = pipe.ctx.topics.job_events.get_topic_name()
        assert (dead.topic, dead.partition, dead.offset) == (source, 0, 2)
        assert orjson.loads(dead.reject.text)["job"] == "bad"
        assert orjson.loads(dead.reject.text)["type"] == "end"
        counts = pipe.ctx.counts
        assert counts["poison"] == 1 and counts["dead_letters"] == 1
        assert counts["rollbacks"] == 2  # one to isolate the event, one to leave it out

        assert _state(pipe) == _state(want)
        assert _kept(sink.lines) == _kept(want_sink.lines)
        predicted = [line for line in sink.lines if line.startswith("runtime_prediction")]
        runtime = {line.split("job=")[1].split(",")[0].strip('"') for line in predicted}
        assert runtime >= {"1", "2", "3", "4", "5"}  # every good job that ended
        for name, t in topics.items():
            if name not in ("dead_letter", "worker_state"):
                assert dict(t.sent) == dict(want_topics[name].sent), name

    asyncio.run(run())


def test_a_partials_message_that_fails_to_decode_is_dead_lettered_whole() -> None:
    async def run() -> None:
        want, _, want_sink, _ = _pipeline()
        msgs = _messages()
        await _run(want, msgs)

        pipe, topics, sink, _ = _pipeline()
        garbage = _Event("jobs-partials", 2, b'{"partition": "x"}')
        shifted = [*msgs[:2], garbage, *msgs[2:]]
        for off, events in enumerate(shifted):  # the good messages keep their order
            ev = events if isinstance(events, _Event) else _partial(pipe, off, events)
            await pipe.on_partials([ev])
        await pipe.flush()

        [dead] = _dead(topics)
        assert dead.reject.reason == "stage_error"
        assert dead.error is not None and dead.error.startswith("CodecError: bad_message")
        assert dead.reject.source == "jobs" and dead.offset == 2
        assert dead.reject.text == '{"partition": "x"}'
        assert _kept(sink.lines) == _kept(want_sink.lines)
        stages = [pack("jobs", 1, p.fam.snapshot()["stages"]) for p in (pipe, want)]
        assert stages[0] == stages[1]

    asyncio.run(run())


def test_a_message_that_crashed_the_worker_is_dead_lettered_on_restart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rollback itself fails (fault injection: the family's restore raises): the worker
    stops, recording the message; restarted, it dead-letters that message and goes on."""

    async def run() -> None:
        msgs = _messages()
        pipe, _, _, store = _pipeline()
        await _run(pipe, msgs[:2], checkpoint_after=1)  # a checkpoint: the rollback restores
        _fault_on(monkeypatch, "turnover", "bad", "end")

        def broken(self: Any, version: int, tree: Any) -> None:
            raise RuntimeError(f"{FAULT}: restore")

        with monkeypatch.context() as m:
            m.setattr(JobsCombine, "restore", broken)
            with pytest.raises(RuntimeError, match="restore"):
                async with fatal_errors(pipe.ctx, "jobs", pipe):
                    await pipe.on_partials([_partial(pipe, 2, msgs[2])])
        assert pipe.ctx.app.crashed and "jobs/poison" in store.docs

        again, topics, sink, _ = _pipeline(store)  # the restarted worker, the same store
        await _run(again, [_Event("x", off, b"") for off in range(2)] + msgs[2:])
        [dead] = _dead(topics)
        assert dead.reject.reason == "crashed_worker"
        assert dead.error == f"crashed the worker before: RuntimeError: {FAULT}: restore"
        assert (dead.reject.source, dead.offset) == ("jobs", 2)
        assert again.ctx.counts["poison"] == 1
        # the message after it is applied: its events released, the state saved past it
        assert again.offset == 3 and again.fam.merger.released_to >= T0 + 7200
        assert sink.lines and store.docs["jobs"] != store.docs["jobs/poison"]

    asyncio.run(run())


def test_a_forward_step_that_raises_on_a_message_dead_letters_it_and_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The job-events forward step (fault injection: reading one message's rows raises): that
    message is dead-lettered with the reason and where it was read, its neighbours are
    forwarded, and the step goes on."""
    from streams.live.jobs import JobsForward
    from streams.live.runner import Forwarder

    rows = JobsForward.rows

    def faulty(self: Any, value: bytes, where: Any, out: Any) -> Any:
        if b'"job":"3"' in value:  # in the second message only
            raise KeyError(f"{FAULT}: rows")
        return rows(self, value, where, out)

    monkeypatch.setattr(JobsForward, "rows", faulty)

    async def run() -> None:
        pipe, topics, _sink, _store = _pipeline()
        ctx = pipe.ctx
        fwd = Forwarder(ctx, JobsForward(ctx))
        name = topics["job_events"].name
        values = [b"\n".join(orjson.dumps(e) for e in m) for m in _messages()]
        events = [_Event(name, off, v) for off, v in enumerate(values)]
        await fwd.on_events(events)
        await fwd.publish()
        [dead] = _dead(topics)
        assert dead.reject.reason == "stage_error"
        assert dead.error == f"KeyError: '{FAULT}: rows'"
        assert (dead.reject.source, dead.topic, dead.offset) == ("job-events", name, 1)
        assert dead.reject.text == values[1].decode()
        forwarded = [orjson.loads(v)["events"] for _k, v in topics["jobs_partials"].sent]
        assert [e[0] for m in forwarded for e in m] == [0, 2, 3]
        assert all(ev.acked for ev in events)  # the dead-lettered message too

    asyncio.run(run())


def test_the_drain_forward_step_rolls_a_partition_back_to_before_the_poison(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The node-status forward step keeps state per partition (the drain accountant). Fault
    injection: the accountant raises on one message's records after it has taken them. That
    message is dead-lettered, and the partition's state (also after a checkpoint in the
    middle) packs to the same bytes as a run that never saw the message."""
    import gzip

    from models.drain.live import PartitionDrain
    from models.formats.moab import parse_moab_chunk
    from models.records.nodestatus import Codebook
    from streams.codecs import nodestatus as ns
    from streams.live.drain import DrainForward
    from streams.live.runner import Forwarder
    from tests.golden.make_golden import INPUTS

    book = Codebook()
    batch = parse_moab_chunk(gzip.decompress((INPUTS / "moab.log.gz").read_bytes()), book).batch
    cuts = [round(len(batch) * k / 6) for k in range(7)]
    values = [
        ns.encode(batch.take(np.arange(a, b)), book, "moab:golden")
        for a, b in zip(cuts, cuts[1:], strict=False)
    ]
    bad_ts = int(batch.ts_ms[cuts[3]])  # the first record of the fourth message
    add = PartitionDrain.add

    def faulty(self: PartitionDrain, b: Any) -> Any:
        late = add(self, b)  # the state changed: a rollback must undo it
        if len(b) and int(b.ts_ms[0]) == bad_ts:
            raise ValueError(f"{FAULT}: accountant")
        return late

    async def run(offsets: list[int], checkpoint_at: int) -> tuple[bytes, list[Any]]:
        pipe, topics, _sink, _store = _pipeline()
        fwd = Forwarder(pipe.ctx, DrainForward(pipe.ctx))
        name = topics["node_status"].name
        for off in offsets:
            await fwd.on_events([_Event(name, off, values[off])])
            if off == checkpoint_at:
                await fwd.publish(save=True)
        await fwd.publish()
        st = fwd.states[0]
        return pack(fwd.kind, 1, fwd.fam.snapshot(0, st)), _dead(topics)  # type: ignore[attr-defined]

    async def both() -> None:
        want, none = await run([0, 1, 2, 4, 5], checkpoint_at=-1)
        assert none == []
        monkeypatch.setattr(PartitionDrain, "add", faulty)
        for checkpoint_at in (-1, 1):  # from a fresh state, and from a saved one
            got, dead = await run(list(range(6)), checkpoint_at)
            [d] = dead
            assert d.reject.reason == "stage_error" and d.reject.source == "node-status"
            assert d.error == f"ValueError: {FAULT}: accountant"
            assert (d.partition, d.offset) == (0, 3)
            assert got == want, checkpoint_at

    asyncio.run(both())
