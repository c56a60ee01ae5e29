"""``ship jobs FILE``'s markers (issue 30): on every partition, a marker comes after every
event it covers and before every later one, a round every marker interval of event time once
``ROUND_EVENTS`` events went out, and the end-of-input marker last on every partition; paced
(``--speed``), events at their time and a round every marker interval of the wall clock."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds
from streams.codecs.control import decode_marker, is_marker
from streams.ship import markers as marker_rules
from streams.ship.base import ShipStats
from streams.ship.job_files import send_paced, ship_job_files
from streams.ship.markers import Markers


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, int, bytes]] = []

    async def send(self, topic: str, value: bytes, key: Any = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition, value))
        f = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f


def test_markers_follow_what_they_cover_and_the_end_comes_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(marker_rules, "ROUND_EVENTS", 50)  # 50 events: 350 s, under the interval
    path = tmp_path / "jobs.jsonl"
    events = [JobEvent("end", float(t), f"j{t % 37}") for t in range(0, 50_000, 7)]
    path.write_bytes(b"\n".join(e.to_json() for e in events) + b"\n")
    rec = Recorder()
    ship = ship_job_files(
        rec,
        "je",
        "dl",
        "jobevents",
        [str(path)],
        TimeBounds(),
        1 << 20,
        1000,
        progress=False,
        partitions=4,
        marker_interval=600.0,
    )
    st = asyncio.run(ship)
    assert st.events == len(events) and st.markers > 4 * 50
    by_part: dict[int, list[bytes]] = {}
    for topic, p, v in rec.sent:
        assert topic == "je"
        by_part.setdefault(p, []).append(v)
    for msgs in by_part.values():
        marks = [decode_marker(v) for v in msgs if is_marker(v)]
        assert marks[-1] is not None and marks[-1].end and is_marker(msgs[-1])
        assert sum(m is not None and m.end for m in marks) == 1
        claimed = float("-inf")
        rounds = []
        for v in msgs:
            if is_marker(v):
                m = decode_marker(v)
                assert m is not None and m.ts is not None and m.ts >= claimed
                claimed = m.ts
                rounds.append(m.ts)
            else:
                times = [orjson.loads(line)["ts"] for line in v.split(b"\n")]
                assert min(times) > claimed  # never behind a marker sent before it
        gaps = [b - a for a, b in zip(rounds, rounds[1:], strict=False)]
        assert max(gaps[:-1]) < 600.0 + 7  # a round every interval (one event step late)


class Clock:
    """A wall clock that moves only when slept on."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    async def sleep(self, s: float) -> None:
        self.t += s


def test_paced_events_go_at_their_time_and_markers_every_wall_interval() -> None:
    """``--speed``: an event at ``ts`` goes out ``(ts - first) / speed`` wall seconds after the
    start; a marker round every interval of the wall clock, at the replay clock, after every
    event it covers and before every later one."""
    speed, interval = 60.0, 1.0  # a round every 60 event seconds
    events = [JobEvent("end", 5000.0 + t * t / 50, f"j{t % 11}") for t in range(300)]
    clock, sent = Clock(), []

    class Timed(Recorder):
        async def send(self, topic: str, value: bytes, key: Any = None, partition: int = 0) -> Any:
            sent.append((clock(), partition, value))
            return await super().send(topic, value, key, partition)

    async def go() -> ShipStats:
        rec = Timed()
        st = ShipStats()
        markers = Markers(rec, "je", 4, "paced", interval, clock)
        await send_paced(rec, "je", events, 4, st, speed, None, markers, clock, clock.sleep)
        return st

    st = asyncio.run(go())
    assert st.events == len(events)
    start = sent[0][0]
    rounds: dict[float, list[float]] = {}
    claimed: dict[int, float] = {}
    for t, p, v in sent:
        if is_marker(v):
            m = decode_marker(v)
            assert m is not None and m.ts is not None
            assert m.ts == pytest.approx(5000.0 + (t - start) * speed)  # the replay clock
            claimed[p] = m.ts
            rounds.setdefault(t, []).append(m.ts)
            continue
        for line in v.split(b"\n"):
            ts = orjson.loads(line)["ts"]
            assert ts > claimed.get(p, float("-inf"))
            assert t - start == pytest.approx((ts - 5000.0) / speed)
    walls = sorted(rounds)
    assert all(len(r) == 4 for r in rounds.values())  # every partition
    assert all(b - a == pytest.approx(interval) for a, b in zip(walls, walls[1:], strict=False))
    assert len(walls) == int((events[-1].ts - 5000.0) / speed / interval)
