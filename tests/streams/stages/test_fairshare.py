"""The fair-share stage: rows emitted as days close, not only at the end."""

from __future__ import annotations

from streams import driver
from streams.sources.jobevents import JobEventFiles
from streams.stages.fairshare import FairShareStage
from streams.stages.jobs import job_stages
from streams.tables.jobs import FAIRSHARE_USAGE
from tests.streams.stages.test_jobs import TZ, _events


def test_fair_share_rows_come_out_when_a_day_closes_not_at_the_end() -> None:
    events = _events()
    st = next(s for s in job_stages(40, TZ) if isinstance(s, FairShareStage))
    source = JobEventFiles(events, [], TZ)
    emitted_during_steps = 0
    for b in source.batches(driver.RejectLog()):
        for table, rows in st.step(b):
            assert table is FAIRSHARE_USAGE
            emitted_during_steps += len(rows)
    final = sum(len(rows) for _, rows in st.finish())
    assert emitted_during_steps > 0 and final > 0
