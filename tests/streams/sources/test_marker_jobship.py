"""``ship jobs FILE``'s markers (issue 30): on every partition, a marker comes after every
event it covers and before every later one, a round at most every marker interval of event
time, and the end-of-input marker last on every partition."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds
from streams.codecs.control import decode_marker, is_marker
from streams.sources.jobship import ship_job_files


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, int, bytes]] = []

    async def send(self, topic: str, value: bytes, key: Any = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition, value))
        f = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f


def test_markers_follow_what_they_cover_and_the_end_comes_last(tmp_path: Path) -> None:
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
