"""Property tests over every parser in models/formats (hypothesis).

Two kinds of input: arbitrary bytes / text, and "near-valid" input, a valid line or record with a
few fields replaced by something nasty (huge, negative, NaN / inf, years 0 and 9999, empty,
Unicode digits, NUL, very long) and sometimes cut or spliced. The properties:

* no exception but the parser's documented one (most parsers return Reject records instead);
* every record that comes out has finite times, non-negative durations and counts, integers that
  fit in int64 (the analytics put them in numpy columns), and values of its declared types;
* nothing vanishes: every line that is not blank, a comment or a header yields a record or a
  reject (the Moab parser: lines = records + rejects + ignored, fast path = line definition).
"""

from __future__ import annotations

import json
import math
import os
import time
import tracemalloc
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import fields as dc_fields
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.formats import llview, procfs, slurmnodes
from models.formats.hostlist import MAX_HOSTS, HostlistError, compress_hostlist, expand_hostlist
from models.formats.jobcomp import jobcomp_record_events
from models.formats.jobsource import FORMATS, iter_job_events
from models.formats.moab import ParsedChunk, classify_line, parse_lines_slow, parse_moab_chunk
from models.formats.sacct import SacctJob, parse_sacct, sacct_job_events
from models.formats.sampletrace import SampleTraceError, parse_sample, parse_trace
from models.formats.swf import SwfError, SwfJob, parse_header, parse_swf, parse_swf_job
from models.formats.swfevents import iter_swf_events, swf_job_events
from models.records.jobevent import (
    EVENT_TYPES,
    JobEvent,
    JobEventError,
    jobevent_from_dict,
    parse_jobevent_line,
)
from models.records.nodesample import NodeSample
from models.records.nodestatus import KNOWN_STATES, NO_JOB, Codebook, NodeStatus
from models.records.reject import Reject
from tests.models.formats.test_moab import same

# DRAINWATCH_FUZZ_SCALE=20 runs twenty times the examples (a deep run; the default keeps this
# file under ~10 s)
SCALE = float(os.environ.get("DRAINWATCH_FUZZ_SCALE", "1"))
FUZZ = settings(
    max_examples=int(150 * SCALE),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW = settings(FUZZ, max_examples=int(60 * SCALE))

INT64_MAX = 2**63 - 1
# Moab times: years 0001..9999 with offsets up to +-23:59
MIN_MS = -62_135_596_800_000 - 86_400_000
MAX_MS = 253_402_300_800_000 + 86_400_000

# ---- values -------------------------------------------------------------------------------

LONG = "x" * 20_000
NASTY = [
    "",
    " ",
    "-1",
    "-0",
    "0",
    "-5",
    "1.5",
    "-1.5",
    "-0.0005",
    "1e308",
    "1e400",
    "-1e400",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "1_000",
    "0x10",
    "\u00b2",  # superscript two: str.isdigit() but not int()
    "\u0663",  # Arabic-Indic three: int() reads it
    "\uff15",  # fullwidth five
    "\x00",
    "a\x00b",
    "\u2028",
    "\x85",
    "\x1c",
    "\u00e9",
    "\u2603",
    "'",
    "|",
    ",",
    ":",
    ";",
    "[",
    "]",
    "[1-2]",
    '"',
    "{}",
    "[]",
    "null",
    "true",
    "0000-01-01T00:00:00",
    "0001-01-01T00:00:00",
    "9999-12-31T23:59:59",
    "2016-02-30T00:00:00",
    "1969-12-31T23:59:59",
    "2100-01-01T00:00:00",
    "2016-12-22T10:11:12+23:59",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "99999999999999999999",
    "9223372036854775808",
    "18446744073709551616",
    "9" * 400,
    "9" * 400 + ".0",
    "1" * 5000,
    "1-" + "9" * 400,
    LONG,
]

CHARS = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(list("0123456789-:.|',;[]{}\" \t\r\n\x00\u00b2\u0663\x85")),
)
value = st.one_of(
    st.sampled_from(NASTY),
    st.text(CHARS, max_size=12),
    st.integers().map(str),
    st.floats().map(repr),
)
# times near and far: any second of years 1..9999, in the layouts the formats print
when = st.builds(
    lambda d, fmt: d.strftime(fmt).replace("+0000", "+00:00"),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from(["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S+0000", "%Y-%m-%d"]),
)
time_value = st.one_of(when, when, value)
junk_text = st.text(CHARS, max_size=200)
junk_lines = st.lists(st.text(CHARS, max_size=60), max_size=8)


@st.composite
def damaged(draw: st.DrawFn, line: str) -> str:
    """``line`` as is, cut short, or with a few characters inserted or one deleted."""
    how = draw(st.sampled_from(["keep", "keep", "keep", "cut", "insert", "delete"]))
    if how == "keep" or not line:
        return line
    i = draw(st.integers(0, len(line)))
    if how == "cut":
        return line[:i]
    if how == "insert":
        return line[:i] + draw(st.text(CHARS, min_size=1, max_size=3)) + line[i:]
    return line[:i] + line[i + 1 :]


@st.composite
def mutated(
    draw: st.DrawFn,
    fields: list[str],
    values: st.SearchStrategy[str] = value,
    times: tuple[int, ...] = (),
) -> list[str]:
    """``fields`` with one to three of them replaced by a nasty value; the fields at ``times``
    (times of the record) are picked more often and get times near and far."""
    out = list(fields)
    pick = st.integers(0, len(out) - 1)
    if times:
        pick = st.one_of(pick, st.sampled_from(times))
    for i in draw(st.lists(pick, min_size=1, max_size=3)):
        out[i] = draw(time_value if i in times else values)
    return out


def lines_of(text: str, as_bytes: bool) -> list[Any]:
    """Lines as a text file gives them (with their ends), as str or as UTF-8 bytes."""
    lines = text.splitlines(keepends=True)
    return [ln.encode("utf-8", "surrogatepass") for ln in lines] if as_bytes else lines


# ---- record checks ------------------------------------------------------------------------


def check_int(v: Any, name: str, optional: bool = True) -> None:
    if v is None and optional:
        return
    assert isinstance(v, int) and not isinstance(v, bool), (name, v)
    assert 0 <= v <= INT64_MAX, (name, v)


def check_float(v: Any, name: str, optional: bool = True, non_negative: bool = False) -> None:
    if v is None and optional:
        return
    assert isinstance(v, float), (name, v)
    assert math.isfinite(v), (name, v)
    if non_negative:
        assert v >= 0, (name, v)


def check_opt_str(v: Any, name: str) -> None:
    assert v is None or isinstance(v, str), (name, v)


def check_event(e: Any) -> None:
    assert isinstance(e, JobEvent)
    assert e.type in EVENT_TYPES
    check_float(e.ts, "ts", optional=False)
    assert isinstance(e.job, str) and e.job, e
    for k in ("user", "group", "account", "partition", "name", "state"):
        check_opt_str(getattr(e, k), k)
    check_int(e.nodes, "nodes")
    check_int(e.cores, "cores")
    check_float(e.req_walltime, "req_walltime", non_negative=True)
    assert isinstance(e.node_list, tuple) and all(isinstance(n, str) for n in e.node_list)
    assert len(e.node_list) <= MAX_HOSTS
    assert e.exit_code is None or (isinstance(e.exit_code, int) and -(2**63) <= e.exit_code)
    assert e.exit_code is None or e.exit_code <= INT64_MAX
    assert e.backfill is None or isinstance(e.backfill, bool)


