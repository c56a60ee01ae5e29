"""Drain accounting (seed 000): each rule pinned, the paper's numbers, and the fast path checked
against the line-by-line reference on generated logs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.drain.accountant import DrainAccountant
from models.formats.moab import parse_lines_slow, parse_moab_chunk
from models.records.nodestatus import Codebook
from tests import reference_drain as ref


def line(t: datetime, node: str, state: str, rsv: str = "none", job: str = "none") -> str:
    off = t.utcoffset() or timedelta(0)
    sign = "-" if off < timedelta(0) else "+"
    mins = abs(int(off.total_seconds())) // 60
    stamp = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}"
    return (
        f"{stamp}{sign}{mins // 60:02d}{mins % 60:02d} 21166 INFO  Node '{node}' status: "
        f"state='{state}' rsvlist='{rsv}' joblist='{job}'"
    )


def run(
    lines: list[str],
    tz: str = "UTC",
    max_gap_ms: int = 600_000,
    chunks: int = 1,
    slow: bool = False,
) -> tuple[DrainAccountant, Codebook, int]:
    book = Codebook()
    acc = DrainAccountant(book, tz=tz, max_gap_ms=max_gap_ms)
    rejected = 0
    bounds = np.linspace(0, len(lines), chunks + 1).astype(int)
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        data = "".join(x + "\n" for x in lines[a:b]).encode()
        parsed = (parse_lines_slow if slow else parse_moab_chunk)(data, book, "t", a + 1)
        rejected += len(parsed.rejects)
        acc.add(parsed.batch)
    return acc, book, rejected


T0 = datetime(2014, 12, 31, 0, 0, 0, tzinfo=timezone(timedelta(hours=-6)))


def test_rule1_interval_accrues_to_state_at_ti_and_last_record_accrues_nothing() -> None:
    lines = [
        line(T0, "1", "Busy", job="7"),
        line(T0 + timedelta(seconds=90), "1", "Idle"),
        line(T0 + timedelta(seconds=150), "1", "Down"),
    ]
    acc, book, _ = run(lines)
    ns = acc.node_state_ms()
    assert ns[0, 2, 1] == 90_000  # Busy, no rsv, has job
    assert ns[0, 1, 0] == 60_000  # Idle, unallocated
    assert ns.sum() == 150_000  # Down at the last record accrued nothing


def test_rule3_drain_charged_to_first_reservation_and_none_is_not_drain() -> None:
    lines = [
        line(T0, "a", "Idle", rsv="1292428,1292433"),
        line(T0 + timedelta(seconds=120.5), "a", "Idle", rsv="none"),
        line(T0 + timedelta(seconds=200), "a", "Idle", rsv="1292433"),
        line(T0 + timedelta(seconds=260), "a", "Busy", job="1292433"),
    ]
    acc, book, _ = run(lines)
    drain = {book.jobs.names[j]: int(acc.job_drain_ms[j]) for j in acc.jobs_charged()}
    assert drain == {"1292428": 120_500, "1292433": 60_000}
    (day,) = acc.daily()
    assert day.drain_ms == 180_500
    assert day.idle_unallocated_ms == 79_500
    assert "none" not in book.jobs.names


def test_rule4_gap_is_unaccounted_and_duplicates_out_of_order_accrue_nothing() -> None:
    lines = [
        line(T0, "n", "Idle", rsv="9"),
        line(T0 + timedelta(seconds=100), "n", "Idle", rsv="9"),
        line(T0 + timedelta(seconds=100), "n", "Down"),  # duplicate time: ignored
        line(T0 + timedelta(seconds=50), "n", "Down"),  # out of order: ignored
        line(T0 + timedelta(seconds=900), "n", "Busy", job="9"),  # 800 s > max gap
        line(T0 + timedelta(seconds=960), "n", "Busy", job="9"),
    ]
    acc, book, _ = run(lines)
    assert acc.counts.duplicates == 1 and acc.counts.out_of_order == 1
    (day,) = acc.daily()
    assert day.drain_ms == 100_000
    assert day.unaccounted_ms == 800_000
    assert day.accounted_ms == 160_000
    assert day.accounted_ms + day.unaccounted_ms == 960_000  # node-seconds add up


def test_rule5_split_exactly_at_midnight_in_local_zone() -> None:
    # 23:58 -> 00:03 local (UTC-6) = 5 minutes, 2 before and 3 after local midnight
    t = datetime(2014, 12, 31, 23, 58, tzinfo=timezone(timedelta(hours=-6)))
    lines = [line(t, "x", "Idle", rsv="5"), line(t + timedelta(minutes=5), "x", "Busy")]
    acc, _, _ = run(lines, tz="America/Chicago")
    days = acc.daily()
    assert [(acc.days.local_label(d.start_ms), d.drain_ms) for d in days] == [
        ("2014-12-31", 120_000),
        ("2015-01-01", 180_000),
    ]
    acc_utc, _, _ = run(lines, tz="UTC")  # the same instant is 05:58Z: one UTC day
    assert [d.drain_ms for d in acc_utc.daily()] == [300_000]


def test_dst_day_is_25_hours_long() -> None:
    acc, _, _ = run(
        [
            line(datetime(2014, 11, 2, 12, tzinfo=UTC), "x", "Idle"),
            line(datetime(2014, 11, 2, 12, 5, tzinfo=UTC), "x", "Idle"),
        ],
        tz="America/Chicago",
    )
    (day,) = acc.daily()
    assert day.length_ms == 25 * 3_600_000


def test_unknown_state_kept_as_its_own_state_case_insensitive() -> None:
    lines = [
        line(T0, "1", "IDLE", rsv="4"),
        line(T0 + timedelta(seconds=10), "1", "Flaky"),
        line(T0 + timedelta(seconds=30), "1", "flaky"),
        line(T0 + timedelta(seconds=60), "1", "idle"),
    ]
    acc, book, _ = run(lines)
    assert book.states.names[6:] == ["Flaky"]
    ns = acc.node_state_ms()
    assert ns[0, 1, 2] == 10_000 and ns[0, 6].sum() == 50_000


# ---- fast path == reference on generated logs --------------------------------------------
ZONES = ["UTC", "America/Chicago", "Asia/Kathmandu", "Australia/Lord_Howe", "Europe/Berlin"]
OFFSETS = [timezone(timedelta(hours=-6)), UTC, timezone(timedelta(hours=5, minutes=45))]
STATES = [
    "Idle",
    "Busy",
    "Running",
    "Down",
    "Drained",
    "Draining",
    "idle",
    "BUSY",
    "Flaky",
    "flaky",
    "Maint",
]
LISTS = ["none", "", "NONE", "101", "102,101", "r.maint,103", "104"]

event = st.tuples(
    st.integers(0, 3),  # node
    st.integers(-120_000, 900_000),  # step in ms (negative: out of order; 0: duplicate)
    st.sampled_from(STATES),
    st.sampled_from(LISTS),
    st.sampled_from(LISTS),
    st.sampled_from(OFFSETS),
    st.integers(0, 40),  # junk selector
)


def _gen_lines(events: list, start: datetime) -> list[str]:
    t = start
    out = []
    for node, step, state, rsv, job, off, junk in events:
        t = t + timedelta(milliseconds=step if junk != 1 else 0)
        if junk == 0:
            out.append("2014-12-31T00:00:00.000-0600 77 INFO  Job '1' started")  # other message
        elif junk == 2:
            out.append(line(t.astimezone(off), f"n{node}", state, rsv, job)[:40])  # truncated
        else:
            out.append(line(t.astimezone(off), f"n{node}", state, rsv, job))
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(event, min_size=1, max_size=120),
    tz=st.sampled_from(ZONES),
    chunks=st.integers(1, 4),
    max_gap_s=st.sampled_from([60, 600, 3600]),
    start_min=st.integers(0, 3 * 24 * 60),
)
def test_fast_equals_reference(events, tz, chunks, max_gap_s, start_min) -> None:
    # start near a DST change (Chicago 2014-11-02; Lord Howe 2014-10-05) and around midnight
    start = datetime(2014, 11, 1, 22, tzinfo=UTC) + timedelta(minutes=start_min)
    lines = _gen_lines(events, start)
    acc, book, rejected = run(lines, tz=tz, max_gap_ms=max_gap_s * 1000, chunks=chunks)
    r = ref.replay(lines, tz=tz, max_gap_ms=max_gap_s * 1000)

    assert rejected == r.rejected
    assert acc.counts.duplicates == r.duplicates
    assert acc.counts.out_of_order == r.out_of_order
    # per node x state x combo
    ns = acc.node_state_ms()
    got = {
        (book.nodes.names[n], book.states.names[s], bool(c >> 1), bool(c & 1)): int(ns[n, s, c])
        for n, s, c in zip(*np.nonzero(ns), strict=True)
    }
    assert got == r.node_state
    # hours
    want_h = ref.summarise_hours(r)
    got_h = {
        w.start_ms: (w.accounted_ms, w.drain_ms, w.idle_unallocated_ms, w.down_ms, w.unaccounted_ms)
        for w in acc.hourly()
    }
    assert got_h == want_h
    assert {w.start_ms: w.nodes for w in acc.hourly()} == {
        h: len(s) for h, s in r.hour_nodes.items()
    }
    assert {w.start_ms: w.nodes for w in acc.daily()} == {d: len(s) for d, s in r.day_nodes.items()}
    # days are exact sums of hours
    assert sum(w.accounted_ms for w in acc.daily()) == sum(v[0] for v in want_h.values())
    # jobs
    jc = acc.jobs_charged()
    assert {book.jobs.names[j]: int(acc.job_drain_ms[j]) for j in jc} == r.job_drain
    assert {book.jobs.names[j]: int(acc.job_first_ms[j]) for j in jc} == r.job_first
    assert {book.jobs.names[j]: int(acc.job_last_ms[j]) for j in jc} == r.job_last
    nc = acc.nodes_charged()
    assert {book.jobs.names[j]: int(nc[j]) for j in jc} == {
        k: len(v) for k, v in r.job_nodes.items()
    }
    nr = acc.nodes_running()
    assert {book.jobs.names[j]: int(nr[j]) for j in range(len(book.jobs)) if nr[j]} == {
        k: len(v) for k, v in r.job_run_nodes.items()
    }


@pytest.mark.parametrize("chunks", [1, 3, 7])
def test_chunking_does_not_change_results(chunks: int) -> None:
    lines = [
        line(
            T0 + timedelta(seconds=30 * i),
            f"n{i % 5}",
            ["Idle", "Busy"][i % 2],
            rsv=str(i % 3) if i % 4 else "none",
        )
        for i in range(200)
    ]
    one, _, _ = run(lines, chunks=1)
    many, _, _ = run(lines, chunks=chunks)
    assert [w.drain_ms for w in one.hourly()] == [w.drain_ms for w in many.hourly()]
    assert np.array_equal(one.node_state_ms(), many.node_state_ms())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(event, min_size=1, max_size=80),
    tz=st.sampled_from(ZONES),
    start_min=st.integers(0, 3 * 24 * 60),
)
def test_minute_windows_nest_exactly_in_hours_and_days(events, tz, start_min) -> None:
    lines = _gen_lines(events, datetime(2014, 11, 1, 22, tzinfo=UTC) + timedelta(minutes=start_min))
    by_hour, _, _ = run(lines, tz=tz)
    book = Codebook()
    by_min = DrainAccountant(book, tz=tz, unit="minute")
    by_min.add(parse_moab_chunk("".join(x + "\n" for x in lines).encode(), book).batch)
    for w in by_min.windows():
        assert w.length_ms == 60_000
    assert by_min.hourly() == by_hour.hourly()
    assert by_min.daily() == by_hour.daily()
    assert sum(w.drain_ms for w in by_min.windows()) == sum(w.drain_ms for w in by_hour.daily())


def test_state_records_count_unknown_states() -> None:
    lines = [
        line(T0, "1", "Idle"),
        line(T0 + timedelta(seconds=1), "1", "Flaky"),
        line(T0 + timedelta(seconds=2), "2", "FLAKY"),
    ]
    acc, book, _ = run(lines)
    counts = dict(zip(book.states.names, acc.state_records.tolist(), strict=False))
    assert counts["Flaky"] == 2 and counts["Idle"] == 1


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 2**21), st.integers(0, 2**17)), max_size=30),
        max_size=12,
    )
)
def test_pair_counter_counts_distinct_pairs_across_key_widths(
    batches: list[list[tuple[int, int]]],
) -> None:
    """Distinct (job, node) pairs per job, as a set would count them, while the keys widen
    from uint32 to int64 and recent pairs merge into the large array."""
    from models.drain.accountant import _PairCounter

    pc, seen, n_jobs = _PairCounter(10**12), set(), 0
    for b in batches:
        job = np.array([j for j, _ in b], dtype=np.int64)
        node = np.array([n for _, n in b], dtype=np.int64)
        n_jobs = max([n_jobs, *(j + 1 for j, _ in b)])  # the codebook's size
        pc.add(job, node, n_jobs)
        seen |= set(b)
        if len(seen) % 3 == 0:
            pc.merge()
        for j in {j for j, _ in seen}:
            assert int(pc.count[j]) == sum(1 for x, _ in seen if x == j)
    keys = np.concatenate([pc.pairs, pc.fresh])
    jobs, nodes = pc.jobs_nodes(keys)
    assert sorted(zip(jobs.tolist(), nodes.tolist(), strict=True)) == sorted(seen)
