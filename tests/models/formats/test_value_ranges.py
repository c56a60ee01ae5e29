"""Values that parse but are absurd (issue 31, class 4): every numeric field of every job format
has a physical range (models/records/plausible.py); a value beyond it is a reject with its
field's reason, the records around it are kept, and nothing raises.

One test per format walks its fields at the edges: the largest value in range is kept, the next
one is rejected with its reason; the SWF header's fields are ignored with a reject.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from models.formats.jobcomp import iter_jobcomp_events
from models.formats.jobsource import iter_job_events
from models.formats.sacct import FIELDS_26, iter_sacct_events, parse_sacct
from models.formats.swf import FIELD_NAMES, parse_header, parse_swf, parse_swf_job
from models.formats.swfevents import iter_swf_events
from models.records.plausible import MAX_COUNT, MAX_DURATION_S, MAX_MEMORY_KIB
from models.records.reject import Reject
from tests.badinput.inputs import jobcomp_record, sacct_fields

TEN_YEARS = MAX_DURATION_S
assert TEN_YEARS == 3650 * 86400


def _hms(seconds: int) -> str:
    d, rest = divmod(seconds, 86400)
    return f"{d}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


# ---- sacct --------------------------------------------------------------------------------

SACCT_AT = {name: FIELDS_26.index(name) for name in FIELDS_26}


def sacct_line(**over: str) -> str:
    f = sacct_fields(1)
    for k, v in over.items():
        f[SACCT_AT[k]] = v
    return "|".join(f)


@pytest.mark.parametrize(
    ("field", "kept", "rejected", "reason"),
    [
        ("nnodes", str(MAX_COUNT), str(MAX_COUNT + 1), "bad_nnodes"),
        ("ncpus", str(MAX_COUNT), str(MAX_COUNT + 1), "bad_ncpus"),
        ("reqcpus", str(MAX_COUNT), "99999999999", "bad_reqcpus"),
        ("uid", str(2**32 - 1), str(2**32), "bad_uid"),
        ("gid", str(2**32 - 1), str(2**32), "bad_gid"),
        ("timelimit", _hms(TEN_YEARS), _hms(TEN_YEARS + 1), "bad_timelimit"),
        ("timelimit", "UNLIMITED", "5256000000", "bad_timelimit"),  # minutes: 10,000 years
        ("elapsed", _hms(TEN_YEARS), "3651-00:00:00", "bad_elapsed"),
        ("reqmem", "4096Tn", "4097Tn", "bad_reqmem"),
        ("reqmem", "4Pc", "5Pc", "bad_reqmem"),
        ("reqmem", "2147486648Mn", "1e308Mn", "bad_reqmem"),  # phillips' flag artefact kept
        ("exitcode", "255:255", "256:0", "bad_exitcode"),
        ("exitcode", "0:9", "0:256", "bad_exitcode"),
    ],
)
def test_sacct_field_ranges(field: str, kept: str, rejected: str, reason: str) -> None:
    rejects: list[Reject] = []
    lines = [sacct_line(**{field: kept}), sacct_line(**{field: rejected}), sacct_line()]
    jobs = list(parse_sacct(lines, rejects, "s"))
    assert len(jobs) == 2
    assert [(r.reason, r.lineno) for r in rejects] == [(reason, 2)]


def test_sacct_times_are_left_to_the_run_bounds() -> None:
    """Times parse as far as datetime goes (years 1..9999); the source rejects those outside
    the run's TimeBounds (implausible_time), not the parser."""
    f = sacct_fields(1)
    f[10] = f[11] = "0001-01-01T00:00:00"
    evs = list(iter_sacct_events(["|".join(f)]))
    assert evs[0].ts < 0


# ---- jobcomp ------------------------------------------------------------------------------


def jobcomp_line(**over: Any) -> str:
    r = jobcomp_record(1)
    r.update(over)
    return json.dumps(r)