def check_job_events(evs: list[JobEvent]) -> None:
    """The events of ONE record: each valid, and submit <= start <= end."""
    for e in evs:
        check_event(e)
    assert len({e.job for e in evs}) <= 1
    times = {e.type: e.ts for e in evs}
    order = [times[t] for t in EVENT_TYPES if t in times]
    assert order == sorted(order), evs


def check_rejects(rejects: list[Reject], source: str = "") -> None:
    for r in rejects:
        assert isinstance(r, Reject) and isinstance(r.reason, str) and r.reason
        assert isinstance(r.text, str) and r.source == source and r.lineno >= 0
        r.tsv()


def check_node_status(r: NodeStatus) -> None:
    assert isinstance(r.ts_ms, int) and MIN_MS <= r.ts_ms <= MAX_MS
    assert isinstance(r.node, str) and r.node
    assert isinstance(r.state, str) and r.state and r.state == r.state.strip()
    for ids in (r.rsvlist, r.joblist):
        assert isinstance(ids, tuple) and all(
            isinstance(x, str) and x == x.strip() and x for x in ids
        )


def check_chunk(p: ParsedChunk, book: Codebook, first_lineno: int) -> None:
    b = p.batch
    n = len(b)
    for k in ("ts_ms", "node", "state", "rsv", "run_row", "run_job"):
        a = getattr(b, k)
        assert a.dtype == np.int64 and a.ndim == 1, k
    assert b.has_job.dtype == bool
    assert b.node.size == b.state.size == b.rsv.size == b.has_job.size == n
    assert b.run_row.size == b.run_job.size
    if n:
        assert MIN_MS <= int(b.ts_ms.min()) and int(b.ts_ms.max()) <= MAX_MS
        assert 0 <= int(b.node.min()) and int(b.node.max()) < len(book.nodes)
        assert 0 <= int(b.state.min()) and int(b.state.max()) < len(book.states)
        assert int(b.rsv.min()) >= NO_JOB and int(b.rsv.max()) < len(book.jobs)
    if b.run_row.size:
        assert np.all(np.diff(b.run_row) >= 0)
        assert 0 <= int(b.run_row.min()) and int(b.run_row.max()) < n
        assert 0 <= int(b.run_job.min()) and int(b.run_job.max()) < len(book.jobs)
    assert b.has_job.tolist() == (np.bincount(b.run_row, minlength=n) > 0).tolist()
    assert all(book.nodes.names) and all(s == s.strip() and s for s in book.states.names)
    assert p.lines == n + len(p.rejects) + p.ignored
    assert p.ignored >= 0
    for r in p.rejects:
        assert first_lineno <= r.lineno < first_lineno + p.lines
    check_rejects(p.rejects, "fz")


# ---- Moab ---------------------------------------------------------------------------------

MOAB_TS = [
    "2014-12-31T00:03:19.696-0600",
    "0000-01-01T00:00:00.000-0600",
    "0001-01-01T00:00:00.000+2359",
    "9999-12-31T23:59:59.999-2359",
    "2014-12-31T00:03:19.696+9999",
    "2014-12-31T00:03:19.696+2400",
    "2014-12-31T00:03:19.-0600",
    "2014-12-31T00:03:19." + "9" * 5000 + "Z",
    "\uff12\uff10\uff11\uff14-12-31T00:03:19.696-0600",
    "\u0662\u0660\u0661\u0664-12-31T00:03:19.696-0600",
    "2014-12-31T00:03:19.696-\u0660\u0666\u0660\u0660",
    "2014-12-31T00:03:19.696-0600\x00",
    "2014-02-29T00:00:00.000Z",
    "2014-12-31T24:00:00.000Z",
    "2014-12-31 00:03:19.696-0600",
    "2014-12-31T00:03:19.696-06:00",
]
moab_value = st.one_of(value, st.sampled_from(MOAB_TS))
MOAB_FIELDS = ["2014-12-31T00:03:19.696-0600", "21166 INFO ", "27453", "Idle", "1,2", "none"]


def moab_line(f: list[str]) -> str:
    ts, head, node, state, rsv, job = f
    return f"{ts} {head} Node '{node}' status: state='{state}' rsvlist='{rsv}' joblist='{job}'"


near_moab = st.builds(moab_line, mutated(MOAB_FIELDS, moab_value)).flatmap(damaged)
valid_moab = st.builds(
    moab_line,
    st.tuples(
        st.sampled_from(MOAB_TS[:1] + ["2015-01-01T00:00:00.000Z"]),
        st.just("1 INFO "),
        st.sampled_from(["1", "n2", "c0"]),
        st.sampled_from([*KNOWN_STATES, "flaky"]),
        st.sampled_from(["none", "7", "8,9"]),
        st.sampled_from(["none", "7", "8,9"]),
    ).map(list),
)
moab_piece = st.one_of(
    valid_moab.map(str.encode),
    near_moab.map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.binary(max_size=40),
    st.text(CHARS, max_size=40).map(str.encode),
)
moab_body = st.one_of(
    st.binary(max_size=400),
    st.lists(
        st.tuples(
            moab_piece, st.sampled_from([b"\n", b"\r\n", b"\r", b"\n\n", b"\x00\n", b"\x85"])
        ),
        max_size=12,
    ).map(lambda ps: b"".join(p + sep for p, sep in ps)),
)
# chunk starts polars' reader takes for compressed input (it decompresses or raises OSError)
MAGIC = [b"", b"", b"", b"x^", b"x\x9c", b"\x1f\x8b", b"(\xb5/\xfd"]
MAGIC.append(zlib.compress((moab_line(MOAB_FIELDS) + "\n").encode()))
moab_chunk = st.tuples(st.sampled_from(MAGIC), moab_body).map(b"".join)


@FUZZ
@given(st.one_of(junk_text, near_moab))
def test_moab_classify_line_gives_a_plausible_record_a_reason_or_none(line: str) -> None:
    r = classify_line(line)
    if isinstance(r, NodeStatus):
        check_node_status(r)
    else:
        assert r is None or (isinstance(r, str) and r)


@FUZZ
@given(moab_chunk, st.integers(1, 10**6))
def test_moab_chunk_never_raises_counts_every_line_and_equals_the_line_definition(
    data: bytes, first_lineno: int
) -> None:
    fb, sb = Codebook(), Codebook()
    fast = parse_moab_chunk(data, fb, "fz", first_lineno)
    check_chunk(fast, fb, first_lineno)
    slow = parse_lines_slow(data, sb, "fz", first_lineno)
    check_chunk(slow, sb, first_lineno)
    same(fast, fb, slow, sb)


# ---- hostlist -----------------------------------------------------------------------------

HOST_CHARS = st.sampled_from(list("[]-,0123456789ab ") + ["\u00b2", "\u0663", "\x00", "\u2028"])
near_hostlist = st.one_of(
    st.text(HOST_CHARS, max_size=40),
    st.text(CHARS, max_size=40),
    st.builds(
        lambda pre, lo, hi, suf: f"{pre}[{lo}-{hi}]{suf}",
        st.sampled_from(["n", "c-", "", "r[1-2]-"]),
        st.one_of(st.integers(0, 70_000).map(str), value),
        st.one_of(st.integers(0, 70_000).map(str), value),
        st.sampled_from(["", "x", ",m[1-3]", ",a[0-65535],b[0-65535],c[0-65535],d[0-65535]"]),
    ),
    st.sampled_from(
        [
            "r[0-65535],s[0-65535],t[0-65535],u[0-65535],v[0-1]",
            "a[0-255]b[0-255]c[0-1]",
            "a[" + ",".join(["0-65535"] * 3) + "]",
            "a[" + "1" * 5000 + "]",
            "a[0-" + "9" * 400 + "]",
        ]
    ),
)


