"""The node-status and node-samples shippers' markers (issue 30): ``ship moab FILE`` and ``ship
sample-files`` send every record before the markers that cover it and an end marker last on
every partition; ``ship moab`` cuts a message over the size bound into halves; ``ship samples
--kafka`` sends watermark markers only when nothing waits in its buffer."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path
from typing import Any

import orjson

from models.formats.sampletrace import dumps
from models.records.nodesample import NodeSample
from models.records.nodestatus import Codebook
from models.records.plausible import TimeBounds
from streams.codecs.control import Marker, decode_control, decode_marker, is_marker
from streams.codecs.nodestatus import Decoder
from streams.ship.moab import MoabShipper, ship_files
from streams.ship.sample_files import ship_sample_files
from streams.ship.samples import SampleKafkaShipper
from tests.golden.make_golden import INPUTS


class Recorder:
    """The producer's ``send`` and ``partitions_for``: every message, in order."""

    def __init__(self, partitions: int = 4) -> None:
        self.sent: list[tuple[str, int, bytes]] = []
        self.partitions = partitions

    async def send(self, topic: str, value: bytes, key: Any = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition, value))
        f = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f

    async def partitions_for(self, topic: str) -> set[int]:
        return set(range(self.partitions))

    def by_partition(self, topic: str) -> dict[int, list[bytes]]:
        out: dict[int, list[bytes]] = {}
        for t, p, v in self.sent:
            if t == topic:
                out.setdefault(p, []).append(v)
        return out


def _moab_log(tmp_path: Path, lines: int = 20_000) -> Path:
    text = gzip.decompress((INPUTS / "moab.log.gz").read_bytes()).splitlines(keepends=True)
    path = tmp_path / "moab.log"
    path.write_bytes(b"".join(text[:lines]))
    return path


def _ship_moab(tmp_path: Path, **kw: Any) -> tuple[Recorder, MoabShipper]:
    rec = Recorder()
    sh = MoabShipper(rec, "ns", "dl", rec.partitions, TimeBounds(), source="moab:test", **kw)
    asyncio.run(ship_files(sh, [str(_moab_log(tmp_path))], progress=False))
    return rec, sh


def test_moab_files_end_with_an_end_marker_on_every_partition(tmp_path: Path) -> None:
    rec, sh = _ship_moab(tmp_path, marker_interval=0.0)  # a watermark round after every chunk
    parts = rec.by_partition("ns")
    assert sorted(parts) == [0, 1, 2, 3] and sh.stats.records > 1000
    book = Codebook()
    decoder = Decoder(book)
    for msgs in parts.values():
        marks = [decode_control(v) for v in msgs]
        last = marks[-1]
        assert last is not None and last.action == "end" and last.source == "moab:test"
        assert sum(m is not None and m.end for m in marks) == 1  # one file: one end
        assert all(m is None or m.action in ("watermark", "end") for m in marks)  # no v1 flush
        claimed = float("-inf")
        for v, m in zip(msgs, marks, strict=True):
            if m is not None:
                assert m.ts is not None and m.ts >= claimed
                claimed = m.ts
            else:  # every record after a marker is at or after its time (Moab seconds)
                _, b, _ = decoder.decode(v)
                assert int(b.ts_ms.min()) / 1000 >= claimed - 1e-9
        assert any(m is not None and m.action == "watermark" for m in marks)


def test_moab_message_over_the_bound_is_cut_in_halves(tmp_path: Path) -> None:
    rec, sh = _ship_moab(tmp_path, max_bytes=20_000)
    slices = [v for t, _p, v in rec.sent if t == "ns" and decode_control(v) is None]
    assert sh.stats.split > 0 and all(len(v) <= 20_000 for v in slices)
    book = Codebook()
    decoder = Decoder(book)
    rows = sum(len(decoder.decode(v)[1]) for v in slices)
    assert rows == sh.stats.records  # nothing lost
    (tmp_path / "whole").mkdir()
    whole, _ = _ship_moab(tmp_path / "whole")
    assert len([v for t, _p, v in whole.sent if t == "ns"]) < len(slices)


