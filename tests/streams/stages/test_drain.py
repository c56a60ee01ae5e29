"""DrainStage through the driver: node-seconds add up across every report it writes."""

from __future__ import annotations

from models.records.nodestatus import Codebook
from streams import driver
from streams.sinks.memory import MemorySink
from streams.sources.moab import MoabFiles
from streams.stages.drain import DRAIN_DAILY, DRAIN_HOURLY, DRAIN_JOBS, NODE_STATES, DrainStage
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