@FUZZ
@given(near_hostlist)
def test_hostlist_raises_only_hostlist_error_and_stays_under_max_hosts(expr: str) -> None:
    try:
        hosts = expand_hostlist(expr)
    except HostlistError as e:
        assert e.reason
        return
    assert isinstance(hosts, list) and len(hosts) <= MAX_HOSTS
    assert all(isinstance(h, str) and h for h in hosts)
    if len(hosts) <= 5000:
        assert expand_hostlist(compress_hostlist(hosts)) == hosts


def test_one_bracket_of_many_large_ranges_is_refused_without_expanding_it() -> None:
    """Found while writing the property above (which sees only the result, not the memory on
    the way): the cap on one name (MAX_RANGE) was checked only after every range of a bracket
    was expanded, so 'a[0-65535,0-65535,...]' (800 bytes) built 6.5 M names (about 0.5 GB)
    before being refused; 8 KB of it, 65 M names."""
    expr = "a[" + ",".join(["0-65535"] * 100) + "]"
    tracemalloc.start()
    try:
        with pytest.raises(HostlistError) as e:
            expand_hostlist(expr)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert e.value.reason == "range_too_large"
    assert peak < 64 << 20, peak


# ---- sacct --------------------------------------------------------------------------------

SACCT = (
    "165381|165381|phillips|crumpet|coconut-cream|chaff|chaff|45789|chaff|196224|"
    "2016-12-27T20:12:01|2016-12-27T20:12:01|2016-12-27T20:12:01|2017-01-01T20:12:27|"
    "5-00:00:26|1:0|TIMEOUT|8|64|64|8000Mn|cpu=64,mem=62.50G,node=8|"
    "billing=64,cpu=64,mem=62.50G,node=8|5-00:00:00|"
    "cpn-f13-03-[01-02],cpn-f13-04-[01-02]|3eb3511f"
)
SACCT_HEADER = "JobID|Submit|Start|End|Elapsed|NNodes|NCPUS|NodeList|Timelimit|Flags"
SACCT_NAMED = (
    "7|2016-12-27T20:12:01|2016-12-27T20:12:01|2016-12-27T20:13:01|00:01:00|1|2|n1|5|SchedBackfill"
)
SACCT_TIMES = (10, 11, 12, 13)
near_sacct = st.one_of(
    st.builds("|".join, mutated(SACCT.split("|"), times=SACCT_TIMES)).flatmap(damaged),
    st.builds("|".join, mutated([*SACCT.split("|"), "SchedBackfill"], times=SACCT_TIMES)),
)


@st.composite
def sacct_text(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.one_of(near_sacct, st.just(SACCT), junk_text), max_size=6))
    if draw(st.booleans()):
        named = st.builds("|".join, mutated(SACCT_NAMED.split("|"), times=(1, 2, 3)))
        named |= st.just(SACCT_NAMED)
        lines = [SACCT_HEADER, *draw(st.lists(named, max_size=4)), *lines]
    return "\n".join(lines) + "\n"


def check_sacct_job(j: SacctJob) -> None:
    assert isinstance(j, SacctJob) and isinstance(j.jobid, str) and j.jobid
    check_float(j.submit, "submit", optional=False)
    for k in ("eligible", "start", "end"):
        check_float(getattr(j, k), k)
    for k in ("elapsed", "timelimit", "reqmem_mb"):
        check_float(getattr(j, k), k, non_negative=True)
    if j.start is not None:
        assert j.start >= j.submit
        if j.end is not None:
            assert j.end >= j.start
    for k in ("gid", "uid", "exit_code", "exit_signal", "nnodes", "ncpus", "reqcpus"):
        check_int(getattr(j, k), k)
    for k in ("jobidraw", "cluster", "partition", "qos", "account", "group", "user", "state"):
        check_opt_str(getattr(j, k), k)
    assert j.reqmem_per in (None, "node", "cpu")
    assert isinstance(j.nodelist, tuple) and len(j.nodelist) <= MAX_HOSTS
    assert j.backfill is None or isinstance(j.backfill, bool)
    check_job_events(sacct_job_events(j))


@FUZZ
@given(st.data(), st.sampled_from([None, "America/Chicago", "Asia/Kolkata"]), st.booleans())
def test_sacct_records_are_plausible_and_bad_lines_rejected(
    data: st.DataObject, tz: str | None, as_bytes: bool
) -> None:
    text = data.draw(sacct_text())
    rejects: list[Reject] = []
    for job in parse_sacct(lines_of(text, as_bytes), rejects, "fz", tz=tz, steps=True):
        check_sacct_job(job)
    check_rejects(rejects, "fz")


# ---- jobcomp and the simulator's JSON lines -----------------------------------------------

JOBCOMP: dict[str, Any] = {
    "jobid": 4242,
    "username": "alice",
    "user_id": 1001,
    "groupname": "physics",
    "@start": "2025-03-04T10:00:00",
    "@end": "2025-03-04T11:30:00",
    "partition": "batch",
    "nodes": "c[001-003],gpu07",
    "total_cpus": 96,
    "total_nodes": 4,
    "derived_ec": "0:0",
    "exit_code": "0:0",
    "state": "COMPLETED",
    "@submit": "2025-03-04T09:58:30",
    "time_limit": 7200,
    "job_name": "lammps",
    "account": "phys01",
}
JOBEVENT: dict[str, Any] = {
    "type": "start",
    "ts": 1709302348.5,
    "job": "12",
    "user": "u",
    "group": "g",
    "account": "a",
    "partition": "p",
    "name": "n",
    "nodes": 2,
    "cores": 8,
    "req_walltime": 3600,
    "node_list": ["n1", "n2"],
    "state": "RUNNING",
    "exit_code": 0,
    "backfill": False,
}
json_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    value,
    st.lists(st.one_of(st.integers(), value), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(["RUNNING", "running", "COMPLETED", "submit", "start", "end", "x"]),
)


json_time = st.one_of(
    when,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(min_value=-1e12, max_value=1e13),
    st.floats(),
)


@st.composite
def mutated_json(
    draw: st.DrawFn, base: dict[str, Any], wrap: bool = False, times: tuple[str, ...] = ()
) -> str:
    """``base`` with one to three keys removed or given a nasty value (the keys ``times`` more
    often, and times near and far)."""
    d = dict(base)
    pick = st.sampled_from(sorted(d))
    if times:
        pick = st.one_of(pick, st.sampled_from(times))
    for k in draw(st.lists(pick, min_size=1, max_size=3)):
        if draw(st.integers(0, 5)) == 0:
            d.pop(k, None)
        else:
            d[k] = draw(json_time if k in times else json_value)
    if wrap and draw(st.booleans()):
        d = {"_source": d}
    return json.dumps(d)  # NaN / Infinity / huge integers included: not all of it is JSON


near_jobcomp = mutated_json(JOBCOMP, wrap=True, times=("@submit", "@start", "@end")).flatmap(
    damaged
)
near_jobevent = mutated_json(JOBEVENT, times=("ts",)).flatmap(damaged)


@FUZZ
@given(st.one_of(near_jobcomp, junk_text, st.just(json.dumps(JOBCOMP))), st.booleans())
def test_jobcomp_record_events_raise_only_job_event_error(line: str, start_records: bool) -> None:
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    try:
        evs = jobcomp_record_events(d, start_records=start_records)
    except JobEventError as e:
        assert e.reason
        return
    assert evs
    check_job_events(evs)


