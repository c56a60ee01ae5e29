"""Physical bounds of node samples: a value no machine produces is rejected with its reason."""

from __future__ import annotations

import orjson
import pytest

from models.formats.sampletrace import SampleTraceError, parse_sample, parse_trace
from models.records.nodesample import MAX_CORE_PCT, MAX_FS_RATE, MAX_MEMORY_KB

GOOD = {
    "ts": 1_700_000_000.0,
    "job": "7",
    "pid": 11,
    "node": "n1",
    "command": "a.out",
    "vmPeak": 10,
    "vmSize": 10,
    "vmRss": 5,
    "vmSwap": 0,
    "syscr": 1,
    "syscw": 1,
    "read_bytes": 0,
    "write_bytes": 4096,
    "core": 350.0,
    "receive": 0,
    "transmit": 0,
    "cores": 8,
    "fs": {"/scratch": [12.5, 0.0]},
}


@pytest.mark.parametrize(
    "change",
    [
        {"core": MAX_CORE_PCT * 1.01},
        {"cores": 10**6},
        {"vmRss": MAX_MEMORY_KB + 1},
        {"fs": {"/scratch": [MAX_FS_RATE * 10, 0.0]}},
        {"fs": {"/scratch": [0.0, 1e12]}},
    ],
)
def test_values_beyond_physical_bounds_are_rejected(change: dict) -> None:
    with pytest.raises(SampleTraceError) as e:
        parse_sample(orjson.dumps({**GOOD, **change}))
    assert e.value.reason == "implausible_value"


def test_good_samples_around_a_stray_one_are_kept() -> None:
    lines = [orjson.dumps(GOOD), orjson.dumps({**GOOD, "core": 1e9}), orjson.dumps(GOOD)]
    rejects: list = []
    got = list(parse_trace([x.decode() for x in lines], "t", rejects))
    assert len(got) == 2 and [r.reason for r in rejects] == ["implausible_value"]
    assert got[0].core == 350.0
