"""The combine step's flushes (streams/live/runner.py ``Combiner``, here with the job family):
a write-out (``flush(save=False)``) writes the rows and messages waiting, saves no state and
acks nothing; a flush saves the state, and the partials it covers are acked once the snapshot
after it is saved too (acks trail one snapshot: docs/state.md); ``caught_up`` asks for a
write-out only once the combiner has had no partials for a while and something waits.

Stand-ins, named as such: the app's topics and producer keep what is sent (no broker), the sink
keeps the lines (no InfluxDB), the state store keeps what is saved. The order of a flush is
what is checked here; the same pipeline runs on the real stack in tests/integration/."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import orjson

from streams.app import AppTopics
from streams.codecs.partials import encode_job_partial as encode_partial
from streams.config import load_settings
from streams.live import runner
from streams.live.checkpoint import Outbox
from streams.live.context import WorkerContext
from streams.live.jobs import JobsCombine, JobsForward
from streams.live.runner import Combiner
from streams.topics import topic_names
from tests.streams.standins import Producer, Topic


class _Store:
    def __init__(self) -> None:
        self.saved: list[str] = []
        self.refused: list[str] = []

    async def candidates(self, owner: str) -> list[tuple[str, bytes]]:
        return []

    async def save(self, owner: str, state: bytes) -> None:
        self.saved.append(owner)


class _Sink:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_lines(self, points: list[str]) -> None:
        self.lines += points


class _Event:
    def __init__(self, topic: str, offset: int, value: bytes) -> None:
        self.value = value
        self.message = SimpleNamespace(
            topic=topic, offset=offset, tp=SimpleNamespace(topic=topic, partition=0)
        )
        self.acked = False

    def ack(self) -> None:
        self.acked = True


def _kept(lines: list[str]) -> dict[tuple[str, str], str]:
    """Line protocol as InfluxDB keeps it: (series, time) -> the fields of its last write."""
    out = {}
    for line in lines:
        series, rest = line.split(" ", 1)
        fields, ts = rest.rsplit(" ", 1)
        out[series, ts] = fields
    return out


def _job(job: str, submit: float, run: float) -> list[dict[str, Any]]:
    base = {
        "job": job,
        "user": "u1",
        "group": "g1",
        "name": "n",
        "nodes": 1,
        "cores": 4,
        "req_walltime": 3600,
    }
    return [
        {**base, "type": "submit", "ts": submit},
        {**base, "type": "start", "ts": submit + 10},
        {**base, "type": "end", "ts": submit + 10 + run},
    ]


def _partial(pipe: Combiner, offset: int, events: list[dict[str, Any]]) -> _Event:
    value = b"\n".join(orjson.dumps(e) for e in events)
    where = {"topic": "job-events", "partition": 0, "offset": offset}
    rows = JobsForward(pipe.ctx).rows(value, where, Outbox())
    return _Event("jobs-partials", offset, encode_partial(0, [[offset, rows]]))


def _pipeline() -> tuple[Combiner, dict[str, Topic], _Sink, _Store]:
    settings = load_settings(
        env={"DRAINWATCH_TZ": "UTC", "DRAINWATCH_LIVE_JOBS": "on", "DRAINWATCH_LATENESS": "1"}
    )
    names = topic_names(settings.kafka.topic_prefix)
    topics = {f: Topic(getattr(names, f)) for f in AppTopics.__annotations__}
    app = SimpleNamespace(
        producer=Producer({t.name: t for t in topics.values()}), conf=SimpleNamespace(id="t")
    )
    sink, store = _Sink(), _Store()
    ctx = WorkerContext(app, settings, sink, topics=SimpleNamespace(**topics), store=store)  # type: ignore[arg-type]
    return Combiner(ctx, JobsCombine(ctx, 1)), topics, sink, store


T0 = 1_700_000_000.0
FIRST = _job("1", T0, 300) + _job("2", T0 + 60, 5)
SECOND = _job("3", T0 + 7200, 60)


def test_a_write_out_writes_what_waits_and_the_flush_then_saves_and_acks() -> None:
    async def run() -> None:
        pipe, topics, sink, store = _pipeline()
        first = _partial(pipe, 0, FIRST)
        assert not pipe.caught_up()  # nothing waits yet
        await pipe.on_partials([first])
        assert pipe.waiting() and not pipe.caught_up()  # partials came just now
        pipe.last_partials = time.monotonic() - runner.WRITE_OUT_IDLE
        assert pipe.caught_up()

        await pipe.flush(save=False)
        written = len(sink.lines)
        assert written > 0 and any(line.startswith("runtime_prediction") for line in sink.lines)
        assert store.saved == [] and not first.acked  # no state, no ack
        assert not pipe.waiting() and not pipe.caught_up()
        await pipe.flush(save=False)  # nothing waits: nothing is written
        assert len(sink.lines) == written

        second = _partial(pipe, 1, SECOND)
        await pipe.on_partials([second])
        await pipe.flush()
        assert store.saved == ["jobs"]
        assert not first.acked and not second.acked  # the state that holds them is saved...
        third = _partial(pipe, 2, [])
        await pipe.on_partials([third])
        await pipe.flush()
        assert store.saved == ["jobs", "jobs"]
        assert first.acked and second.acked  # ...and the one after it: acked
        assert not third.acked
        assert len(sink.lines) > written

        # the same points and messages as one flush of both messages
        once, topics_once, sink_once, _ = _pipeline()
        await once.on_partials([_partial(once, 0, FIRST), _partial(once, 1, SECOND)])
        await once.flush()
        # as InfluxDB keeps them: a point (series, time) written again keeps its last fields
        assert _kept(sink.lines) == _kept(sink_once.lines)
        assert len(sink.lines) > len(_kept(sink.lines))  # the write-out's day rows, rewritten
        sent = {k: len(t.sent) for k, t in topics.items() if k != "worker_state"}
        assert sent == {k: len(t.sent) for k, t in topics_once.items() if k != "worker_state"}

    asyncio.run(run())


def test_points_are_handed_to_the_write_queue_as_the_combiner_makes_them(
    monkeypatch: Any,
) -> None:
    """Once ``HAND_OVER_POINTS`` wait, the combiner hands them to the write queue itself (no
    flush, no state, no ack); the flush hands over the rest and saves only once all are
    written."""
    monkeypatch.setattr(runner, "HAND_OVER_POINTS", 1)

    async def run() -> None:
        pipe, _topics, sink, store = _pipeline()
        writes, counts = pipe.ctx.writes, pipe.ctx.counts
        first = _partial(pipe, 0, FIRST)
        await pipe.on_partials([first])
        assert pipe.out.points == [] and counts["points_written"] > 0
        assert writes is not None
        await writes.barrier()
        handed = len(sink.lines)
        assert handed == counts["points_written"]
        assert any(line.startswith("runtime_prediction") for line in sink.lines)
        assert store.saved == [] and not first.acked

        second = _partial(pipe, 1, SECOND)
        await pipe.on_partials([second])
        await pipe.flush()
        await pipe.on_partials([_partial(pipe, 2, [])])
        await pipe.flush()  # the snapshot after the one that holds them: acked
        assert store.saved == ["jobs", "jobs"] and first.acked and second.acked
        assert writes.written == writes.handed == len(sink.lines) > handed

        once, _, sink_once, _ = _pipeline()
        await once.on_partials([_partial(once, 0, FIRST), _partial(once, 1, SECOND)])
        await once.flush()
        assert _kept(sink.lines) == _kept(sink_once.lines)

    asyncio.run(run())


def test_the_combiner_waits_for_a_write_queue_far_behind(monkeypatch: Any) -> None:
    """More than ``WRITE_BACKLOG_POINTS`` handed over and not written (InfluxDB down or
    behind): ``keep_up`` returns only once they are written, so the combiner takes no more
    partials meanwhile (they wait in Kafka); below it, it returns at once."""
    import threading

    monkeypatch.setattr(runner, "HAND_OVER_POINTS", 1)
    monkeypatch.setattr(runner, "WRITE_BACKLOG_POINTS", 0)

    async def run() -> None:
        pipe, _topics, sink, _store = _pipeline()
        gate = threading.Event()  # InfluxDB "down" until set
        write = sink.write_lines

        def slow(points: list[str]) -> None:
            gate.wait(5)
            write(points)

        writes = pipe.ctx.writes
        assert writes is not None
        writes._write = slow
        await pipe.keep_up()  # nothing handed over: at once
        await pipe.on_partials([_partial(pipe, 0, FIRST)])
        assert writes.handed > 0 and writes.written == 0
        waiting = asyncio.ensure_future(pipe.keep_up())
        await asyncio.sleep(0.05)
        assert not waiting.done() and sink.lines == []
        gate.set()
        await asyncio.wait_for(waiting, 5)
        assert writes.written == writes.handed == len(sink.lines)
        assert pipe.ctx.counts["write_waits"] == 1

    asyncio.run(run())