@FUZZ
@given(st.one_of(near_jobevent, junk_text, st.just(json.dumps(JOBEVENT))))
def test_jobevent_lines_raise_only_job_event_error(line: str) -> None:
    try:
        e = parse_jobevent_line(line)
    except JobEventError as err:
        assert err.reason
        return
    check_event(e)


_JOBEVENT_EXTRA = st.fixed_dictionaries(
    {},
    optional={
        "nodes": st.one_of(st.integers(-5, 2**64), st.floats(), st.booleans(), st.none()),
        "cores": st.one_of(st.integers(0, 2**63), st.just(4.0), st.text(max_size=3)),
        "req_walltime": st.one_of(st.integers(-1, 10**400), st.floats(), st.booleans()),
        "exit_code": st.one_of(st.integers(-(2**64), 2**64), st.floats(), st.booleans()),
        "backfill": st.one_of(st.booleans(), st.integers(0, 1), st.none()),
        "reserved_start": st.one_of(
            st.floats(),
            st.integers(0, 2**40),
            st.sampled_from(["2024-01-01T00:00:00Z", "2024-01-01T00:00:00", "x"]),
        ),
        "node_list": st.one_of(
            st.lists(st.sampled_from(["n1", "", "n2"])),
            st.just("n1,,n2"),
            st.just(["n1", 2]),
            st.integers(),
        ),
        "ts": st.one_of(
            st.floats(),
            st.integers(-(2**70), 2**70),
            st.booleans(),
            st.just("2024-01-01T00:00:00+01:00"),
        ),
        "user": st.one_of(st.text(max_size=3), st.integers(), st.none(), st.booleans()),
        "state": st.one_of(st.text(max_size=3), st.integers(), st.none()),
        "type": st.sampled_from(["submit", "start", "end", "x", None]),
        "job": st.one_of(st.text(max_size=3), st.integers(), st.none()),
    },
)


@FUZZ
@given(st.one_of(near_jobevent, junk_text, st.just(json.dumps(JOBEVENT))), _JOBEVENT_EXTRA)
def test_jobevent_row_equals_the_checked_event_field_by_field(line: str, extra: Any) -> None:
    """The live path's row form (models.records.jobevent.jobevent_row, plain type tests for
    the common record) accepts exactly what jobevent_from_dict accepts, with the same fields
    in order and the same reasons; the row read back from JSON is the same event."""
    from dataclasses import astuple

    from models.records.jobevent import jobevent_from_row, jobevent_row

    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    for doc in (d, {**d, **extra} if isinstance(d, dict) else extra):
        try:
            want = jobevent_from_dict(doc)
        except JobEventError as err:
            with pytest.raises(JobEventError) as got:
                jobevent_row(doc)
            assert got.value.reason == err.reason
            continue
        row = jobevent_row(doc)
        assert tuple(row) == astuple(want)
        assert [type(v) for v in row] == [type(v) for v in astuple(want)]
        assert jobevent_from_row(orjson.loads(orjson.dumps(row))) == want


@pytest.mark.parametrize(
    "node_list",
    ["5", "true", "false", "0", "{}", '{"n1": 1}', '["n1", 2]', '["n1", null]', '[["n1"]]'],
)
def test_jobevent_node_list_of_another_type_is_rejected(node_list: str) -> None:
    """Found by the fuzz test above: a number or boolean node list raised TypeError."""
    with pytest.raises(JobEventError) as e:
        parse_jobevent_line('{"type":"start","ts":1,"job":"a","node_list":' + node_list + "}")
    assert e.value.reason == "bad_node_list"


@pytest.mark.parametrize(
    ("node_list", "nodes"),
    [
        ("null", ()),
        ('""', ()),
        ("[]", ()),
        ('"n1,,n2"', ("n1", "n2")),
        ('["n1", "", "n2"]', ("n1", "n2")),
    ],
)
def test_jobevent_node_list_is_a_list_or_a_string_of_names(
    node_list: str, nodes: tuple[str, ...]
) -> None:
    e = parse_jobevent_line('{"type":"start","ts":1,"job":"a","node_list":' + node_list + "}")
    assert e.node_list == nodes


@pytest.mark.parametrize(
    ("field", "reason"),
    [
        ('"nodes": 1e23', "bad_nodes"),
        ('"nodes": 9223372036854775808', "bad_nodes"),
        ('"nodes": 9.223372036854776e18', "bad_nodes"),  # 2**63 as a float
        ('"cores": 9223372036854775808', "bad_cores"),
        ('"cores": 1e300', "bad_cores"),
        ('"exit_code": 18446744073709551615', "bad_exit_code"),
        ('"exit_code": 9223372036854775808', "bad_exit_code"),
        ('"exit_code": -9223372036854775809', "bad_exit_code"),  # orjson: a float below int64
        ('"req_walltime": -1', "bad_req_walltime"),
    ],
)
def test_jobevent_integers_beyond_int64_are_rejected(field: str, reason: str) -> None:
    """Found by the fuzz test above: 1e23 nodes became 10**23, whose to_json() raised
    TypeError 'Integer exceeds 64-bit range' (an internal error in replay)."""
    with pytest.raises(JobEventError) as e:
        parse_jobevent_line('{"type": "end", "ts": 1, "job": "a", ' + field + "}")
    assert e.value.reason == reason


def test_jobevent_values_at_the_int64_edges_are_kept_and_written_back() -> None:
    line = (
        '{"type": "end", "ts": 1, "job": "a", "nodes": 9223372036854775807, "cores": 4.0, '
        '"exit_code": -9223372036854775808, "req_walltime": 1e308}'
    )
    e = parse_jobevent_line(line)
    assert (e.nodes, e.cores, e.exit_code) == (2**63 - 1, 4, -(2**63))
    assert parse_jobevent_line(e.to_json()) == e


@pytest.mark.parametrize(
    "d",
    [
        {"nodes": float("nan")},
        {"nodes": float("inf")},
        {"cores": 2.5},
        {"nodes": -1},
        {"nodes": 10**30},
        {"exit_code": 2**64},
        {"exit_code": 1.0},
        {"req_walltime": float("nan")},
        {"req_walltime": float("inf")},
        {"req_walltime": 10**400},
        {"nodes": True},
    ],
)
def test_jobevent_from_dict_rejects_non_finite_and_out_of_range_numbers(d: dict[str, Any]) -> None:
    """Dicts that JSON text cannot give (NaN, inf, integers beyond 64 bits) are rejected too."""
    with pytest.raises(JobEventError):
        jobevent_from_dict({"type": "end", "ts": 1, "job": "a", **d})


# ---- SWF ----------------------------------------------------------------------------------

SWF_JOB = "1 0 10 3600 4 -1 -1 4 7200 -1 1 5 3 7 1 -1 -1 -1"
SWF_HEADER = [
    "; UnixStartTime: 843480031",
    "; MaxNodes: 100",
    "; MaxProcs: 400",
    "; Note: submit times are actually start times",
]
swf_time = st.one_of(value, st.integers(-2, 2**64).map(str))
near_swf_job = st.builds(" ".join, mutated(SWF_JOB.split(), swf_time)).flatmap(damaged)
near_swf_header = st.builds(
    lambda k, v: f"; {k}: {v}",
    st.sampled_from(["UnixStartTime", "MaxNodes", "MaxProcs", "Note", "TimeZoneString"]),
    value,
)


@st.composite
def swf_text(draw: st.DrawFn) -> str:
    head = draw(st.lists(st.one_of(st.sampled_from(SWF_HEADER), near_swf_header), max_size=4))
    body = draw(st.lists(st.one_of(near_swf_job, st.just(SWF_JOB), junk_text), max_size=6))
    return "\n".join([*head, *body]) + "\n"


