"""A second shipper after a first one ended (issue 30): ``ship jobs A`` (its input ended on
every partition), then ``ship jobs B``. B's first marker round reaches partition 0 before its
events on partition 1 are in; partition 1, where the only shipper heard so far ended, must
still hold the watermark, or B's events there come in late (dead-lettered, lost to the
analytics). Seen on the real stack by tests/integration/test_live_state_safety.py."""

from __future__ import annotations

from models.jobs.merge import JobEventMerger
from models.records.jobevent import JobEvent


def test_a_new_shipper_holds_the_partitions_it_has_not_marked_yet() -> None:
    m = JobEventMerger(600.0, 2, 300.0)
    m.add_many(0, 0, [JobEvent("end", 1000.0, "a")])
    m.add_many(1, 0, [JobEvent("end", 1001.0, "b")])
    for p in (0, 1):
        m.add_marker(p, 1, "A", 1001.0, 1.0, end=True)
    assert m.end_due() and len(m.end()) == 2
    m.add_many(0, 2, [JobEvent("end", 5000.0, "c")])  # B: events, then a round's first marker
    m.add_marker(0, 3, "B", 9000.0, 2.0)
    m.release()
    assert m.add_many(1, 2, [JobEvent("end", 6000.0, "d")]) == []  # B's event on partition 1
