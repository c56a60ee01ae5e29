"""NodeSample record, its columns, and the JSON-lines trace format."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import orjson
import pytest
from hypothesis import given, settings

from models.formats.sampletrace import SampleTraceError, dumps, parse_sample, parse_trace
from models.records.nodesample import NodeSample, to_arrays
from models.records.reject import Reject
from tests.reference_samples import sample_strategy

LINE = (
    '{"ts": 1709302348.5, "job": 12345, "pid": 4242, "node": "n001", "command": "python",'
    ' "vmPeak": 123456, "vmSize": 120000, "vmRss": 65536, "vmSwap": 0, "syscr": 10,'
    ' "syscw": 20, "read_bytes": 4096, "write_bytes": 1048576, "core": 99.5,'
    ' "receive": 123, "transmit": 456, "start": 1709302300.0, "cores": 4,'
    ' "class": "besteffort"}'
)


def test_parse_line_with_the_seeds_fields():
    s = parse_sample(LINE)
    assert s == NodeSample(
        ts=1709302348.5,
        job="12345",
        pid=4242,
        node="n001",
        command="python",
        vm_peak_kb=123456,
        vm_size_kb=120000,
        vm_rss_kb=65536,
        vm_swap_kb=0,
        syscr=10,
        syscw=20,
        read_bytes=4096,
        write_bytes=1048576,
        core=99.5,
        receive=123,
        transmit=456,
        start=1709302300.0,
        cores=4,
        job_class="besteffort",
    )


@settings(max_examples=50, deadline=None)
@given(sample_strategy(20))
def test_round_trip(samples):
    assert [parse_sample(dumps(s)) for s in samples] == samples


def test_per_file_system_rates_round_trip():
    s = parse_sample(
        LINE.replace('"cores": 4,', '"cores": 4, "fs": {"scratch": [666.5, 0.1], "home": [0, 2]},')
    )
    assert s.fs_rates == (("scratch", 666.5, 0.1), ("home", 0.0, 2.0))
    assert parse_sample(dumps(s)) == s
    with pytest.raises(SampleTraceError) as e:
        parse_sample(LINE.replace('"cores": 4,', '"cores": 4, "fs": {"home": [-1, 0]},'))
    assert e.value.reason == "bad_fs"


def test_wchar_is_optional_and_round_trips():
    old = parse_sample(LINE)  # a trace written before wchar was kept
    assert old.wchar is None and "wchar" not in orjson.loads(dumps(old))
    s = parse_sample(LINE.replace('"cores": 4,', '"cores": 4, "wchar": 2097152,'))
    assert s.wchar == 2097152 and s == replace(old, wchar=2097152)
    assert orjson.loads(dumps(s))["wchar"] == 2097152
    assert parse_sample(dumps(s)) == s
    zero = replace(old, wchar=0)  # 0 is a value (nothing written yet), not "unknown"
    assert parse_sample(dumps(zero)) == zero
    assert parse_sample(LINE.replace('"cores": 4,', '"cores": 4, "wchar": 7.0,')).wchar == 7


@pytest.mark.parametrize(
    "value,reason",
    [
        ("-1", "negative"),
        ('"12"', "bad_number"),
        ("1.5", "bad_number"),
        ("true", "bad_number"),
        ("null", "bad_number"),
        ("[1]", "bad_number"),
        (str(2**63), "bad_number"),
    ],
)
def test_bad_wchar_is_rejected_like_the_other_counters(value, reason):
    line = f'{{"ts": 1, "job": "1", "pid": 2, "node": "n", "wchar": {value}}}'
    with pytest.raises(SampleTraceError) as e:
        parse_sample(line)
    assert e.value.reason == reason
    rej: list[Reject] = []
    assert list(parse_trace([line, LINE], "t", rej)) == [parse_sample(LINE)]
    assert [r.reason for r in rej] == [reason]


@pytest.mark.parametrize(
    "line,reason",
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "not_object"),
        ('{"ts": 1, "job": "1", "pid": 2}', "missing_field"),
        ('{"ts": 1, "job": "1", "pid": 2, "node": "n", "write_bytes": -5}', "negative"),
        ('{"ts": 1, "job": "1", "pid": 2, "node": "n", "vmRss": "12"}', "bad_number"),
        ('{"ts": "x", "job": "1", "pid": 2, "node": "n"}', "bad_number"),
        ('{"ts": 1, "job": "", "pid": 2, "node": "n"}', "bad_job"),
        ('{"ts": 1, "job": "1", "pid": 2, "node": ""}', "bad_node"),
        ('{"ts": 1, "job": "1", "pid": 2, "node": "n", "core": -1}', "negative"),
    ],
)
def test_bad_lines_have_reasons(line, reason):
    with pytest.raises(SampleTraceError) as e:
        parse_sample(line)
    assert e.value.reason == reason


def test_bad_lines_are_rejected_and_good_ones_kept():
    rej: list[Reject] = []
    got = list(
        parse_trace([LINE, "{oops", "", LINE.replace('"pid": 4242', '"pid": 7')], "t.jsonl", rej)
    )
    assert [s.pid for s in got] == [4242, 7]
    assert [(r.reason, r.lineno, r.source) for r in rej] == [("bad_json", 2, "t.jsonl")]


def test_to_arrays_interns_and_keeps_order():
    a = parse_sample(LINE)
    b = parse_sample(
        LINE.replace('"job": 12345', '"job": "77"').replace('"class": "besteffort"', '"class": ""')
    )
    arr = to_arrays([a, b, a])
    assert len(arr) == 3 and arr.jobs == ["12345", "77"] and arr.job.tolist() == [0, 1, 0]
    assert arr.classes == ["besteffort", "normal"] and arr.job_class.tolist() == [0, 1, 0]
    assert arr.write_bytes.dtype == np.float64 and arr.write_bytes[0] == 1048576