def check_swf_job(j: SwfJob) -> None:
    assert isinstance(j, SwfJob)
    check_int(j.job, "job", optional=False)
    check_int(j.submit, "submit", optional=False)
    for f in dc_fields(SwfJob):
        v = getattr(j, f.name)
        if f.name in ("cpu_avg", "mem_used", "mem_req"):
            check_float(v, f.name, non_negative=True)
        else:
            check_int(v, f.name)


@FUZZ
@given(swf_text(), st.booleans(), st.sampled_from([None, 4.0]))
def test_swf_jobs_and_events_are_plausible_and_bad_lines_rejected(
    text: str, as_bytes: bool, ppn: float | None
) -> None:
    rejects: list[Reject] = []
    header, jobs = parse_swf(lines_of(text, as_bytes), rejects, "fz")
    t0 = float(header.unix_start_time or 0)
    for j in jobs:
        check_swf_job(j)
        check_job_events(swf_job_events(j, t0, ppn))
    check_rejects(rejects, "fz")
    ev_rejects: list[Reject] = []
    for e in iter_swf_events(lines_of(text, as_bytes), ev_rejects, "fz", procs_per_node=ppn):
        check_event(e)
    assert len(ev_rejects) == len(rejects)


@FUZZ
@given(st.one_of(near_swf_job, junk_text))
def test_swf_job_line_raises_only_swf_error(line: str) -> None:
    try:
        check_swf_job(parse_swf_job(line))
    except SwfError as e:
        assert e.reason


@pytest.mark.parametrize(
    "line",
    [
        "; a" + " " * 100_000 + "x",  # no colon after a long run of blanks
        "; Key: a" + " " * 100_000 + "b",  # a value with a long run of blanks inside
        ";" + " a" * 50_000,
    ],
)
def test_swf_header_line_of_many_blanks_parses_in_linear_time(line: str) -> None:
    """Found by reading the header pattern: its lazy groups next to \\s* backtracked
    quadratically (100 KB of blanks took seconds, a 1 MiB comment line would take hours)."""
    t = time.perf_counter()
    parse_header([line])
    assert time.perf_counter() - t < 1.0


# ---- every job format through the one entry point -----------------------------------------


def _skipped(fmt: str, line: str) -> bool:
    """Lines a job format passes over without a record or a reject: blanks, SWF comments,
    sacct headers and job steps."""
    s = line.strip()
    if not s:
        return True
    if fmt == "swf":
        return s.startswith(";")
    if fmt == "sacct":
        f = line.rstrip("\r\n").split("|")
        # a step of 26 fields or more (more: a '|' in the job name, joined back)
        return f[0].strip().lower() == "jobid" or (len(f) >= 26 and "." in f[0])
    return False


job_line = {
    "sacct": near_sacct,
    "jobcomp": near_jobcomp,
    "swf": near_swf_job,
    "jobevents": near_jobevent,
}


@FUZZ
@given(st.data(), st.sampled_from(FORMATS), st.booleans())
def test_iter_job_events_accounts_for_every_line(
    data: st.DataObject, fmt: str, as_bytes: bool
) -> None:
    """Each line alone: events (valid, in submit <= start <= end order) or a reject, unless the
    format skips it (blank, comment, header, step)."""
    line = data.draw(st.one_of(job_line[fmt], st.text(CHARS, max_size=80)), label="line")
    raw = line.encode("utf-8", "surrogatepass") if as_bytes else line
    rejects: list[Reject] = []
    ignored: Counter[str] = Counter()
    evs = list(iter_job_events(fmt, [raw], source="fz", rejects=rejects, ignored=ignored))
    check_rejects(rejects, "fz")
    # exactly one of: events, a reject, ignored (counted by its kind)
    assert (len(evs) > 0) + len(rejects) + ignored.total() == 1, (fmt, line, rejects, ignored)
    assert not ignored or _skipped(fmt, line), (fmt, line, ignored)
    assert all(r.lineno == 1 for r in rejects)
    # one input line may be several lines to the parser only through splitlines(); a line
    # here holds no newline the parsers would split on
    if fmt != "jobevents":
        check_job_events(evs)
    else:
        for e in evs:
            check_event(e)
    if not _skipped(fmt, line):
        assert len(evs) + len(rejects) >= 1, (fmt, line)


JOBCOMP_LINE = json.dumps(JOBCOMP)
SACCT_STEP = SACCT.replace("165381|165381|", "165381.batch|165381.batch|", 1)


@pytest.mark.parametrize(
    ("fmt", "lines", "ignored", "rejected"),
    [
        ("jobevents", [json.dumps(JOBEVENT), "", "  \t", "{"], {"blank": 2}, 1),
        ("jobcomp", ["", JOBCOMP_LINE, " ", "[]"], {"blank": 2}, 1),
        (
            "swf",
            [*SWF_HEADER, "", SWF_JOB, "; a later comment", "1 2"],
            {"comment": 5, "blank": 1},
            1,
        ),
        (
            "sacct",
            [
                SACCT_HEADER,
                SACCT_NAMED,
                "",
                "7.0|" + SACCT_NAMED.split("|", 1)[1],
                "JobID|Start",
                "x",
            ],
            {"header": 1, "blank": 1, "job_step": 1},
            2,
        ),
        ("sacct", [SACCT, SACCT_STEP, "\n"], {"job_step": 1, "blank": 1}, 0),
    ],
    ids=["jobevents", "jobcomp", "swf", "sacct named", "sacct 26 fields"],
)
def test_lines_without_a_record_are_counted_as_ignored_by_kind(
    fmt: str, lines: list[str], ignored: dict[str, int], rejected: int
) -> None:
    """Blank lines, SWF comments, sacct header lines and skipped job steps are neither records
    nor rejects: the parser counts them, so a source can account for every line."""
    rejects: list[Reject] = []
    counted: Counter[str] = Counter()
    evs = list(iter_job_events(fmt, lines, source="t", rejects=rejects, ignored=counted))
    assert dict(counted) == ignored and len(rejects) == rejected, (counted, rejects)
    assert evs
    # the counter is optional: the same events and rejects without it
    again: list[Reject] = []
    assert list(iter_job_events(fmt, lines, source="t", rejects=again)) == evs
    assert again == rejects


def test_blank_sample_lines_are_counted_as_ignored() -> None:
    counted: Counter[str] = Counter()
    rejects: list[Reject] = []
    lines = ["", json.dumps(SAMPLE), " \r\n", "{"]
    assert len(list(parse_trace(lines, "t", rejects, counted))) == 1
    assert dict(counted) == {"blank": 2} and [r.reason for r in rejects] == ["bad_json"]


@FEW
@given(st.sampled_from(FORMATS), st.binary(max_size=300), st.booleans())
def test_iter_job_events_survives_arbitrary_bytes(fmt: str, data: bytes, as_bytes: bool) -> None:
    lines: Iterable[Any] = (
        data.splitlines(keepends=True)
        if as_bytes
        else data.decode("utf-8", "replace").splitlines(keepends=True)
    )
    rejects: list[Reject] = []
    for e in iter_job_events(fmt, lines, source="fz", rejects=rejects):
        check_event(e)
    check_rejects(rejects, "fz")


# ---- node-sample traces -------------------------------------------------------------------

