"""Counting (issue 31, class 7): shares and counts in records; every reject names its line.

- A line ends at LF, CRLF or a bare CR in every line format (universal newlines, as
  ``bytes.splitlines`` cuts): a Moab log, a sacct dump or a job-event file whose writer ended
  some lines with a lone CR is read record for record, with the outputs of the same file with
  LF ends. (Before, a Moab log with two of every three line ends a bare CR lost two thirds of
  its records, each CR-joined line one ``malformed_node_status``, and exited 0: the share
  counted the joined lines.)
- ``--max-reject-share`` counts records as the inputs hold them: a sacct line is one record
  however many events (up to three) or rejects it gives, so a dump whose jobs are mostly
  unusable exits 3 (it exited 0: good lines counted three events, bad ones one reject).
- Every reject names the line its record was read from, also the rejects made after parsing
  (``implausible_time``, ``time_jump``, ``end_before_start``: they carried line 0), in every
  replay format, and the Moab shipper's ``too_large`` dead letters.
"""

from __future__ import annotations

import asyncio
import csv
import gzip
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from models.records.nodestatus import Codebook
from models.records.plausible import TimeBounds
from streams.cli import main
from streams.contracts import RejectLog, lost_share
from streams.ship.moab import MoabShipper, ship_files
from streams.sources.moab import MoabFiles
from tests.badinput import inputs as IN
from tests.badinput.test_cli_errors import (
    MOAB_2090,
    MOAB_2400,
    SWF_JOB,
    jobcomp_line,
    sacct_line,
    sample_line,
)
from tests.streams.ship.test_markers import Recorder

ENDS = (b"\r", b"\r", b"\n")  # two of every three line ends a bare CR, as in the issue
LONG = b"x" * ((1 << 20) + 10) + b"\n"  # over the default max_line_bytes


def with_ends(data: bytes, ends: tuple[bytes, ...] = ENDS) -> bytes:
    """``data``'s lines, line ``i`` ended by ``ends[i % len(ends)]``."""
    return b"".join(ln + ends[i % len(ends)] for i, ln in enumerate(data.splitlines()))


def replay(tmp: Path, fmt: str, name: str, data: bytes | None, *opts: str) -> dict[str, Any]:
    """Replay ``data`` written as ``tmp/in/name`` (None: the directory of LLview files already
    there) into ``tmp/out``, rejects in ``tmp/rejects.tsv``: exit code, summary, tables,
    reject rows."""
    (tmp / "in").mkdir(parents=True, exist_ok=True)
    path = tmp / "in" / name
    if data is not None:
        path.write_bytes(data)
    out, rejects = tmp / "out", tmp / "rejects.tsv"
    rc = main(
        [
            "replay",
            "--format",
            fmt,
            str(path),
            "--out",
            str(out),
            "--rejects",
            str(rejects),
            "--no-progress",
            *opts,
        ]
    )
    (summary,) = out.glob("summary_*.json")
    tables = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.suffix == ".csv"}
    rows = list(
        csv.reader(io.StringIO(rejects.read_text()), delimiter="\t", quoting=csv.QUOTE_NONE)
    )
    return {
        "rc": rc,
        "summary": orjson.loads(summary.read_bytes()),
        "tables": tables,
        "rejects": rows,
    }


# ---- bare CR: every record read, as with LF ---------------------------------------------


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_moab_log_with_bare_cr_line_ends_is_read_record_for_record(
    tmp_path: Path, compress: bool
) -> None:
    pack: Callable[[bytes], bytes] = gzip.compress if compress else (lambda b: b)
    lf = replay(tmp_path / "lf", "moab", "moab.log", pack(IN.MOAB))
    cr = replay(tmp_path / "cr", "moab", "moab.log", pack(with_ends(IN.MOAB)))
    n = len(IN.MOAB_LINES)
    assert lf["rc"] == cr["rc"] == 0
    want = {"lines": n, "records": n, "rejected": 0, "ignored": 0}
    assert {k: cr["summary"][k] for k in want} == {k: lf["summary"][k] for k in want} == want
    (i,) = cr["summary"]["inputs"]
    assert (i["lines"], i["records"], i["rejected"], i["rejected_lines"]) == (n, n, 0, 0)
    assert cr["tables"] == lf["tables"] and cr["tables"]  # byte for byte
    assert cr["rejects"] == []