def test_moab_record_that_cannot_fit_is_dead_lettered(tmp_path: Path) -> None:
    rec = Recorder(1)
    sh = MoabShipper(rec, "ns", "dl", 1, TimeBounds(), max_bytes=10, source="moab:test")
    log = tmp_path / "one.log"
    log.write_bytes(_moab_log(tmp_path, 400).read_bytes())
    asyncio.run(ship_files(sh, [str(log)], progress=False))
    dead = [orjson.loads(v) for t, _p, v in rec.sent if t == "dl"]
    assert dead and {d["reason"] for d in dead} == {"too_large"}
    assert sh.stats.messages == 0 and is_marker(rec.sent[-1][2])


def _samples(nodes: int = 12, minutes: int = 30) -> list[NodeSample]:
    out = []
    for n in range(nodes):
        for m in range(minutes):
            ts = 1_700_000_040.0 + 60 * m + n
            s = NodeSample(
                ts,
                f"J{n % 3}",
                100 + n,
                f"n{n:02d}",
                "app",
                1,
                1,
                1000,
                0,
                0,
                0,
                0,
                1000 * m,
                50.0,
                0,
                0,
            )
            out.append(s)
    return out


def test_sample_files_send_markers_after_what_they_cover_and_end_last(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    samples = _samples()
    path.write_bytes(b"\n".join(dumps(s) for s in samples) + b"\n")
    rec = Recorder()
    ship = ship_sample_files(rec, "smp", "dl", [str(path)], TimeBounds(), 1 << 20, 4, 0.0)
    st = asyncio.run(ship)
    assert st.samples == len(samples) and st.markers > 4
    parts = rec.by_partition("smp")
    assert sorted(parts) == [0, 1, 2, 3]
    for msgs in parts.values():
        marks = [decode_marker(v) for v in msgs]
        last = marks[-1]
        assert last is not None and last.end and sum(m is not None and m.end for m in marks) == 1
        claimed = float("-inf")
        for v, m in zip(msgs, marks, strict=True):
            if m is not None:
                assert m.ts is not None and m.ts >= claimed
                claimed = m.ts
            else:
                times = [orjson.loads(line)["ts"] for line in v.split(b"\n")]
                assert min(times) > claimed  # never at or behind a marker before it


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_sampler_markers_wait_for_the_buffer_and_cover_empty_sweeps() -> None:
    rec = Recorder(2)
    up = {"ok": False}

    async def connect() -> Recorder:
        if not up["ok"]:
            raise ConnectionError("down")
        return rec

    clock = _Clock()
    sh = SampleKafkaShipper(connect, "smp", marker_interval=10.0, source="s:n1", clock=clock)

    async def run() -> None:
        sh.push(_samples(1, 1), at=1_700_000_040.0)
        await sh.flush()
        await sh.mark(force=True)  # Kafka down: the sweep waits, no marker
        assert not rec.sent and len(sh.buffer) == 1
        up["ok"] = True
        sh.push([], at=1_700_000_100.0)  # an empty sweep behind a waiting one
        await sh.flush()
        await sh.mark()
        clock.t += 5
        await sh.mark()  # not due yet
        clock.t += 5
        await sh.mark()

    asyncio.run(run())
    marks = [(p, decode_marker(v)) for _t, p, v in rec.sent if is_marker(v)]
    assert [p for p, _ in marks] == [0, 1, 0, 1]
    m: Marker | None = marks[0][1]
    assert m is not None and m.ts == 1_700_000_100.0 and m.source == "s:n1" and not m.end
    assert not is_marker(rec.sent[0][2])  # the sweep went first
    last = marks[-1][1]
    assert sh.stats.markers == 4 and last is not None and last.sent == 1010.0