SAMPLE: dict[str, Any] = {
    "ts": 1709302348.0,
    "job": "12345",
    "pid": 4242,
    "node": "n001",
    "command": "python",
    "vmPeak": 123456,
    "vmSize": 120000,
    "vmRss": 65536,
    "vmSwap": 0,
    "syscr": 10,
    "syscw": 20,
    "read_bytes": 4096,
    "write_bytes": 1048576,
    "core": 99.5,
    "receive": 123,
    "transmit": 456,
    "start": 1709302300.0,
    "cores": 4,
    "class": "normal",
    "fs": {"scratch": [666.5, 0.0]},
}
near_sample = mutated_json(SAMPLE, times=("ts", "start")).flatmap(damaged)


def check_sample(s: NodeSample) -> None:
    assert isinstance(s, NodeSample)
    check_float(s.ts, "ts", optional=False)
    check_float(s.start, "start", optional=False)
    check_float(s.core, "core", optional=False, non_negative=True)
    assert isinstance(s.job, str) and s.job and isinstance(s.node, str) and s.node
    assert isinstance(s.command, str) and isinstance(s.job_class, str)
    for k in (
        "pid",
        "vm_peak_kb",
        "vm_size_kb",
        "vm_rss_kb",
        "vm_swap_kb",
        "syscr",
        "syscw",
        "read_bytes",
        "write_bytes",
        "receive",
        "transmit",
        "cores",
    ):
        check_int(getattr(s, k), k, optional=False)
    for name, w, r in s.fs_rates:
        assert isinstance(name, str)
        check_float(w, "fs write", optional=False, non_negative=True)
        check_float(r, "fs read", optional=False, non_negative=True)


@FUZZ
@given(st.one_of(near_sample, junk_text, st.just(json.dumps(SAMPLE))), st.booleans())
def test_sample_line_raises_only_sample_trace_error(line: str, as_bytes: bool) -> None:
    try:
        s = parse_sample(line.encode("utf-8", "surrogatepass") if as_bytes else line)
    except SampleTraceError as e:
        assert e.reason
        return
    check_sample(s)


_PLAIN_SAMPLE = {k: v for k, v in SAMPLE.items() if k != "fs"}


@FUZZ
@given(
    st.one_of(
        near_sample,
        junk_text,
        st.just(json.dumps(SAMPLE)),
        mutated_json(_PLAIN_SAMPLE, times=("ts", "start")),
        st.just(json.dumps(_PLAIN_SAMPLE)),
    )
)
def test_sample_row_equals_the_parsed_sample(line: str) -> None:
    """The live path's row form (sample_row: no record built) accepts exactly the lines
    parse_sample accepts, with the same reasons, and reads back from JSON as the same sample."""
    from models.formats.sampletrace import sample_from_row, sample_row

    try:
        want = parse_sample(line)
    except SampleTraceError as err:
        with pytest.raises(SampleTraceError) as got:
            sample_row(line)
        assert got.value.reason == err.reason
        return
    row = sample_row(line)
    assert NodeSample(*row) == want
    assert sample_from_row(orjson.loads(orjson.dumps(row))) == want


@FEW
@given(st.lists(st.one_of(near_sample, junk_text), max_size=8), st.booleans())
def test_sample_trace_accounts_for_every_line(lines: list[str], as_bytes: bool) -> None:
    text = "\n".join(lines) + "\n"
    raw = lines_of(text, as_bytes)
    rejects: list[Reject] = []
    samples = list(parse_trace(raw, "fz", rejects))
    for s in samples:
        check_sample(s)
    check_rejects(rejects, "fz")
    assert len(samples) + len(rejects) == sum(1 for x in raw if x.strip())


