"""A job's identity in every job format (issue 31, class 5): one normalisation of ids
(models/records/jobid.py) for sacct, jobcomp, SWF and the JSON-lines job events; each record's
cluster beside its events where the format has one (sacct ``Cluster``, jobcomp ``cluster``),
ids keyed ``cluster:id`` only when a run names more than one cluster; a ``|`` in a sacct job
name keeps the name."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.formats.jobsource import (
    iter_job_events,
    iter_job_records,
    key_by_cluster,
    record_events,
)
from models.formats.sacct import FIELDS_26, layout, parse_sacct, record_fields
from models.records.jobevent import JobEvent
from models.records.reject import Reject
from tests.badinput.inputs import jobcomp_record, sacct_fields

JOBEVENT = {"type": "submit", "ts": 1425700000.0, "nodes": 2}
SWF_REST = "0 10 3600 4 -1 -1 4 7200 -1 1 5 3 7 1 -1 -1 -1"
pads = st.sampled_from(["", " ", "\t", "  "])


def ids_of(fmt: str, lines: list[str]) -> set[str]:
    rejects: list[Reject] = []
    evs = list(iter_job_events(fmt, lines, source="t", rejects=rejects))
    assert not rejects, rejects
    return {e.job for e in evs}


def sacct_with_id(jobid: str) -> str:
    f = sacct_fields(1)
    f[0] = jobid
    return "|".join(f)


@given(st.integers(0, 2**53), pads, pads)
def test_every_form_of_one_integer_id_is_one_job_in_every_format(
    n: int, left: str, right: str
) -> None:
    """The property of the rule: 123, "123", 123.0 and " 123" are the job "123", whatever the
    format that wrote them."""
    padded = f"{left}{n}{right}"
    forms: list[Any] = [n, str(n), float(n), padded]
    got = {
        "jobevents": ids_of("jobevents", [json.dumps({**JOBEVENT, "job": f}) for f in forms]),
        "jobcomp": ids_of(
            "jobcomp", [json.dumps({**jobcomp_record(1), "jobid": f}) for f in forms]
        ),
        "sacct": ids_of("sacct", [sacct_with_id(str(n)), sacct_with_id(padded)]),
        "swf": ids_of("swf", [f"{n} {SWF_REST}", f"{left}{n}.0 {SWF_REST}"]),
    }
    assert got == dict.fromkeys(got, {str(n)})


@pytest.mark.parametrize("jobid", ["123_4", "123_[1-5]", "123+1", "a.b"])
def test_array_and_het_job_ids_are_kept_as_written(jobid: str) -> None:
    assert ids_of("jobevents", [json.dumps({**JOBEVENT, "job": f" {jobid} "})]) == {jobid}
    assert ids_of("jobcomp", [json.dumps({**jobcomp_record(1), "jobid": jobid})]) == {jobid}
    if "." not in jobid:  # sacct: a '.' is a step
        assert ids_of("sacct", [sacct_with_id(jobid)]) == {jobid}


@pytest.mark.parametrize(
    ("fmt", "line", "reason"),
    [
        ("jobevents", json.dumps({**JOBEVENT, "job": True}), "bad_job"),
        ("jobevents", json.dumps({**JOBEVENT, "job": 1.5}), "bad_job"),
        ("jobevents", json.dumps({**JOBEVENT, "job": -3}), "bad_job"),
        ("jobevents", json.dumps({**JOBEVENT, "job": [1]}), "bad_job"),
        ("jobevents", json.dumps({**JOBEVENT, "job": "  "}), "missing_job"),
        ("jobcomp", json.dumps({**jobcomp_record(1), "jobid": 1e300}), "bad_jobid"),
        ("jobcomp", json.dumps({**jobcomp_record(1), "jobid": False}), "bad_jobid"),
        ("jobcomp", json.dumps({**jobcomp_record(1), "jobid": " "}), "missing_jobid"),
        ("sacct", sacct_with_id("  "), "missing_jobid"),
    ],
)
def test_a_value_that_is_no_id_is_a_reject(fmt: str, line: str, reason: str) -> None:
    rejects: list[Reject] = []
    assert list(iter_job_events(fmt, [line], source="t", rejects=rejects)) == []
    assert [r.reason for r in rejects] == [reason]


# ---- clusters -----------------------------------------------------------------------------


def sacct_on(cluster: str, i: int = 1) -> str:
    f = sacct_fields(i)
    f[2] = cluster
    return "|".join(f)


def test_records_carry_their_cluster_where_the_format_has_one() -> None:
    sacct = [sacct_on(" alpha "), sacct_on("beta"), sacct_on("")]
    assert [c for c, _ in iter_job_records("sacct", sacct)] == ["alpha", "beta", None]
    hit = {"_source": {**jobcomp_record(1), "cluster": "gamma"}}
    none = {**jobcomp_record(2), "cluster": None}
    jc = [json.dumps(jobcomp_record(1)), json.dumps(hit), json.dumps(none)]
    assert [c for c, _ in iter_job_records("jobcomp", jc)] == ["alpha", "gamma", None]
    assert {c for c, _ in iter_job_records("swf", [f"1 {SWF_REST}"])} == {None}
    line = json.dumps({**JOBEVENT, "job": "1", "cluster": "x"})
    assert [c for c, _ in iter_job_records("jobevents", [line])] == [None]


def test_one_cluster_keeps_the_bare_ids_and_two_key_them() -> None:
    records = [
        ("alpha", [JobEvent("submit", 1.0, "7"), JobEvent("end", 2.0, "7")]),
        ("beta", [JobEvent("submit", 1.5, "7")]),
        (None, [JobEvent("submit", 3.0, "9")]),
    ]
    clusters: list[str | None] = []
    evs = list(record_events(records, clusters))
    assert clusters == ["alpha", "alpha", "beta", None]
    assert key_by_cluster(evs, clusters, qualify=False) is evs
    got = key_by_cluster(evs, clusters, qualify=True)
    assert [e.job for e in got] == ["alpha:7", "alpha:7", "beta:7", "9"]
    assert [(e.type, e.ts) for e in got] == [(e.type, e.ts) for e in evs]


# ---- a '|' in a sacct job name ------------------------------------------------------------


def named(name: str, i: int = 1, flags: str | None = None) -> str:
    f = sacct_fields(i)
    f[FIELDS_26.index("jobname")] = name
    return "|".join(f if flags is None else [*f, flags])


NAMES = ["a|b", "a||b", "|", "x|y|z", "|lead", "trail|", "a|SchedMainly", "q|1|2|3|4"]
FLAGS = [None, "SchedBackfill", "", "SchedMain,StartReceived"]


# 26 fields and a name ending in '|' are read as an empty Flags: the next test holds that case
@pytest.mark.parametrize(
    ("name", "flags"),
    [(n, f) for n in NAMES for f in FLAGS if not (f is None and n.endswith("|"))],
)
def test_a_pipe_in_the_job_name_keeps_the_name(name: str, flags: str | None) -> None:
    rejects: list[Reject] = []
    (job,) = parse_sacct([named(name, flags=flags)], rejects)
    assert rejects == []
    assert job.jobname == name
    assert job.backfill == {None: None, "": None, "SchedBackfill": True}.get(flags, False)
    (clean,) = parse_sacct([named("plain", flags=flags)])
    assert job == replace(clean, jobname=name)  # every other field where it belongs


@pytest.mark.parametrize(("name", "read"), [("x|SchedMain", "x"), ("trail|", "trail")])
def test_a_name_whose_last_piece_is_a_flags_value_is_read_as_flags(name: str, read: str) -> None:
    """27 fields whose last is a Flags value (empty, or Slurm's words) are the 27-field layout:
    the rule's one ambiguity, decided for the layout sacct prints."""
    (job,) = parse_sacct([named(name)])
    assert job.jobname == read


def test_a_pipe_in_the_job_name_under_a_header() -> None:
    header = "JobID|Submit|Start|End|JobName|NNodes|Flags"
    row = "7|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:00|a|b|c|2|SchedBackfill"
    rejects: list[Reject] = []
    (job,) = parse_sacct([header, row], rejects)
    assert (job.jobname, job.nnodes, job.backfill) == ("a|b|c", 2, True) and rejects == []
    # a header without JobName has no field to hold more: the line is refused
    header2 = "JobID|Submit|Start|End|NNodes"
    row2 = "7|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:00|2|x"
    assert list(parse_sacct([header2, row2], rejects)) == []
    assert [r.reason for r in rejects] == ["wrong_field_count"]


def test_a_step_with_a_pipe_in_its_name_is_still_a_step() -> None:
    f = sacct_fields(1)
    f[0] = f[1] = "1001.batch"
    f[-1] = "a|b"
    counted: Counter[str] = Counter()
    assert list(parse_sacct(["|".join(f)], ignored=counted)) == []
    assert counted == Counter(job_step=1)


def test_layout_and_record_fields() -> None:
    assert layout(["x"] * 25, None) is None
    assert layout(["x"] * 26, None) == FIELDS_26
    assert layout(["x"] * 27, None) == FIELDS_26  # 'x' is no Flags value: a longer name
    assert layout([*["x"] * 26, "SchedMain"], None) == (*FIELDS_26, "flags")
    names = ("jobid", "jobname", "end")
    want = {"jobid": "1", "jobname": "a|b", "end": "E"}
    assert record_fields(["1", "a", "b", "E"], names) == want