@pytest.mark.parametrize(
    ("field", "kept", "rejected", "reason"),
    [
        ("total_nodes", MAX_COUNT, MAX_COUNT + 1, "bad_total_nodes"),
        ("total_nodes", str(MAX_COUNT), str(2**40), "bad_total_nodes"),
        ("total_cpus", MAX_COUNT, 1e300, "bad_total_cpus"),
        ("time_limit", TEN_YEARS, TEN_YEARS + 1, "bad_time_limit"),
        ("time_limit", 0, 1e308, "bad_time_limit"),
        ("time_limit", 60, -1, "bad_time_limit"),
        ("derived_ec", "255:0", "256:0", "bad_exit_code"),
        ("derived_ec", "0:255", "0:300", "bad_exit_code"),
        ("derived_ec", 2**31 - 1, 2**31, "bad_exit_code"),
    ],
)
def test_jobcomp_field_ranges(field: str, kept: Any, rejected: Any, reason: str) -> None:
    rejects: list[Reject] = []
    lines = [jobcomp_line(**{field: kept}), jobcomp_line(**{field: rejected}), jobcomp_line()]
    evs = list(iter_jobcomp_events(lines, rejects, "c"))
    assert len(evs) == 6
    assert [(r.reason, r.lineno) for r in rejects] == [(reason, 2)]


# ---- SWF ----------------------------------------------------------------------------------

SWF_JOB = "1 0 10 3600 4 100 2048 4 7200 4096 1 5 3 7 1 1 -1 60".split()
SWF_AT = {name: FIELD_NAMES.index(name) for name in FIELD_NAMES}


def swf_line(**over: str) -> str:
    f = list(SWF_JOB)
    for k, v in over.items():
        f[SWF_AT[k]] = v
    return " ".join(f)


@pytest.mark.parametrize(
    ("field", "kept", "rejected"),
    [
        ("wait", str(TEN_YEARS), str(TEN_YEARS + 1)),
        ("run", str(TEN_YEARS), "100000000000000000"),
        ("run", "3600.0", "1e17"),
        ("cpu_avg", str(TEN_YEARS), "1e300"),
        ("time_req", str(TEN_YEARS), "9223372036854775807"),
        ("think_time", str(TEN_YEARS), str(TEN_YEARS + 1)),
        ("procs_alloc", str(MAX_COUNT), str(MAX_COUNT + 1)),
        ("procs_req", str(MAX_COUNT), str(MAX_COUNT + 1)),
        ("mem_used", str(MAX_MEMORY_KIB), "1e300"),
        ("mem_req", str(MAX_MEMORY_KIB), str(MAX_MEMORY_KIB * 2)),
    ],
)
def test_swf_field_ranges(field: str, kept: str, rejected: str) -> None:
    parse_swf_job(swf_line(**{field: kept}))
    rejects: list[Reject] = []
    lines = [swf_line(**{field: kept}), swf_line(**{field: rejected}), swf_line()]
    _, jobs = parse_swf(lines, rejects, "t")
    assert len(list(jobs)) == 2
    assert [(r.reason, r.lineno) for r in rejects] == [(f"bad_{field}", 2)]


def test_swf_ids_and_submit_keep_the_int64_range() -> None:
    j = parse_swf_job(swf_line(user=str(2**63 - 1), submit=str(2**63 - 1)))
    assert j.user == 2**63 - 1 and j.submit == 2**63 - 1


