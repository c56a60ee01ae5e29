"""Property tests (hypothesis) through the sources that apply the plausibility bounds: MoabFiles,
read_job_events and SampleTraceFiles read a file of arbitrary or near-valid content (plain,
gzip, truncated gzip, or starting with another format's magic bytes) and either raise UserError
or yield only records whose times lie inside the default TimeBounds; nothing is lost on the way:
every line of a Moab log, job-event file or sample trace is a record, a reject or an ignored
line, and every event or sample the parser gives is either yielded or rejected
(implausible_time / time_jump)."""

from __future__ import annotations

import gzip
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from models.formats.jobsource import FORMATS, iter_job_events
from models.formats.sampletrace import parse_trace
from models.records.jobevent import JobEvent
from models.records.nodestatus import Codebook
from models.records.plausible import TimeBounds, keep_plausible
from models.records.reject import Reject
from streams.contracts import RejectLog
from streams.errors import UserError
from streams.sources.jobevents import read_job_events
from streams.sources.moab import MoabFiles
from streams.sources.samples import SampleTraceFiles
from tests.models.formats.test_parsers_fuzz import (
    CHARS,
    MOAB_FIELDS,
    SACCT,
    SCALE,
    SWF_JOB,
    job_line,
    moab_line,
    near_moab,
    near_sample,
)

