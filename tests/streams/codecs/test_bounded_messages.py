"""Every message the worker sends is at most ``kafka.message_max_bytes`` by construction: drain
partials in parts the combiner applies in order (the same state as the partial whole), the
join totals, job and sample partials cut between source offsets, state chunks, and the
one-row messages (metrics, alerts, dead letters) with a text too long cut, marked so."""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.alerts import Alert
from models.drain.live import DrainCombiner, LiveJob, LiveWindow, Partial, PartitionDrain
from models.formats.moab import parse_moab_chunk
from models.records.jobevent import JobEvent, jobevent_row
from models.records.nodesample import NodeSample
from models.records.nodestatus import Codebook, NodeStatusBatch
from models.records.reject import Reject
from models.samples.batch import SampleBatch
from streams.codecs import partials as pc
from streams.codecs.alerts import alert_message, decode_alert, encode_alert
from streams.codecs.base import MIN_MESSAGE_BYTES, cut_text, fit_object
from streams.codecs.deadletter import dead_letter_message, decode_dead_letter
from streams.codecs.metrics import decode_metric, encode_job, encode_window, row_messages
from streams.codecs.nodestatus import Decoder, encode
from streams.config import KafkaSettings, Settings
from streams.sinks.statestore import StateStore, _whole
from tests.golden.make_golden import INPUTS
from tests.streams.codecs.helpers import validator
from tests.streams.codecs.test_partials import _entries, _key, _partials, _samples

SMALL = st.integers(2_000, 20_000)  # message bounds far below the setting's minimum


# ---- drain partials ---------------------------------------------------------------------------
def _merged(parts: list[Partial]) -> Partial:
    """The parts' rows concatenated in order, the last part's watermark."""
    out = Partial(parts[-1].partition, parts[-1].watermark_ms, parts[-1].nodes)
    out.counts = parts[-1].counts
    for q in parts:
        out.windows += q.windows
        out.jobs += q.jobs
        out.states += q.states
    return out


@settings(max_examples=80, deadline=None)
@given(_partials, SMALL)
def test_drain_partial_parts_fit_round_trip_and_follow_the_rules(p: Partial, limit: int) -> None:
    values = pc.encode_drain_partials(p, limit)
    assert all(len(v) <= limit for v in values)
    if len(pc.encode_drain_partial(p)) <= limit:
        assert values == [pc.encode_drain_partial(p)]  # one message, the same bytes
    schema = validator("drain-partials")
    for v in values:
        schema.validate(orjson.loads(v))
    parts = [pc.decode_drain_partial(v) for v in values]
    assert _merged(parts) == Partial(
        p.partition, p.watermark_ms, p.nodes, p.windows, p.jobs, p.counts, p.states
    )
    # only the last part carries the watermark; counts and nodes ride on each
    assert all(q.watermark_ms is None for q in parts[:-1])
    assert all(q.counts == p.counts and q.nodes == p.nodes for q in parts)
    # windows, then states, then jobs: no window after a state, no state after a job
    kinds = [
        k for q in parts for k in ("w" * len(q.windows) + "s" * len(q.states) + "j" * len(q.jobs))
    ]
    assert kinds == sorted(kinds, key="wsj".index)


def test_a_row_larger_than_the_bound_is_a_clear_error() -> None:
    p = Partial(2, 5, 1, jobs=[("x" * 5000, 1, 2, 3, 4, 5, 6)])
    with pytest.raises(ValueError, match="partition 2: a row of 50.. bytes does not fit"):
        pc.encode_drain_partials(p, 2000)


def _golden_batches(seed: int, pieces: int) -> tuple[Codebook, list[NodeStatusBatch]]:
    book = Codebook()
    data = gzip.decompress((INPUTS / "moab.log.gz").read_bytes())
    batch = parse_moab_chunk(data, book).batch
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, len(batch)), pieces - 1, replace=False))
    bounds = [0, *cuts.tolist(), len(batch)]
    return book, [batch.take(np.arange(a, b)) for a, b in zip(bounds, bounds[1:], strict=False)]


