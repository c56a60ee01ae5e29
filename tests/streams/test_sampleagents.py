"""The samples path's forwarding format (streams/sampleagents.py): a batch of columns goes to
samples-partials and comes back unchanged; partials written by the release that forwarded
rows still read, into the same merger state."""

from __future__ import annotations

import orjson

from models.formats.sampletrace import dumps, sample_row
from models.records.nodesample import NodeSample
from models.samples.batch import SampleBatch
from models.samples.merge import SampleMerger
from streams.sampleagents import SamplesPipeline


def _key(s: NodeSample) -> tuple:  # type: ignore[type-arg]
    return (s.ts, s.job, s.pid, s.node, s.start, s.write_bytes, s.read_bytes, s.core,
            s.vm_rss_kb, s.vm_swap_kb, s.cores, s.fs_rates)  # fmt: skip


S1 = NodeSample(1_700_000_000.0, "J1", 10, "n1", "a", 1, 1, 30, 4, 0, 0, 7, 900, 50.0, 0, 0,
                1_699_999_000.0, 4)  # fmt: skip
S2 = NodeSample(1_700_000_060.0, "J2", 11, "n2", "b", 1, 1, 31, 0, 0, 0, 8, 901, 25.0, 0, 0,
                1_699_999_000.0, 8, "", (("home", 1.5, 0.25),))  # fmt: skip


def test_a_batch_is_forwarded_as_columns_and_read_back() -> None:
    pipe = SamplesPipeline.__new__(SamplesPipeline)  # no app: the format only
    value = pipe._encode_partial(3, [[7, SampleBatch.from_samples([S1])],
                                     [9, SampleBatch.from_samples([S2])]])  # fmt: skip
    assert value[:4] == b"DWS1" and len(value) < len(dumps(S1)) + len(dumps(S2)) + 300
    d = pipe._decode_partial(value)
    assert d["partition"] == 3 and [off for off, _b in d["events"]] == [7, 9]
    m = SampleMerger(0.0, None)
    for off, rec in d["events"]:
        assert pipe._take(m, 3, off, rec) == []
    assert [_key(s) for s in m.flush().to_samples()] == [_key(S1), _key(S2)]


def test_partials_of_the_release_that_forwarded_rows_still_read() -> None:
    pipe = SamplesPipeline.__new__(SamplesPipeline)
    old = orjson.dumps({"partition": 1, "events": [[5, [sample_row(dumps(S1)),
                                                         sample_row(dumps(S2))]]]})  # fmt: skip
    d = pipe._decode_partial(old)
    m = SampleMerger(0.0, None)
    assert pipe._take(m, 1, 5, d["events"][0][1]) == []
    assert pipe._take(m, 1, 5, d["events"][0][1]) == []  # sent again: a duplicate, ignored
    assert m.duplicates == 2
    assert [_key(s) for s in m.flush().to_samples()] == [_key(S1), _key(S2)]
    late = pipe._take(m, 1, 6, [sample_row(dumps(S1))])  # behind what was released
    assert [_key(s) for s in late] == [_key(S1)]
