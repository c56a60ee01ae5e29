"""SWF -> JobEvents: header start time, procs -> nodes, status codes, never-ran jobs."""

from __future__ import annotations

import gzip
from collections import Counter
from fractions import Fraction

import pytest

from models.formats.swf import SwfHeader, parse_swf_job
from models.formats.swfevents import header_procs_per_node, iter_swf_events, swf_job_events
from models.records.reject import Reject
from tests.paths import SHARED_DATA

DATA = SHARED_DATA / "swf"

HEADER = """\
; Version: 2.2
; UnixStartTime: 1000000000
; MaxNodes: 64
; MaxProcs: 256
"""


def test_header_procs_per_node() -> None:
    assert header_procs_per_node(SwfHeader(max_nodes=64, max_procs=256)) == 4
    assert header_procs_per_node(SwfHeader(max_nodes=100, max_procs=100)) == 1
    assert header_procs_per_node(SwfHeader(max_nodes=None, max_procs=128)) is None
    assert header_procs_per_node(SwfHeader(max_nodes=3, max_procs=8)) == Fraction(8, 3)


def test_completed_job() -> None:
    # job 1: submit 100, wait 20, run 3600, 10 procs, status 1, user 7, group 3, app 5, queue 2
    lines = HEADER.splitlines() + ["1 100 20 3600 10 -1 -1 10 7200 -1 1 7 3 5 2 -1 -1 -1"]
    sub, st, en = list(iter_swf_events(lines))
    assert (sub.type, sub.ts) == ("submit", 1_000_000_100.0)
    assert (st.type, st.ts) == ("start", 1_000_000_120.0)
    assert (en.type, en.ts) == ("end", 1_000_003_720.0)
    for e in (sub, st, en):
        assert (e.job, e.user, e.group, e.name, e.partition) == ("1", "7", "3", "5", "2")
        assert (e.cores, e.nodes, e.req_walltime) == (10, 3, 7200.0)  # ceil(10 / 4) = 3
    assert en.state == "COMPLETED" and st.state is None


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (0, "FAILED"),
        (1, "COMPLETED"),
        (5, "CANCELLED"),
        (2, "PARTIAL"),
        (3, "COMPLETED"),
        (4, "FAILED"),
        (-1, None),
        (7, "STATUS_7"),
    ],
)
def test_status_codes(status: int, state: str | None) -> None:
    job = parse_swf_job(f"1 0 0 10 4 -1 -1 4 20 -1 {status} 1 1 1 1 1 -1 -1")
    assert swf_job_events(job)[-1].state == state


def test_run_unknown_gives_submit_only() -> None:
    job = parse_swf_job("2 50 10 -1 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1")
    assert [e.type for e in swf_job_events(job, 1000.0)] == ["submit"]
    job = parse_swf_job("2 50 -1 30 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1")
    assert [e.type for e in swf_job_events(job, 1000.0)] == ["submit"]


def test_cancelled_before_start() -> None:
    job = parse_swf_job("3 50 40 0 -1 -1 -1 8 20 -1 5 1 1 -1 -1 -1 -1 -1")
    ev = swf_job_events(job, 1000.0)
    assert [(e.type, e.ts) for e in ev] == [("submit", 1050.0), ("end", 1090.0)]
    assert ev[-1].state == "CANCELLED" and ev[-1].cores == 8  # requested procs
    # cancelled while running: it has processors and a run time -> start and end
    job = parse_swf_job("4 50 40 100 8 -1 -1 8 200 -1 5 1 1 -1 -1 -1 -1 -1")
    assert [e.type for e in swf_job_events(job)] == ["submit", "start", "end"]


def test_nodes_without_header_and_override() -> None:
    job = parse_swf_job("5 0 0 10 6 -1 -1 6 20 -1 1 1 1 -1 -1 -1 -1 -1")
    assert swf_job_events(job)[0].nodes == 6  # procs per node unknown: nodes = procs
    assert swf_job_events(job, ppn=Fraction(4))[0].nodes == 2
    line = "5 0 0 10 6 -1 -1 6 20 -1 1 1 1 -1 -1 -1 -1 -1"
    ev = list(iter_swf_events(HEADER.splitlines() + [line], procs_per_node=2))
    assert ev[0].nodes == 3
    ev = list(iter_swf_events(["5 0 0 10 6 -1 -1 6 20 -1 1 1 1 -1 -1 -1 -1 -1"], start_time=500))
    assert ev[0].ts == 500.0


def test_bad_lines_rejected() -> None:
    rejects: list[Reject] = []
    lines = HEADER.splitlines() + [
        "1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1",
        "1 2 3",
        "2 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 -1 -1 -1 -1",
    ]
    ev = list(iter_swf_events(lines, rejects, source="t.swf"))
    assert [e.job for e in ev] == ["1"] * 3 + ["2"] * 3
    assert [(r.reason, r.lineno, r.source) for r in rejects] == [("wrong_field_count", 6, "t.swf")]


@pytest.mark.data
@pytest.mark.parametrize(
    ("name", "jobs", "t0"),
    [
        ("KTH-SP2-1996-2.1-cln.swf.gz", 28476, 843480031),
        ("NASA-iPSC-1993-3.1-cln.swf.gz", 18239, None),
    ],
)
def test_real_traces(name: str, jobs: int, t0: int | None) -> None:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"../shared/data/swf/{name} is not present")
    rejects: list[Reject] = []
    with gzip.open(path, "rt") as f:
        ev = list(iter_swf_events(f, rejects, source=name))
    assert rejects == []
    c = Counter(e.type for e in ev)
    assert c["submit"] == jobs
    assert c["start"] == c["end"]
    if t0 is not None:
        assert min(e.ts for e in ev) >= t0
    # every start precedes its end, and nodes never exceed the machine
    starts = {e.job: e.ts for e in ev if e.type == "start"}
    assert all(e.ts >= starts[e.job] for e in ev if e.type == "end" and e.job in starts)
    assert max(e.nodes or 0 for e in ev) <= 128


def test_nasa_header_says_submit_is_start_so_jobs_run_at_submit() -> None:
    from models.formats.swfevents import iter_swf_events

    lines = [
        "; UnixStartTime: 749458803",
        "; Note: There is no information on wait times - the given submit",
        ";       times are actually start times",
        "1 0 -1 1451 128 -1 -1 128 -1 -1 1 1 1 1 1 -1 -1 -1",
    ]
    ev = list(iter_swf_events(lines))
    assert [(e.type, e.ts) for e in ev] == [
        ("submit", 749458803.0),
        ("start", 749458803.0),
        ("end", 749458803.0 + 1451),
    ]
    # without the note an unknown wait leaves the job without a start
    assert [e.type for e in iter_swf_events([lines[0], lines[3]])] == ["submit"]
