"""``ship jobs --sacct`` polling: jobs ending during a poll, and records reaching the database
late, are neither lost nor sent twice; the events sent over many polls (and a restart) equal a
one-shot read of the same sacct dump. sacct is a stand-in here (a small script serving the
public phillips.log dump by end time, as `sacct --state <end states> -S -E` selects): a real
sacct needs slurmdbd and MariaDB holding months of jobs, which cannot be made up here."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from models.formats.sacct import parse_time
from streams.contracts import RejectLog
from streams.ship.sacct import SacctPoller, parse_since
from streams.ship.slurm import SnapshotFailed
from streams.sources.jobevents import read_job_events
from tests.paths import SHARED_DATA

DUMP = SHARED_DATA / "sacct" / "phillips.log"
pytestmark = pytest.mark.skipif(not DUMP.exists(), reason=f"{DUMP} (public test data) absent")

# Serves the dump's records whose End is in [--starttime, --endtime] and that were "written to
# the database" by --endtime: every 7th record reaches it LATE seconds after the job ended.
# With --state R: the jobs running at some time in the window (started by --endtime, not ended
# before --starttime); those whose end is not written yet as RUNNING with End Unknown. With
# --state PD: the jobs pending at some time in it, as they stood at --endtime.
STAND_IN = """#!{python}
import sys
from datetime import datetime, timezone
a = sys.argv[1:]
def t(s): return datetime.fromisoformat(s).replace(tzinfo=timezone.utc).timestamp()
lo, hi = t(a[a.index("--starttime") + 1]), t(a[a.index("--endtime") + 1])
fields = a[a.index("--format") + 1].split(",")
states = a[a.index("--state") + 1]
assert states in ("BF,CA,CD,DL,F,NF,OOM,PR,TO", "R", "PD") and "--parsable2" in a
late = float(open("{late}").read())
print("|".join(f.capitalize() if f != "jobid" else "JobID" for f in fields))
for i, line in enumerate(open("{dump}")):
    f = line.rstrip("\\n").split("|")
    submit, start, end = t(f[10]), t(f[12]), t(f[13])
    delay = late if i % 7 == 3 else 0.0
    known = end + delay <= hi
    if states == "PD":
        if submit <= hi and start >= lo:  # pending at some time in the window
            if start > hi or (not known and f[24] == "None assigned"):  # still pending
                f[12], f[13], f[16], f[24] = "Unknown", "Unknown", "PENDING", "None assigned"
            elif not known:
                f[13], f[16] = "Unknown", "RUNNING"
            print("|".join(f) + "|")
    elif states == "R":
        if start <= hi and end >= lo and f[24] != "None assigned":  # it ran
            if not known:
                f[13], f[16] = "Unknown", "RUNNING"
            print("|".join(f) + "|")
    elif lo <= end <= hi and known:
        print("|".join(f) + "|")  # a 27th field: Flags, empty
