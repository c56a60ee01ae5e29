"""The live drain path without a broker: a log split over partitions, with snapshots and
restores at arbitrary points and partials sent twice, gives exactly the replay's numbers."""

from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from models.drain.accountant import DrainAccountant
from models.drain.basis import window_basis
from models.drain.live import DrainCombiner, LiveJob, LiveWindow, Partial, PartitionDrain
from models.formats.moab import parse_moab_chunk
from models.records.nodestatus import Codebook
from streams.codecs.nodestatus import Decoder, encode, partition_of
from tests.golden.make_golden import INPUTS

TZ = "America/Chicago"


def _log() -> bytes:
    return gzip.decompress((INPUTS / "moab.log.gz").read_bytes())


def _live(
    parts: int, seed: int, lateness_ms: int = 600_000, retention_ms: int = 2 * 86_400_000
) -> DrainCombiner:
    """Ship the log as the shipper does (messages per partition), account each partition with
    random snapshot/restore, combine partials (each sent twice, some out of turn)."""
    rng = random.Random(seed)
    book = Codebook()
    batch = parse_moab_chunk(_log(), book).batch
    part_of_code = partition_of(book.nodes.names, parts, block=3)  # 40 nodes over every part
    assert len(set(part_of_code.tolist())) == parts
    states = {
        p: PartitionDrain(p, TZ, lateness_ms=lateness_ms, retention_ms=retention_ms, forget_min=1)
        for p in range(parts)
    }
    decoders = {p: Decoder(states[p].book) for p in range(parts)}
    keep = {"minute": 3 * 3_600_000, "hour": retention_ms, "day": 8 * 86_400_000}
    comb = DrainCombiner(TZ, keep_ms=keep, forget_min=1, partitions=parts)
    sent: list[Partial] = []
    seen_rows: dict[tuple[str, int], LiveWindow] = {}  # what a consumer holds: latest rows
    seen_jobs: dict[str, LiveJob] = {}
    most_jobs = 0

    def take() -> None:
        nonlocal most_jobs
        most_jobs = max(most_jobs, len(comb.jobs))
        r, j = comb.take()
        seen_rows.update({(w.unit, w.start_ms): w for w in r})
        seen_jobs.update({x.job: x for x in j})

    step = 40 * 25  # 25 iterations of the 40-node log per read
    for lo in range(0, len(batch), step):
        chunk = batch.take(np.arange(lo, min(lo + step, len(batch))))
        owner = part_of_code[chunk.node]
        for p in range(parts):
            rows = np.flatnonzero(owner == p)
            if not rows.size:
                continue
            msg = encode(chunk.take(rows), book, "moab:test")
            st = states[p]
            late = st.add(decoders[p].decode(msg)[1])
            assert len(late) == 0
            if rng.random() < 0.3:  # snapshot, "crash", restore
                states[p] = st = PartitionDrain.loads(st.dumps())
                decoders[p] = Decoder(st.book)
            if rng.random() < 0.5:
                sent.append(st.partial())
        for pt in sent:
            comb.add(pt)
        if rng.random() < 0.5 and sent:
            comb.add(rng.choice(sent))  # a re-delivered older partial
            comb.add(sent[-1])
        sent = []
        if rng.random() < 0.3:
            restored = DrainCombiner(TZ, keep_ms=keep, forget_min=1, partitions=parts)
            restored.restore(comb.dumps())
            comb = restored
        if rng.random() < 0.3:
            take()
    for p in range(parts):
        comb.add(states[p].partial(final=True))
    take()
    comb.rows, comb.by_job = seen_rows, seen_jobs  # type: ignore[attr-defined]
    comb.most_jobs = most_jobs  # type: ignore[attr-defined]
    comb.forgotten = sum(st.jobs_forgotten for st in states.values())  # type: ignore[attr-defined]
    comb.held_jobs = max(len(st.book.jobs) for st in states.values())  # type: ignore[attr-defined]
    return comb


def _replay() -> DrainAccountant:
    book = Codebook()
    acc = DrainAccountant(book, tz=TZ)
    acc.add(parse_moab_chunk(_log(), book).batch)
    return acc


