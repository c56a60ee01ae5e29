"""Moab node-status parser (seed 000 §III-A): the line format, its variants, what is ignored,
what is rejected and why, and the fast chunk parser against the line-by-line definition."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import models.formats.moab as moab
from models.formats.moab import (
    BAD_SECONDS,
    TOKENIZERS,
    ParsedChunk,
    TimestampError,
    classify_line,
    local_seconds,
    parse_lines_slow,
    parse_moab_chunk,
    parse_timestamp_ms,
)
from models.records.nodestatus import (
    BUSY,
    DOWN,
    DRAINED,
    DRAINING,
    IDLE,
    KNOWN_STATES,
    NO_JOB,
    RUNNING,
    Codebook,
    NodeStatus,
)


@pytest.fixture(autouse=True, params=TOKENIZERS)
def tokenizer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here once per tokenizer installed (the compiled one and polars'): the chunk
    parser's result must not depend on which cut the lines."""
    monkeypatch.setattr(moab, "TOKENIZERS", (request.param,))
    return str(request.param)


def test_the_compiled_tokenizer_is_built_where_rust_is() -> None:
    """`make venv` builds native/ where cargo is; elsewhere the replay runs on polars' reader
    and numpy."""
    if not has_cargo():
        pytest.skip("no Rust toolchain here: the compiled tokenizer (native/) is not built")
    assert "native" in TOKENIZERS, "cargo is here but drainwatch_native is not installed"
    from models.drain.accountant import KERNELS

    assert "native" in KERNELS, "drainwatch_native is installed without the accountant's loops"


def has_cargo() -> bool:
    """A Rust toolchain as make venv finds one: on PATH, or rustup's ~/.cargo/bin."""
    return bool(shutil.which("cargo") or (Path.home() / ".cargo" / "bin" / "cargo").exists())


# the seed's example line (seed 000 §III-A)
SEED_LINE = (
    "2014-12-31T00:03:19.696-0600 21166 INFO  Node '27453' status: state='Idle' "
    "rsvlist='1292428,1292433' joblist='none'"
)
SEED_TS_MS = int(datetime(2014, 12, 31, 6, 3, 19, 696_000, tzinfo=UTC).timestamp() * 1000)
TS = "2014-12-31T00:03:19.696-0600"


def mk(
    ts: str = TS,
    node: str = "1",
    state: str = "Idle",
    rsv: str = "none",
    job: str = "none",
    head: str = "21166 INFO ",
) -> str:
    return f"{ts} {head} Node '{node}' status: state='{state}' rsvlist='{rsv}' joblist='{job}'"


def data_of(lines: list[str], end: str = "\n", last: bool = True) -> bytes:
    """Lines joined with ``end``; ``last``: also after the last line."""
    text = end.join(lines) + (end if last and lines else "")
    return text.encode()


Row = tuple[int, str, str, str | None, tuple[str, ...]]


def rows(p: ParsedChunk, book: Codebook) -> list[Row]:
    """The batch decoded to names: (ts_ms, node, state, first rsv id or None, joblist ids)."""
    b = p.batch
    jobs: list[list[str]] = [[] for _ in range(len(b))]
    for r, j in zip(b.run_row.tolist(), b.run_job.tolist(), strict=True):
        jobs[r].append(book.jobs.names[j])
    assert b.has_job.tolist() == [bool(x) for x in jobs]
    return [
        (
            t,
            book.nodes.names[n],
            book.states.names[s],
            None if r == NO_JOB else book.jobs.names[r],
            tuple(js),
        )
        for t, n, s, r, js in zip(
            b.ts_ms.tolist(), b.node.tolist(), b.state.tolist(), b.rsv.tolist(), jobs, strict=True
        )
    ]


def rejects(p: ParsedChunk) -> list[tuple[str, int, str]]:
    return [(r.reason, r.lineno, r.text) for r in p.rejects]