"""


@pytest.fixture
def sacct(tmp_path: Path) -> tuple[str, Path]:
    late = tmp_path / "late"
    late.write_text("0")
    p = tmp_path / "sacct"
    p.write_text(STAND_IN.format(python=sys.executable, dump=DUMP, late=late))
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p), late


def _one_shot() -> list[bytes]:
    events, _ = read_job_events("sacct", [str(DUMP)], RejectLog())
    return sorted(e.to_json() for e in events)


def _ends() -> tuple[float, float]:
    ends = [parse_time(line.split("|")[13]) for line in DUMP.read_text().splitlines()]
    return min(e for e in ends if e is not None), max(e for e in ends if e is not None)


def test_polls_with_late_records_and_a_restart_send_each_event_once(
    sacct: tuple[str, Path], tmp_path: Path
) -> None:
    path, late = sacct
    late.write_text("1500")  # within the overlap
    first, last = _ends()
    cp = tmp_path / "cp.json"
    poller = SacctPoller(path, cp, since=first - 3600, overlap=1800, max_window=6 * 3600)
    sent: list[bytes] = []
    now = first - 3600
    restarted = False
    while now < last + 7200:
        now += 2917.5  # polls land in the middle of jobs' ends, not on them
        p = poller.poll(now)
        while True:
            sent += [e.to_json() for e in p.events]
            poller.commit(p)
            if not p.behind:
                break
            p = poller.poll(now)
        if not restarted and now > (first + last) / 2:  # a restart resumes from the file
            poller = SacctPoller(path, cp, since=0.0, overlap=1800, max_window=6 * 3600)
            restarted = True
    want = _one_shot()
    assert len(want) > 8000
    assert sorted(sent) == want  # nothing lost, nothing twice
    assert poller.dropped > 0  # the overlap did see records again, and dropped them
    assert restarted


def test_starts_are_sent_while_jobs_run_and_ends_bring_only_the_end(
    sacct: tuple[str, Path], tmp_path: Path
) -> None:
    path, late = sacct
    late.write_text("1500")
    first, last = _ends()
    poller = SacctPoller(
        path,
        tmp_path / "cp.json",
        since=first - 3600,
        overlap=1800,
        max_window=6 * 3600,
        starts=True,
    )
    sent: list[bytes] = []
    poll_of: dict[tuple[str, str], int] = {}  # (job, type) -> the poll that sent it
    now = first - 3600
    while now < last + 7200:
        now += 5400.5
        while True:
            p = poller.poll(now)
            sent += [e.to_json() for e in p.events]
            poll_of.update({(e.job, e.type): poller.polls for e in p.events})
            poller.commit(p)
            if not p.behind:
                break
    assert sorted(sent) == _one_shot()  # each event once
    # a job that started after --since and ran longer than the polls' spacing had its start
    # sent in an earlier poll than its end; one that waited that long, its submit before its
    # start (a start is visible at once; only ends are written late here)
    events, _ = read_job_events("sacct", [str(DUMP)], RejectLog())
    at = {(e.job, e.type): e.ts for e in events}
    gap, since = 5400.5 + 1, first - 3600
    started = [j for (j, t) in at if t == "start" and at[j, "submit"] >= since]
    long_run = [j for j in started if at[j, "end"] - at[j, "start"] > gap]
    long_wait = [j for j in started if at[j, "start"] - at[j, "submit"] > gap]
    assert len(long_run) >= 5 and len(long_wait) > 1000, (len(long_run), len(long_wait))
    assert all(poll_of[j, "start"] < poll_of[j, "end"] for j in long_run)
    assert all(poll_of[j, "submit"] < poll_of[j, "start"] for j in long_wait)
    assert all(v < 1e18 for v in poller.cp.sent.values())  # every started job has ended


def test_records_later_than_the_overlap_are_lost_so_the_overlap_must_cover_them(
    sacct: tuple[str, Path], tmp_path: Path
) -> None:
    path, late = sacct
    late.write_text("4000")
    first, last = _ends()
    poller = SacctPoller(path, tmp_path / "cp.json", since=first - 1, overlap=600, max_window=1e9)
    sent: list[bytes] = []
    now = first
    while now < last + 7200:
        now += 2400
        p = poller.poll(now)
        sent += [e.to_json() for e in p.events]
        poller.commit(p)
    assert len(set(sent)) == len(sent) and len(sent) < len(_one_shot())


def test_a_crash_before_the_commit_sends_that_poll_again(
    sacct: tuple[str, Path], tmp_path: Path
) -> None:
    path, _ = sacct
    first, last = _ends()
    cp = tmp_path / "cp.json"
    a = SacctPoller(path, cp, since=first - 1, overlap=600, max_window=1e9)
    p1 = a.poll((first + last) / 2)
    a.commit(p1)
    p2 = a.poll(last + 1)  # ... killed before the broker acknowledged p2
    b = SacctPoller(path, cp, since=0.0, overlap=600, max_window=1e9)
    p3 = b.poll(last + 1)
    assert [e.to_json() for e in p3.events] == [e.to_json() for e in p2.events]
    assert sorted(e.to_json() for e in p1.events + p3.events) == _one_shot()


def test_sacct_failure_is_reported(tmp_path: Path) -> None:
    p = SacctPoller("/bin/false", tmp_path / "cp.json", since=0.0)
    with pytest.raises(SnapshotFailed, match="sacct exited 1"):
        p.poll(100.0)
    assert not (tmp_path / "cp.json").exists()


def test_parse_since() -> None:
    assert parse_since("2017-01-01T00:00:00Z", lambda: 0.0) == 1483228800.0
    assert parse_since("2017-01-01T01:00:00+01:00", lambda: 0.0) == 1483228800.0
    assert parse_since("now", lambda: 5.0) == 5.0
