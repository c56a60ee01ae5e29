"""Shipper markers in the job-event merger (issue 30): with markers the released order and
content equal the merger's without them once flushed; a marker never releases an event before
one of its partition it covers that comes later; quiet partitions stop holding the watermark;
silent shippers stop counting; the end of every input releases everything; state survives a
snapshot."""

from __future__ import annotations

import random
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.jobsource import sort_events
from models.jobs.merge import BACK, SILENT, JobEventMerger
from models.records.jobevent import JobEvent
from models.state import pack, unpack


def _ev(kind: str, ts: float, job: str) -> JobEvent:
    return JobEvent(kind, ts, job, "u", None, None, None, None, 1, 1, None, (), None, None, None)


def _events(times: list[int]) -> list[JobEvent]:
    return sort_events([_ev("end", float(t), f"j{i}") for i, t in enumerate(times)])


class _Queues(dict[int, list[tuple[str, object]]]):
    sent: list[int]  # the partitions in the order the shipper sent to them


def _ship(
    events: list[JobEvent], parts: int, every: int, source: str = "s", end: bool = True
) -> _Queues:
    """What a shipper puts on each partition: events (by crc32 of the job) and, after every
    ``every`` events at a new time, a watermark marker on every partition (its latest time);
    the end marker last."""
    q = _Queues({p: [] for p in range(parts)})
    q.sent = []

    def put(p: int, item: tuple[str, object]) -> None:
        q[p].append(item)
        q.sent.append(p)

    latest = None
    for i, e in enumerate(events):
        if latest is not None and i % every == 0 and e.ts > latest:
            for p in range(parts):
                put(p, ("mark", (source, latest, float(i), False)))
        put(zlib.crc32(e.job.encode()) % parts, ("event", e))
        latest = e.ts
    if end:
        for p in range(parts):
            put(p, ("mark", (source, latest, float(len(events)), True)))
    return q


def _run(
    merger: JobEventMerger, queues: _Queues, seed: int | None
) -> tuple[list[JobEvent], list[float]]:
    """The partitions' messages interleaved at random (each partition in order; ``seed``
    None: in the order they were sent), every release kept; and the lag after each message."""
    rng = random.Random(seed)
    pos = dict.fromkeys(queues, 0)
    out: list[JobEvent] = []
    lags: list[float] = []
    turn = 0
    while any(pos[p] < len(q) for p, q in queues.items()):
        if seed is None:
            p, turn = queues.sent[turn], turn + 1
        else:
            p = rng.choice([p for p, q in queues.items() if pos[p] < len(q)])
        for _ in range(rng.randint(1, 5) if seed is not None else 1):
            if pos[p] >= len(queues[p]):
                break
            kind, x = queues[p][pos[p]]
            if kind == "event":
                assert merger.add(p, pos[p], x) is None  # never late
            else:
                source, ts, sent, end = x  # type: ignore[misc]
                merger.add_marker(p, pos[p], source, ts, sent, end)
            pos[p] += 1
        out += merger.release()
        if merger.end_due():
            out += merger.end()
        lag = merger.lag()
        if lag is not None:
            lags.append(lag)
    return out, lags


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 5000), min_size=1, max_size=120),
    st.integers(1, 8),
    st.integers(1, 10),
    st.integers(1, 300),  # (at 0, an event at its partition's latest time is late, markers or not)
    st.integers(0, 10**6),
)
def test_markers_release_what_the_merger_releases_in_order_and_never_early(
    times: list[int], parts: int, every: int, lateness: int, seed: int
) -> None:
    events = _events(times)
    merger = JobEventMerger(lateness, parts, 300.0)
    got, _ = _run(merger, _ship(events, parts, every), seed)
    assert merger.late == 0 and merger.input_ended
    plain = JobEventMerger(lateness, parts)  # the merger without markers, flushed
    for off, e in enumerate(events):
        plain.add(zlib.crc32(e.job.encode()) % parts, off, e)
    want = plain.release() + plain.flush()
    assert [(e.ts, e.job) for e in got] == [(e.ts, e.job) for e in want]


