"""Node samples split over partitions, delivered at least once, merged back as columns
(models/samples/merge.py): the released samples equal, in order, what the record merger (the
job merger's rules with samples as the records, kept here as the reference) releases, whatever
the interleaving, the re-deliveries, the late samples and the snapshot/restores."""

from __future__ import annotations

import random

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.sampletrace import sample_to_dict
from models.jobs.merge import JobEventMerger
from models.records.nodesample import NodeSample
from models.samples.batch import SampleBatch
from models.samples.merge import SampleMerger, sample_sort_key


class RecordMerger(JobEventMerger):
    """The reference: records held in a list, released by a stable sort on the key."""

    @staticmethod
    def sort_key(e: NodeSample) -> tuple[float, str, int, float, str]:
        return sample_sort_key(e)

    @staticmethod
    def encode(e: NodeSample) -> dict[str, object]:
        return sample_to_dict(e)


def _key(s: NodeSample) -> tuple:  # type: ignore[type-arg]
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


_sample = st.tuples(
    st.integers(0, 40),  # second
    st.sampled_from(["J1", "J2", "J10", "é", "J1\x00"]),
    st.integers(0, 3),  # pid
    st.sampled_from(["n1", "n2", "n10", "N1"]),
    st.sampled_from([0.0, 5.0, -0.0]),  # start
    st.integers(0, 10**12),  # write bytes: tells equal keys apart
    st.booleans(),  # per-file-system speeds
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(_sample, min_size=1, max_size=5), min_size=1, max_size=30),
    st.integers(1, 3),
    st.integers(0, 2**32),
)
def test_columns_release_what_records_release(messages: list, parts: int, seed: int) -> None:
    rng = random.Random(seed)
    msgs = []
    for k, m in enumerate(messages):
        rows = [
            NodeSample(
                1000.0 + sec,
                job,
                pid,
                node,
                "",
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                w,
                1.0,
                0,
                0,
                start,
                2,
                "",
                (("home", 1.5, 0.0),) if fs else (),
            )
            for sec, job, pid, node, start, w, fs in m
        ]
        msgs.append((k % parts, rows))
    offsets = dict.fromkeys(range(parts), 0)
    cols = SampleMerger(lateness_s=rng.choice([0, 3, 10]), partitions=parts)
    ref = RecordMerger(cols.lateness_s, parts)
    got: list[tuple] = []  # type: ignore[type-arg]
    want: list[tuple] = []  # type: ignore[type-arg]
    late_got: list[tuple] = []  # type: ignore[type-arg]
    late_want: list[tuple] = []  # type: ignore[type-arg]
    sent: list[tuple[int, int, list[NodeSample]]] = []
    for p, rows in msgs:
        off = offsets[p]
        offsets[p] += 1
        sent.append((p, off, rows))
        deliveries = [(p, off, rows)]
        if rng.random() < 0.2:  # an older message again
            deliveries.append(rng.choice(sent))
        for q, o, rs in deliveries:
            batch = SampleBatch.from_samples(rs)
            late_got += [_key(s) for s in batch.take(cols.add_many(q, o, batch)).to_samples()]
            late_want += [_key(s) for s in ref.add_many(q, o, rs)]
        if rng.random() < 0.5:
            got += [_key(s) for s in cols.release().to_samples()]
            want += [_key(s) for s in ref.release()]
        if rng.random() < 0.15:  # saved, lost, restored
            cols = SampleMerger.from_dict(orjson.loads(orjson.dumps(cols.to_dict())))
    got += [_key(s) for s in cols.flush().to_samples()]
    want += [_key(s) for s in ref.flush()]
    assert got == want
    assert late_got == late_want
    assert (cols.duplicates, cols.late, cols.released_to) == (
        ref.duplicates,
        ref.late,
        ref.released_to,
    )


def test_a_state_saved_with_records_reads_as_columns() -> None:
    s = NodeSample(5.0, "J", 1, "n", "", 0, 0, 7, 0, 0, 0, 3, 4, 1.0, 0, 0, 2.0, 4)
    old = RecordMerger(10.0, 2)
    old.add_many(0, 3, [s])
    m = SampleMerger.from_dict(orjson.loads(orjson.dumps(old.to_dict())))  # a record release's
    assert m.offsets == {0: 3} and [_key(x) for x in m.flush().to_samples()] == [_key(s)]


@settings(max_examples=60, deadline=None)
@given(st.lists(_sample, max_size=12), st.integers(0, 12), st.integers(0, 12))
def test_a_batch_goes_through_bytes_unchanged(rows: list, lo: int, hi: int) -> None:
    """The live path forwards samples between its agents as :meth:`SampleBatch.to_bytes`."""
    samples = [
        NodeSample(
            1000.0 + sec,
            job,
            pid,
            node,
            "",
            0,
            0,
            3,
            4,
            0,
            0,
            5,
            w,
            1.5,
            0,
            0,
            start,
            2,
            "",
            (("home", 1.5, 0.25),) if fs else (),
        )
        for sec, job, pid, node, start, w, fs in rows
    ]
    b = SampleBatch.from_samples(samples)
    back, head = SampleBatch.from_bytes(b.to_bytes({"partition": 3}))
    assert head["partition"] == 3
    assert [_key(s) for s in back.to_samples()] == [_key(s) for s in samples]
    assert [_key(s) for s in back.slice(lo, hi).to_samples()] == [_key(s) for s in samples[lo:hi]]


def test_the_partials_header_validates() -> None:
    import jsonschema

    from streams.topics import SAMPLES_PARTIALS_SCHEMA

    s = NodeSample(
        5.0, "J", 1, "n", "", 0, 0, 7, 0, 0, 0, 3, 4, 1.0, 0, 0, 2.0, 4, "", (("home", 1.5, 0.0),)
    )
    data = SampleBatch.from_samples([s, s]).to_bytes({"partition": 2, "events": [[7, 2]]})
    _b, head = SampleBatch.from_bytes(data)
    jsonschema.Draft202012Validator(SAMPLES_PARTIALS_SCHEMA).validate(head)


def test_one_sample_at_a_time() -> None:
    """``add``, the record merger's one-record call, says what happened as it does."""
    s = NodeSample(5.0, "J", 1, "n", "", 0, 0, 7, 0, 0, 0, 3, 4, 1.0, 0, 0, 2.0, 4)
    m, ref = SampleMerger(0.0, 1), RecordMerger(0.0, 1)
    for merger in (m, ref):
        assert merger.add(0, 0, s) is None
        assert merger.add(0, 0, s) == "duplicate"
    assert [_key(x) for x in m.release().to_samples()] == [_key(x) for x in ref.release()]
    for merger in (m, ref):
        assert merger.add(0, 1, s) == "late"
    assert (m.duplicates, m.late) == (ref.duplicates, ref.late) == (1, 1)
