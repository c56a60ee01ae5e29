"""The partials topics: drain partials, the drain -> jobs join totals, job-event and sample
partials. Each round-trips (generated values with many entries), fits its topic's schema, and
unknown versions, damage and the formats of earlier generations are refused by reason."""

from __future__ import annotations

import gzip

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.drain.live import LiveJob, Partial, PartitionDrain
from models.formats.moab import parse_moab_chunk
from models.formats.sampletrace import dumps, sample_row
from models.records.jobevent import JobEvent, jobevent_row
from models.records.nodesample import NodeSample
from models.records.nodestatus import Codebook
from models.samples.batch import SampleBatch
from streams.codecs import CodecError
from streams.codecs import partials as pc
from streams.codecs.nodestatus import Decoder, encode
from tests.golden.make_golden import INPUTS
from tests.streams.codecs.helpers import refused, validator

I64 = st.integers(-(2**63), 2**63 - 1)
_ms = st.integers(0, 2**45)
_name = st.text(max_size=10)

# ---- drain-partials ---------------------------------------------------------------------------
_partials = st.builds(
    Partial,
    st.integers(0, 4095),
    st.none() | _ms,
    st.integers(0, 10**6),
    st.lists(st.tuples(st.sampled_from(["minute", "hour", "day"]), *[I64] * 7), max_size=50),
    st.lists(st.tuples(_name, *[I64] * 6), max_size=200),
    st.dictionaries(_name, I64, max_size=6),
    st.lists(
        st.tuples(
            st.sampled_from(["hour", "day"]),
            _ms,
            st.dictionaries(_name, st.lists(I64, min_size=4, max_size=4), max_size=4),
        ),
        max_size=10,
    ),
)


@settings(max_examples=60, deadline=None)
@given(_partials)
def test_drain_partials_round_trip_and_fit_their_schema(p: Partial) -> None:
    value = pc.encode_drain_partial(p)
    validator("drain-partials").validate(orjson.loads(value))
    assert value == orjson.dumps({"v": 1, **p.to_dict()})  # the layout the agents write, + v
    assert pc.decode_drain_partial(value) == p


def test_a_real_partition_partial_round_trips() -> None:
    book = Codebook()
    data = gzip.decompress((INPUTS / "moab.log.gz").read_bytes())
    batch = parse_moab_chunk(data, book).batch
    st_ = PartitionDrain(0, tz="America/Chicago")
    part = batch.take(np.arange(min(len(batch), 8_000)))
    _src, got, _bad = Decoder(st_.book).decode(encode(part, book, "moab:test"))
    st_.add(got)
    p = st_.partial()
    assert p.windows and p.jobs and p.states
    value = pc.encode_drain_partial(p)
    validator("drain-partials").validate(orjson.loads(value))
    assert pc.decode_drain_partial(value) == p
    # what the agents write today (no "v") still reads: partials in flight across the upgrade
    assert pc.decode_drain_partial(orjson.dumps(p.to_dict())) == p


def test_drain_partial_refusals() -> None:
    good = {"v": 1, **Partial(3, None, 2, [("hour", 0, 1, 2, 3, 4, 5, 6)]).to_dict()}
    dec = pc.decode_drain_partial
    refused(dec, orjson.dumps({**good, "v": 2}), "bad_version", "drain partial", "v=2")
    refused(dec, b"\x00", "bad_json", "drain partial")
    old = {k: v for k, v in good.items() if k != "states"}
    refused(dec, orjson.dumps(old), "old_generation", "written by drainwatch before", "states")
    for change in (
        {"partition": "3"},
        {"watermark_ms": 1.5},
        {"windows": [["hour", 0, 1, 2, 3, 4, 5]]},
        {"windows": [["hour", 0, 1, 2, 3, 4, 5, True]]},
        {"windows": [["week", 0, 1, 2, 3, 4, 5, 6]]},
        {"states": [["minute", 0, {}]]},
        {"jobs": [["j", 1, 2, 3, 4, 5, 6.0]]},
        {"counts": {"records": None}},
        {"states": [["hour", 0, {"Idle": [1, "2"]}]]},
    ):
        refused(dec, orjson.dumps({**good, **change}), "bad_message", "drain partial")


# ---- jobs-partials: the join totals -------------------------------------------------------------
_jobs = st.lists(st.builds(LiveJob, _name, *[I64] * 6), max_size=4500)


