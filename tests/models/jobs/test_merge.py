"""Job events split over partitions, delivered at least once, merged back: the short-job
penalties (seed 002) equal the replay's, whatever the partitioning, the interleaving, the
re-deliveries and the snapshot/restores."""

from __future__ import annotations

import gzip
import random
import zlib

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.jobsource import event_sort_key, iter_job_events, sort_events
from models.jobs.merge import JobEventMerger
from models.jobs.shortjobs import ShortJobPenalty
from models.records.jobevent import JobEvent
from streams.stages.shortjobs import ShortJobsStage
from streams.tables.jobs import SHORTJOBS
from tests.golden.make_golden import DATA, INPUTS


def _golden() -> list[JobEvent]:
    lines = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes()).splitlines()
    return sort_events(iter_job_events("jobevents", lines))


def _rows(outputs) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [r for t, rows in outputs if t == SHORTJOBS for r in rows]


def _replay(events: list[JobEvent]) -> tuple[list[tuple], bytes]:  # type: ignore[type-arg]
    st = ShortJobsStage(ShortJobPenalty(threshold=600, interval=180))
    out = list(st.step(events)) + list(st.finish())
    return _rows(out), next(b for t, b in out if t == "fairshare_adjust.tsv")


def _live(
    events: list[JobEvent], parts: int, seed: int
) -> tuple[list[tuple], bytes, JobEventMerger]:  # type: ignore[type-arg]
    rng = random.Random(seed)
    queues: dict[int, list[JobEvent]] = {p: [] for p in range(parts)}
    for e in events:  # the shipper: time order, keyed by job
        queues[zlib.crc32(e.job.encode()) % parts].append(e)
    pos = dict.fromkeys(queues, 0)
    merger = JobEventMerger(lateness_s=600, partitions=sum(1 for q in queues.values() if q))
    st = ShortJobsStage(ShortJobPenalty(threshold=600, interval=180))
    out: list = []
    while any(pos[p] < len(q) for p, q in queues.items()):
        p = rng.choice([p for p, q in queues.items() if pos[p] < len(q)])
        n = rng.randint(1, 60)
        for off in range(pos[p], min(pos[p] + n, len(queues[p]))):
            assert merger.add(p, off, queues[p][off]) is None
        pos[p] = min(pos[p] + n, len(queues[p]))
        if rng.random() < 0.2:  # a consumer restarted from an older offset: re-delivery
            lo = rng.randrange(0, pos[p])
            for off in range(lo, pos[p]):
                assert merger.add(p, off, queues[p][off]) == "duplicate"
        out += st.step(merger.release())
        if rng.random() < 0.1:  # snapshot both, "crash", restore
            snap = orjson.dumps({"m": merger.to_dict(), "s": st.m.to_dict(), "t": st.last_ts})
            d = orjson.loads(snap)
            merger = JobEventMerger.from_dict(d["m"])
            st = ShortJobsStage(ShortJobPenalty.from_dict(d["s"]))
            st.last_ts = d["t"]
    out += st.step(merger.flush())
    out += st.finish()
    return _rows(out), next(b for t, b in out if t == "fairshare_adjust.tsv"), merger


@pytest.mark.parametrize(("parts", "seed"), [(1, 0), (3, 1), (8, 2), (5, 3)])
def test_merged_short_job_penalties_equal_the_replay(parts: int, seed: int) -> None:
    events = _golden()
    rows, tsv, merger = _live(events, parts, seed)
    expect_rows, expect_tsv = _replay(events)
    assert len(expect_rows) > 20
    assert rows == expect_rows
    assert tsv == expect_tsv
    assert merger.late == 0 and (parts == 1 or merger.duplicates > 0)


KTH = DATA / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.mark.skipif(not KTH.exists(), reason=f"{KTH} (public test data) absent")
def test_on_the_kth_trace() -> None:
    """The whole KTH SP2 trace (28,000 jobs) through 8 partitions."""
    path = KTH
    events = sort_events(iter_job_events("swf", gzip.open(path, "rb")))
    rows, tsv, _ = _live(events, 8, 7)
    expect_rows, expect_tsv = _replay(events)
    assert len(expect_rows) > 1000 and rows == expect_rows and tsv == expect_tsv


def test_late_and_waiting_for_every_partition() -> None:
    def ev(ts: float, job: str, typ: str = "end") -> JobEvent:
        return JobEvent(typ, ts, job)

    m = JobEventMerger(lateness_s=10, partitions=2)
    assert m.add(0, 0, ev(100, "a")) is None
    assert m.release() == []  # partition 1 has not reported: nothing can be released
    assert m.add(1, 0, ev(50, "b")) is None and m.add(1, 1, ev(200, "c")) is None
    got = m.release()  # watermark min(100, 200) - 10 = 90
    assert [e.job for e in got] == ["b"] and m.released_to == 90
    assert m.add(0, 1, ev(90, "d")) == "late" and m.late == 1
    assert m.add(0, 1, ev(95, "e")) == "duplicate"  # offset 1 of partition 0 was taken
    assert m.add(0, 2, ev(95, "f")) is None
    m.add(0, 3, ev(300, "g"))
    assert [e.job for e in m.release()] == ["f", "a"]  # min(300, 200) - 10 = 190, in time order
    assert [e.job for e in m.flush()] == ["c", "g"]
    assert sorted([ev(5, "x", "end"), ev(5, "x", "start")], key=event_sort_key)[0].type == "start"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.builds(
            JobEvent,
            type=st.sampled_from(["submit", "start", "end", "other"]),
            ts=st.sampled_from([0.0, 1.0, 1.5, -2.0, 1e9]),
            job=st.sampled_from(["a", "b", "10", "9", ""]),
            user=st.sampled_from([None, "u", "v"]),  # ties otherwise: stability shows
        ),
        max_size=40,
    )
)
def test_the_merger_sorts_as_the_sort_key_stably(events: list[JobEvent]) -> None:
    """The merger's release order (keys made without a Python call per event) is
    ``sorted(key=event_sort_key)``'s, equal keys in their arrival order."""
    got = JobEventMerger().sort(list(events))
    want = sorted(events, key=event_sort_key)
    assert [id(e) for e in got] == [id(e) for e in want]
