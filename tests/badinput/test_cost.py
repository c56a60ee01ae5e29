"""Cost that grows with the wrong thing (issue 31, class 6), through the real commands.

- The node-release forecast on jobs that never end: ``replay --format jobevents`` on a
  generated worst case (half the jobs never end, thousands past their end at every submit)
  looks at exactly the releases its forecasts list (counted, not timed); before, every
  submit sorted every job past its end (quadratic: 329 k events took 57.5 s).
- A Slurm client printing without end: ``ship slurm`` and ``ship jobs --sacct`` read it with
  the cap ``bounds.max_snapshot_bytes``, refuse and count the snapshot or poll, log one line and
  go on, in bounded memory (before: all of it kept, 2.8 GB in 4 s).
- ``replay --format moab --chunk-mb 1024`` on a machine with little memory: the chunk is
  lowered, with a note, to what the memory available allows, and the outputs are those of the
  default chunk (before: 1024 MB chunks whatever the memory).
"""

from __future__ import annotations

import json
import os
import random
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.cli import main
from streams.sources import prefetch
from streams.stages import jobs as job_stages
from tests.badinput import inputs as IN
from tests.paths import REPO

NODE = "NodeName=n1 Arch=x86_64 CoresPerSocket=8 CPUAlloc=0 State=IDLE Partitions=batch"
# runs a command and prints the peak RSS (KiB) of the children it waited for: the command's own
PEAK = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)"
)


def _tool(d: Path, name: str, body: str) -> str:
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def _peak(argv: list[str], env: dict[str, str]) -> tuple[int, int, str]:
    """(peak RSS in bytes, exit status, stderr) of ``drainwatch argv`` in a fresh process."""
    cmd = [sys.executable, "-c", PEAK, sys.executable, "-m", "streams.cli", *argv]
    r = subprocess.run(cmd, capture_output=True, timeout=120, env=env, cwd=REPO)
    rss, code = r.stdout.split()
    return int(rss) * 1024, int(code), r.stderr.decode()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    state = str(tmp_path / "state")
    return {
        **os.environ,
        "DRAINWATCH_MAX_SNAPSHOT_BYTES": str(1 << 20),
        "DRAINWATCH_STATE_DIR": state,
    }


def test_ship_slurm_with_an_endless_scontrol(tmp_path: Path, env: dict[str, str]) -> None:
    version = '[ "$1" = --version ] && echo "slurm 22.05.8" && exit 0'
    sc = _tool(tmp_path, "scontrol", f'{version}\nexec yes "{NODE}"\n')
    sq = _tool(tmp_path, "squeue", "exit 0\n")
    argv = ["ship", "slurm", "--dry-run", "--count", "2", "--period", "0.1"]
    argv += ["--scontrol", sc, "--squeue", sq]
    rss, code, err = _peak(argv, env)
    assert code == 1
    assert "2 skipped, 2 refused as larger than bounds.max_snapshot_bytes" in err
    assert err.splitlines()[-1] == (
        f"drainwatch ship slurm: no snapshot could be taken ({sc} printed more than 1,048,576 "
        "bytes (bounds.max_snapshot_bytes): killed, its output refused)"
    )
    assert sum("WARNING" in ln and "snapshot refused" in ln for ln in err.splitlines()) == 1
    assert rss < 256 << 20


def test_ship_jobs_sacct_with_an_endless_sacct(tmp_path: Path, env: dict[str, str]) -> None:
    sacct = _tool(tmp_path, "sacct", 'exec yes "1|2|3"\n')
    argv = ["ship", "jobs", "--sacct", sacct, "--dry-run", "--count", "2", "--period", "0.1"]
    argv += ["--since", "2020-01-01", "--checkpoint", str(tmp_path / "cp.json")]
    rss, code, err = _peak(argv, env)
    assert code == 0, err
    assert "0 sacct polls (2 failed)" in err and "2 polls refused as larger than" in err
    assert not (tmp_path / "cp.json").exists()
    assert rss < 256 << 20


def _open_jobs(n_jobs: int) -> bytes:
    """Job events, one job a 10 s with 1-4 nodes and an hour's walltime; every other job never
    ends."""
    rnd = random.Random(5)
    evs: list[tuple[float, int, dict[str, Any]]] = []
    for i in range(n_jobs):
        t = 1_700_000_000.0 + 10.0 * i
        d = {"job": str(i), "user": "u", "nodes": rnd.randint(1, 4), "req_walltime": 3600.0}
        evs += [
            (t, 0, {"type": "submit", "ts": t, **d}),
            (t + 5, 1, {"type": "start", "ts": t + 5, **d}),
        ]
        if i % 2:
            end = t + 5 + rnd.uniform(60.0, 3500.0)
            evs.append((end, 2, {"type": "end", "ts": end, **d}))
    evs.sort(key=lambda x: (x[0], x[1]))
    return b"".join(orjson.dumps(e) + b"\n" for _, _, e in evs)


def test_release_forecast_on_jobs_that_never_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[job_stages.ReleaseForecastStage] = []

    class Counted(job_stages.ReleaseForecastStage):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr(job_stages, "ReleaseForecastStage", Counted)
    src = tmp_path / "open.jsonl"
    src.write_bytes(_open_jobs(6000))
    out = tmp_path / "o"
    argv = ["replay", "--format", "jobevents", str(src), "--nodes", "64", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    (st,) = made
    with open(out / "release_forecast.csv") as f:
        steps = sum(1 for ln in f.read().splitlines()[1:] if ln.split(",")[5] not in ("", "0"))
    past = sum(1 for _, end, _, _ in st._order.held.values() if end <= 1_700_000_000.0 + 60_000)
    assert past > 2000  # jobs past their end at the last submits: what a sort would go over
    assert st._order.walked == steps <= 64 * st.forecasts
    assert json.loads((out / "summary_jobs.json").read_text())["release"]["forecasts"] == 6000


def test_replay_moab_chunk_mb_1024_on_a_small_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "moab.log"
    log.write_bytes(b"".join(IN.MOAB_LINES))
    seen: list[int] = []
    start = prefetch.start

    def spy(path: str, chunk_bytes: int, max_line_bytes: int) -> Any:
        seen.append(chunk_bytes)
        return start(path, chunk_bytes, max_line_bytes)

    monkeypatch.setattr(prefetch, "start", spy)
    monkeypatch.setattr(prefetch, "memory_available", lambda: 1 << 30)  # 1 GiB available
    outs = {}
    for mb in ("8", "1024"):
        out = tmp_path / f"o{mb}"
        argv = ["replay", "--format", "moab", str(log), "--chunk-mb", mb, "--out", str(out)]
        assert main([*argv, "--no-progress"]) == 0
        outs[mb] = {p.name: p.read_bytes() for p in out.iterdir() if p.suffix == ".csv"}
    err = capsys.readouterr().err
    # a quarter of 1 GiB for three chunks in flight (one accounted, one cut, one waiting) of
    # twice their size each: 42 MB
    assert seen == [8 << 20, 42 << 20]
    assert err.count("replay moab: --chunk-mb 1024 lowered to 42: the chunks in flight take") == 1
    assert outs["8"] == outs["1024"] and outs["8"]
