"""DrainStage through the driver: node-seconds add up across every report it writes."""

from __future__ import annotations

from models.records.nodestatus import Codebook
from streams import driver
from streams.sinks.memory import MemorySink
from streams.sources.moab import MoabFiles
from streams.stages.drain import DrainStage
from streams.tables.drain import DRAIN_DAILY, DRAIN_HOURLY, DRAIN_JOBS, NODE_STATES
from tests.golden.make_golden import INPUTS


def test_node_seconds_add_up_across_reports() -> None:
    book = Codebook()
    source = MoabFiles([str(INPUTS / "moab.log.gz")], book, 1 << 20, progress=False)
    stage = DrainStage(book, tz="America/Chicago", max_gap_s=600, basis_nodes=40)
    sink = MemorySink()
    summary = driver.run(
        driver.Run("drain", "moab", "America/Chicago", [driver.Feed(source, [stage])]),
        [sink],
        driver.RejectLog(),
    )
    daily, hourly = sink.rows[DRAIN_DAILY.file], sink.rows[DRAIN_HOURLY.file]
    # columns 1..5: accounted, drain, unallocated idle, down, unaccounted (integer ms)
    for col in range(1, 6):
        assert sum(r[col] for r in daily) == sum(r[col] for r in hourly)
    accounted = sum(r[1] for r in daily)
    assert accounted == sum(r[4] for r in sink.rows[NODE_STATES.file])
    drain = sum(r[2] for r in daily)
    assert drain == sum(r[1] for r in sink.rows[DRAIN_JOBS.file]) > 0
    # drain is Idle with a reservation: the node-state rows with state Idle and has_rsv
    idle_rsv = sum(r[4] for r in sink.rows[NODE_STATES.file] if r[1] == "Idle" and r[2] == 1)
    assert drain == idle_rsv
    assert summary["records"] == 40 * 576 and summary["drain"]["nodes"] == 40
    # 2015-03-08 is the US DST change: a 23-hour day in America/Chicago
    dst = next(r for r in daily if r[0] == "2015-03-08")
    assert 40 * 22 * 3600_000 < dst[1] <= 40 * 23 * 3600_000


def test_backfill_efficiency_and_backlog_add_up_to_the_job_events() -> None:
    """seed 000 §VI with the simulator's log and job events, every third started job flagged
    as backfilled: the reports' node-seconds equal sums taken straight from the events."""
    import dataclasses
    import gzip

    from models.formats.jobsource import iter_job_events
    from streams.stages.drain import JobTimesStage
    from streams.tables.drain import BACKFILL_DAILY, BACKLOG_HOURLY

    lines = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes()).splitlines()
    events = list(iter_job_events("jobevents", lines))
    started = sorted({e.job for e in events if e.type == "start"})
    flagged = set(started[::3])
    events = [
        dataclasses.replace(e, backfill=e.job in flagged) if e.type == "start" else e
        for e in events
    ]
    jobs = JobTimesStage()
    jobs.step(events)
    book = Codebook()
    source = MoabFiles([str(INPUTS / "moab.log.gz")], book, 1 << 20, progress=False)
    stage = DrainStage(book, tz="America/Chicago", max_gap_s=600, basis_nodes=40, jobs=jobs)
    sink = MemorySink()
    driver.run(
        driver.Run("drain", "moab", "America/Chicago", [driver.Feed(source, [stage])]),
        [sink],
        driver.RejectLog(),
    )
    daily, hourly = sink.rows[DRAIN_DAILY.file], sink.rows[DRAIN_HOURLY.file]
    bf, bl = sink.rows[BACKFILL_DAILY.file], sink.rows[BACKLOG_HOURLY.file]
    lo, hi = int(hourly[0][0]), int(stage.acc.last_ms)
    first_day = int(stage.acc.daily()[0].start_ms)

    def overlap(a: float | None, b: float | None, nodes: int | None, start: int) -> int:
        if a is None or not nodes:
            return 0
        s, e = max(round(a * 1000), start), hi if b is None else min(round(b * 1000), hi)
        return max(0, e - s) * nodes

    info = jobs.info
    expect_bf = sum(
        overlap(jt.start, jt.end, jt.nodes, first_day) for j, jt in info.items() if j in flagged
    )
    assert expect_bf > 0 and sum(r[1] for r in bf) == expect_bf
    assert [r[2] for r in bf] == [r[2] for r in daily]  # the day's drain
    for _, b, d, eff in bf:
        assert eff == (b / (b + d) if b + d else None)
    expect_q = sum(
        overlap(jt.submit, jt.start if jt.start is not None else jt.end, jt.nodes, lo)
        for jt in info.values()
    )
    assert expect_q > 0 and sum(r[4] for r in bl) == expect_q
    assert [r[0] for r in bl] == [r[0] for r in hourly]
    assert [r[1] for r in bl] == [r[3] for r in hourly]  # unallocated idle of the hour
    assert {r[7] for r in bl} <= {"no_idle", "no_backlog", "backlog_fits", "backlog_too_large"}
    assert len({r[7] for r in bl}) >= 2