@settings(max_examples=20, deadline=None)
@given(_jobs, st.none() | _ms)
def test_drain_totals_round_trip_in_messages_of_at_most_2000_jobs(
    jobs: list[LiveJob], wm: int | None
) -> None:
    values = pc.encode_drain_totals(jobs, wm)
    assert len(values) == -(-len(jobs) // pc.JOIN_ROWS)
    v = validator("jobs-partials")
    rows = []
    for i, value in enumerate(values):
        doc = orjson.loads(value)
        v.validate(doc)
        chunk = [
            [*(getattr(j, f) for f in LiveJob.__dataclass_fields__)]
            for j in jobs[i * 2000 :][:2000]
        ]
        # the layout the drain agent writes today, + v
        assert value == orjson.dumps({"v": 1, "partition": -1, "drain": chunk, "watermark_ms": wm})
        got = pc.decode_job_partial(value)
        assert isinstance(got, pc.DrainTotals) and got.watermark_ms == wm
        rows += got.rows
    assert rows == [tuple(getattr(j, f) for f in LiveJob.__dataclass_fields__) for j in jobs]


def test_drain_totals_refusals() -> None:
    row = ["j", 1, 2, 3, 4, 5, 6]
    dec = pc.decode_job_partial
    good = {"v": 1, "partition": -1, "drain": [row], "watermark_ms": 9}
    refused(dec, orjson.dumps({**good, "drain": [row[:6]]}), "old_generation", "point time")
    refused(dec, orjson.dumps({**good, "partition": 2}), "bad_message", "drain totals")
    refused(dec, orjson.dumps({**good, "drain": [row[:5]]}), "bad_message", "drain totals")
    refused(dec, orjson.dumps({**good, "watermark_ms": "9"}), "bad_message", "watermark_ms")
    refused(dec, orjson.dumps({**good, "v": 2}), "bad_version")


# ---- jobs-partials: job events ------------------------------------------------------------------
_opt_text = st.none() | st.text(max_size=6)
_opt_count = st.none() | st.integers(0, 2**63 - 1)
_opt_float = st.none() | st.floats(0, 1e12)
_events = st.builds(
    JobEvent,
    st.sampled_from(["submit", "start", "end"]),
    st.floats(-1e10, 1e10),
    st.text(min_size=1, max_size=8),
    _opt_text,
    _opt_text,
    _opt_text,
    _opt_text,
    _opt_text,
    _opt_count,
    _opt_count,
    _opt_float,
    st.lists(st.text(min_size=1, max_size=5), max_size=4).map(tuple),
    _opt_text,
    st.none() | I64,
    st.none() | st.booleans(),
    _opt_float,
)
_entries = st.lists(st.tuples(st.integers(0, 2**62), st.lists(_events, max_size=30)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 4095), _entries)
def test_job_partials_round_trip_and_fit_their_schema(
    p: int, entries: list[tuple[int, list[JobEvent]]]
) -> None:
    rows = [(off, [orjson.dumps(jobevent_row(e.to_dict())) for e in evs]) for off, evs in entries]
    value = pc.encode_job_partial(p, rows)
    doc = orjson.loads(value)
    validator("jobs-partials").validate(doc)
    # the byte template writes what orjson writes of the same document
    assert value == orjson.dumps({"v": 1, "partition": p, "events": doc["events"]})
    assert pc.decode_job_partial(value) == pc.JobPartial(p, [(off, evs) for off, evs in entries])


def test_a_job_partial_of_the_release_before_versions_reads() -> None:
    e = JobEvent("start", 5.0, "J1", user="u", nodes=2, node_list=("n1", "n2"))
    row = orjson.dumps(jobevent_row(e.to_dict()))
    old = b'{"partition":%d,"events":[%b]}' % (4, b"[7,[%b]]" % row)
    assert pc.decode_job_partial(old) == pc.JobPartial(4, [(7, [e])])


def test_job_partial_refusals() -> None:
    e = JobEvent("end", 5.0, "J1")
    row = jobevent_row(e.to_dict())
    dec = pc.decode_job_partial
    good = {"v": 1, "partition": 0, "events": [[7, [row]]]}
    refused(dec, orjson.dumps({**good, "v": 2}), "bad_version", "jobs partial")
    refused(dec, b"{", "bad_json", "jobs partial")
    objects = {**good, "events": [[7, [e.to_dict()]]]}
    refused(
        dec,
        orjson.dumps(objects),
        "old_generation",
        "written by drainwatch before",
        "event objects",
    )
    for change in (
        {"partition": None},
        {"events": {"7": [row]}},
        {"events": [[7]]},
        {"events": [["7", [row]]]},
        {"events": [[7, ["row"]]]},
        {"events": [[7, [row[:10]]]]},
        {"events": [[7, [[*row, 1]]]]},
        {"extra": 1},
    ):
        refused(dec, orjson.dumps({**good, **change}), "bad_message", "jobs partial")


# ---- samples-partials ---------------------------------------------------------------------------
def _key(s: NodeSample) -> tuple[object, ...]:
    return (
        s.ts,
        s.job,
        s.pid,
        s.node,
        s.start,
        s.write_bytes,
        s.read_bytes,
        s.core,
        s.vm_rss_kb,
        s.vm_swap_kb,
        s.cores,
        s.fs_rates,
    )


_counter = st.integers(0, 2**62)
_samples = st.builds(
    NodeSample,
    st.floats(0, 4e9),
    st.text(min_size=1, max_size=6),
    st.integers(0, 2**31),
    st.text(min_size=1, max_size=6),
    st.just(""),
    st.just(0),
    st.just(0),
    _counter,
    _counter,
    st.just(0),
    st.just(0),
    _counter,
    _counter,
    st.floats(0, 1e5),
    st.just(0),
    st.just(0),
    st.floats(0, 4e9),
    st.integers(0, 8192),
    st.just(""),
    st.lists(st.tuples(st.text(max_size=4), st.floats(0, 1e7), st.floats(0, 1e7)), max_size=2).map(
        tuple
    ),
)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 4095),
    st.lists(st.tuples(_counter, st.lists(_samples, max_size=20)), max_size=12),
)
def test_sample_partials_round_trip_and_their_header_fits_its_schema(
    p: int, entries: list[tuple[int, list[NodeSample]]]
) -> None:
    value = pc.encode_sample_partial(p, [(off, SampleBatch.from_samples(s)) for off, s in entries])
    assert value[:4] == b"DWS1"
    _batch, head = SampleBatch.from_bytes(value)
    validator("samples-partials").validate(head)
    got = pc.decode_sample_partial(value)
    assert got.partition == p
    assert [off for off, _b in got.events] == [off for off, _s in entries]
    for (_off, b), (_o, samples) in zip(got.events, entries, strict=True):
        assert [_key(s) for s in b.to_samples()] == [_key(s) for s in samples]