def _rows(comb: DrainCombiner) -> tuple[list[LiveWindow], list[LiveJob]]:
    return comb.take()


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 12), st.integers(1_500, 30_000), st.booleans())
def test_parts_applied_in_order_equal_the_partial_whole(
    seed: int, pieces: int, limit: int, two_partitions: bool
) -> None:
    """A partition's workload (the golden Moab log cut at random) reported at random points:
    a combiner given each partial whole and one given its parts one by one write the same rows
    and hold the same state."""
    book, batches = _golden_batches(seed, pieces)
    nparts = 2 if two_partitions else 1
    drains = [PartitionDrain(q, tz="America/Chicago", lateness_ms=60_000) for q in range(nparts)]
    decoders = [Decoder(d.book) for d in drains]
    whole, split = DrainCombiner("America/Chicago"), DrainCombiner("America/Chicago")
    several = 0
    for i, b in enumerate(batches):
        q = i % nparts  # both partitions see the same nodes: only the combiners are compared
        _src, got, _bad = decoders[q].decode(encode(b, book, "moab:test"))
        drains[q].add(got)
        final = i >= len(batches) - nparts
        p = drains[q].partial(final=final)
        whole.add(pc.decode_drain_partial(pc.encode_drain_partial(p)))
        values = pc.encode_drain_partials(p, limit)
        several += len(values) > 1
        assert all(len(v) <= limit for v in values)
        for v in values:
            split.add(pc.decode_drain_partial(v))
        assert _rows(whole) == _rows(split)
    assert several, "the bound must have split some partial"
    assert whole.dumps() == split.dumps()
    assert whole.totals() == split.totals()


# ---- join totals, job and sample partials -----------------------------------------------------
_jobs = st.lists(
    st.builds(LiveJob, st.text(max_size=10), *[st.integers(-(2**63), 2**63 - 1)] * 6), max_size=300
)


@settings(max_examples=40, deadline=None)
@given(_jobs, st.none() | st.integers(0, 2**45), SMALL)
def test_drain_totals_fit_and_round_trip(jobs: list[LiveJob], wm: int | None, limit: int) -> None:
    values = pc.encode_drain_totals(jobs, wm, limit)
    assert all(len(v) <= limit for v in values)
    rows: list[Any] = []
    for v in values:
        validator("jobs-partials").validate(orjson.loads(v))
        got = pc.decode_job_partial(v)
        assert isinstance(got, pc.DrainTotals) and got.watermark_ms == wm
        rows += got.rows
    assert rows == [tuple(getattr(j, f) for f in LiveJob.__dataclass_fields__) for j in jobs]
    if jobs and len(pc.encode_drain_totals(jobs, wm)[0]) <= limit and len(jobs) <= pc.JOIN_ROWS:
        assert values == pc.encode_drain_totals(jobs, wm)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 4095), _entries, SMALL)
def test_job_partials_split_between_offsets(
    p: int, entries: list[tuple[int, list[JobEvent]]], limit: int
) -> None:
    rows = [(off, [orjson.dumps(jobevent_row(e.to_dict())) for e in evs]) for off, evs in entries]
    rows = [(off, r) for off, r in rows if len(pc.encode_job_partial(p, [(off, r)])) <= limit]
    values = pc.split_job_partial(p, rows, limit)
    assert all(len(v) <= limit for v in values)
    if rows and len(pc.encode_job_partial(p, rows)) <= limit:
        assert values == [pc.encode_job_partial(p, rows)]
    got = []
    for v in values:
        d = pc.decode_job_partial(v)
        assert isinstance(d, pc.JobPartial) and d.partition == p
        got += d.events
    want = pc.decode_job_partial(pc.encode_job_partial(p, rows))
    assert isinstance(want, pc.JobPartial)
    assert got == want.events