def same(fast: ParsedChunk, fb: Codebook, slow: ParsedChunk, sb: Codebook) -> None:
    """The fast path gives what the line-by-line definition gives: records, rejects, counts, and
    the same codes (only accepted lines' values are interned, in line order)."""
    assert rows(fast, fb) == rows(slow, sb)
    assert rejects(fast) == rejects(slow)
    assert (fast.lines, fast.ignored) == (slow.lines, slow.ignored)
    assert fb.nodes.names == sb.nodes.names
    assert fb.states.names == sb.states.names
    assert fb.jobs.names == sb.jobs.names
    for k in ("ts_ms", "node", "state", "rsv", "has_job", "run_row", "run_job"):
        assert np.array_equal(getattr(fast.batch, k), getattr(slow.batch, k)), k
    assert fast.row_lines().tolist() == slow.row_lines().tolist()  # each row's source line


def both(data: bytes, source: str = "t", first_lineno: int = 1) -> tuple[ParsedChunk, Codebook]:
    """Parse with the fast path and the slow definition; they must agree. Returns the fast one."""
    fb, sb = Codebook(), Codebook()
    fast = parse_moab_chunk(data, fb, source, first_lineno)
    slow = parse_lines_slow(data, sb, source, first_lineno)
    same(fast, fb, slow, sb)
    return fast, fb


def one(line: str) -> Row:
    p, book = both(data_of([line]))
    assert not p.rejects and p.ignored == 0, (rejects(p), p.ignored)
    (r,) = rows(p, book)
    return r


def utc_ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp()) * 1000


# ---- the format line ----------------------------------------------------------------------


def test_seed_line() -> None:
    p, book = both(data_of([SEED_LINE]))
    assert (p.lines, p.ignored, p.rejects) == (1, 0, [])
    b = p.batch
    assert b.ts_ms.tolist() == [SEED_TS_MS] == [1_420_005_799_696]
    assert book.nodes.names == ["27453"]
    assert b.state.tolist() == [IDLE]
    # the drain is charged to the first reservation; the second one is not interned
    assert book.jobs.names[int(b.rsv[0])] == "1292428" and book.jobs.names == ["1292428"]
    assert b.has_job.tolist() == [False] and b.run_row.size == b.run_job.size == 0


def test_classify_line_keeps_the_whole_lists() -> None:
    assert classify_line(SEED_LINE) == NodeStatus(
        SEED_TS_MS, "27453", "Idle", ("1292428", "1292433"), ()
    )


def test_known_states_get_their_codes() -> None:
    lines = [mk(state=s, node=str(i)) for i, s in enumerate(KNOWN_STATES)]
    p, book = both(data_of(lines))
    assert p.batch.state.tolist() == [DOWN, IDLE, BUSY, RUNNING, DRAINED, DRAINING]
    assert book.states.names == list(KNOWN_STATES)


# ---- timestamps ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ts", "want"),
    [
        ("2014-12-31T00:03:19.696-0600", utc_ms(2014, 12, 31, 6, 3, 19) + 696),
        ("2014-12-31T00:03:19.696+0530", utc_ms(2014, 12, 30, 18, 33, 19) + 696),
        ("2014-12-31T00:03:19.696+0545", utc_ms(2014, 12, 30, 18, 18, 19) + 696),
        ("2014-12-31T00:03:19.696-0930", utc_ms(2014, 12, 31, 9, 33, 19) + 696),
        ("2014-12-31T00:03:19.696+0000", utc_ms(2014, 12, 31, 0, 3, 19) + 696),
        ("2014-12-31T00:03:19.696-0000", utc_ms(2014, 12, 31, 0, 3, 19) + 696),
        ("2014-12-31T00:03:19.696Z", utc_ms(2014, 12, 31, 0, 3, 19) + 696),  # Z is accepted
        ("2014-12-31T00:03:19.696-06:00", utc_ms(2014, 12, 31, 6, 3, 19) + 696),
        ("2014-12-31T00:03:19.696+05:30", utc_ms(2014, 12, 30, 18, 33, 19) + 696),
        ("2014-12-31T23:59:59.999-0600", utc_ms(2015, 1, 1, 5, 59, 59) + 999),  # next UTC day
        ("2016-02-29T12:00:00.000+0100", utc_ms(2016, 2, 29, 11, 0, 0)),  # leap day
    ],
)
def test_utc_offsets(ts: str, want: int) -> None:
    assert one(mk(ts=ts))[0] == want
    assert parse_timestamp_ms(ts) == want


