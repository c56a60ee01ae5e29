"""write_sizes.csv from the node-sample replay of the golden samples input (seed 003 §5.2)."""

from __future__ import annotations

import csv
import gzip
from collections import defaultdict
from pathlib import Path

from models.formats.sampletrace import parse_trace
from streams.cli import main
from tests.golden.make_golden import INPUTS

EDGES = (4 * 1024, 64 * 1024, 1024 * 1024)


def _reference() -> dict[str, list[float]]:
    """A plain loop: per process, consecutive samples, skip resets and no-write intervals."""
    lines = gzip.decompress((INPUTS / "samples.jsonl.gz").read_bytes()).splitlines()
    series = defaultdict(list)
    for smp in parse_trace(lines):
        series[(smp.job, smp.node, smp.pid, smp.start)].append(smp)
    out: dict[str, list[float]] = {}
    for (job, *_), ss in series.items():
        ss.sort(key=lambda x: x.ts)
        for a, b in zip(ss, ss[1:], strict=False):
            dc, db = b.syscw - a.syscw, b.write_bytes - a.write_bytes
            if dc <= 0 or db < 0:
                continue
            k = sum(db / dc >= e for e in EDGES)
            row = out.setdefault(job, [0.0] * 11)
            row[0] += 1
            row[1] += dc
            row[2] += db
            row[3 + k] += dc
            row[7 + k] += db
    return out


def test_replay_writes_write_sizes_as_the_plain_loop(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert (
        main(["replay", "--format", "samples", str(INPUTS / "samples.jsonl.gz"), "--out", str(out)])
        == 0
    )
    with (out / "write_sizes.csv").open() as f:
        rows = list(csv.DictReader(f))
    ref = _reference()
    assert sorted(r["job"] for r in rows) == sorted(ref) and len(rows) == len(ref) > 0
    for r in rows:
        e = ref[r["job"]]
        assert int(r["intervals"]) == e[0]
        assert float(r["write_calls"]) == e[1]
        assert float(r["write_bytes"]) == e[2]
        assert abs(float(r["bytes_per_call"]) - e[2] / e[1]) <= 1e-9 * e[2] / e[1]
        buckets = ["lt_4k", "4k_64k", "64k_1m", "ge_1m"]
        assert [float(r[f"write_calls_{b}"]) for b in buckets] == e[3:7]
        assert [float(r[f"write_bytes_{b}"]) for b in buckets] == e[7:11]