SOURCE = settings(  # examples per test below, scaled by DRAINWATCH_FUZZ_SCALE
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BOUNDS = TimeBounds()

# Only "\n" ends a line here (the sources' line splitting differs on lone CR, VT, FF, NEL...),
# so that the parser can be run on exactly the lines the source reads.
LINE_CHARS = CHARS.filter(lambda c: c not in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
one_line = st.text(LINE_CHARS, max_size=80)


def plain(s: str) -> str:
    """One line: the characters that end a line somewhere replaced by a blank."""
    return s.translate({ord(c): " " for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


# any second of years 1..9999: most are outside the bounds (1970..2100)
anytime = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59))
near_bounds = st.sampled_from(
    [datetime(1969, 12, 31, 23, 59, 59), datetime(1970, 1, 1), datetime(2099, 12, 31, 23, 59, 59)]
    + [datetime(2100, 1, 1), datetime(2014, 12, 31)]
)
# most records of a log lie close together (else the time-jump rule takes them)
usual = st.datetimes(min_value=datetime(2014, 12, 30), max_value=datetime(2015, 1, 2))
moab_stamp = st.builds(
    lambda d, off: d.strftime("%Y-%m-%dT%H:%M:%S") + ".000" + off,
    st.one_of(usual, usual, usual, anytime, near_bounds),
    st.sampled_from(["-0600", "+0000", "Z", "+2359", "-2359"]),
)
timed_moab = st.builds(
    lambda ts, node, state: moab_line([ts, "1 INFO ", node, state, "7", "none"]),
    moab_stamp,
    st.sampled_from(["1", "2", "n3"]),
    st.sampled_from(["Idle", "Busy", "Down"]),
)


@st.composite
def wrapped(draw: st.DrawFn, body: bytes) -> bytes:
    """The file as written: plain, gzip, gzip cut short, or behind another format's magic."""
    how = draw(st.sampled_from(["plain", "plain", "plain", "gzip", "cut", "magic"]))
    if how == "gzip":
        return gzip.compress(body)
    if how == "cut":
        z = gzip.compress(body)
        return z[: draw(st.integers(0, len(z)))]
    if how == "magic":
        magics = [b"\x1f\x8b", b"BZh9", b"\xfd7zXZ\x00", b"(\xb5/\xfd", b"PK\x03\x04", b"x^"]
        return draw(st.sampled_from(magics)) + body
    return body


@contextmanager
def files(contents: list[bytes]) -> Iterator[list[str]]:
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, data in enumerate(contents):
            p = Path(d) / f"in{i}.log"
            p.write_bytes(data)
            paths.append(str(p))
        yield paths


def lines_in(data: bytes) -> int:
    """Lines as the sources count them: a line ends at LF, CRLF or a bare CR, as
    ``bytes.splitlines`` cuts; a leading UTF-8 byte-order mark is not part of line 1
    (open_binary skips it), so a file holding only one has no line."""
    return len(data.removeprefix(b"\xef\xbb\xbf").splitlines())


def plausible_s(ts: float) -> bool:
    """Inside the default bounds (a time in (-0.001, 0) s too is before 1970-01-01)."""
    return BOUNDS.contains_s(ts)


# ---- Moab -----------------------------------------------------------------------------------

moab_file = st.lists(
    st.one_of(
        timed_moab,
        timed_moab,
        near_moab.map(plain),
        st.just(moab_line(MOAB_FIELDS)),
        one_line,
    ),
    min_size=1,
    max_size=15,
).map(lambda ls: "".join(f"{ln}\n" for ln in ls).encode("utf-8", "surrogatepass"))
moab_content = st.one_of(moab_file, moab_file, st.binary(max_size=300)).flatmap(
    lambda b: st.tuples(st.just(b), wrapped(b))
)


@settings(SOURCE, max_examples=int(150 * SCALE))
@given(st.lists(moab_content, min_size=1, max_size=2), st.integers(1, 400))
def test_moab_files_yield_only_plausible_records_and_count_every_line(
    contents: list[tuple[bytes, bytes]], chunk_bytes: int
) -> None:
    rejects = RejectLog()
    with files([written for _, written in contents]) as paths:
        try:
            src = MoabFiles(paths, Codebook(), chunk_bytes=chunk_bytes, progress=False)
            batches = list(src.batches(rejects))
        except UserError:
            event("UserError")
            return
    event(f"moab: records {bool(sum(len(b) for b in batches))}, rejects {bool(rejects.total)}")
    event(f"moab: implausible {rejects.by_reason['implausible_time'] > 0}")
    records = 0
    for b in batches:
        assert BOUNDS.all_within(b.ts_ms), b.ts_ms
        records += len(b)
    assert records == sum(st.records for st in src.inputs)
    assert rejects.total == sum(st.rejected for st in src.inputs)
    by_path = dict(zip(paths, contents, strict=True))
    for st_ in src.inputs:
        assert st_.lines == st_.records + st_.rejected + st_.ignored, st_
        body, written = by_path[st_.path]
        if written == body:  # read as written: every line of the file is counted
            assert st_.lines == lines_in(body)


# ---- job events -----------------------------------------------------------------------------

jobevent_time = st.builds(
    lambda ts, typ: f'{{"type": "{typ}", "ts": {ts!r}, "job": "1", "nodes": 1}}',
    st.one_of(
        st.floats(-1e12, 1e13),
        st.sampled_from([-0.0005, -1.0, 0.0, 4102444799.999, 4102444800.0, 1e11, -1e6]),
    ),
    st.sampled_from(["submit", "start", "end"]),
)
sacct_time = st.builds(
    lambda s, e: "|".join([*SACCT.split("|")[:10], s, s, s, e, *SACCT.split("|")[14:]]),
    st.one_of(anytime, near_bounds).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S")),
    st.one_of(anytime, near_bounds).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S")),
)
swf_time = st.builds(
    lambda t0, sub: f"; UnixStartTime: {t0}\n" + SWF_JOB.replace("1 0 ", f"1 {sub} ", 1),
    st.sampled_from([0, -(10**6), 4102444700, 10**11, 1_400_000_000]),
    st.sampled_from([0, 10, 3600, 10**9, 2**40]),
)
timed_job_line = {
    "jobevents": jobevent_time,
    "sacct": sacct_time,
    "jobcomp": st.builds(
        lambda d: f'{{"jobid": 1, "@submit": "{d}", "@start": "{d}", "@end": "{d}"}}',
        st.one_of(anytime, near_bounds).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S")),
    ),
    "swf": swf_time,
}


@st.composite
def job_file(draw: st.DrawFn, fmt: str) -> list[str]:
    line = st.one_of(timed_job_line[fmt], timed_job_line[fmt], job_line[fmt].map(plain), one_line)
    lines: list[str] = []
    for ln in draw(st.lists(line, max_size=10)):
        lines.extend(ln.split("\n"))  # the SWF one carries its header line
    return lines


@settings(SOURCE, max_examples=int(250 * SCALE))
@given(st.data(), st.sampled_from(FORMATS))
def test_read_job_events_yields_only_plausible_events_and_loses_none(
    data: st.DataObject, fmt: str
) -> None:
    lines = data.draw(job_file(fmt), label="lines")
    body = "".join(f"{ln}\n" for ln in lines).encode("utf-8", "surrogatepass")
    written = data.draw(wrapped(body), label="written")
    rejects = RejectLog()
    with files([written]) as paths:
        try:
            events, stats = read_job_events(fmt, paths, rejects)
        except UserError:
            event("UserError")
            return
    event(f"{fmt}: events {bool(events)}, implausible {rejects.by_reason['implausible_time'] > 0}")
    for e in events:
        assert isinstance(e, JobEvent) and plausible_s(e.ts), e
    (st_,) = stats
    assert st_.records == len(events) and st_.rejected == rejects.total
    if written == body:  # every event the parser gives is yielded or rejected, none lost
        parser_rejects: list[Reject] = []
        skipped: Counter[str] = Counter()
        parsed = list(iter_job_events(fmt, lines, "x", parser_rejects, skipped))
        assert st_.records + st_.rejected == len(parsed) + len(parser_rejects)
        # and every line is counted: the lines the parser skipped are the ignored ones
        assert st_.lines == len(lines) and st_.ignored == skipped.total(), st_


def test_an_event_a_fraction_of_a_millisecond_before_not_before_is_rejected() -> None:
    bad: list[Reject] = []
    kept = keep_plausible(
        [JobEvent("start", -0.0005, "1")], TimeBounds(), "x", lambda e: e.job, bad
    )
    assert not kept and [r.reason for r in bad] == ["implausible_time"]


# ---- node samples ---------------------------------------------------------------------------

timed_sample = st.builds(
    lambda ts: f'{{"ts": {ts!r}, "job": "1", "pid": 2, "node": "n1"}}',
    st.one_of(
        st.floats(-1e12, 1e13),
        st.sampled_from([-0.0005, 0.0, 4102444799.999, 4102444800.0, 1e11, -1e6]),
    ),
)
sample_file = st.lists(
    st.one_of(timed_sample, timed_sample, near_sample.map(plain), one_line), max_size=12
)


@settings(SOURCE, max_examples=int(100 * SCALE))
@given(sample_file, st.data())
def test_sample_trace_files_yield_only_plausible_samples_and_lose_none(
    lines: list[str], data: st.DataObject
) -> None:
    body = "".join(f"{ln}\n" for ln in lines).encode("utf-8", "surrogatepass")
    written = data.draw(wrapped(body), label="written")
    rejects = RejectLog()
    with files([written]) as paths:
        try:
            src = SampleTraceFiles(paths)
            batches = list(src.batches(rejects))
        except UserError:
            event("UserError")
            return
    samples = [s for b in batches for s in b]
    event(f"samples {bool(samples)}, implausible {rejects.by_reason['implausible_time'] > 0}")
    for s in samples:
        assert plausible_s(s.ts), s
    (st_,) = src.inputs
    assert st_.records == len(samples) and st_.rejected == rejects.total
    # one sample per line: every line read is a sample, a reject or (blank) ignored
    assert st_.lines == st_.records + st_.rejected + st_.ignored, st_
    if written == body:  # every non-blank line is a sample or a reject
        parser_rejects: list[Reject] = []
        parsed = list(parse_trace(lines, "x", parser_rejects))
        assert len(parsed) + len(parser_rejects) == sum(1 for ln in lines if ln.strip())
        assert st_.records + st_.rejected == len(parsed) + len(parser_rejects)
        assert st_.lines == len(lines) and st_.ignored == sum(1 for ln in lines if not ln.strip())


LONG = "x" * 1000  # longer than the max_line_bytes below: a reject, not a blank line
SAMPLE_LINE = '{"ts": 1e9, "job": "1", "pid": 2, "node": "n1"}'


@pytest.mark.parametrize(
    ("fmt", "text", "counts"),
    [
        ("jobevents", '{"type": "submit", "ts": 1e9, "job": "1"}\n\n', (1, 0, 1)),
        ("jobevents", f'\n{{"type": "submit", "ts": 1e9, "job": "1"}}\n{LONG}\n \n', (1, 1, 2)),
        ("jobcomp", '\n{"jobid": 1, "@end": "2016-12-27T20:12:01Z"}\n', (1, 0, 1)),
        ("swf", "; MaxNodes: 4\n" + SWF_JOB + "\n", (3, 0, 1)),
        ("swf", "; MaxNodes: 4\n\n;\n" + SWF_JOB + f"\n{LONG}\n; end\n", (3, 1, 4)),
        ("sacct", "JobID|Submit|Start|End\n1|2016-12-27T20:12:01|Unknown|Unknown\n", (1, 0, 1)),
        ("sacct", SACCT + "\n" + SACCT.replace("|", ".0|", 1) + "\n\n", (3, 0, 2)),
        ("samples", SAMPLE_LINE + "\n\n", (1, 0, 1)),
        ("samples", f"\n{LONG}\n{SAMPLE_LINE}\n\t\n{{\n", (1, 2, 2)),
    ],
    ids=[
        "jobevents blank line",
        "jobevents blank and too long lines",
        "jobcomp blank line",
        "swf comment",
        "swf comments, blank and too long lines",
        "sacct header",
        "sacct step and blank line",
        "samples blank line",
        "samples blank, too long and bad lines",
    ],
)
def test_every_line_of_a_job_or_sample_file_is_counted(
    fmt: str, text: str, counts: tuple[int, int, int]
) -> None:
    """Each line is a record (a job line gives its events), a reject or ignored (blank lines,
    SWF comments, sacct headers and steps); a line over the length cap is a reject only."""
    rejects = RejectLog()
    with files([text.encode()]) as paths:
        if fmt == "samples":
            src = SampleTraceFiles(paths, max_line_bytes=500)
            list(src.batches(rejects))
            (st_,) = src.inputs
        else:
            _, (st_,) = read_job_events(fmt, paths, rejects, max_line_bytes=500)
    assert st_.lines == text.count("\n")
    assert (st_.records, st_.rejected, st_.ignored) == counts, st_
    assert st_.as_dict()["ignored"] == counts[2]