@pytest.mark.parametrize(
    ("frac", "ms"),
    [
        (".696", 696),
        ("", 0),  # whole seconds
        (".6", 600),
        (".69", 690),
        (".000", 0),
        (".696999", 696),  # sub-millisecond digits are truncated, not rounded
        (".9999", 999),
    ],
)
def test_fraction_of_a_second(frac: str, ms: int) -> None:
    base = utc_ms(2014, 12, 31, 6, 3, 19)
    assert one(mk(ts=f"2014-12-31T00:03:19{frac}-0600"))[0] == base + ms


@pytest.mark.parametrize(
    "ts",
    [
        "2014-13-31T00:03:19.696-0600",  # month 13
        "2014-00-31T00:03:19.696-0600",  # month 0
        "2014-12-32T00:03:19.696-0600",  # day 32
        "2014-12-00T00:03:19.696-0600",  # day 0
        "2014-04-31T00:03:19.696-0600",  # April has 30 days
        "2015-02-29T00:03:19.696-0600",  # not a leap year
        "1900-02-29T00:03:19.696-0600",  # century, not a leap year
        "2014-12-31T24:00:00.000-0600",  # hour 24
        "2014-12-31T23:60:00.000-0600",  # minute 60
        "2014-12-31T23:59:60.000-0600",  # leap second
        "2014-12-31T00:03:19.696-2400",  # offset hours > 23
        "2014-12-31T00:03:19.696-0060",  # offset minutes > 59
        "2014-12-31T00:03:19.696",  # no offset
        "2014-12-31T00:03:19.696-06",  # short offset
        "2014-12-31T00:03:19.696 0600",  # a blank ends the stamp: no offset, malformed
        "2014-12-31T00:03:19.-0600",  # a dot without digits
        "2014-12-31T00:03:19,696-0600",  # decimal comma
        "2014-12-31T00:03-0600",  # no seconds
        "2014-12-31-0600",  # date only
        "14-12-31T00:03:19.696-0600",  # two-digit year
        "2014/12/31T00:03:19.696-0600",
        "2014-12-31t00:03:19.696-0600",  # lower-case t
        "2014-12-31T00:03:1x.696-0600",
        "2014-12-31T00:03:1\u0669.696-0600",  # a non-ASCII digit
        "yesterday",
    ],
)
def test_bad_timestamps_are_rejected(ts: str) -> None:
    line = mk(ts=ts)
    p, _ = both(data_of([line]))
    expected = "malformed_node_status" if " " in ts else "bad_timestamp"
    assert rejects(p) == [(expected, 1, line)]
    assert len(p.batch) == 0
    if " " not in ts:
        with pytest.raises(TimestampError) as e:
            parse_timestamp_ms(ts)
        assert e.value.reason == "bad_timestamp"


def test_local_seconds_marks_invalid_heads_with_bad_seconds() -> None:
    got = local_seconds(
        ["1970-01-01T00:00:00", "2014-12-31T00:03:19", "2015-02-29T00:00:00", "short", ""]
    )
    assert got.dtype == np.int64
    assert got.tolist() == [0, 1_419_984_199, BAD_SECONDS, BAD_SECONDS, BAD_SECONDS]
    assert local_seconds([]).size == 0


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)))
def test_local_seconds_is_the_proleptic_gregorian_calendar(t: datetime) -> None:
    head = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    want = (t.replace(microsecond=0) - datetime(1970, 1, 1)) // timedelta(seconds=1)
    assert local_seconds([head]).tolist() == [want]


# ---- reservation and job lists ------------------------------------------------------------


@pytest.mark.parametrize(
    ("rsv", "job", "first", "jobs"),
    [
        ("none", "none", None, ()),
        ("NONE", "None", None, ()),  # 'none' in any case
        ("", "", None, ()),  # empty lists
        (" none ", "  ", None, ()),
        ("1292428,1292433", "none", "1292428", ()),  # the first reservation is charged
        ("1292433,1292428", "none", "1292433", ()),  # list order, not numeric order
        ("r.maint,103", "103", "r.maint", ("103",)),
        ("none", "101,102", None, ("101", "102")),  # every running job is listed
        (" 101 , 102 ", " 101 ,102", "101", ("101", "102")),  # blanks around ids
        ("101,,102,", ",101,,102,", "101", ("101", "102")),  # empty items skipped
    ],
)
def test_lists(rsv: str, job: str, first: str | None, jobs: tuple[str, ...]) -> None:
    _, _, _, got_first, got_jobs = one(mk(rsv=rsv, job=job))
    assert (got_first, got_jobs) == (first, jobs)


