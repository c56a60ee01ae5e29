"""Every job stage (streams.stages.jobs.job_stages): the same numbers whatever the batch size."""

from __future__ import annotations

import gzip

import orjson
import pytest

from models.formats.jobsource import iter_job_events, sort_events
from streams import driver
from streams.sinks.memory import MemorySink
from streams.sources.jobevents import JobEventFiles
from streams.stages.jobs import job_stages
from tests.golden.make_golden import INPUTS

TZ = "America/Chicago"


def _events():
    lines = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes()).decode().splitlines()
    return sort_events(iter_job_events("jobevents", lines, source="jobs"))


def _run(batch: int) -> MemorySink:
    events = _events()
    sink = MemorySink()
    r = driver.Run(
        "jobs",
        "jobevents",
        TZ,
        [driver.Feed(JobEventFiles(events, [], TZ, batch), job_stages(40, TZ))],
    )
    driver.run(r, [sink], driver.RejectLog())
    assert sink.committed
    return sink


@pytest.mark.parametrize("batch", [1, 7, 300])
def test_outputs_do_not_depend_on_the_batch_size(batch: int) -> None:
    ref = _run(8192)
    got = _run(batch)
    assert set(got.rows) == set(ref.rows)
    for name in ref.rows:
        assert got.formatted(name) == ref.formatted(name), name
    for name in ("fairshare_adjust.tsv", "fairshare_adjust.json"):
        assert got.documents[name] == ref.documents[name]
    s_got, s_ref = (orjson.loads(x.documents["summary_jobs.json"]) for x in (got, ref))
    del s_got["timings_s"], s_ref["timings_s"]
    assert s_got == s_ref
