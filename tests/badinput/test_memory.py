"""One stray value cannot grow memory: a time centuries away, a node list that expands past the
host cap. Each run is a child of a fresh wrapper process, whose RUSAGE_CHILDREN peak is then that
run's peak RSS alone (the test process's own children, earlier tests included, do not count)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.badinput import inputs as IN
from tests.paths import REPO

LIMIT_MB = 200
WRAPPER = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "sys.stderr.write(r.stderr.decode())\n"
    "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)
MOAB_2400 = IN.MOAB_LINES[500].replace(b"2015-03-07", b"2400-03-07")
MOAB_2090 = IN.MOAB_LINES[900].replace(b"2015-03-07", b"2090-03-07")  # a clock set 75 y ahead
# ten times 65,536 hosts: 655,360, far past the cap of 262,144
HUGE_NODELIST = ",".join(f"r{i}[0-65535]" for i in range(10))

CASES = {
    "moab line in 2400, one in 2090": (
        "moab",
        IN.mixed(IN.MOAB, [MOAB_2400, MOAB_2090], every=1500),
        {"implausible_time": 1, "time_jump": 1},
    ),
    "sacct node list past the host cap": (
        "sacct",
        IN.SACCT + ("|".join([*IN.sacct_fields(99)[:24], HUGE_NODELIST, "huge"]) + "\n").encode(),
        {"hostlist_too_large": 1},
    ),
    "job events at ts=-1e6 and in 9999": (
        "jobevents",
        IN.JOBS
        + b'{"type":"start","ts":-1000000,"job":"x1","nodes":64,"cores":64}\n'
        + b'{"type":"end","ts":253402300799,"job":"x1","nodes":64,"state":"COMPLETED"}\n',
        {"implausible_time": 2},
    ),
    "a sample at ts=1e11": (
        "samples",
        IN.SAMPLES + json.dumps({**json.loads(IN.SAMPLE_LINES[0]), "ts": 1e11}).encode() + b"\n",
        {"implausible_time": 1},
    ),
}


def _peak(fmt: str, data: bytes, tmp: Path) -> tuple[int, float, str]:
    tmp.mkdir()
    (tmp / "in").write_bytes(data)
    cli = [
        sys.executable,
        "-m",
        "streams.cli",
        "replay",
        "--format",
        fmt,
        str(tmp / "in"),
        "--out",
        str(tmp / "o"),
        "--no-progress",
    ]
    r = subprocess.run(
        [sys.executable, "-c", WRAPPER, *cli],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    rc, rss_kb = map(int, r.stdout.split())
    return rc, rss_kb / 1024, r.stderr


def test_stray_times_and_huge_host_lists_stay_under_200_mb(tmp_path: Path) -> None:
    with ThreadPoolExecutor(2) as pool:
        runs = {
            name: pool.submit(_peak, fmt, data, tmp_path / f"{i}")
            for i, (name, (fmt, data, _)) in enumerate(CASES.items())
        }
    for i, (name, (_, _, reasons)) in enumerate(CASES.items()):
        rc, mb, err = runs[name].result()
        assert rc == 0, (name, err)
        assert mb < LIMIT_MB, f"{name}: peak RSS {mb:.0f} MB"
        (summary,) = (tmp_path / f"{i}" / "o").glob("summary_*.json")
        assert json.loads(summary.read_text())["rejected_by_reason"] == reasons, name