def test_run_pairs_follow_rows() -> None:
    lines = [
        mk(node="a", state="Busy", job="7,8"),
        mk(node="b", state="Idle", rsv="9"),
        mk(node="c", state="Busy", job="8"),
    ]
    p, book = both(data_of(lines))
    b = p.batch
    assert b.has_job.tolist() == [True, False, True]
    assert b.run_row.tolist() == [0, 0, 2]
    assert [book.jobs.names[j] for j in b.run_job.tolist()] == ["7", "8", "8"]


# ---- states -------------------------------------------------------------------------------


def test_states_match_case_insensitively_and_unknown_states_are_their_own() -> None:
    lines = [
        mk(state="IDLE"),
        mk(state=" busy "),
        mk(state="Flaky"),
        mk(state="FLAKY"),
        mk(state="Maint"),
    ]
    p, book = both(data_of(lines))
    assert p.batch.state.tolist() == [IDLE, BUSY, 6, 6, 7]
    assert book.states.names == [*KNOWN_STATES, "Flaky", "Maint"]  # named as first seen


# ---- other messages, blank and malformed lines --------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "2014-12-31T00:03:19.696-0600 21166 INFO  Job '1292428' started on 16 nodes",
        "2014-12-31T00:03:19.696-0600 21166 INFO  Node '27453' rebooted",
        "2014-12-31T00:03:19.696-0600 21166 INFO  scheduler iteration 42 status: ok",
        "2014-12-31T00:03:19.696-0600 21166 WARN  node '27453' status: state='Idle'",  # 'node'
        "garbage",
        "'",
        TS,
    ],
)
def test_other_messages_are_ignored_and_counted(line: str) -> None:
    p, _ = both(data_of([SEED_LINE, line, SEED_LINE]))
    assert (p.lines, p.ignored, p.rejects, len(p.batch)) == (3, 1, [], 2)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("", "blank_line"),
        ("   ", "blank_line"),
        ("\t", "blank_line"),
        (mk(node=""), "empty_node"),
        (mk(state=""), "empty_state"),
        (mk(state="   "), "empty_state"),
        (mk(ts="2014-13-31T00:03:19.696-0600"), "bad_timestamp"),
        (SEED_LINE.replace(" rsvlist='1292428,1292433'", ""), "malformed_node_status"),
        (SEED_LINE.replace("joblist", "jobs"), "malformed_node_status"),
        (SEED_LINE + " x", "malformed_node_status"),  # something after the joblist
        (SEED_LINE + " extra='1'", "malformed_node_status"),
        (mk(node="a'b"), "malformed_node_status"),  # a quote inside a value
        (mk(state="Id'le"), "malformed_node_status"),
        (SEED_LINE.replace(" 21166", "\t21166"), "malformed_node_status"),  # tab after stamp
        (" " + SEED_LINE, "malformed_node_status"),  # leading blank
        (SEED_LINE.replace("' status:", "'  status:"), "malformed_node_status"),
        # cut short in the joblist: the closing quote is missing, or the whole value
        (SEED_LINE[:-1], "malformed_node_status"),
        (SEED_LINE[:-2], "malformed_node_status"),
        (SEED_LINE[: -len("'none'")], "malformed_node_status"),
        (SEED_LINE + "'", "malformed_node_status"),  # a stray quote after the joblist
        (SEED_LINE.replace("21166 INFO  ", ""), "malformed_node_status"),  # no pid and level
        (SEED_LINE.replace("INFO  ", "INFO main "), "malformed_node_status"),  # a word too many
        (mk(ts="0000-12-31T00:03:19.696-0600"), "bad_timestamp"),  # year 0 is not a date
    ],
)
def test_malformed_node_status_lines_are_rejected_with_a_reason(line: str, reason: str) -> None:
    p, _ = both(data_of([SEED_LINE, line, SEED_LINE]), source="moab.log", first_lineno=41)
    assert [(r.reason, r.source, r.lineno, r.text) for r in p.rejects] == [
        (reason, "moab.log", 42, line)
    ]
    assert (p.lines, p.ignored, len(p.batch)) == (3, 0, 2)


