"""The samples family's forwarding format (streams/live/samples.py, streams/codecs/partials.py):
a batch of columns goes to samples-partials and comes back unchanged; partials written by the
release that forwarded rows as JSON are refused by name, never read into the merger."""

from __future__ import annotations

import orjson
import pytest

from models.formats.sampletrace import dumps, sample_row
from models.records.nodesample import NodeSample
from models.samples.batch import SampleBatch
from models.samples.merge import SampleMerger
from streams.codecs import CodecError
from streams.codecs.partials import decode_sample_partial, encode_sample_partial
from tests.streams.codecs.test_partials import _key

S1 = NodeSample(
    1_700_000_000.0, "J1", 10, "n1", "a", 1, 1, 30, 4, 0, 0, 7, 900, 50.0, 0, 0, 1_699_999_000.0, 4
)
S2 = NodeSample(
    1_700_000_060.0,
    "J2",
    11,
    "n2",
    "b",
    1,
    1,
    31,
    0,
    0,
    0,
    8,
    901,
    25.0,
    0,
    0,
    1_699_999_000.0,
    8,
    "",
    (("home", 1.5, 0.25),),
)


def test_a_batch_is_forwarded_as_columns_and_read_back() -> None:
    value = encode_sample_partial(
        3, [[7, SampleBatch.from_samples([S1])], [9, SampleBatch.from_samples([S2])]]
    )
    assert value[:4] == b"DWS1" and len(value) < len(dumps(S1)) + len(dumps(S2)) + 300
    d = decode_sample_partial(value)
    assert d.partition == 3 and [off for off, _b in d.events] == [7, 9]
    m = SampleMerger(0.0, None)
    for off, batch in d.events:
        assert len(batch.take(m.add_many(3, off, batch))) == 0
    for off, batch in d.events:  # sent again: duplicates, ignored
        assert len(batch.take(m.add_many(3, off, batch))) == 0
    assert m.duplicates == 2
    assert [_key(s) for s in m.flush().to_samples()] == [_key(S1), _key(S2)]


def test_partials_of_the_release_that_forwarded_rows_are_refused_by_name() -> None:
    old = orjson.dumps(
        {"partition": 1, "events": [[5, [sample_row(dumps(S1)), sample_row(dumps(S2))]]]}
    )
    with pytest.raises(CodecError) as e:
        decode_sample_partial(old)
    assert e.value.reason == "old_generation"
    assert "before the binary sample partials (DWS1)" in str(e.value)
