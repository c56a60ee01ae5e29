"""sacct polling through the whole live path: `ship jobs --sacct --starts` walks the public
phillips.log dump (the stand-in sacct of tests/streams/ship/test_sacct.py, records
written up to 25 minutes late) into Kafka, a worker with the job analytics on consumes it, and
the daily usage in InfluxDB equals `drainwatch replay` of the same dump's events up to the
worker's watermark: no job lost or counted twice on the consumer side. The worker's lateness
covers the polls' spacing plus the look-back, so no event arrives late."""

from __future__ import annotations

import csv
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from streams.codecs.control import decode_marker
from streams.driver import RejectLog
from streams.ship.sacct import _iso
from streams.sources.jobevents import read_job_events
from streams.tables.jobs import USAGE_DAILY
from tests.integration.kafka_read import read_topic
from tests.integration.test_live_drain import Live
from tests.integration.test_live_jobs import _influx_rows
from tests.paths import REPO
from tests.streams.ship.test_sacct import DUMP, STAND_IN, _ends

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not DUMP.exists(), reason=f"{DUMP} (public test data) absent"),
]
WINDOW, OVERLAP, LATE = 10800, 1800, 1500
LATENESS = WINDOW + OVERLAP + LATE + 600  # with the default 600 s, days differ (events late)


def test_sacct_polls_through_the_worker_equal_the_replay(live: Live, tmp_path: Path) -> None:
    late = tmp_path / "late"
    late.write_text(str(LATE))
    sacct = tmp_path / "sacct"
    sacct.write_text(STAND_IN.format(python=sys.executable, dump=DUMP, late=late))
    sacct.chmod(0o755)
    _first, last = _ends()
    events, _ = read_job_events("sacct", [str(DUMP)], RejectLog())
    since = min(e.ts for e in events) - 60  # the shipper runs from before the first submit
    live.env["DRAINWATCH_LIVE_JOBS"] = "on"
    live.env["DRAINWATCH_LATENESS"] = str(LATENESS)
    live.env["DRAINWATCH_SECTION_NODES"] = "100"
    live.worker()
    polls = int((last - since + 2 * 3600) // WINDOW) + 3
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "ship",
            "jobs",
            "--sacct",
            str(sacct),
            "--starts",
            "--since",
            _iso(since) + "Z",
            "--overlap",
            str(OVERLAP),
            "--max-window",
            str(WINDOW),
            "--period",
            "0.05",
            "--count",
            str(polls),
        ],
        env=live.env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "0 dead letters" in run.stderr, run.stderr

    # the worker's watermark: the lowest over the partitions of how far each is (its latest
    # event or the shipper's latest marker, whichever is later; a poller never ends), minus
    # the lateness; the replay gets the dump's events up to it, as the merger released them
    latest: dict[int, float] = {}
    for _, v, part in read_topic(live.stack.kafka_bootstrap, live.prefix + "job-events"):
        mk = decode_marker(v)
        if mk is not None:
            assert mk.ts is not None and not mk.end
            latest[part] = max(latest.get(part, 0.0), mk.ts)
            continue
        for line in v.split(b"\n"):
            latest[part] = max(latest.get(part, 0.0), orjson.loads(line)["ts"])
    wm = min(latest.values()) - LATENESS
    released = [e for e in events if e.ts <= wm]
    path = tmp_path / "released.jsonl"
    path.write_bytes(b"".join(e.to_json() + b"\n" for e in released))
    out = tmp_path / "replay"
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
            "--section-nodes",
            "100",
            "--max-jump",
            "0",
            "--no-progress",
            str(path),
        ],
        env=live.env,
        check=True,
        capture_output=True,
    )
    want = [r[:1] + r[2:] for r in list(csv.reader((out / USAGE_DAILY.file).open()))[1:]]
    assert len(want) >= 3

    deadline = time.monotonic() + 120
    got: list[list[str]] = []
    while time.monotonic() < deadline:
        got = [r[:1] + r[2:] for r in _influx_rows(live, USAGE_DAILY)]
        if got == sorted(want):
            break
        time.sleep(2)
    assert got == sorted(want)
    dead = [orjson.loads(v) for _, v in live.consume("dead-letter")]
    assert not [d for d in dead if d["reason"] == "late"]  # no event arrived behind the merger