def test_values_of_rejected_lines_are_not_interned() -> None:
    lines = [
        mk(node="1", rsv="11", job="12"),
        mk(node="2", state="", rsv="21", job="22"),  # rejected
        mk(node="3", rsv="31", job="32")[:-1],  # rejected (cut short)
        "2014-12-31T00:03:19.696-0600 21166 INFO  Node '4' up rsvlist='41' joblist='42'",
    ]
    p, book = both(data_of(lines))
    assert len(p.rejects) == 2 and p.ignored == 1
    assert (book.nodes.names, book.jobs.names) == (["1"], ["11", "12"])
    assert book.states.names == list(KNOWN_STATES)


def test_unknown_state_is_named_as_first_seen_in_line_order() -> None:
    """Whichever path a line takes (a Z offset is left to the line parser), the spelling of
    the first line names the state."""
    lines = [mk(ts="2014-12-31T06:03:19.696Z", state="Flaky"), mk(state="FLAKY")]
    p, book = both(data_of(lines))
    assert book.states.names[6:] == ["Flaky"] and p.batch.state.tolist() == [6, 6]


def test_trailing_blanks_are_allowed() -> None:
    assert one(SEED_LINE + "   ")[0] == SEED_TS_MS
    assert one(SEED_LINE + " \t")[0] == SEED_TS_MS


def test_reject_line_numbers_count_from_first_lineno_across_chunks() -> None:
    lines = [SEED_LINE, "", SEED_LINE, mk(node=""), SEED_LINE, mk(state=""), "junk", ""]
    whole, _ = both(data_of(lines), first_lineno=1)
    want = [("blank_line", 2), ("empty_node", 4), ("empty_state", 6), ("blank_line", 8)]
    assert [(r.reason, r.lineno) for r in whole.rejects] == want
    assert (whole.lines, whole.ignored) == (8, 1)
    got = []
    for a, b in ((0, 3), (3, 5), (5, 8)):
        part, _ = both(data_of(lines[a:b]), first_lineno=a + 1)
        got += [(r.reason, r.lineno) for r in part.rejects]
    assert got == want


def test_row_lines_name_the_line_of_each_row() -> None:
    """The side array a reject made after parsing names its line by: rows are the node-status
    lines the format accepts, fast or rescued, in line order."""
    variant = mk(ts="2014-12-31T00:03:19Z", node="2")  # left to the line parser: rescued
    bad = mk(node="")
    lines = [SEED_LINE, "junk", "", variant, bad, mk(node="3") + "  ", mk(node="4", job="5")]
    p, _ = both(data_of(lines), first_lineno=10)
    want = [10 + k for k, ln in enumerate(lines) if isinstance(classify_line(ln), NodeStatus)]
    assert p.row_lines().tolist() == want == [10, 13, 15, 16]
    assert len(p.batch) == len(want)
    assert parse_moab_chunk(b"", Codebook()).row_lines().tolist() == []


# ---- bytes: encodings, line ends, chunk ends ----------------------------------------------


def test_empty_chunk() -> None:
    for p in (parse_moab_chunk(b"", Codebook()), parse_lines_slow(b"", Codebook())):
        assert (len(p.batch), p.lines, p.ignored, p.rejects) == (0, 0, 0, [])


def test_chunk_without_trailing_newline() -> None:
    lines = [SEED_LINE, mk(node="2", state="Busy", job="5")]
    p, book = both(data_of(lines, last=False))
    assert p.lines == 2 and [r[1] for r in rows(p, book)] == ["27453", "2"]
    p, _ = both(data_of([SEED_LINE, mk(node="")], last=False))
    assert [(r.reason, r.lineno) for r in p.rejects] == [("empty_node", 2)]


