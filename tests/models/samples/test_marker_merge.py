"""Shipper markers in the sample merger and the drain partitions (issue 30): a partition
without samples holds nobody once its shippers' markers speak for it, every shipper's end
releases everything, the samples-partials codec carries markers in their place, and on
node-status only an end ends a partition's input."""

from __future__ import annotations

import numpy as np

from models.drain.live import PartitionDrain
from models.records.nodesample import NodeSample
from models.samples.batch import SampleBatch
from models.samples.merge import SampleMerger
from streams.codecs.control import END, WATERMARK, Marker
from streams.codecs.partials import decode_sample_partial, split_sample_partial


def _batch(times: list[float], node: str = "n1") -> SampleBatch:
    return SampleBatch.from_samples(
        NodeSample(t, "J1", 10, node, "app", 1, 1, 1, 0, 0, 0, 0, 0, 1.0, 0, 0) for t in times
    )


def test_markers_let_an_empty_partition_pass_and_the_end_releases_all() -> None:
    m = SampleMerger(lateness_s=0.0, partitions=2, shipper_timeout_s=300.0)
    m.add_many(0, 0, _batch([100.0, 160.0]))
    assert m.watermark is None and not len(m.release())  # partition 1 never spoke
    m.add_marker(0, 1, "ship:a", 160.0, 1000.0)
    m.add_marker(1, 0, "ship:a", 160.0, 1000.0)  # partition 1: no samples, but at 160
    out = m.release()
    assert out.ts.tolist() == [100.0, 160.0] and m.lag() == 0.0
    m.add_many(0, 2, _batch([220.0]))
    assert not len(m.release()) and not m.end_due()
    m.add_marker(0, 3, "ship:a", 220.0, 1001.0, end=True)
    assert not m.end_due()  # partition 1 has not ended
    m.add_marker(1, 1, "ship:a", 220.0, 1001.0, end=True)
    assert m.end_due()
    assert m.end().ts.tolist() == [220.0] and m.lag() == 0.0 and not m.end_due()


def test_a_silent_shipper_stops_holding_the_others() -> None:
    m = SampleMerger(lateness_s=0.0, partitions=1, shipper_timeout_s=60.0)
    m.add_many(0, 0, _batch([100.0, 500.0]))
    m.add_marker(0, 1, "slow", 50.0, 1000.0)
    assert m.watermark == 500.0  # a partition's bound: its latest sample or later
    m.add_marker(0, 2, "fast", 500.0, 1000.0)
    assert [c[:2] for c in m.add_marker(0, 3, "fast", 500.0, 1100.0)] == [("silent", "slow")]
    tree = m.snapshot()
    again = SampleMerger(0.0, 1, 60.0)
    again.restore(tree)
    assert again.marks_snapshot() == m.marks_snapshot()


def test_sample_partials_carry_markers_in_offset_order() -> None:
    mk = Marker("ship:a", WATERMARK, 99.5, 1000.0)
    end = Marker("ship:a", END, 120.0, 1001.0)
    entries = [[4, _batch([90.0, 95.0])], [5, mk], [6, _batch([110.0])], [7, end]]
    (one,) = split_sample_partial(3, entries)
    got = decode_sample_partial(one)
    assert got.partition == 3 and got.markers == [(5, mk), (7, end)]
    assert [(o, b.ts.tolist()) for o, b in got.events] == [(4, [90.0, 95.0]), (6, [110.0])]
    only = decode_sample_partial(split_sample_partial(0, [[9, mk]])[0])
    assert only.events == [] and only.markers == [(9, mk)]
    cut = split_sample_partial(1, entries, max_bytes=len(one) - 1)
    assert len(cut) > 1
    back = [decode_sample_partial(v) for v in cut]
    assert [o for b in back for o, _ in b.markers] == [5, 7]
    assert [o for b in back for o, _ in b.events] == [4, 6]
    plain = decode_sample_partial(split_sample_partial(2, [[1, _batch([1.0])]])[0])
    assert (
        plain.markers == [] and b'"markers"' not in split_sample_partial(2, [[1, _batch([1.0])]])[0]
    )


def test_a_drain_partition_reports_its_newest_record_and_ends_on_an_end() -> None:
    """The node-status forward step ends a partition's input on an end marker only
    (streams/live/drain.py); the partial carries its newest record time for the lag."""
    st = PartitionDrain(0, lateness_ms=600_000)
    st.latest = 1_000_000
    assert st.ended_at is None and st.watermark_ms == 400_000
    assert st.partial().counts["latest_ms"] == 1_000_000
    st.end_of_input()
    assert st.ended_at == 1_000_000 and st.watermark_ms == 1_000_000
    assert np.isfinite(float(st.watermark_ms or 0))
