"""SWF parser: hand-written lines (good and malformed) and the real PWA traces."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from models.formats.swf import SwfError, SwfJob, parse_swf, parse_swf_job
from models.records.reject import count_reasons
from tests.paths import SHARED_DATA

DATA = SHARED_DATA / "swf"
KTH = DATA / "KTH-SP2-1996-2.1-cln.swf.gz"
NASA = DATA / "NASA-iPSC-1993-3.1-cln.swf.gz"

HEADER = """\
; Version: 2.2
; Computer: IBM SP2
; Information: http://www.pdc.kth.se/
;              http://www.cs.huji.ac.il/labs/parallel/workload/
; UnixStartTime: 843480031
; TimeZoneString: Europe/Stockholm
; MaxNodes: 100
; MaxProcs: 100
; Queue:  0  interactive
; Queue:  1  batch
;
"""


def test_parse_job_line_fields_in_order():
    j = parse_swf_job(
        "   15   599850 192180   3477    4     -1    -1    4  53940    -1  1  12  12"
        "  -1 -1 -1 -1 -1"
    )
    assert j == SwfJob(
        job=15,
        submit=599850,
        wait=192180,
        run=3477,
        procs_alloc=4,
        cpu_avg=None,
        mem_used=None,
        procs_req=4,
        time_req=53940,
        mem_req=None,
        status=1,
        user=12,
        group=12,
        app=None,
        queue=None,
        partition=None,
        preceding_job=None,
        think_time=None,
    )


def test_parse_job_line_float_fields_and_whole_float_ints():
    j = parse_swf_job("1 0 10 3600.0 8 12.5 1024.5 8 7200 2048 1 3 4 5 6 7 0 30")
    assert j.run == 3600 and isinstance(j.run, int)
    assert j.cpu_avg == 12.5 and j.mem_used == 1024.5 and j.mem_req == 2048.0
    assert (j.app, j.queue, j.partition, j.preceding_job, j.think_time) == (5, 6, 7, 0, 30)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("1 2 3", "wrong_field_count"),
        ("1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1 99", "wrong_field_count"),
        ("1 0 0 ten 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1", "bad_number"),
        ("1 0 0 10.5 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1", "bad_number"),
        ("1 0 0 nan 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1", "bad_number"),
        ("1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -5", "negative_value"),
        ("-1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1", "missing_required"),
        ("1 -1 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1", "missing_required"),
    ],
)
def test_malformed_lines_raise_with_reason(line, reason):
    with pytest.raises(SwfError) as ei:
        parse_swf_job(line)
    assert ei.value.reason == reason


def test_header_fields_and_continuations():
    hdr, jobs = parse_swf(HEADER.splitlines(True))
    assert (hdr.max_nodes, hdr.max_procs, hdr.unix_start_time) == (100, 100, 843480031)
    assert hdr.time_zone_string == "Europe/Stockholm"
    assert hdr.raw["Version"] == "2.2"
    assert hdr.raw["Information"] == (
        "http://www.pdc.kth.se/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"
    )
    assert hdr.raw["Queue"] == "0  interactive\n1  batch"
    assert list(jobs) == []


def test_bad_lines_become_rejects_and_good_ones_survive():
    text = HEADER + (
        "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 5 0 oops 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "\n"
        "; a comment inside the body\n"
        "3 9 0 10 1\n"
        "4 12 1 20 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
    )
    rejects: list = []
    _, jobs = parse_swf(text.splitlines(True), rejects, source="t.swf")
    got = list(jobs)
    assert [j.job for j in got] == [1, 4]
    assert [(r.reason, r.lineno, r.source) for r in rejects] == [
        ("bad_number", 13, "t.swf"),
        ("wrong_field_count", 16, "t.swf"),
    ]
    assert rejects[1].text == "3 9 0 10 1"


def test_no_header_and_rejects_none():
    _, jobs = parse_swf(["x\n", "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"])
    assert [j.job for j in jobs] == [1]


def _read(path: Path):
    if not path.exists():
        pytest.skip(f"real SWF trace not available at {path} (../shared/data absent)")
    rejects: list = []
    with gzip.open(path, "rt") as f:
        hdr, jobs = parse_swf(f, rejects, source=path.name)
        js = list(jobs)
    return hdr, js, rejects


@pytest.mark.data
def test_kth_trace():
    hdr, jobs, rejects = _read(KTH)
    assert (hdr.max_nodes, hdr.max_procs) == (100, 100)
    assert hdr.unix_start_time == 843480031
    assert hdr.time_zone_string == "Europe/Stockholm"
    assert hdr.raw["MaxRecords"] == "28476"
    assert len(jobs) == 28476 and rejects == []
    assert jobs[0] == parse_swf_job(
        "15 599850 192180 3477 4 -1 -1 4 53940 -1 1 12 12 -1 -1 -1 -1 -1"
    )
    assert all(1 <= j.procs_req <= 100 for j in jobs if j.procs_req is not None)


@pytest.mark.data
def test_nasa_trace():
    hdr, jobs, rejects = _read(NASA)
    assert (hdr.max_nodes, hdr.max_procs) == (128, 128)
    assert hdr.unix_start_time == 749458803
    assert hdr.time_zone_string == "US/Pacific"
    assert len(jobs) == 18239, count_reasons(rejects)
    assert rejects == []
    assert jobs[0].wait is None and jobs[0].run == 1451 and jobs[0].procs_alloc == 128
    assert jobs[0].time_req is None
