"""Source watermarks on the samples path (issue 30), on the real stack: ``ship sample-files``
ends with an end marker on every partition, so the worker finishes its sample streams as the
replay does at the end of its input: every DFS minute, hot-zone episode and job utilisation row
in InfluxDB equals ``drainwatch replay --format samples`` of the same file, with no flush step,
and the samples family's watermark lag is 0 on /metrics."""

from __future__ import annotations

import csv
import subprocess
import sys
import time
import urllib.request

import pytest

from streams.tables.samples import (
    DFS_MINUTELY,
    DFS_MINUTELY_FS,
    HOT_ZONES,
    HOT_ZONES_FS,
    JOB_UTILIZATION,
)
from tests.integration.test_live_drain import Live
from tests.integration.test_live_jobs import _influx_rows
from tests.integration.test_live_samples import _trace

pytestmark = pytest.mark.integration


def test_sample_files_end_gives_the_replay_exactly(live: Live) -> None:
    live.env.update(
        {
            "DRAINWATCH_LIVE_SAMPLES": "on",
            "DRAINWATCH_LATENESS": "120",
            "DRAINWATCH_MEM_PER_CORE": "6",
            "DRAINWATCH_ALERT_HOT_ZONE_FS": "scratch=100MB/s",
        }
    )
    trace = _trace(live.tmp / "samples.jsonl")
    out = live.tmp / "replay"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "replay",
            "--format",
            "samples",
            str(trace),
            "--out",
            str(out),
            "--hot-zone",
            "93MB/s",
            "--hot-zone-fs",
            "scratch=100MB/s",
            "--mem-per-core",
            "6",
            "--no-progress",
        ],
        env=live.env,
        check=True,
        capture_output=True,
    )

    def want(table: object) -> list[list[str]]:
        return sorted(list(csv.reader((out / table.file).open()))[1:])  # type: ignore[attr-defined]

    w = live.worker()
    p = subprocess.run(
        [sys.executable, "-m", "streams.cli", "ship", "sample-files", str(trace)],
        env=live.env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "5,760 samples" in p.stderr and " markers" in p.stderr
    deadline = time.monotonic() + 90
    want_util = {r[0]: r for r in want(JOB_UTILIZATION)}
    while True:  # every minute and every job final: the end, not the lateness, closed them
        got = _influx_rows(live, DFS_MINUTELY)
        finals = {
            pt["job"]: pt["final"]
            for pt in sorted(
                live.influx.influxql('SELECT "job", "final" FROM "job_util"'),
                key=lambda pt: pt["time"],
            )
        }
        if len(got) == 120 and finals == dict.fromkeys(want_util, 1):
            break
        assert time.monotonic() < deadline, (len(got), finals)
        assert w.poll() is None, "the worker stopped"
        time.sleep(1)
    assert got == want(DFS_MINUTELY)
    assert _influx_rows(live, HOT_ZONES) == want(HOT_ZONES)
    assert _influx_rows(live, DFS_MINUTELY_FS) == want(DFS_MINUTELY_FS)
    assert _influx_rows(live, HOT_ZONES_FS) == want(HOT_ZONES_FS)
    util = {r[0]: r for r in _influx_rows(live, JOB_UTILIZATION)}
    assert util == want_util
    port = live.port
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            text = ""
        if 'drainwatch_watermark_lag_seconds{family="samples"} 0\n' in text:
            break
        assert time.monotonic() < deadline, text[-2000:]
        time.sleep(1)