@FEW
@given(
    st.lists(
        st.one_of(near_sample, junk_text, mutated_json(_PLAIN_SAMPLE, times=("ts",))), max_size=8
    ),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_sample_block_reads_as_the_trace_parser(lines: list[str], nl: str) -> None:
    """The live path's block reader (models/formats/samplelines.py, compiled pass or not)
    keeps the lines parse_trace keeps, as the same samples, and refuses the others with
    parse_trace's reasons."""
    from models.formats.samplelines import parse_lines

    data = nl.join(lines).encode("utf-8", "surrogatepass")
    rejects: list[Reject] = []
    want = list(parse_trace(data.splitlines(), "fz", rejects))
    for native in (True, False):
        got = parse_lines(data, native=native)
        assert [r[2] for r in got.rejects] == [r.reason for r in rejects]
        assert len(got.batch) == len(want)
        for g, w in zip(got.batch.to_samples(), want, strict=True):
            assert (
                g.ts,
                g.job,
                g.pid,
                g.node,
                g.start,
                g.write_bytes,
                g.read_bytes,
                g.core,
                g.vm_rss_kb,
                g.vm_swap_kb,
                g.cores,
                g.fs_rates,
            ) == (
                w.ts,
                w.job,
                w.pid,
                w.node,
                w.start,
                w.write_bytes,
                w.read_bytes,
                w.core,
                w.vm_rss_kb,
                w.vm_swap_kb,
                w.cores,
                w.fs_rates,
            )


# ---- LLview -------------------------------------------------------------------------------

LOADMEM_HEADER = "jobid ts nodeid load used_mem usage"
LOADMEM_ROW = "9438058 1600000000 jwb0263 12.5 80.25 99.75"
near_llview_row = st.builds(" ".join, mutated(LOADMEM_ROW.split())).flatmap(damaged)


number_token = st.one_of(
    st.floats().map(repr), st.integers().map(str), st.sampled_from(["1e400", "-0", "0x1", "1_0"])
)


@st.composite
def llview_text(draw: st.DrawFn) -> str:
    header = draw(
        st.one_of(
            st.just(LOADMEM_HEADER),
            st.builds(" ".join, mutated(LOADMEM_HEADER.split())),
            st.sampled_from(["ts ts jobid", "jobid ts nodeid ts", "ts"]),
            junk_text,
        )
    )
    cols = header.split() or ["ts"]
    fitting = st.lists(number_token, min_size=len(cols), max_size=len(cols)).map(" ".join)
    row = st.one_of(fitting, near_llview_row, st.just(LOADMEM_ROW), junk_text)
    rows = draw(st.lists(row, max_size=6))
    return "\n".join([header, *rows]) + draw(st.sampled_from(["", "\n"]))


@FUZZ
@given(st.one_of(llview_text(), junk_text))
def test_llview_series_raises_only_value_error_and_its_columns_line_up(text: str) -> None:
    rejects: list[Reject] = []
    try:
        s = llview.parse_series(text, "fz", rejects)
    except ValueError:
        assert not rejects
        return
    check_rejects(rejects, "fz")
    n = len(s)
    assert "ts" in s.num and set(s.columns) == set(s.num) | set(s.text)
    for c, a in s.num.items():
        assert a.dtype == np.float64 and a.shape == (n,) and np.isfinite(a).all(), c
    for c, t in s.text.items():
        assert len(t) == n and all(isinstance(x, str) and x for x in t), c
    body = [ln for ln in text.splitlines()[1:] if ln.split()]
    assert n + len(rejects) == len(body)


REPORT: dict[str, Any] = {
    "job": {"jobid": "9438058", "nodelist": "jwb0263 jwb0264", "queue": "booster", "runtime": 1},
    "rc": {"rc_wallh": 0.5},
}
near_report = mutated_json(REPORT).map(str.encode) | st.one_of(
    st.builds(
        lambda k, v: json.dumps({**REPORT, "job": {**REPORT["job"], k: v}}),
        st.sampled_from(["jobid", "nodelist", "queue", "runtime"]),
        json_value,
    ),
    st.builds(lambda v: json.dumps({**REPORT, "rc": {"rc_wallh": v}}), json_value),
).map(str.encode)


@FUZZ
@given(st.one_of(near_report, st.binary(max_size=100), junk_text.map(str.encode)))
def test_llview_job_report_raises_only_value_error(data: bytes) -> None:
    try:
        r = llview.parse_job_report(data)
    except ValueError:
        return
    assert isinstance(r.jobid, str) and isinstance(r.queue, str)
    assert isinstance(r.nodes, tuple) and all(isinstance(x, str) for x in r.nodes)
    check_float(r.runtime_s, "runtime_s", optional=False, non_negative=True)
    assert isinstance(r.sections, dict)


# ---- /proc --------------------------------------------------------------------------------

STATUS = "Name:\tpython3\nPid:\t4242\nVmPeak:\t  123456 kB\nVmSize:\t  120000 kB\n"
STATUS += "VmRSS:\t   65536 kB\nVmSwap:\t      12 kB\n"
IO = "rchar: 5000\nwchar: 10\nsyscr: 10\nsyscw: 20\nread_bytes: 4096\nwrite_bytes: 1\n"
IO += "cancelled_write_bytes: 0\n"
STAT = (
    "77 (my (odd) cmd) R 1 77 77 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 123456 "
    "1000 200 18446744073709551615\n"
)
NET = (
    "Inter-|   Receive |  Transmit\n face |bytes packets|bytes packets\n"
    "    lo:  999999  100 0 0 0 0 0 0   999999  100 0 0 0 0 0 0\n"
    "  eth0: 1000000 2000 0 0 0 0 0 0   300000 1500 0 0 0 0 0 0\n"
)
CGROUP = "12:cpuset:/oar/alice_4242\n0::/system.slice/slurmstepd.scope/job_77/step_0\n"


def near_tokens(text: str, sep: str | None = None) -> st.SearchStrategy[str]:
    """``text`` with a few whitespace-separated tokens (or ``sep``-separated fields) mutated."""
    if sep is None:
        lines = text.split("\n")

        @st.composite
        def one(draw: st.DrawFn) -> str:
            i = draw(st.integers(0, len(lines) - 1))
            toks = lines[i].split(" ")
            out = list(lines)
            out[i] = " ".join(draw(mutated(toks)))
            return "\n".join(out)

        return one().flatmap(damaged)
    return st.builds(sep.join, mutated(text.split(sep))).flatmap(damaged)


def check_proc(name: str, r: Any) -> None:
    if name == "status":
        assert isinstance(r, procfs.ProcStatus) and isinstance(r.name, str)
        for k in ("vm_peak_kb", "vm_size_kb", "vm_rss_kb", "vm_swap_kb"):
            check_int(getattr(r, k), k, optional=False)
    elif name == "io":
        assert isinstance(r, procfs.ProcIo)
        for f in dc_fields(procfs.ProcIo):
            check_int(getattr(r, f.name), f.name, optional=False)
    elif name == "stat":
        assert isinstance(r, procfs.ProcStat)
        assert isinstance(r.comm, str) and isinstance(r.state, str)
        for k in ("pid", "utime", "stime", "starttime", "num_threads"):
            check_int(getattr(r, k), k, optional=False)
    elif name == "uptime":
        check_float(r, "uptime", optional=False, non_negative=True)
    elif name == "btime":
        assert isinstance(r, int) and not isinstance(r, bool)
    elif name == "net_dev":
        rx, tx = r
        check_int(rx, "rx", optional=False)
        check_int(tx, "tx", optional=False)
    elif name == "cgroup":
        assert all(isinstance(x, str) for row in r for x in row) and all(len(x) == 3 for x in r)
    else:
        assert r is None or (isinstance(r, str) and r)


PROC: dict[str, tuple[Callable[[str], Any], str]] = {
    "status": (procfs.parse_status, STATUS),
    "io": (procfs.parse_io, IO),
    "stat": (procfs.parse_stat, STAT),
    "uptime": (procfs.parse_uptime, "12345.67 23456.78\n"),
    "btime": (procfs.parse_btime, "cpu  1 2 3\nbtime 1709300000\nprocesses 5\n"),
    "net_dev": (procfs.parse_net_dev, NET),
    "cgroup": (procfs.parse_cgroup, CGROUP),
    **{f"resolve_{k}": (f, CGROUP) for k, f in procfs.RESOLVERS.items()},
}


@FUZZ
@given(st.data(), st.sampled_from(sorted(PROC)))
def test_proc_parsers_raise_only_proc_parse_error(data: st.DataObject, name: str) -> None:
    parse, good = PROC[name]
    text = data.draw(
        st.one_of(st.just(good), near_tokens(good), near_tokens(good, ":"), junk_text),
        label="text",
    )
    try:
        r = parse(text)
    except procfs.ProcParseError as e:
        assert e.reason
        return
    check_proc(name, r)


# ---- what the properties found, pinned ---------------------------------------------------


def _reason(fn: Callable[[], Any]) -> str:
    """The reason of the documented error ``fn`` raises (ValueError: 'ValueError')."""
    try:
        fn()
    except (HostlistError, SwfError, JobEventError, SampleTraceError, procfs.ProcParseError) as e:
        return e.reason
    except ValueError:
        return "ValueError"
    return "no error"


def _sacct(**over: str) -> str:
    """Reasons of the rejects of SACCT with fields replaced (by index: f10=...)."""
    f = SACCT.split("|")
    for k, v in over.items():
        f[int(k[1:])] = v
    rejects: list[Reject] = []
    list(parse_sacct(["|".join(f)], rejects))
    return ",".join(r.reason for r in rejects) or "no reject"


def _jobcomp(**over: Any) -> str:
    return _reason(lambda: jobcomp_record_events({**JOBCOMP, **over}))


def _swf(lines: list[Any]) -> str:
    rejects: list[Reject] = []
    evs = list(iter_swf_events(lines, rejects))
    return ",".join(r.reason for r in rejects) or f"{len(evs)} events"


valid_moab_line = (moab_line(MOAB_FIELDS) + "\n").encode()


def _moab(data: bytes) -> str:
    """polars' CSV reader decompressed (and raised OSError on) a buffer starting with a
    gzip / zlib / zstd magic number, 'x^' among them."""
    p = parse_moab_chunk(data, Codebook())
    return f"{len(p.batch)} record {p.ignored} ignored"


FOUND: list[tuple[str, Callable[[], str], str]] = [
    (
        "hostlist 5000 digits",
        lambda: _reason(lambda: expand_hostlist("a[" + "1" * 5000 + "]")),
        "bad_range",
    ),
    ("hostlist superscript", lambda: _reason(lambda: expand_hostlist("a[\u00b2]")), "bad_range"),
    ("sacct elapsed 400 digits", lambda: _sacct(f14="9" * 400), "bad_duration"),
    ("sacct elapsed inf", lambda: _sacct(f14="9" * 400 + ".0"), "bad_duration"),
    ("sacct timelimit superscript days", lambda: _sacct(f23="\u00b2-1"), "bad_duration"),
    ("sacct uid superscript", lambda: _sacct(f9="\u00b2"), "bad_uid"),
    ("sacct nnodes 5000 digits", lambda: _sacct(f17="1" * 5000), "bad_nnodes"),
    ("sacct nnodes beyond int64", lambda: _sacct(f17="9" * 20), "bad_nnodes"),
    ("sacct exitcode superscript", lambda: _sacct(f15="\u00b2"), "bad_exitcode"),
    ("sacct reqmem inf", lambda: _sacct(f20="9" * 400), "bad_reqmem"),
    (
        "sacct end before submit",
        lambda: _sacct(f12="Unknown", f13="2016-12-26T20:12:27"),
        "end_before_submit",
    ),
    ("jobcomp total_nodes superscript", lambda: _jobcomp(total_nodes="\u00b2"), "bad_total_nodes"),
    ("jobcomp total_nodes 1e23", lambda: _jobcomp(total_nodes=1e23), "bad_total_nodes"),
    ("jobcomp exit_code superscript", lambda: _jobcomp(derived_ec="\u00b2"), "bad_exit_code"),
    ("jobcomp exit_code beyond int64", lambda: _jobcomp(derived_ec=2**64 - 1), "bad_exit_code"),
    ("jobcomp start before submit", lambda: _jobcomp(**{"@start": 0}), "start_before_submit"),
    (
        "jobcomp end before submit",
        lambda: _jobcomp(**{"@start": None, "@end": "2025-03-04T09:00:00"}),
        "end_before_submit",
    ),
    ("jobcomp time_limit beyond float", lambda: _jobcomp(time_limit=10**400), "bad_time_limit"),
    ("swf bytes not UTF-8", lambda: _swf([b"\xff" + SWF_JOB.encode()]), "bad_number"),
    (
        "swf submit 400 digits",
        lambda: _swf([SWF_JOB.replace(" 0 ", " " + "9" * 400 + " ", 1)]),
        "bad_number",
    ),
    # ignored (trace-relative times) and, since issue 31 class 4, reported as a reject
    (
        "swf UnixStartTime 400 digits",
        lambda: _swf(["; UnixStartTime: " + "9" * 400, SWF_JOB]),
        "bad_unix_start_time",
    ),
    (
        "llview report not an object",
        lambda: _reason(lambda: llview.parse_job_report(b"[]")),
        "ValueError",
    ),
    (
        "llview report job not an object",
        lambda: _reason(lambda: llview.parse_job_report(b'{"job": [1]}')),
        "ValueError",
    ),
    (
        "llview report run time NaN",
        lambda: _reason(lambda: llview.parse_job_report(b'{"rc": {"rc_wallh": "nan"}}')),
        "ValueError",
    ),
    (
        "llview column named twice",
        lambda: _reason(lambda: llview.parse_series("ts ts jobid\n1 2 j\n")),
        "ValueError",
    ),
    (
        "status empty value",
        lambda: _reason(lambda: procfs.parse_status("Name: x\nVmRSS:\n")),
        "status_bad_number",
    ),
    (
        "status superscript",
        lambda: _reason(lambda: procfs.parse_status("Name: x\nVmRSS: \u00b2 kB\n")),
        "status_bad_number",
    ),
    (
        "io superscript",
        lambda: _reason(lambda: procfs.parse_io(IO.replace("5000", "\u00b2"))),
        "io_bad_number",
    ),
    (
        "stat negative utime",
        lambda: _reason(lambda: procfs.parse_stat(STAT.replace("250", "-5"))),
        "stat_bad_number",
    ),
    (
        "btime without value",
        lambda: _reason(lambda: procfs.parse_btime("btime \n")),
        "stat_bad_btime",
    ),
    (
        "btime not a number",
        lambda: _reason(lambda: procfs.parse_btime("btime x\n")),
        "stat_bad_btime",
    ),
    (
        "net_dev not a number",
        lambda: _reason(lambda: procfs.parse_net_dev(NET.replace("1000000", "x"))),
        "net_dev_bad_number",
    ),
    ("uptime NaN", lambda: _reason(lambda: procfs.parse_uptime("nan 1")), "uptime_bad"),
    (
        "moab chunk starting like zlib",
        lambda: _moab(b"x^ other message\n" + valid_moab_line),
        "1 record 1 ignored",
    ),
    ("moab chunk starting like zstd", lambda: _moab(b"(\xb5/\xfd"), "0 record 1 ignored"),
    (
        "sample pid beyond int64",
        lambda: _reason(lambda: parse_sample(json.dumps({**SAMPLE, "pid": 2**64 - 1}))),
        "bad_number",
    ),
]


@pytest.mark.parametrize(
    ("case", "reason"), [(f, r) for _, f, r in FOUND], ids=[n for n, _, _ in FOUND]
)
def test_what_the_properties_found(case: Callable[[], str], reason: str) -> None:
    """Each of these raised something undocumented (ValueError from int() on '²' or on 4300+
    digits, OverflowError, IndexError, UnicodeDecodeError, AttributeError) or let through a
    non-finite, out-of-int64 or time-reversed value before the fix; now a reason."""
    assert case() == reason


def test_every_parser_module_is_fuzzed() -> None:
    """A new parser in models/formats gets a property here."""
    import pathlib

    import models.formats

    here = pathlib.Path(models.formats.__file__).parent
    modules = {p.stem for p in here.glob("*.py")} - {"__init__"}
    fuzzed = {"moab", "hostlist", "sacct", "jobcomp", "swf", "swfevents", "jobsource"}
    fuzzed |= {"sampletrace", "samplelines", "llview", "procfs", "slurmnodes"}
    assert modules == fuzzed
    assert set(FORMATS) == set(job_line)


# ---- Slurm snapshots (models/formats/slurmnodes.py) --------------------------------------------
_SLURM = Path(__file__).parent / "slurm"


def _slurm_text(version: str, name: str) -> str:
    return (_SLURM / version / name).read_text()


SLURM: dict[str, tuple[Callable[[str], list[Any]], str]] = {
    "scontrol_text": (
        slurmnodes.parse_scontrol_nodes,
        _slurm_text("22.05", "scontrol_show_node.txt"),
    ),
    "scontrol_oneliner": (
        slurmnodes.parse_scontrol_nodes,
        _slurm_text("22.05", "scontrol_show_node_oneliner.txt"),
    ),
    "scontrol_json": (slurmnodes.parse_nodes_json, _slurm_text("23.11", "scontrol_show_node.json")),
    "squeue_text": (slurmnodes.parse_squeue_text, _slurm_text("22.05", "squeue.txt")),
    "squeue_json": (slurmnodes.parse_squeue_json, _slurm_text("23.11", "squeue.json")),
    "reservations_text": (
        slurmnodes.parse_reservations_text,
        _slurm_text("22.05", "scontrol_show_reservation.txt"),
    ),
    "reservations_json": (
        lambda t: slurmnodes.parse_reservations_json(t, 1_795_473_700.0),
        _slurm_text("23.11", "scontrol_show_reservation.json"),
    ),
}


@FUZZ
@given(st.data(), st.sampled_from(sorted(SLURM)))
def test_slurm_readers_raise_only_slurm_output_error(data: st.DataObject, name: str) -> None:
    # mutated captures and junk: records of the documented types, or SlurmOutputError with a
    # reason; and an iteration built from whatever was read maps every node once, to a state
    parse, good = SLURM[name]
    text = data.draw(
        st.one_of(
            st.just(good),
            near_tokens(good),
            near_tokens(good, "|"),
            near_tokens(good, "="),
            junk_text,
        )
    )
    try:
        out = parse(text)
    except slurmnodes.SlurmOutputError as e:
        assert e.reason and isinstance(e.reason, str)
        return
    kinds = (slurmnodes.SlurmNode, slurmnodes.SlurmJob, slurmnodes.SlurmReservation)
    assert isinstance(out, list) and all(isinstance(r, kinds) for r in out)
    nodes = [r for r in out if isinstance(r, slurmnodes.SlurmNode)]
    jobs = [r for r in out if isinstance(r, slurmnodes.SlurmJob)]
    it = slurmnodes.slurm_iteration(1_700_000_000_000, nodes, jobs)
    assert [r.node for r in it.records] == list(dict.fromkeys(n.name for n in nodes))
    assert all(r.state and r.ts_ms == 1_700_000_000_000 for r in it.records)