def test_crlf_line_ends_parse_like_lf() -> None:
    lines = [SEED_LINE, "junk", mk(node="2", state="Busy", job="5"), "", mk(state="")]
    lf, lf_book = both(data_of(lines))
    for last in (True, False):
        crlf, crlf_book = both(data_of(lines, end="\r\n", last=last))
        assert rows(crlf, crlf_book) == rows(lf, lf_book)
        assert (crlf.lines, crlf.ignored) == (lf.lines, lf.ignored) == (5, 1)
        assert [(r.reason, r.lineno) for r in crlf.rejects] == [
            ("blank_line", 4),
            ("empty_state", 5),
        ]
        assert all("\r" not in r.tsv() for r in crlf.rejects)


def test_bytes_that_are_not_utf8() -> None:
    good = mk(node="1", rsv="7").encode()
    data = (
        good
        + b"\r\n"
        + b"\xff\xfe garbage \x80\n"
        + mk(node="n\xe9", state="Busy", job="7").encode("latin-1")  # a Latin-1 node name
        + b"\n"
        + mk(node="", rsv="X").encode().replace(b"X", b"\xff")
        + b"\n"
    )
    p, book = both(data, source="f")
    assert p.lines == 4 and p.ignored == 1 and len(p.batch) == 2
    assert book.nodes.names == ["1", "n\ufffd"]  # undecodable bytes become U+FFFD
    assert [(r.reason, r.lineno) for r in p.rejects] == [("empty_node", 4)]
    assert "rsvlist='\ufffd'" in p.rejects[0].text


def test_canonical_and_variant_lines_keep_arrival_order() -> None:
    """Lines the fast path leaves to the line parser (other offsets, no fraction, trailing
    blanks) are merged back at their positions, with their joblists."""
    t = [f"2014-12-31T00:00:{s:02d}" for s in range(8)]
    lines = [
        mk(ts=t[0] + ".000-0600", node="a", state="Busy", job="1,2"),
        mk(ts=t[1] + "Z", node="b", state="Busy", job="3"),
        mk(ts=t[2] + ".000-0600", node="a", state="Idle", rsv="4"),
        mk(ts=t[3] + "-0600", node="c", state="Busy", job="5,6") + "  ",
        mk(ts=t[4] + ".5+05:30", node="b", state="Idle"),
        mk(ts=t[5] + ".000-0600", node="c", state="Busy", job="6"),
        mk(ts=t[6] + ".123456-0600", node="d", state="Busy", job="7"),
        mk(ts=t[7] + ".000-0600", node="d", state="Down"),
    ]
    p, book = both(data_of(lines))
    got = rows(p, book)
    assert [r[1] for r in got] == ["a", "b", "a", "c", "b", "c", "d", "d"]
    assert [r[4] for r in got] == [("1", "2"), ("3",), (), ("5", "6"), (), ("6",), ("7",), ()]
    assert p.batch.run_row.tolist() == [0, 0, 1, 3, 3, 5, 6]


# ---- moved from tests/models/drain/test_accountant.py (parser-only) ------------------------


def test_fast_parser_equals_slow_parser_on_bad_lines() -> None:
    lines = [
        mk(ts="2014-12-31T00:00:00.000-0600", node="1"),
        "garbage",
        "",
        "2014-13-31T00:00:00.000-0600 1 INFO  Node '1' "
        "status: state='Idle' rsvlist='none' joblist='none'",
        "2014-12-31T00:00:01.000-0600 1 INFO  Node '' status: state='Idle' rsvlist='none' "
        "joblist='none'",
        mk(ts="2014-12-31T00:00:05.000-0600", node="1", state="Busy", job="3"),
    ]
    data = "".join(x + "\n" for x in lines).encode()
    fast = parse_moab_chunk(data, Codebook(), "f")
    slow = parse_lines_slow(data, Codebook(), "f")
    assert (
        [(r.reason, r.lineno) for r in fast.rejects]
        == [(r.reason, r.lineno) for r in slow.rejects]
        == [("blank_line", 3), ("bad_timestamp", 4), ("empty_node", 5)]
    )
    assert fast.ignored == slow.ignored == 1
    assert np.array_equal(fast.batch.ts_ms, slow.batch.ts_ms)