S1 = NodeSample(
    1_700_000_000.0, "J1", 10, "n1", "a", 1, 1, 30, 4, 0, 0, 7, 900, 50.0, 0, 0, 1_699_999_000.0, 4
)


def test_sample_partial_refusals() -> None:
    dec = pc.decode_sample_partial
    rows = orjson.dumps({"partition": 1, "events": [[5, [sample_row(dumps(S1))]]]})
    err = refused(dec, rows, "old_generation", "sample partial")
    assert err.detail == (
        "sample partial: written by drainwatch before the binary sample partials (DWS1); "
        "not read by this release"
    )
    objects = orjson.dumps({"partition": 1, "events": [[5, [orjson.loads(dumps(S1))]]]})
    refused(dec, objects, "old_generation", "DWS1")
    good = pc.encode_sample_partial(1, [(5, SampleBatch.from_samples([S1, S1]))])
    refused(dec, b"DWS2" + good[4:], "bad_version", "DWS2", "DWS1")
    refused(dec, b"\x00\x01", "bad_json", "DWS1")
    refused(dec, good[:-3], "bad_message", "sample partial")
    refused(dec, good[:12], "bad_message", "sample partial")
    two = SampleBatch.from_samples([S1, S1])
    refused(dec, two.to_bytes({"partition": 1, "events": [[5, 3]]}), "bad_message", "3 samples")
    refused(dec, two.to_bytes({"partition": "1", "events": [[5, 2]]}), "bad_message")
    refused(dec, two.to_bytes({"partition": 1, "events": [[5, -1], [6, 3]]}), "bad_message")


@pytest.mark.parametrize("value", [b"", b"{}", b"[]"])
def test_empty_and_odd_values_are_refused(value: bytes) -> None:
    for dec in (pc.decode_drain_partial, pc.decode_job_partial, pc.decode_sample_partial):
        with pytest.raises(CodecError):
            dec(value)