def test_a_job_entry_larger_than_the_bound_is_a_clear_error() -> None:
    row = orjson.dumps(jobevent_row(JobEvent("end", 5.0, "J" * 3000).to_dict()))
    with pytest.raises(ValueError, match="job partial of partition 3: an entry of"):
        pc.split_job_partial(3, [(7, [row])], 2000)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 4095),
    st.lists(st.tuples(st.integers(0, 2**62), st.lists(_samples, max_size=20)), max_size=12),
    st.integers(4_000, 20_000),
)
def test_sample_partials_split_between_offsets(
    p: int, entries: list[tuple[int, list[NodeSample]]], limit: int
) -> None:
    batches = [(off, SampleBatch.from_samples(s)) for off, s in entries]
    values = pc.split_sample_partial(p, batches, limit)
    assert all(len(v) <= limit for v in values)
    got = [e for v in values for e in pc.decode_sample_partial(v).events]
    assert [off for off, _b in got] == [off for off, _s in entries]
    for (_off, b), (_o, samples) in zip(got, entries, strict=True):
        assert [_key(s) for s in b.to_samples()] == [_key(s) for s in samples]


# ---- state chunks -----------------------------------------------------------------------------
def test_state_chunks_are_at_most_the_setting() -> None:
    sent: dict[bytes, bytes] = {}

    async def send(key: bytes, value: bytes) -> None:
        sent[key] = value

    store = StateStore(Settings(kafka=KafkaSettings(message_max_bytes=65_536)), "t", "g", send)
    data = np.random.default_rng(1).bytes(300_000)
    asyncio.run(store.save("drain/0", data))
    assert max(len(v) for v in sent.values()) == 65_536
    assert len(sent) == 5 + 2  # chunks, then the generation's and the current manifest
    assert _whole("drain/0", sent[b"g/drain/0"], b"g/drain/0", sent) == (data, "a")


# ---- one-row messages: a text too long is cut, marked so --------------------------------------
def test_cut_text_keeps_the_start_and_says_what_was_cut() -> None:
    assert cut_text("short", 100) == "short"
    text = "é\n" * 50_000  # multi-byte and escaped characters
    cut = cut_text(text, 1000)
    assert len(orjson.dumps(cut)) - 2 <= 1000
    assert text.startswith(cut[: cut.index("...[cut:")])
    assert cut.endswith(f"of {len(orjson.dumps(text)) - 2} bytes]")


def test_a_dead_letter_of_a_huge_line_is_cut_to_fit() -> None:
    r = Reject("bad_line", "moab:x", 7, "x" * 2_000_000)
    value = fit_object(dead_letter_message(r, topic="t", partition=1, offset=2), MIN_MESSAGE_BYTES)
    assert len(value) <= MIN_MESSAGE_BYTES
    d = decode_dead_letter(value)
    assert d.reject.reason == "bad_line" and d.offset == 2
    assert "...[cut: kept" in d.reject.text and d.reject.text.startswith("xxxx")


def test_an_alert_with_huge_details_fits() -> None:
    a = Alert(
        "id1",
        "sliding_job",
        "j" * 100_000,
        "warning",
        "firing",
        1.0,
        2.0,
        "run",
        5.0,
        6.0,
        {"jobs": ["k" * 40_000] * 5},
    )
    value = encode_alert("c", a)
    assert len(value) <= MIN_MESSAGE_BYTES
    got = decode_alert(value)
    assert got.alert.id == "id1" and "...[cut:" in got.alert.subject
    small = Alert("id2", "sliding_job", "j1", "warning", "firing", 1.0, 2.0, "run", 5.0, 6.0)
    assert encode_alert("c", small) == orjson.dumps(alert_message("c", small))


def test_metric_messages_with_huge_names_fit() -> None:
    j = LiveJob("J" * 200_000, 1000, 2, 0, 1000, 0, 0)
    value = encode_job("c", j)
    assert len(value) <= MIN_MESSAGE_BYTES
    assert "...[cut:" in decode_metric("metrics.jobs", value)["job"]
    w = LiveWindow(
        "day",
        0,
        86_400_000,
        2,
        1,
        1,
        0,
        0,
        0,
        0.0,
        0.0,
        1.0,
        "ok",
        False,
        {"s" * 100_000: [1, 2, 3, 4]},
    )
    assert len(encode_window("c", w)) <= MIN_MESSAGE_BYTES
    from streams.tables.jobs import SHORTJOBS

    row = [("x" * 100_000 if c.kind == "text" else None) for c in SHORTJOBS.columns]
    (v,) = row_messages("c", SHORTJOBS, [tuple(row)])
    assert len(v) <= MIN_MESSAGE_BYTES
