"""The worker's saved state is data, never code: a pickle payload and garbage written to the
``worker-state`` topic (anyone who can write to it could) are refused with a reason and
counted when a worker restarts; the pickle never runs, and the job analytics stay exactly the
replay's: the worker restores the other generation of its state, whose records after it Kafka
still holds (acks trail one snapshot: docs/state.md)."""

from __future__ import annotations

import csv
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from models.formats.jobsource import iter_job_events, sort_events
from streams.codecs.state import Manifest, encode_manifest
from streams.format import format_rows
from streams.sinks.points import MEASUREMENTS
from streams.tables.jobs import RUNTIME_PREDICTIONS
from tests.integration.test_live_drain import Live

pytestmark = pytest.mark.integration


class _Opens:
    """A pickle whose loading opens (creates) ``path``: proof that it ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def _simulated_jobs(tmp: Path) -> Path:
    out = tmp / "sim"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            "100",
            "--days",
            "4",
            "--period",
            "60",
            "--seed",
            "3",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out / "jobs.jsonl"


def _ship(live: Live, path: Path, *more: str) -> None:
    log = open(live.tmp / "ship-jobs.log", "ab")  # noqa: SIM115
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "ship",
            "jobs",
            "--format",
            "jobevents",
            str(path),
            "--no-progress",
            *more,
        ],
        env=live.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        timeout=180,
    )
    assert p.returncode == 0, (live.tmp / "ship-jobs.log").read_text()


def _replayed(live: Live, path: Path) -> list[list[str]]:
    """``drainwatch replay``'s run-time predictions of the whole file (the last shipper's
    end-of-input markers release every event)."""
    with open(path, "rb") as f:
        events = sort_events(iter_job_events("jobevents", f))
    released = live.tmp / "released.jsonl"
    released.write_bytes(b"".join(e.to_json() + b"\n" for e in events))
    out = live.tmp / "replay"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "replay",
            "--format",
            "jobevents",
            "--out",
            str(out),
            "--max-jump",
            "0",
            "--no-progress",
            str(released),
        ],
        env=live.env,
        check=True,
        capture_output=True,
    )
    with open(out / RUNTIME_PREDICTIONS.file, newline="") as f:
        return sorted(list(csv.reader(f))[1:])


def _influx_runtime(live: Live) -> list[list[str]]:
    m = MEASUREMENTS[RUNTIME_PREDICTIONS.file]
    tags = dict(m.rename)
    rows = []
    for p in live.influx.influxql(f'SELECT * FROM "{m.name}"'):
        row = []
        for c in RUNTIME_PREDICTIONS.columns:
            v = p.get(tags.get(c.name, c.name))
            row.append(None if v == "" else v)
        rows += format_rows(RUNTIME_PREDICTIONS, [row])
    return sorted(rows)


def test_a_pickle_and_garbage_in_the_state_topic_run_nothing_and_lose_nothing(
    live: Live,
) -> None:
    live.env["DRAINWATCH_LIVE_JOBS"] = "on"
    jobs = _simulated_jobs(live.tmp)
    lines = jobs.read_bytes().splitlines(keepends=True)
    n = len(lines)
    parts = [lines[: n // 4], lines[n // 4 : n // 2], lines[n // 2 :]]
    files = []
    for i, part in enumerate(parts):
        files.append(live.tmp / f"part{i}.jsonl")
        files[-1].write_bytes(b"".join(part))

    w = live.worker()
    state = f"{live.group}/jobs".encode()
    for i, gen in enumerate((b"/a", b"/b")):  # two snapshots: generations a, then b
        # the first two parts without markers: one shipper's end of input would finish the
        # stages, and a second shipper's first marker round would release what it has not yet
        # sent on the other partitions (tests/models/jobs/test_merge_new_shipper.py)
        _ship(live, files[i], "--no-markers")
        deadline = time.monotonic() + 120
        while state + gen not in {k for k, _ in live.consume("worker-state")}:
            assert time.monotonic() < deadline, f"no snapshot {i + 1}"
            time.sleep(0.5)
    live.stop()
    assert w.returncode is not None

    # the current manifest now points at a pickle (chunk b0: one that would create a file
    # if it were ever loaded), the newest generation's own manifest is garbage: the worker
    # must restore generation a and take the records after it again (still in Kafka: acks
    # trail one snapshot)
    marker = live.tmp / "the-pickle-ran"
    payload = pickle.dumps(_Opens(str(marker)))
    sid = "f" * 32
    live.produce_keyed(
        "worker-state",
        [
            (state + b"/b0", sid.encode() + payload),
            (state, encode_manifest(Manifest(sid, 1, len(payload), "b"))),
            (state + b"/b", b"\x00garbage\xff" * 10),
        ],
    )

    live.procs.clear()
    live.worker()
    _ship(live, files[2])
    want = _replayed(live, jobs)
    assert len(want) > 200
    deadline = time.monotonic() + 180
    while (got := _influx_runtime(live)) != want and time.monotonic() < deadline:
        time.sleep(1)
    assert got == want
    assert not marker.exists() and not os.path.exists(marker)
    m = live.metrics()
    assert m["drainwatch_state_refused_total"] == 2  # the pickle and the garbage
    log = "".join(p.read_text() for p in live.tmp.glob("worker*.log"))
    assert "refused" in log and "pickle" in log
