"""Node-status messages: what the shipper encodes the worker decodes to the same records; any
damage is a MessageError with a reason, never a half-decoded batch or a touched codebook."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import orjson
import pytest

from models.drain.accountant import DrainAccountant
from models.formats.moab import parse_moab_chunk
from models.records.nodestatus import Codebook
from streams.codecs.nodestatus import Decoder, MessageError, encode, partition_of
from tests.golden.make_golden import INPUTS


def _records(b, book):
    out = []
    for i in range(len(b)):
        jobs = tuple(book.jobs.names[j] for j in b.run_job[b.run_row == i].tolist())
        rsv = book.jobs.names[b.rsv[i]] if b.rsv[i] >= 0 else None
        out.append(
            (
                int(b.ts_ms[i]),
                book.nodes.names[b.node[i]],
                book.states.names[b.state[i]],
                rsv,
                jobs,
                bool(b.has_job[i]),
            )
        )
    return out


def test_round_trip_of_a_real_log_in_slices_gives_the_same_accounting() -> None:
    data = gzip.decompress((INPUTS / "moab.log.gz").read_bytes())
    book = Codebook()
    batch = parse_moab_chunk(data, book).batch
    direct = DrainAccountant(book, tz="America/Chicago")
    direct.add(batch)

    wbook = Codebook()
    dec = Decoder(wbook)
    live = DrainAccountant(wbook, tz="America/Chicago")
    for lo in range(0, len(batch), 700):
        part = batch.take(np.arange(lo, min(lo + 700, len(batch))))
        src, got, bad = dec.decode(encode(part, book, "moab:test"))
        assert bad == []
        assert src == "moab:test"
        assert _records(got, wbook) == _records(part, book)
        live.add(got)
    assert [repr(r) for r in live.daily()] == [repr(r) for r in direct.daily()]
    assert live.node_state_ms().sum() == direct.node_state_ms().sum()


GOOD = {
    "v": 1,
    "source": "s",
    "ts_ms": [1, 2],
    "nodes": ["a", "b"],
    "node": [0, 1],
    "states": ["Idle"],
    "state": [0, 0],
    "jobs": ["j"],
    "rsv": [0, -1],
    "run_row": [1],
    "run_job": [0],
}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"v": 2}, "bad_version"),
        ({"ts_ms": [1]}, "bad_message"),
        ({"ts_ms": ["1", 2]}, "bad_message"),
        ({"ts_ms": [1.5, 2]}, "bad_message"),
        ({"node": [0, 2]}, "bad_message"),
        ({"rsv": [0, -2]}, "bad_message"),
        ({"run_row": [5]}, "bad_message"),
        ({"run_job": [1]}, "bad_message"),
        ({"nodes": "ab"}, "bad_message"),
        ({"source": None}, "bad_message"),
    ],
)
def test_damaged_messages_are_refused_with_a_reason(change, reason) -> None:
    book = Codebook()
    dec = Decoder(book)
    with pytest.raises(MessageError) as e:
        dec.decode(orjson.dumps({**GOOD, **change}))
    assert e.value.reason == reason
    assert len(book.nodes) == 0 and len(book.jobs) == 0  # nothing half-decoded
    _, b, _ = dec.decode(orjson.dumps(GOOD))
    assert b.has_job.tolist() == [False, True] and b.rsv.tolist() == [0, -1]


HUGE = orjson.dumps(GOOD).replace(b'"ts_ms":[1,2]', b'"ts_ms":[1,100000000000000000000000]')


@pytest.mark.parametrize("raw", [b"", b"{", b"[1,2]", b"\xff\xfe", b"null", HUGE])
def test_not_json_objects(raw: bytes) -> None:
    with pytest.raises(MessageError):
        Decoder(Codebook()).decode(raw)


def test_records_outside_the_bounds_are_left_out_before_any_name_is_interned() -> None:
    from models.records.plausible import TimeBounds

    book = Codebook()
    msg = {**GOOD, "ts_ms": [1, 13_569_465_600_000]}  # the second record is dated 2400
    _, b, bad = Decoder(book).decode(orjson.dumps(msg), TimeBounds())
    assert b.ts_ms.tolist() == [1] and book.nodes.names == ["a"]
    assert book.jobs.names == ["j"]  # rsv of row 0; row 1's joblist went with it
    assert b.run_row.size == 0
    assert [r for r, _ in bad] == ["implausible_time"] and '"node":"b"' in bad[0][1]


def test_nodes_go_to_partitions_in_blocks() -> None:
    """Neighbouring nodes share a partition (a job on them is held once or twice, not once per
    partition); consecutive blocks go round the partitions, so the load is even."""
    names = [f"nid{i:05d}" for i in range(27_000)]
    p = partition_of(names, 8)
    assert partition_of(names, 8).tolist() == p.tolist()  # the same whatever ships it
    for lo in range(0, 27_000 - 32, 32):
        assert len(set(p[lo : lo + 32].tolist())) == 1
    jobs = [set(p[lo : lo + 20].tolist()) for lo in range(0, 26_980, 20)]
    assert max(len(j) for j in jobs) == 2
    counts = np.bincount(p, minlength=8)
    assert counts.max() - counts.min() <= 32 * 2
    assert partition_of(["27453", "27454"], 8).tolist()[0] == partition_of(["27455"], 8)[0]
    other = partition_of(["login", "gpu-a", "nid1x"], 8)  # no trailing number: CRC-32 of the name
    assert other.tolist() == [zlib.crc32(n.encode()) % 8 for n in ("login", "gpu-a", "nid1x")]