def test_moab_chunks_cut_at_a_bare_cr_or_inside_a_crlf_lose_no_record(tmp_path: Path) -> None:
    """The source itself with small chunks (a chunk often ends at a CR whose LF, or whose next
    line, starts the next chunk): the same records, counts and line numbers as LF ends."""
    bad = [b"garbage Node 'x' status: state=\n", MOAB_2400]
    lf = IN.mixed(IN.MOAB, bad, every=997)
    got = {}
    for name, data in (("lf", lf), ("mixed", with_ends(lf, (b"\r", b"\r\n", b"\n", b"\r")))):
        (tmp_path / name).write_bytes(data)
        rejects = RejectLog()
        src = MoabFiles([str(tmp_path / name)], Codebook(), chunk_bytes=997, progress=False)
        ts = [t for b in src.batches(rejects) for t in b.ts_ms.tolist()]
        (st,) = src.inputs
        got[name] = (ts, st.lines, st.records, st.rejected, st.rejected_lines, st.ignored)
    assert got["mixed"] == got["lf"]
    assert got["lf"][1:] == (len(IN.MOAB_LINES) + 2, len(IN.MOAB_LINES), 2, 2, 0)


@pytest.mark.parametrize(
    ("fmt", "name", "data"),
    [
        ("sacct", "s.log", IN.SACCT),
        ("jobevents", "j.jsonl", IN.JOBS),
        ("swf", "t.swf", IN.SWF),
        ("jobcomp", "c.json", IN.JOBCOMP),
        ("samples", "s.jsonl", IN.SAMPLES),
    ],
)
def test_bare_cr_merges_no_records_in_the_other_line_formats(
    tmp_path: Path, fmt: str, name: str, data: bytes
) -> None:
    lf = replay(tmp_path / "lf", fmt, name, data)
    cr = replay(tmp_path / "cr", fmt, name, with_ends(data))
    assert lf["rc"] == cr["rc"] == 0
    for key in ("lines", "records", "rejected", "ignored"):
        assert cr["summary"][key] == lf["summary"][key], key
    assert cr["summary"]["lines"] == len(data.splitlines())
    assert cr["summary"]["rejected"] == 0 and cr["rejects"] == []
    assert cr["tables"] == lf["tables"] and cr["tables"]


# ---- the share: in records ----------------------------------------------------------------


def test_a_sacct_dump_of_mostly_unusable_jobs_exits_3(tmp_path: Path) -> None:
    """16 good jobs (48 events) and 24 lines that are no job: 60 % of the records are lost."""
    lines = IN.SACCT.splitlines(keepends=True)
    r = replay(tmp_path, "sacct", "s.log", b"".join(lines[:16]) + b"garbage|line\n" * 24)
    assert r["rc"] == 3
    s = r["summary"]
    assert (s["records"], s["rejected"], s["lines"]) == (48, 24, 40)
    assert lost_share(s) == 0.6  # it was 24 / (48 + 24): a third, exit 0


FAR = {
    "submit": "2401-01-01T00:00:00",
    "start": "2401-01-01T00:01:00",
    "end": "2401-01-01T00:02:00",
}


@pytest.mark.parametrize(
    ("times", "bad", "rc", "rejects"),
    [(FAR, 18, 0, 3), (FAR, 22, 3, 3), ({"end": FAR["end"]}, 30, 3, 1)],
    ids=["3 rejects a line, 45 %", "3 rejects a line, 55 %", "1 reject a line, 75 %"],
)
def test_a_line_is_one_record_however_many_of_its_events_are_rejected(
    tmp_path: Path, times: dict[str, str], bad: int, rc: int, rejects: int
) -> None:
    """A sacct line whose events are rejected (each its own ``implausible_time``, all naming
    the line) is one record lost, whether one or three of them are. 30 of 40 jobs with an end
    in 2401 is 75 %: exit 3 (the old count, 30 rejects against 90 events, said 25 %)."""
    lines = [sacct_line(i, **times) if i < bad else sacct_line(i) for i in range(40)]
    r = replay(tmp_path, "sacct", "s.log", b"".join(lines))
    s = r["summary"]
    assert r["rc"] == rc
    assert s["rejected_by_reason"] == {"implausible_time": rejects * bad}
    (i,) = s["inputs"]
    assert (i["rejected"], i["rejected_lines"], i["lines"]) == (rejects * bad, bad, 40)
    assert lost_share(s) == bad / 40
    assert sorted({int(row[1]) for row in r["rejects"]}) == list(range(1, bad + 1))


