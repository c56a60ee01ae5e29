"""models/records/plausible.py's physical ranges and keep_within, models/records/reject.py's
shown_path (issue 31, class 4)."""

from __future__ import annotations

import os

import pytest

from models.records.jobevent import JobEvent, JobEventError, check_ranges
from models.records.plausible import (
    MAX_COUNT,
    MAX_DURATION_S,
    RESERVED_REASON,
    TimeBounds,
    count_ok,
    duration_ok,
    keep_within,
)
from models.records.reject import Reject, shown_path

DURATIONS = [
    (0, True),
    (MAX_DURATION_S, True),
    (MAX_DURATION_S + 0.5, False),
    (-1, False),
    (float("nan"), False),
    (float("inf"), False),
    (1e20, False),
    (1e308, False),
]


@pytest.mark.parametrize(("v", "ok"), DURATIONS)
def test_duration_range(v: float, ok: bool) -> None:
    assert duration_ok(v) is ok


@pytest.mark.parametrize(
    ("v", "ok"), [(0, True), (MAX_COUNT, True), (MAX_COUNT + 1, False), (-1, False)]
)
def test_count_range(v: int, ok: bool) -> None:
    assert count_ok(v) is ok


def _rsv(e: JobEvent) -> float | None:
    return e.reserved_start


def _job(e: JobEvent) -> str:
    return e.job


def test_keep_within_rejects_a_reservation_outside_the_bounds() -> None:
    evs = [
        JobEvent("submit", 1e9, "a", reserved_start=1e300),
        JobEvent("submit", 1e9, "b", reserved_start=-1e15),
        JobEvent("submit", 1e9, "c", reserved_start=1e9 + 60),
        JobEvent("submit", 1e9, "d"),
        JobEvent("submit", 1e9, "e", reserved_start=float("nan")),
        JobEvent("submit", 1e9, "f", reserved_start=1e308),
    ]
    rejects: list[Reject] = []
    kept = keep_within(evs, TimeBounds(), _rsv, RESERVED_REASON, "s", _job, rejects)
    assert [e.job for e in kept] == ["c", "d"]
    assert [r.text for r in rejects] == ["a", "b", "e", "f"]
    assert {r.reason for r in rejects} == {RESERVED_REASON}


def test_keep_within_follows_narrower_run_bounds() -> None:
    bounds = TimeBounds(not_before_ms=1_000_000, not_after_ms=2_000_000)
    evs = [
        JobEvent("submit", 1500, "in", reserved_start=1999.999),
        JobEvent("submit", 1500, "after", reserved_start=2000.0),
    ]
    rejects: list[Reject] = []
    kept = keep_within(evs, bounds, _rsv, RESERVED_REASON, "s", _job, rejects)
    assert [e.job for e in kept] == ["in"] and len(rejects) == 1


@pytest.mark.parametrize(
    ("e", "reason"),
    [
        (JobEvent("start", 1.0, "j", nodes=MAX_COUNT + 1), "bad_nodes"),
        (JobEvent("start", 1.0, "j", cores=2**40), "bad_cores"),
        (JobEvent("start", 1.0, "j", req_walltime=1e20), "bad_req_walltime"),
        (JobEvent("start", 1.0, "j", req_walltime=-0.5), "bad_req_walltime"),
        (JobEvent("end", 1.0, "j", exit_code=2**31), "bad_exit_code"),
    ],
)
def test_check_ranges(e: JobEvent, reason: str) -> None:
    with pytest.raises(JobEventError) as err:
        check_ranges(e)
    assert err.value.reason == reason


def test_check_ranges_keeps_an_event_in_range() -> None:
    e = JobEvent(
        "end", 1.0, "j", nodes=MAX_COUNT, cores=0, req_walltime=MAX_DURATION_S, exit_code=-(2**31)
    )
    assert check_ranges(e) is e


def test_shown_path_escapes_bytes_that_are_not_utf8() -> None:
    name = os.fsdecode(b"/tmp/jobs-\xff\xfe.jsonl")  # as argv gives it (surrogateescape)
    assert shown_path(name) == "/tmp/jobs-\\xff\\xfe.jsonl"
    assert shown_path("/tmp/j\u00e9bs.jsonl") == "/tmp/j\u00e9bs.jsonl"
    shown_path(name).encode("utf-8")  # no surrogate left