@pytest.mark.parametrize(
    ("parts", "seed", "retention_h"), [(1, 0, 48), (3, 1, 48), (8, 2, 48), (3, 3, 1)]
)
def test_live_rows_equal_the_replay(parts: int, seed: int, retention_h: int) -> None:
    """With a retention of 1 h, finished jobs leave the partitions' memory (their totals were
    reported before) and the combined totals are still the replay's."""
    comb = _live(parts, seed, retention_ms=retention_h * 3_600_000)
    if retention_h == 1:
        assert comb.forgotten > 50  # type: ignore[attr-defined]
        assert comb.held_jobs < 100  # type: ignore[attr-defined]
        assert len(comb.jobs) < comb.most_jobs  # type: ignore[attr-defined]
    rows = list(comb.rows.values())  # type: ignore[attr-defined]
    acc = _replay()
    basis = len(acc.book.nodes)
    got = {(r.unit, r.start_ms): r for r in rows}
    for unit, expect in (("hour", acc.hourly()), ("day", acc.daily())):
        assert expect
        for w in expect:
            r = got[(unit, w.start_ms)]
            fields = ("nodes", "accounted_ms", "drain_ms", "idle_unallocated_ms", "down_ms")
            for f in (*fields, "unaccounted_ms"):
                assert getattr(r, f) == getattr(w, f), (unit, w.start_ms, f)
            b = window_basis(w.drain_ms, w.accounted_ms, w.down_ms, w.nodes, w.length_ms, basis)
            assert r.drain_pct_static == b.drain_pct_static
            assert r.data_quality == b.quality
    for unit in ("hour", "day"):  # node-state breakdown per window, summed over partitions
        expect_states = acc.state_ms(unit)
        for r in rows:
            if r.unit == unit:
                assert r.states == dict(sorted(expect_states[r.start_ms].items())), (unit, r)
    minutes = [r for r in rows if r.unit == "minute"]
    assert sum(r.drain_ms for r in minutes) == sum(w.drain_ms for w in acc.daily())
    by_job = comb.by_job  # type: ignore[attr-defined]
    charged = acc.jobs_charged()
    assert len(charged) > 5
    for j in charged.tolist():
        name = acc.book.jobs.names[j]
        lj = by_job[name]
        assert lj.drain_ms == int(acc.job_drain_ms[j])
        assert lj.nodes_charged == int(acc.nodes_charged()[j])
        assert (lj.first_charged_ms, lj.last_charged_ms) == (
            int(acc.job_first_ms[j]),
            int(acc.job_last_ms[j]),
        )


def test_windows_close_on_event_time_and_late_records_are_returned() -> None:
    st = PartitionDrain(0, "UTC", lateness_ms=600_000)
    book = st.book
    from models.records.nodestatus import NodeStatus, NodeStatusBatch

    def b(*ts: int) -> NodeStatusBatch:
        return NodeStatusBatch.from_records(
            [NodeStatus(t, "n1", "Idle", ("j1",)) for t in ts], book
        )

    m = 60_000
    assert len(st.add(b(0, m, 2 * m))) == 0
    comb = DrainCombiner("UTC")
    comb.add(st.partial())
    rows, jobs = comb.take()
    assert all(r.provisional for r in rows)  # watermark 2 min - 10 min: nothing closed
    assert [(j.job, j.drain_ms, j.nodes_charged) for j in jobs] == [("j1", 2 * m, 1)]
    late = st.add(b(20 * m, 5 * m))  # 5 min is 15 min behind the latest: late
    assert late.ts_ms.tolist() == [5 * m] and st.late == 1
    comb.add(st.partial())
    rows, _ = comb.take()
    closed = {(r.unit, r.start_ms) for r in rows if not r.provisional}
    assert ("minute", 0) in closed and ("minute", 9 * m) in closed
    assert ("minute", 10 * m) not in closed  # the watermark is 10 min: [10, 11) is open
    gap = [r for r in rows if r.unit == "hour"][0]
    assert gap.unaccounted_ms == 18 * m  # 2 -> 20 min is longer than max_gap: unaccounted