def test_a_quiet_partition_no_longer_holds_the_watermark() -> None:
    # job j0 on one partition at t=0, then a steady stream on the others for a day
    parts = 8
    quiet = zlib.crc32(b"j0") % parts
    names = (f"k{i}" for i in range(10**6))
    others = (n for n in names if zlib.crc32(n.encode()) % parts != quiet)
    steady = [_ev("end", float(t), next(others)) for t in range(100, 86_400, 100)]
    events = sort_events([_ev("end", 0.0, "j0"), *steady])
    with_markers = JobEventMerger(60, parts, 300.0)
    _, lags = _run(with_markers, _ship(events, parts, 5, end=False), None)
    without = JobEventMerger(60, parts)
    q = _ship(events, parts, 5)
    events_only = _Queues({p: [x for x in xs if x[0] == "event"] for p, xs in q.items()})
    events_only.sent = [zlib.crc32(e.job.encode()) % parts for e in events]
    _, plain_lags = _run(without, events_only, None)
    lags.sort()
    plain_lags.sort()
    assert lags[int(0.99 * (len(lags) - 1))] <= 60 + 2 * 500  # lateness + 2 rounds
    assert plain_lags[-1] > 10_000  # a partition with few jobs held it back


def test_end_releases_everything_only_when_every_shipper_ended() -> None:
    m = JobEventMerger(600, 2, 300.0)
    m.add(0, 0, _ev("end", 10.0, "a"))
    m.add(1, 0, _ev("end", 20.0, "b"))
    for p in (0, 1):
        m.add_marker(p, 1, "file", 20.0, 1.0, end=True)
        m.add_marker(p, 2, "live", 15.0, 1.0)
    assert not m.end_due()  # the live shipper goes on
    assert m.release() == []  # 15 - 600: nothing yet
    for p in (0, 1):
        m.add_marker(p, 3, "live", 15.0, 2.0, end=True)
    assert m.end_due()
    assert [e.job for e in m.end()] == ["a", "b"] and m.lag() == 0.0
    assert not m.end_due()  # once
    assert m.add_marker(0, 3, "live", 99.0, 3.0) == [] and m.input_ended  # a re-sent marker


def test_a_silent_shipper_stops_counting_and_comes_back() -> None:
    m = JobEventMerger(0, 1, 100.0)
    assert m.add_marker(0, 0, "a", 10.0, 1000.0) == []
    assert m.add_marker(0, 1, "b", 50.0, 1000.0) == []
    assert m.watermark == 10.0  # the lowest over the live shippers
    changes = m.add_marker(0, 2, "b", 60.0, 1101.0)
    assert changes == [(SILENT, "a", 1101.0, 1000.0)]
    assert m.watermark == 60.0  # 'a' no longer counts
    assert m.add_marker(0, 3, "a", 70.0, 1102.0) == [(BACK, "a", 1102.0, 1000.0)]
    assert m.watermark == 60.0


def test_an_ended_shipper_is_forgotten_without_an_alert() -> None:
    m = JobEventMerger(0, 1, 100.0)
    m.add_marker(0, 0, "file", 10.0, 1000.0, end=True)
    m.add(0, 1, _ev("end", 11.0, "x"))  # a later input (its shipper without markers)
    assert m.add_marker(0, 2, "live", 50.0, 2000.0) == []
    assert "file" not in m.shippers


def test_markers_survive_a_snapshot() -> None:
    m = JobEventMerger(60, 2, 300.0)
    m.add(0, 0, _ev("end", 10.0, "a"))
    m.add_marker(0, 1, "s", 10.0, 5.0)
    m.add_marker(1, 0, "s", 10.0, 5.0, end=True)
    m.add_marker(1, 1, "t", None, 6.0)
    _v, tree = unpack(pack("jobs", 1, {"merger": m.snapshot()}), "jobs", (1,))
    r = JobEventMerger(60, 2, 300.0)
    r.restore(tree["merger"])
    assert r.marks_snapshot() == m.marks_snapshot()
    assert [e.job for e in r.held] == [e.job for e in m.held]
    assert r.bounds() == m.bounds() and r.watermark == m.watermark
    old = {k: v for k, v in m.snapshot().items() if k not in ("shippers", "newest_sent")}
    old.pop("input_ended")
    r2 = JobEventMerger(60, 2, 300.0)
    r2.restore(old)  # a state saved before markers
    assert r2.shippers == {}
    d = JobEventMerger.from_dict(m.to_dict())
    assert d.marks_snapshot() == m.marks_snapshot()
