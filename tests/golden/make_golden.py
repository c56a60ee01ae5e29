"""Regenerate the golden replay outputs that tests/streams/test_golden.py compares against.

The goldens were written by the replay engines as they stood before the streams/ layout change
(commit 3511bcf), so that the new driver is checked against the numbers of the old engines
(values, not formatting). Run this only to record a deliberate change of numbers, and say why in
the commit:

    .venv/bin/python tests/golden/make_golden.py [--inputs]

``--inputs`` also regenerates the committed inputs under tests/golden/inputs/ (a simulated Moab
log over the 2015 US DST change and its job events; a synthetic node-sample trace).
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from streams.cli import main  # noqa: E402

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "inputs"
DATA = ROOT.parent / "shared" / "data"

# name -> (argv after `replay`, needs ../shared/data)
CASES: dict[str, tuple[list[str], bool]] = {
    "moab": (
        [
            "--format",
            "moab",
            "{in}/moab.log.gz",
            "--jobs",
            "{in}/jobs.jsonl.gz",
            "--nodes",
            "40",
            "--tz",
            "America/Chicago",
        ],
        False,
    ),
    "moab_nojobs": (
        ["--format", "moab", "{in}/moab.log.gz", "--tz", "UTC", "--max-gap", "200"],
        False,
    ),
    "jobevents": (
        ["--format", "jobevents", "{in}/jobs.jsonl.gz", "--nodes", "40", "--tz", "America/Chicago"],
        False,
    ),
    "samples": (
        [
            "--format",
            "samples",
            "{in}/samples.jsonl.gz",
            "--mem-per-core",
            "6",
            "--hot-zone",
            "40",
            "--hot-zone-gap",
            "1",
            "--tz",
            "Europe/Paris",
        ],
        False,
    ),
    "sacct": (["--format", "sacct", "{data}/sacct/phillips.log", "--tz", "UTC"], True),
    "swf": (["--format", "swf", "{data}/swf/NASA-iPSC-1993-3.1-cln.swf.gz", "--tz", "UTC"], True),
    "llview": (
        [
            "--format",
            "llview",
            "{data}/llview/job-9438058",
            "--mem-per-core",
            "10.67",
            # recorded when a plain 93 was compared with LLview's MiB/s as is; the default is
            # now 93 MB/s converted (88.69 MiB/s), so the recorded threshold is given explicitly
            "--hot-zone",
            "93MiB/s",
            "--tz",
            "Europe/Berlin",
        ],
        True,
    ),
}


def argv(name: str, out: Path) -> list[str]:
    args, _ = CASES[name]
    return [
        "replay",
        *(a.format(**{"in": INPUTS, "data": DATA}) for a in args),
        "--out",
        str(out),
        "--no-progress",
    ]


def make_inputs() -> None:
    INPUTS.mkdir(exist_ok=True)
    tmp = HERE / "_sim"
    assert (
        main(
            [
                "simulate",
                "--model",
                "lublin",
                "--nodes",
                "40",
                "--days",
                "2",
                "--period",
                "300",
                "--seed",
                "7",
                "--outages",
                "2",
                "--drained",
                "1",
                "--depth",
                "2",
                "--tz",
                "America/Chicago",
                "--start",
                "2015-03-07T00:00:00",
                "--warmup",
                "12",
                "--out",
                str(tmp),
            ]
        )
        == 0
    )
    for src, dst in (("moab.log", "moab.log.gz"), ("jobs.jsonl", "jobs.jsonl.gz")):
        (INPUTS / dst).write_bytes(gzip.compress((tmp / src).read_bytes(), mtime=0))
    shutil.rmtree(tmp)
    (INPUTS / "samples.jsonl.gz").write_bytes(gzip.compress(_samples(), mtime=0))


def _samples() -> bytes:
    """12 jobs on 1-3 of 10 nodes, one or two processes per node, a sample a minute for two
    hours; cumulative writes with bursts (some above 40 MB/s summed), one counter reset, one pid
    reused, one bad line."""
    from models.formats.sampletrace import dumps
    from models.records.nodesample import NodeSample

    rng = np.random.default_rng(11)
    lines: list[bytes] = []
    t0 = 1_700_000_000.0
    for j in range(12):
        nodes = rng.choice(10, size=int(rng.integers(1, 4)), replace=False)
        first = int(rng.integers(0, 60))
        last = first + int(rng.integers(5, 60))
        for n in nodes:
            for p in range(int(rng.integers(1, 3))):
                pid = 1000 + 10 * j + p
                wb = rb = 0.0
                for m in range(first, last):
                    burst = rng.random() < 0.2
                    wb += rng.exponential(4e8 if burst else 2e7)
                    rb += rng.exponential(1e7)
                    start = t0 - 100
                    if j == 3 and m == first + 3:
                        wb = 1e6  # counter reset
                    if j == 5 and m >= first + 4:
                        start = t0 + 60 * (first + 4)  # pid reused by a new process
                    lines.append(
                        dumps(
                            NodeSample(
                                ts=t0 + 60 * m + float(rng.uniform(0, 3)),
                                job=f"J{j}",
                                pid=pid,
                                node=f"n{n:02d}",
                                command="app",
                                vm_peak_kb=4_000_000,
                                vm_size_kb=4_000_000,
                                vm_rss_kb=int(rng.integers(100_000, 5_000_000)),
                                vm_swap_kb=0 if rng.random() < 0.9 else 2048,
                                syscr=m,
                                syscw=m,
                                read_bytes=int(rb),
                                write_bytes=int(wb),
                                core=round(float(rng.uniform(5, 100)), 2),
                                receive=0,
                                transmit=0,
                                start=start,
                                cores=4,
                                job_class="normal" if j % 3 else "besteffort",
                            )
                        )
                    )
    lines.insert(17, b'{"ts": "yesterday", "job": "J0"}')
    return b"\n".join(lines) + b"\n"


def make_outputs(names: list[str]) -> None:
    for name in names:
        _, needs_data = CASES[name]
        if needs_data and not DATA.is_dir():
            print(f"skip {name}: no {DATA}")
            continue
        out = HERE / name
        if out.exists():
            shutil.rmtree(out)
        assert main(argv(name, out)) == 0, name
        for f in out.iterdir():
            if f.suffix == ".json":
                continue  # summaries carry timings; compared key by key in the test
            f.write_bytes(gzip.compress(f.read_bytes(), mtime=0))
            f.rename(f.with_name(f.name + ".gz"))


if __name__ == "__main__":
    if "--inputs" in sys.argv:
        make_inputs()
    make_outputs([a for a in sys.argv[1:] if not a.startswith("-")] or list(CASES))