@pytest.mark.parametrize("token", ["1e20", "1e308", str(2**63), "9" * 400])
def test_swf_integers_beyond_int64_stay_bad_number(token: str) -> None:
    """An integer field no int64 holds is no number the trace can mean (``bad_number``, as
    before); within int64 but beyond its physical range it is ``bad_<field>``."""
    rejects: list[Reject] = []
    _, jobs = parse_swf([swf_line(time_req=token), swf_line()], rejects, "t")
    assert len(list(jobs)) == 1 and [r.reason for r in rejects] == ["bad_number"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("; MaxNodes: -5", "bad_max_nodes"),
        ("; MaxNodes: 0", "bad_max_nodes"),
        ("; MaxNodes: 2147483648", "bad_max_nodes"),
        ("; MaxNodes: 1e300", "bad_max_nodes"),
        ("; MaxNodes: many", "bad_max_nodes"),
        ("; MaxNodes: \u00b2", "bad_max_nodes"),
        ("; MaxNodes: " + "9" * 400, "bad_max_nodes"),
        ("; MaxProcs: -1", "bad_max_procs"),
        ("; MaxProcs: nan", "bad_max_procs"),
        ("; UnixStartTime: -1", "bad_unix_start_time"),
        ("; UnixStartTime: 1e300", "bad_unix_start_time"),
        ("; UnixStartTime: 843480031.5", "bad_unix_start_time"),
    ],
)
def test_swf_header_field_out_of_range_is_ignored_and_rejected(line: str, reason: str) -> None:
    """``MaxNodes: -5`` used to become the capability section (ValueError, exit 1): now the
    header value is ignored, as if absent, and its line is a reject; the jobs are all read."""
    text = ["; Version: 2.2", line, "; Note: x", swf_line(), swf_line()]
    rejects: list[Reject] = []
    ignored: Counter[str] = Counter()
    header, jobs = parse_swf(text, rejects, "t", ignored)
    assert len(list(jobs)) == 2
    assert [(r.reason, r.lineno, r.text) for r in rejects] == [(reason, 2, line)]
    assert ignored == Counter(comment=2)  # the rejected header line is not also ignored
    assert (header.max_nodes, header.max_procs, header.unix_start_time) == (None, None, None)
    # as if the header lacked the field: the events are those of the trace without it
    without = [x for x in text if x != line]
    assert list(iter_swf_events(text)) == list(iter_swf_events(without))


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ("; MaxNodes: 1", "max_nodes", 1),
        ("; MaxNodes: 2147483647", "max_nodes", 2**31 - 1),
        ("; MaxNodes: 128 (2 processors each)", "max_nodes", 128),
        ("; MaxProcs: +64", "max_procs", 64),
        ("; UnixStartTime: 0", "unix_start_time", 0),
        ("; UnixStartTime: 843480031", "unix_start_time", 843480031),
        ("; MaxNodes:", "max_nodes", None),  # empty: absent, not bad
    ],
)
def test_swf_header_fields_in_range(line: str, field: str, value: int | None) -> None:
    rejects: list[Reject] = []
    header = parse_header([line], rejects)
    assert getattr(header, field) == value and rejects == []


def test_swf_header_reject_names_the_first_line_of_a_repeated_key() -> None:
    rejects: list[Reject] = []
    parse_header(["; MaxNodes: -5", "; X: y", "; MaxNodes: 64"], rejects, "t", [3, 4, 7])
    assert [(r.reason, r.lineno) for r in rejects] == [("bad_max_nodes", 3)]


# ---- the simulator's JSON lines -----------------------------------------------------------

BASE = {"type": "start", "ts": 1425700000, "job": "j1"}


@pytest.mark.parametrize(
    ("field", "kept", "rejected", "reason"),
    [
        ("nodes", MAX_COUNT, MAX_COUNT + 1, "bad_nodes"),
        ("nodes", 4.0, 2.0**40, "bad_nodes"),
        ("cores", MAX_COUNT, 2**63 - 1, "bad_cores"),
        ("req_walltime", TEN_YEARS, TEN_YEARS + 0.001, "bad_req_walltime"),
        ("req_walltime", 0, 1e20, "bad_req_walltime"),
        ("req_walltime", 60.5, 1e308, "bad_req_walltime"),
        ("exit_code", 2**31 - 1, 2**31, "bad_exit_code"),
        ("exit_code", -(2**31), -(2**31) - 1, "bad_exit_code"),
    ],
)
def test_jobevent_field_ranges(field: str, kept: Any, rejected: Any, reason: str) -> None:
    lines = [json.dumps({**BASE, field: kept}), json.dumps({**BASE, field: rejected})]
    rejects: list[Reject] = []
    evs = list(iter_job_events("jobevents", lines, source="j", rejects=rejects))
    assert [getattr(e, field) for e in evs] == [kept]
    assert [(r.reason, r.lineno) for r in rejects] == [(reason, 2)]


@pytest.mark.parametrize("rs", [1e300, -1e15, 2**62])
def test_jobevent_reserved_start_is_left_to_the_run_bounds(rs: float) -> None:
    """reserved_start is a time: the parser takes any finite one, the source rejects those
    outside the run's bounds (models.records.plausible.keep_within)."""
    (e,) = iter_job_events("jobevents", [json.dumps({**BASE, "reserved_start": rs})])
    assert e.reserved_start == float(rs)
