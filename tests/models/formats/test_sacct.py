"""sacct --parsable2 adapter: real phillips.log lines (every field), edge cases, rejects."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.formats.sacct import (
    SacctError,
    iter_sacct_events,
    parse_duration,
    parse_exitcode,
    parse_flags,
    parse_reqmem,
    parse_sacct,
    parse_time,
    sacct_job_events,
)
from models.records.jobevent import JobEvent
from models.records.reject import Reject, count_reasons
from tests.paths import SHARED_DATA

PHILLIPS = SHARED_DATA / "sacct" / "phillips.log"

# Verbatim lines 1, 2 and 2738 of ../shared/data/sacct/phillips.log (Open XDMoD test artefact).
LINE1 = (
    "163485|163485|phillips|focaccia|chestnut|chaff|chaff|45789|noror|380693|"
    "2016-12-22T07:15:12|2016-12-22T07:15:12|2016-12-22T07:15:13|2017-01-01T20:42:19|"
    "10-13:27:06|0:0|CANCELLED by 380693|1|12|12|31000Mn|cpu=12,node=1|"
    "billing=12,cpu=12,gres/gpu=2,mem=31000M,node=1|37-14:00:00|cpn-f11-31|"
    "290d9b6f43193179d47f2f1cb082f821919af94f4e32d1795427a020c5839ba6"
)
LINE2 = (
    "165381|165381|phillips|crumpet|coconut-cream|chaff|chaff|45789|chaff|196224|"
    "2016-12-27T20:12:01|2016-12-27T20:12:01|2016-12-27T20:12:01|2017-01-01T20:12:27|"
    "5-00:00:26|1:0|TIMEOUT|8|64|64|8000Mn|cpu=64,mem=62.50G,node=8|"
    "billing=64,cpu=64,mem=62.50G,node=8|5-00:00:00|"
    "cpn-f13-03-[01-02],cpn-f13-04-[01-02],cpn-f13-05-[01-02],cpn-f13-06-[01-02]|"
    "3eb3511ffb7fb2f36d4adddafd5c187619f5395daa96a93d2dd66a636f241599"
)
LINE_NONE = (
    "185113|185113|phillips|black|banana-cream|taifl|taifl|104733|honbu|330719|"
    "2016-12-31T06:30:49|2016-12-31T06:30:49|2016-12-31T16:53:22|2016-12-31T16:53:22|"
    "00:00:00|0:0|CANCELLED by 330719|1|8|8|2147486648Mn|cpu=8,mem=24000M,node=1|"
    "billing=8,cpu=8,mem=24000M,node=1|1-06:00:00|None assigned|"
    "8268f1af6871eff535c16c1ccc690f15ef05fe90e38bfadc7072dd5b1b734594"
)


def utc(*a: int) -> float:
    return datetime(*a, tzinfo=UTC).timestamp()


def test_real_line_cancelled_long_elapsed() -> None:
    (j,) = list(parse_sacct([LINE1]))
    assert j.jobid == "163485" and j.jobidraw == "163485"
    assert j.cluster == "phillips" and j.partition == "focaccia" and j.qos == "chestnut"
    assert j.account == "chaff" and j.group == "chaff" and j.gid == 45789
    assert j.user == "noror" and j.uid == 380693
    assert j.submit == utc(2016, 12, 22, 7, 15, 12)
    assert j.eligible == utc(2016, 12, 22, 7, 15, 12)
    assert j.start == utc(2016, 12, 22, 7, 15, 13)
    assert j.end == utc(2017, 1, 1, 20, 42, 19)
    assert j.elapsed == 10 * 86400 + 13 * 3600 + 27 * 60 + 6 == j.end - j.start
    assert (j.exit_code, j.exit_signal) == (0, 0)
    assert j.state == "CANCELLED" and j.cancelled_by == "380693"
    assert (j.nnodes, j.ncpus, j.reqcpus) == (1, 12, 12)
    assert (j.reqmem_mb, j.reqmem_per) == (31000.0, "node")
    assert j.reqtres == "cpu=12,node=1"
    assert j.alloctres == "billing=12,cpu=12,gres/gpu=2,mem=31000M,node=1"
    assert j.timelimit == 37 * 86400 + 14 * 3600
    assert j.nodelist == ("cpn-f11-31",)
    assert j.jobname == "290d9b6f43193179d47f2f1cb082f821919af94f4e32d1795427a020c5839ba6"
    assert j.backfill is None
    assert j.ran


def test_real_line_timeout_hostlist() -> None:
    (j,) = list(parse_sacct([LINE2]))
    assert j.jobid == "165381" and j.user == "chaff" and j.uid == 196224
    assert j.partition == "crumpet" and j.qos == "coconut-cream"
    assert j.submit == j.eligible == j.start == utc(2016, 12, 27, 20, 12, 1)
    assert j.end == utc(2017, 1, 1, 20, 12, 27)
    assert j.elapsed == 5 * 86400 + 26
    assert (j.exit_code, j.exit_signal, j.state, j.cancelled_by) == (1, 0, "TIMEOUT", None)
    assert (j.nnodes, j.ncpus, j.reqcpus) == (8, 64, 64)
    assert (j.reqmem_mb, j.reqmem_per) == (8000.0, "node")
    assert j.timelimit == 5 * 86400
    assert j.nodelist == tuple(f"cpn-f13-0{r}-0{n}" for r in (3, 4, 5, 6) for n in (1, 2))
    ev = sacct_job_events(j)
    assert [e.type for e in ev] == ["submit", "start", "end"]
    assert ev[0] == JobEvent(
        type="submit",
        ts=j.submit,
        job="165381",
        user="chaff",
        group="chaff",
        account="chaff",
        partition="crumpet",
        name=j.jobname,
        nodes=8,
        cores=64,
        req_walltime=432000.0,
    )
    assert ev[1].ts == j.start and ev[1].node_list == j.nodelist and ev[1].state is None
    assert ev[2].ts == j.end and ev[2].state == "TIMEOUT" and ev[2].exit_code == 1
    assert ev[2].node_list == j.nodelist


def test_real_line_cancelled_while_pending() -> None:
    (j,) = list(parse_sacct([LINE_NONE]))
    assert j.nodelist == () and j.elapsed == 0.0 and j.start == j.end
    assert (j.reqmem_mb, j.reqmem_per) == (2147486648.0, "node")
    assert not j.ran
    ev = sacct_job_events(j)
    assert [e.type for e in ev] == ["submit", "end"]
    assert ev[1].ts == utc(2016, 12, 31, 16, 53, 22) and ev[1].state == "CANCELLED"
    assert ev[1].node_list == ()


@pytest.mark.data
def test_whole_phillips_file() -> None:
    if not PHILLIPS.exists():
        pytest.skip("../shared/data/sacct/phillips.log is not present")
    rejects: list[Reject] = []
    with PHILLIPS.open() as f:
        jobs = list(parse_sacct(f, rejects, source="phillips.log"))
    assert rejects == []
    assert len(jobs) == 4285
    assert sum(j.ran for j in jobs) == 4046  # 239 jobs cancelled with "None assigned"
    assert all(j.elapsed == j.end - j.start for j in jobs)  # type: ignore[operator]
    with PHILLIPS.open() as f:
        events = list(iter_sacct_events(f))
    assert len(events) == 4285 * 2 + 4046


@pytest.mark.parametrize(
    ("text", "secs"),
    [
        ("10-13:27:06", 912426.0),
        ("1:02:03", 3723.0),
        ("05:06", 306.0),
        ("00:00:24", 24.0),
        ("37-14:00:00", 3247200.0),
        ("2-3", 2 * 86400 + 3 * 3600.0),
        ("2-3:04", 183840.0),
        ("45", 2700.0),
        ("00:01.500", 1.5),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("INVALID", None),
        ("", None),
    ],
)
def test_parse_duration(text: str, secs: float | None) -> None:
    assert parse_duration(text) == secs


@pytest.mark.parametrize("text", ["1:2:3:4", "x", "1-", "-5", "1:-2", "1::2", "1.5:00"])
def test_parse_duration_bad(text: str) -> None:
    with pytest.raises(SacctError) as ei:
        parse_duration(text)
    assert ei.value.reason == "bad_duration"


def test_parse_time_and_tz() -> None:
    assert parse_time("2016-12-22T10:11:12") == utc(2016, 12, 22, 10, 11, 12)
    assert parse_time("Unknown") is None and parse_time("None") is None
    from zoneinfo import ZoneInfo

    # sacct run in Berlin (CET = UTC+1 in winter, CEST = UTC+2 in summer)
    assert parse_time("2016-12-22T10:11:12", ZoneInfo("Europe/Berlin")) == utc(
        2016, 12, 22, 9, 11, 12
    )
    assert parse_time("2016-07-01T10:00:00", ZoneInfo("Europe/Berlin")) == utc(2016, 7, 1, 8)
    with pytest.raises(SacctError):
        parse_time("2016-13-45T00:00:00")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("31000Mn", (31000.0, "node")),
        ("2000Mc", (2000.0, "cpu")),
        ("4Gn", (4096.0, "node")),
        ("4G", (4096.0, None)),
        ("512K", (0.5, None)),
        ("1T", (1048576.0, None)),
        ("62.50G", (64000.0, None)),
        ("0", (0.0, None)),
        ("", (None, None)),
    ],
)
def test_parse_reqmem(text: str, want: tuple[float | None, str | None]) -> None:
    assert parse_reqmem(text) == want


def test_exitcode_and_flags() -> None:
    assert parse_exitcode("0:0") == (0, 0)
    assert parse_exitcode("127:0") == (127, 0)
    assert parse_exitcode("0:9") == (0, 9)
    with pytest.raises(SacctError):
        parse_exitcode("a:b")
    assert parse_flags("SchedBackfill") is True
    assert parse_flags("StartReceived,SchedBackfill") is True
    assert parse_flags("SchedMain") is False and parse_flags("SchedSubmit") is False
    assert parse_flags("") is None and parse_flags(None) is None


def _line(**over: str) -> str:
    fields = LINE2.split("|")
    from models.formats.sacct import FIELDS_26

    d = dict(zip(FIELDS_26, fields, strict=True))
    d.update(over)
    return "|".join(d[k] for k in FIELDS_26)


def test_signal_exit_status_and_node_fail() -> None:
    (e_sub, e_st, e_end) = list(iter_sacct_events([_line(exitcode="0:9", state="NODE_FAIL")]))
    assert e_end.exit_code == 128 + 9 and e_end.state == "NODE_FAIL"


def test_flags_27th_field_and_header() -> None:
    ev = list(iter_sacct_events([LINE2 + "|SchedBackfill"]))
    assert [e.backfill for e in ev] == [None, True, True]
    header = "JobID|Submit|Start|End|NNodes|NCPUS|NodeList|Flags|State"
    rows = [
        header,
        "7|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|2|16|n[1-2]|SchedMain|"
        "COMPLETED",
    ]
    ev = list(iter_sacct_events(rows))
    assert [e.type for e in ev] == ["submit", "start", "end"]
    assert ev[1].backfill is False and ev[1].node_list == ("n1", "n2")
    assert ev[1].nodes == 2 and ev[1].cores == 16 and ev[2].state == "COMPLETED"


def test_running_job_has_no_end_and_pending_job_no_start() -> None:
    running = _line(end="Unknown", state="RUNNING", elapsed="1:00:00")
    ev = list(iter_sacct_events([running]))
    assert [e.type for e in ev] == ["submit", "start"]
    pending = _line(start="Unknown", end="Unknown", state="PENDING", nodelist="None assigned")
    assert [e.type for e in iter_sacct_events([pending])] == ["submit"]


def test_steps_skipped_unless_asked() -> None:
    step = _line(jobid="165381.batch", jobidraw="165381.batch")
    assert list(parse_sacct([step])) == []
    assert [j.jobid for j in parse_sacct([step], steps=True)] == ["165381.batch"]


def test_array_job_id_kept() -> None:
    (j,) = list(parse_sacct([_line(jobid="123_4", jobidraw="130")]))
    assert j.jobid == "123_4" and j.jobidraw == "130"


def test_malformed_lines_rejected_with_reason_and_good_lines_kept() -> None:
    lines = [
        LINE1,
        "garbage",
        _line(submit="yesterday"),
        _line(elapsed="1:2:3:4"),
        _line(nnodes="eight"),
        _line(nodelist="n[1-"),
        _line(start="2017-01-01T20:12:28"),  # start after end
        _line(start="2016-12-27T20:12:00"),  # start before submit
        _line(jobid=""),
        _line(submit="Unknown"),
        _line(reqmem="lots"),
        _line(exitcode="x"),
        "",
        LINE2,
    ]
    rejects: list[Reject] = []
    jobs = list(parse_sacct(lines, rejects, source="t.log"))
    assert [j.jobid for j in jobs] == ["163485", "165381"]
    assert [(r.lineno, r.reason) for r in rejects] == [
        (2, "wrong_field_count"),
        (3, "bad_time"),
        (4, "bad_duration"),
        (5, "bad_nnodes"),
        (6, "bad_nodelist"),
        (7, "end_before_start"),
        (8, "start_before_submit"),
        (9, "missing_jobid"),
        (10, "missing_submit"),
        (11, "bad_reqmem"),
        (12, "bad_exitcode"),
    ]
    assert rejects[0].source == "t.log" and rejects[0].text == "garbage"
    assert count_reasons(rejects)["bad_time"] == 1


def test_bad_header_rejected() -> None:
    rejects: list[Reject] = []
    assert list(parse_sacct(["JobID|User", "1|x"], rejects)) == []
    assert [r.reason for r in rejects] == ["header_missing_fields", "wrong_field_count"]


def test_bytes_lines_accepted() -> None:
    (j,) = list(parse_sacct([LINE1.encode() + b"\n"]))
    assert j.jobid == "163485"