@pytest.mark.parametrize(("bad", "rc"), [(45, 0), (55, 3)])
def test_a_moab_log_of_mostly_unreadable_records_exits_3(tmp_path: Path, bad: int, rc: int) -> None:
    good = IN.MOAB_LINES[: 40 * 30]
    junk = [
        b"2015-13-45T00:00:00.000-0600 1 INFO  Node '1' status: state='Idle' rsvlist='none' "
        b"joblist='none'\n"
    ] * (len(good) * bad // (100 - bad))
    r = replay(tmp_path, "moab", "m.log", with_ends(IN.mixed(b"".join(good), junk, every=2)))
    assert r["rc"] == rc
    s = r["summary"]
    assert s["lines"] == s["records"] + s["rejected"] == len(good) + len(junk)
    assert abs(lost_share(s) - bad / 100) < 0.01


def test_lost_share_counts_an_input_read_whole_by_its_records_and_rejects() -> None:
    inputs = [
        {"lines": None, "ignored": 0, "records": 30, "rejected": 10, "rejected_lines": 10},
        {"lines": 100, "ignored": 40, "records": 150, "rejected": 30, "rejected_lines": 20},
    ]
    assert lost_share({"inputs": inputs, "out_of_order": 10}) == (10 + 20 + 10) / (40 + 60)
    assert lost_share({"inputs": [], "out_of_order": 0}) == 1.0


# ---- every reject names its line ----------------------------------------------------------


def job_of(fmt: str, line: str) -> str:
    """The job id a line of ``fmt`` holds (the ``job`` of the events made from it)."""
    if fmt == "sacct":
        return line.split("|")[0]
    if fmt == "swf":
        return line.split()[0]
    return str(json.loads(line)["jobid" if fmt == "jobcomp" else "job"])


def check_lines(fmt: str, rows: list[list[str]]) -> set[str]:
    """Every reject row names a line (from 1, never 0 or blank) of its source, counted as
    ``bytes.splitlines`` cuts, and that line holds the rejected record: its text, the head of
    an overlong line, or the line the rejected event or sample was made from. The reasons."""
    lines: dict[str, list[str]] = {}
    for source, line, reason, text in rows:
        if source not in lines:
            raw = Path(source).read_bytes().removeprefix(b"\xef\xbb\xbf")
            lines[source] = [x.decode("utf-8", "replace") for x in raw.splitlines()]
        assert line.isdigit() and int(line) >= 1, (source, line, reason)
        at = lines[source][int(line) - 1].replace("\t", "\\t")
        if reason == "line_too_long":
            assert at.startswith(text) and len(text) >= 100
        elif text != at:  # a record rejected after parsing: its event or sample, as JSON
            rec = json.loads(text)
            if fmt == "samples":
                assert {k: json.loads(at)[k] for k in ("ts", "node", "pid")} == {
                    k: rec[k] for k in ("ts", "node", "pid")
                }
            else:
                assert job_of(fmt, at) == rec["job"], (line, reason, at, rec)
    return {reason for _, _, reason, _ in rows}


def moab_bad() -> list[bytes]:
    return [
        b"junk Node 'x' status: broken\n",
        b"\n",
        MOAB_2400,
        MOAB_2090,
        LONG,
        re.sub(rb"Node '[^']*'", b"Node ''", IN.MOAB_LINES[7]),
        b"2015-03-07T00:00:00 Node\n",
        IN.MOAB_LINES[9].replace(b"-0600", b"-9900"),
    ]


def jobevents_bad() -> list[bytes]:
    return [
        b"{oops\n",
        b'{"type":"start","ts":-1000000,"job":"z8","nodes":64}\n',
        b'{"type":"start","ts":1425700000,"job":"h2","nodes":4}\n',
        b'{"type":"end","ts":1425690000,"job":"h2","nodes":4,"state":"COMPLETED"}\n',
        b'{"type":"end","ts":253402300799,"job":"z9","nodes":64,"state":"COMPLETED"}\n',
        LONG,
    ]


def sacct_bad() -> list[bytes]:
    return [
        b"garbage|line\n",
        sacct_line(90, start="notatime"),
        sacct_line(91, end="2016-12-01T00:00:00"),
        sacct_line(92, end="2401-01-01T00:00:00"),
        sacct_line(93, nodelist=IN.HOSTS_PAST_THE_CAP),
        b"JobID|Nothing\n",
        LONG,
    ]


def swf_bad() -> list[bytes]:
    far = "900 9000000000000 " + SWF_JOB.split(" ", 2)[2]  # submitted in the year 287,000
    return [
        b"1 2 3\n",
        SWF_JOB.replace(" 60 ", " ten ").encode() + b"\n",
        far.encode() + b"\n",
        LONG,
    ]


def jobcomp_bad() -> list[bytes]:
    return [
        b"{oops\n",
        jobcomp_line(90, **{"@start": "yesterday"}),
        b"[]\n",
        jobcomp_line(91, **{"@end": "2025-03-01T00:00:00"}),
        jobcomp_line(92, **{"@end": "2401-01-01T00:00:00"}),
        LONG,
    ]


def samples_bad() -> list[bytes]:
    return [
        b"{oops\n",
        sample_line(ts=1e11),
        sample_line(core=-5),
        sample_line(job=None),
        sample_line(ts=float("nan")),
        LONG,
    ]


FORMATS: dict[str, tuple[str, bytes, Callable[[], list[bytes]], set[str]]] = {
    # format: (file name, good records, bad ones, reasons that must be among the rejects)
    "moab": (
        "m.log",
        IN.MOAB,
        moab_bad,
        {
            "implausible_time",
            "time_jump",
            "line_too_long",
            "blank_line",
            "empty_node",
            "malformed_node_status",
            "bad_timestamp",
        },
    ),
    "jobevents": (
        "j.jsonl",
        IN.JOBS,
        jobevents_bad,
        {"bad_json", "implausible_time", "end_before_start", "line_too_long"},
    ),
    "sacct": (
        "s.log",
        IN.SACCT,
        sacct_bad,
        {
            "wrong_field_count",
            "bad_time",
            "end_before_start",
            "implausible_time",
            "hostlist_too_large",
            "header_missing_fields",
            "line_too_long",
        },
    ),
    "swf": (
        "t.swf",
        IN.SWF,
        swf_bad,
        {"wrong_field_count", "bad_number", "implausible_time", "line_too_long"},
    ),
    "jobcomp": (
        "c.json",
        IN.JOBCOMP,
        jobcomp_bad,
        {"bad_json", "bad_start", "end_before_start", "implausible_time", "line_too_long"},
    ),
    "samples": (
        "s.jsonl",
        IN.SAMPLES,
        samples_bad,
        {"bad_json", "implausible_time", "line_too_long"},
    ),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_reject_names_the_line_of_its_record(tmp_path: Path, fmt: str) -> None:
    """Bad records of each reason among good ones, the line ends LF, CRLF and bare CR mixed
    (the lines are those of ``bytes.splitlines``)."""
    name, good, bad, reasons = FORMATS[fmt]
    data = with_ends(IN.mixed(good, bad(), every=5), (b"\n", b"\r", b"\r\n", b"\r"))
    r = replay(tmp_path, fmt, name, data, "--max-reject-share", "1")
    assert r["rc"] == 0
    got = check_lines(fmt, r["rejects"])
    assert reasons <= got, reasons - got
    assert len(r["rejects"]) == r["summary"]["rejected"]


def test_every_llview_reject_names_the_line_of_its_member_file(tmp_path: Path) -> None:
    for rel, data in IN.llview_dir(bad_rows=True).items():
        (tmp_path / "in" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / rel).write_bytes(with_ends(data, (b"\n", b"\r", b"\r\n")))
    r = replay(tmp_path, "llview", "lv", None)
    assert r["rc"] == 0 and r["rejects"]
    assert check_lines("llview", r["rejects"]) == {"bad_number", "wrong_field_count"}


def test_the_moab_shipper_names_the_line_of_a_record_too_large_to_send(tmp_path: Path) -> None:
    """A record whose message cannot fit is dead-lettered with its line (it carried 0)."""
    log = tmp_path / "m.log"
    log.write_bytes(with_ends(IN.mixed(b"".join(IN.MOAB_LINES[:200]), [b"junk\n"] * 3)))
    rec = Recorder(1)
    sh = MoabShipper(rec, "ns", "dl", 1, TimeBounds(), max_bytes=10, source="moab:test")
    asyncio.run(ship_files(sh, [str(log)], progress=False))
    dead = [orjson.loads(v) for t, _p, v in rec.sent if t == "dl"]
    lines = log.read_bytes().splitlines()
    assert [d["line"] for d in dead] == [
        k for k, ln in enumerate(lines, 1) if ln != b"junk"
    ]  # every record, in line order, each at its own line
    assert {d["reason"] for d in dead} == {"too_large"}