def test_parser_survives_bytes_that_are_not_utf8_and_crlf() -> None:
    good = mk(ts="2014-12-31T00:00:00.000-0600", node="1", rsv="7").encode()
    data = (
        good
        + b"\r\n"
        + b"\xff\xfe garbage \x80\n"
        + mk(ts="2014-12-31T00:01:00.000-0600", node="1", state="Busy", job="7").encode()
        + b"\r\n"
    )
    fast = parse_moab_chunk(data, Codebook(), "f")
    slow = parse_lines_slow(data, Codebook(), "f")
    assert len(fast.batch) == len(slow.batch) == 2
    assert fast.ignored == slow.ignored == 1 and fast.lines == 3
    assert np.array_equal(fast.batch.ts_ms, slow.batch.ts_ms)


# ---- fast path == line-by-line definition on generated chunks -----------------------------

_OFFSETS = ["-0600", "+0530", "+0000", "Z", "-06:00", "+05:45", "-2400", "+0099", ""]
_FRACS = [".696", ".000", "", ".5", ".123456", "."]
_HEADS = ["21166 INFO ", "1 WARN ", "77 INFO\t", "21166  INFO ", "INFO ", "a b c ", ""]
_NODES = ["27453", "n1", "c0-0c0s0n1", "", " ", "x y", "n\u00e9", "\u2603"]
_STATES = ["Idle", "Busy", "Running", "Down", "Drained", "Draining", "idle", "BUSY", " Idle "]
_STATES += ["Flaky", "flaky", "", "  "]
_LISTS = ["none", "NONE", "", " ", "101", "102,101", "r.maint,103", " 104 , 105 ", "106,,"]
_OTHER = [
    "2014-12-31T00:03:19.696-0600 21166 INFO  Job '1292428' started",
    "2014-12-31T00:03:19.696-0600 21166 INFO  Node '27453' rebooted",
    "status: Node '",
    "",
    "   ",
]

_stamp = st.builds(
    lambda d, frac, off: d.strftime("%Y-%m-%dT%H:%M:%S") + frac + off,
    st.datetimes(min_value=datetime(1999, 1, 1), max_value=datetime(2030, 12, 31)),
    st.sampled_from(_FRACS),
    st.sampled_from(_OFFSETS),
) | st.sampled_from(["0000-01-01T00:00:00.000-0600", "2015-02-29T00:00:00.000-0600", "x"])

_node_status = st.builds(
    mk,
    ts=_stamp,
    node=st.sampled_from(_NODES),
    state=st.sampled_from(_STATES),
    rsv=st.sampled_from(_LISTS),
    job=st.sampled_from(_LISTS),
    head=st.sampled_from(_HEADS),
)


@st.composite
def _damaged(draw: st.DrawFn) -> str:
    """A node-status line cut short, with a character changed, or with something appended."""
    line = draw(_node_status)
    how = draw(st.sampled_from(["cut", "change", "append"]))
    i = draw(st.integers(0, len(line)))
    if how == "cut":
        return line[:i]
    if how == "change":
        c = draw(st.sampled_from(["'", " ", "\t", "0", "x", "=", ",", "\u00a0"]))
        return line[:i] + c + line[i + 1 :]
    return line + draw(st.sampled_from(["  ", " x", "'", "\t", " joblist='1'"]))


_line = st.one_of(
    _node_status,
    _node_status,
    _damaged(),
    st.sampled_from(_OTHER),
    st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30),
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(st.tuples(_line, st.sampled_from(["\n", "\r\n"])), max_size=25),
    last_newline=st.booleans(),
    first_lineno=st.integers(1, 10**6),
    split=st.integers(0, 25),
)
def test_fast_equals_slow_on_generated_chunks(
    lines: list[tuple[str, str]], last_newline: bool, first_lineno: int, split: int
) -> None:
    """Mixed good, variant, damaged, blank and foreign lines, LF or CRLF, with or without a
    last newline, as two chunks sharing one codebook."""
    text = "".join(ln + end for ln, end in lines)
    if lines and not last_newline:
        text = text[: -len(lines[-1][1])]
    split = min(split, len(lines))
    cut = len("".join(ln + end for ln, end in lines[:split]).encode())
    data = text.encode()
    fb, sb = Codebook(), Codebook()
    for chunk, lineno in ((data[:cut], first_lineno), (data[cut:], first_lineno + split)):
        same(
            parse_moab_chunk(chunk, fb, "gen", lineno),
            fb,
            parse_lines_slow(chunk, sb, "gen", lineno),
            sb,
        )
