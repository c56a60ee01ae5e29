"""Moab node-status lines -> NodeStatusBatch (seed 000 §III-A).

    2014-12-31T00:03:19.696-0600 21166 INFO  Node '27453' status: state='Idle'
        rsvlist='1292428,1292433' joblist='none'     (one line)

Fast path: a tokenizer cuts each line at its quotes and turns every string column into
per-chunk codes, so Python only sees the distinct values (distinct seconds, offsets, nodes,
states, id lists). Two tokenizers give the same columns: the compiled one of ``native/`` (one
pass in Rust, dictionary-encoding as it goes; built where a Rust toolchain is) and polars' CSV
reader split on the quote, each column cast to a per-chunk categorical (~2M lines/s on one
core, where a Python regex loop manages ~0.3M). Lines that are not node-status lines at all
(other Moab messages) are counted as ignored; node-status lines that are malformed are rejected
with a reason; both never stop the run. A slow line-by-line path handles chunks the tokenizer
refuses and serves as the executable definition of the format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from models.records.nodestatus import NO_JOB, Codebook, NodeStatus, NodeStatusBatch, split_idlist
from models.records.reject import RecordError, Reject

try:  # the compiled tokenizer and the per-line rest of the fast path (native/), built where
    # a Rust toolchain is: optional
    from drainwatch_native import moab_accept, moab_assemble, tokenize_moab
except ImportError:  # pragma: no cover - depends on the installation
    tokenize_moab = moab_accept = moab_assemble = None  # type: ignore[assignment, unused-ignore]

LINE_RE = re.compile(
    r"^(?P<ts>\S+) \S+ \S+\s+Node '(?P<node>[^']*)' status: state='(?P<state>[^']*)'"
    r" rsvlist='(?P<rsv>[^']*)' joblist='(?P<job>[^']*)'\s*$"
)
_TS_HEAD_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
_TS_TAIL_RE = re.compile(r"^(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})$")
# after the canonical 28-character stamp and a blank, up to the first quote: as in LINE_RE
_PID_LEVEL_NODE_RE = re.compile(r"\S+ \S+\s+Node ")
# local_seconds() of a string that is not a valid 'YYYY-MM-DDTHH:MM:SS' wall-clock time. Valid
# years 0001-9999 give -6.2e10 .. 2.5e11 s, far from it, so it cannot be a real time; rows that
# carry it are rejected (bad_timestamp) before their milliseconds are used.
BAD_SECONDS = -(2**62)
# lookup-table entry (node / state code) of a distinct value that no accepted row uses
_NOT_INTERNED = -1
# polars' CSV reader decompresses a buffer that starts with a gzip, zlib or zstd magic number
# (and raises OSError when the rest is not such a stream): a chunk starting so, which may be
# plain text ('x^...'), takes the line-by-line path
_COMPRESSED_MAGIC = (b"\x1f\x8b", b"x\x01", b"x^", b"x\x9c", b"x\xda", b"(\xb5/\xfd")


class TimestampError(RecordError):
    """A node-status timestamp that is not ISO 8601 with a UTC offset."""


@dataclass(slots=True)
class ParsedChunk:
    batch: NodeStatusBatch
    rejects: list[Reject] = field(default_factory=list)
    lines: int = 0
    ignored: int = 0  # lines that are not node-status messages
    first_lineno: int = 1
    # per line of the chunk, whether it is a row of ``batch`` (rows are in line order)
    is_row: npt.NDArray[np.bool_] | None = None

    def row_lines(self) -> npt.NDArray[np.int64]:
        """The source line of each row of ``batch``: the side array a reject made after parsing
        names its line by (made when asked; the replay never needs it)."""
        if self.is_row is None:
            return np.empty(0, dtype=np.int64)
        return self.first_lineno + np.flatnonzero(self.is_row)


def _tail_ms(tail: str) -> int:
    """'.696-0600' -> milliseconds to ADD to the local wall-clock time to get UTC."""
    m = _TS_TAIL_RE.match(tail)
    if m is None:
        raise TimestampError("bad_timestamp", tail)
    frac, off = m.groups()
    ms = int((frac or "0")[:3].ljust(3, "0"))  # sub-millisecond digits are truncated
    if off == "Z":
        return ms
    sign = -1 if off[0] == "-" else 1
    hh, mm = int(off[1:3]), int(off[-2:])
    if hh > 23 or mm > 59:
        raise TimestampError("bad_timestamp", tail)
    return ms - sign * (hh * 3600 + mm * 60) * 1000


def _days_from_civil(
    y: npt.NDArray[np.int64], m: npt.NDArray[np.int64], d: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm), vectorised."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: npt.NDArray[np.int64] = era * 146097 + doe - 719468  # stubs: floor_divide is Any
    return days


_MDAYS = np.array([31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def local_seconds(heads: list[str]) -> npt.NDArray[np.int64]:
    """'YYYY-MM-DDTHH:MM:SS' wall-clock strings -> seconds since the epoch as if UTC.
    Invalid strings give BAD_SECONDS (callers reject those rows)."""
    n = len(heads)
    out = np.full(n, BAD_SECONDS, dtype=np.int64)
    if n == 0:
        return out
    ok = np.fromiter((len(h) == 19 for h in heads), dtype=bool, count=n)
    raw = np.frombuffer(
        "".join(h if len(h) == 19 else "0000-00-00T00:00:00" for h in heads).encode(
            "ascii", "replace"
        ),
        dtype=np.uint8,
    ).reshape(n, 19)
    digits = raw.astype(np.int64) - 48
    dpos = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
    ok &= ((digits[:, dpos] >= 0) & (digits[:, dpos] <= 9)).all(axis=1)
    ok &= (raw[:, 4] == 45) & (raw[:, 7] == 45) & (raw[:, 10] == 84)
    ok &= (raw[:, 13] == 58) & (raw[:, 16] == 58)
    y = digits[:, 0] * 1000 + digits[:, 1] * 100 + digits[:, 2] * 10 + digits[:, 3]
    mo = digits[:, 5] * 10 + digits[:, 6]
    d = digits[:, 8] * 10 + digits[:, 9]
    h = digits[:, 11] * 10 + digits[:, 12]
    mi = digits[:, 14] * 10 + digits[:, 15]
    s = digits[:, 17] * 10 + digits[:, 18]
    ok &= (y >= 1) & (mo >= 1) & (mo <= 12) & (d >= 1) & (h <= 23) & (mi <= 59) & (s <= 59)
    mo_c = np.clip(mo, 1, 12)
    leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    ok &= d <= np.where((mo_c == 2) & ~leap, 28, _MDAYS[mo_c - 1])
    secs = _days_from_civil(y, mo_c, d) * 86400 + h * 3600 + mi * 60 + s
    out[ok] = secs[ok]
    return out


def parse_timestamp_ms(text: str) -> int:
    """One Moab timestamp -> POSIX ms; TimestampError when it is not ISO 8601 with an offset."""
    head, tail = text[:19], text[19:]
    if not _TS_HEAD_RE.match(head):
        raise TimestampError("bad_timestamp", text)
    try:
        datetime.fromisoformat(head)
    except ValueError as e:
        raise TimestampError("bad_timestamp", text) from e
    sec = int(local_seconds([head])[0])
    if sec == BAD_SECONDS:
        raise TimestampError("bad_timestamp", text)
    return sec * 1000 + _tail_ms(tail)


def classify_line(line: str) -> NodeStatus | str | None:
    """Slow, obviously-correct path: a NodeStatus, a reject reason, or None for a line that is
    not a node-status message at all."""
    text = line.rstrip("\r\n")
    if not text.strip():
        return "blank_line"
    if " status: " not in text or "Node '" not in text:
        return None
    m = LINE_RE.match(text)
    if m is None:
        return "malformed_node_status"
    if not m["node"]:
        return "empty_node"
    if not m["state"].strip():
        return "empty_state"
    try:
        ts = parse_timestamp_ms(m["ts"])
    except TimestampError:
        return "bad_timestamp"
    return NodeStatus(
        ts, m["node"], m["state"].strip(), split_idlist(m["rsv"]), split_idlist(m["job"])
    )


def parse_lines_slow(
    data: bytes, book: Codebook, source: str = "", first_lineno: int = 1
) -> ParsedChunk:
    """Line-by-line parser (the fallback and the definition the fast path must match)."""
    records: list[NodeStatus] = []
    rejects: list[Reject] = []
    ignored = 0
    lines = data.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    is_row = np.zeros(len(lines), dtype=bool)
    for k, line in enumerate(lines):
        r = classify_line(line)
        if r is None:
            ignored += 1
        elif isinstance(r, str):
            rejects.append(Reject(r, source, first_lineno + k, line))
        else:
            records.append(r)
            is_row[k] = True
    batch = NodeStatusBatch.from_records(records, book)
    return ParsedChunk(batch, rejects, len(lines), ignored, first_lineno, is_row)


def _tokenise(data: bytes) -> Any:
    import polars as pl  # only where the compiled tokenizer is not: ~0.15 s to import

    return pl.read_csv(
        data,
        has_header=False,
        separator="'",
        quote_char=None,
        schema={f"c{i}": pl.String for i in range(10)},  # 9 quotes at most; more: malformed
        missing_columns="insert",
        truncate_ragged_lines=True,
        encoding="utf8",
        raise_if_empty=False,
    )


def _line_bytes(data: bytes) -> npt.NDArray[np.int64]:
    """Length in bytes of each line of ``data``, without its newline and one CR before it."""
    a = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(a == ord("\n"))
    if a.size and a[-1] != ord("\n"):
        ends = np.append(ends, a.size)
    starts = np.zeros_like(ends)
    starts[1:] = ends[:-1] + 1
    cr = (ends > starts) & (a[np.maximum(ends - 1, 0)] == ord("\r"))
    length: npt.NDArray[np.int64] = ends - starts - cr
    return length


# (codes per line, the distinct values they index, null -> the last, None)
_Coded = tuple[npt.NDArray[np.int64], list[str | None]]
_KEYS = ("sec", "tail", "node", "state", "rsv", "job")
# the tokenizers a chunk can be cut by: the compiled one when it is installed, else polars'
TOKENIZERS = ("native", "polars") if tokenize_moab is not None else ("polars",)


@dataclass(slots=True, frozen=True)
class Tokens:
    """A chunk cut by a tokenizer: lines, whether each has the canonical layout, and the six
    columns (second, rest of the head, node, state, rsvlist, joblist) as per-chunk codes."""

    lines: int
    ok: npt.NDArray[np.bool_]
    coded: dict[str, _Coded]
    # per column, the line each value is first seen on, when the codes are numbered in order of
    # first appearance among the canonical lines (the compiled tokenizer); else None
    first: dict[str, npt.NDArray[np.int64]] | None = None
    # the compiled tokenizer's own form, for the compiled rest of the fast path: ``ok`` as
    # uint8, codes as uint32 (0xFFFFFFFF on the lines it refused: the null code is not used),
    # the "tail" column without the fraction's three digits, which ``ms`` holds per line
    native: bool = False
    ms: npt.NDArray[np.uint16] | None = None


def tokenize(data: bytes | memoryview, tokenizer: str | None = None) -> Tokens | None:
    """The chunk's :class:`Tokens`, or None when it must take the line-by-line path. Pure (no
    codebook): it may run on another thread while the previous chunk is accounted (the compiled
    tokenizer releases the GIL). ``tokenizer``: one of :data:`TOKENIZERS`, default the first."""
    if not data or bytes(data[:6]).startswith(_COMPRESSED_MAGIC):
        return None
    tokenizer = tokenizer or TOKENIZERS[0]
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer {tokenizer!r}: not one of {', '.join(TOKENIZERS)}")
    if tokenizer == "native":
        return _tokens_native(data)
    t = _tokens_polars(data)
    return None if t is None else Tokens(*t)


def tokens_from_raw(data: bytes | memoryview, raw: Any) -> Tokens | None:
    """:func:`tokenize`'s result for ``data`` from the compiled tokenizer's own result (cut on
    a thread before numpy was loaded: streams/sources/prefetch.py)."""
    if not data or bytes(data[:6]).startswith(_COMPRESSED_MAGIC):
        return None
    return _tokens_native(data, raw)


def _tokens_native(data: bytes | memoryview, raw: Any = None) -> Tokens:
    """The compiled tokenizer (native/src/lib.rs): the columns of :func:`_tokens_polars` for
    the lines it takes, in its own form (:class:`Tokens`, ``native``: the tail without the
    milliseconds, which come per line); it refuses any line that is not exactly canonical
    (the line parser then decides), so it never accepts a line the polars path would not. Its
    codes are numbered in order of first appearance, with the line of each first appearance."""
    assert tokenize_moab is not None
    n_lines, ok_bytes, columns, ms_bytes = tokenize_moab(data) if raw is None else raw
    ok = np.frombuffer(ok_bytes, dtype=np.uint8).view(bool)
    coded: dict[str, _Coded] = {}
    first: dict[str, npt.NDArray[np.int64]] = {}
    for k, (code_bytes, values, first_bytes) in zip(_KEYS, columns, strict=True):
        codes = np.frombuffer(code_bytes, dtype="<u4")
        coded[k] = (codes, [*values, None])
        first[k] = np.frombuffer(first_bytes, dtype="<u4").astype(np.int64)
    return Tokens(n_lines, ok, coded, first, True, np.frombuffer(ms_bytes, dtype="<u2"))


def _tokens_polars(
    data: bytes | memoryview,
) -> tuple[int, npt.NDArray[np.bool_], dict[str, _Coded]] | None:
    """polars' CSV reader split on the quote: per line whether it has the canonical layout,
    and the six columns as per-chunk codes; None when the reader refuses the chunk."""
    import polars as pl

    data = bytes(data)  # a memoryview of the block read (streams.sources.files.line_chunks)
    tokenised = data
    try:
        df = _tokenise(tokenised)
    except (pl.exceptions.PolarsError, OSError):  # e.g. bytes that are not UTF-8: replace, retry
        try:
            tokenised = data.decode("utf-8", "replace").encode()
            df = _tokenise(tokenised)
        except (pl.exceptions.PolarsError, OSError):
            return None
    n_lines = df.height  # one row per line, blank lines included
    line_bytes = _line_bytes(tokenised)
    if line_bytes.size != n_lines:  # the tokenizer did not keep one row per line: be safe
        return None
    cats = {k: pl.Categories.random() for k in _KEYS}

    def code(expr: pl.Expr, k: str) -> pl.Expr:
        return expr.cast(pl.Categorical(cats[k])).alias(k)

    c0 = pl.col("c0")
    cols = df.select(
        (
            c0.str.ends_with(" Node ")
            & (c0.str.slice(28, 1) == " ")
            & (pl.col("c2") == " status: state=")
            & (pl.col("c4") == " rsvlist=")
            & (pl.col("c6") == " joblist=")
            & (pl.col("c8").is_null() | (pl.col("c8") == "\r"))
            & pl.col("c9").is_null()
            & pl.col("c1").is_not_null()
            & pl.col("c3").is_not_null()
        )
        .fill_null(False)
        .alias("ok"),
        # bytes of the first 8 fields: the line's other bytes must be its 8 quotes (the tokenizer
        # cannot tell a missing field from an empty one: a line cut short in its joblist, or
        # with a stray quote after it, looks the same to it)
        pl.sum_horizontal(pl.col(f"c{i}").str.len_bytes().fill_null(0) for i in range(8)).alias(
            "field_bytes"
        ),
        code(c0.str.slice(0, 19), "sec"),
        code(c0.str.slice(19), "tail"),  # '.696-0600 21166 INFO  Node ': few distinct values
        code(pl.col("c1"), "node"),
        code(pl.col("c3"), "state"),
        code(pl.col("c5"), "rsv"),
        code(pl.col("c7"), "job"),
    )
    ok = cols.get_column("ok").to_numpy()
    ok &= line_bytes - cols.get_column("field_bytes").to_numpy() == 8

    def coded(k: str) -> _Coded:
        """Per-chunk codes of one column and the distinct values they index (null -> last)."""
        col = cols.get_column(k)  # keeps the category mapping alive while it is read
        values: list[str | None] = cats[k].to_series().to_list()
        codes = col.to_physical().fill_null(len(values)).to_numpy().astype(np.int64)
        return codes, [*values, None]

    return n_lines, ok, {k: coded(k) for k in _KEYS}


def parse_moab_chunk(
    data: bytes | memoryview,
    book: Codebook,
    source: str = "",
    first_lineno: int = 1,
    tokenizer: str | None = None,
    tokens: Tokens | None = None,
) -> ParsedChunk:
    """Parse whole lines (``data`` ends at a newline, or at end of file) into a batch. Lines
    end at LF (a CR before it is taken off): the reader has made a bare CR an LF already (a
    line ends at LF, CRLF or a bare CR), so both tokenizers and the line parser cut alike.

    The fast path takes the canonical layout (millisecond timestamp with a +-HHMM offset, the
    line ending at the joblist's closing quote); any other line goes through ``classify_line``,
    which keeps valid variants and rejects the rest. Only values of accepted lines are interned.
    ``tokenizer`` (one of :data:`TOKENIZERS`; default the first) cuts the lines: the result is
    the same whichever does. ``tokens``: ``tokenize(data)`` when the caller has it already.
    """
    if not data:
        return ParsedChunk(NodeStatusBatch.empty())
    if tokens is None:
        tokens = tokenize(data, tokenizer)
        if tokens is None:
            return parse_lines_slow(bytes(data), book, source, first_lineno)
    n_lines, coded, native = tokens.lines, tokens.coded, tokens.native

    # timestamps: wall-clock second + (fraction, offset), each parsed once per distinct value
    sec_codes, sec_vals = coded["sec"]
    tail_codes, tail_vals = coded["tail"]
    sec_lut = local_seconds([v if v is not None else "" for v in sec_vals])
    tail_lut = np.zeros(len(tail_vals), dtype=np.int64)
    tail_ok = np.zeros(len(tail_vals), dtype=bool)
    # the compiled tokenizer's tail lacks the fraction ('.696'): its lines' milliseconds are
    # added per line, and the tail holds the offset ('-0600') and the rest
    frac, blank = ("000", 5) if native else ("", 9)
    for i, v in enumerate(tail_vals):
        if v is not None and _PID_LEVEL_NODE_RE.fullmatch(v, blank + 1):  # v[blank] is ' '
            try:
                tail_lut[i] = _tail_ms(("." + frac if frac else "") + v[:blank])
                tail_ok[i] = True
            except TimestampError:
                pass
    node_codes, node_vals = coded["node"]
    node_ok = np.array([bool(v) for v in node_vals], dtype=bool)
    state_codes, state_vals = coded["state"]
    state_ok = np.array([bool(v and v.strip()) for v in state_vals], dtype=bool)
    rsv_codes, rsv_vals = coded["rsv"]
    job_codes, job_vals = coded["job"]
    job_split = [split_idlist(v) for v in job_vals]  # per distinct value: pure, never raises

    ts_ms: npt.NDArray[np.int64] | None = None
    if native:  # the compiled pass: per line, only lookups in the tables above
        ok_u8 = np.empty(n_lines, dtype=np.uint8)
        split_len = np.fromiter(map(len, job_split), dtype=np.int64, count=len(job_split))
        n_rows, n_runs = moab_accept(
            tokens.ok.view(np.uint8),
            sec_codes,
            tail_codes,
            node_codes,
            state_codes,
            job_codes,
            sec_lut,
            BAD_SECONDS,
            tail_ok.view(np.uint8),
            node_ok.view(np.uint8),
            state_ok.view(np.uint8),
            split_len,
            ok_u8,
        )
        ok = ok_u8.view(bool)
        rows_known: npt.NDArray[np.int64] | None = None
        all_canonical = n_rows == int(np.count_nonzero(tokens.ok))
    else:
        ok = tokens.ok.copy()
        sec = sec_lut[sec_codes]
        ok &= (sec != BAD_SECONDS) & tail_ok[tail_codes]
        ts_ms = sec * 1000 + tail_lut[tail_codes]
        ok &= node_ok[node_codes] & state_ok[state_codes]
        rows_known = np.flatnonzero(ok)
        n_rows = rows_known.size
        all_canonical = n_rows == int(np.count_nonzero(tokens.ok))

    def accepted_rows() -> npt.NDArray[np.int64]:
        nonlocal rows_known
        if rows_known is None:
            rows_known = np.flatnonzero(ok)
        return rows_known

    # the lines the fast path refused: the line parser keeps the variants the format allows
    # ("rescued"), rejects malformed node-status lines and ignores other messages
    rejects: list[Reject] = []
    ignored = 0
    rescued: list[tuple[int, NodeStatus]] = []
    bad = np.flatnonzero(~ok) if n_rows < n_lines else np.empty(0, dtype=np.int64)
    if bad.size:
        lines = bytes(data).split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for i in bad.tolist():
            text = lines[i].decode("utf-8", "replace")
            r = classify_line(text)
            if r is None:
                ignored += 1
            elif isinstance(r, str):
                rejects.append(Reject(r, source, first_lineno + i, text))
            else:
                rescued.append((i, r))

    # Intern the values of accepted lines only, in line order over fast and rescued lines: all
    # nodes, then states, then first reservations, then running jobs, as from_records does. So
    # codes, and the name an unknown state gets (as first seen), do not depend on which lines
    # took the fast path, nor on the tokenizer's category order (which depends on the process's
    # history).
    recs = [r for _, r in rescued]
    slow = [(i, -1, k) for k, (i, _) in enumerate(rescued)]

    # every canonical line was accepted: where the tokenizer numbers codes in order of first
    # appearance, each value's first accepted line is its first line (no search)
    first_seen = tokens.first if all_canonical else None

    def in_line_order(
        codes: npt.NDArray[np.int64], n_values: int, key: str
    ) -> list[tuple[int, int]]:
        """(code, -1) for the first fast row of each distinct code and (-1, k) for rescued
        record k, ordered by line (a line is either fast or rescued)."""
        if first_seen is not None:
            fast_lines = first_seen[key].tolist()  # codes 0, 1, ...: every value but the null
            distinct = np.arange(len(fast_lines), dtype=np.int64)
        else:
            rows = accepted_rows()
            accepted = codes[rows]
            first = np.full(n_values, accepted.size, dtype=np.int64)  # first accepted row
            np.minimum.at(first, accepted, np.arange(accepted.size, dtype=np.int64))
            distinct = np.flatnonzero(first < accepted.size)
            fast_lines = rows[first[distinct]].tolist()
        fast = zip(fast_lines, distinct.tolist(), [-1] * distinct.size, strict=True)
        return [(v, k) for _, v, k in sorted([*fast, *slow])]

    node_lut = np.full(len(node_vals), _NOT_INTERNED, dtype=np.int64)
    for c, k in in_line_order(node_codes, len(node_vals), "node"):
        if c >= 0:  # accepted: node_ok, not None
            node_lut[c] = book.nodes.code(cast(str, node_vals[c]))
        else:
            book.nodes.code(recs[k].node)
    state_lut = np.full(len(state_vals), _NOT_INTERNED, dtype=np.int64)
    for c, k in in_line_order(state_codes, len(state_vals), "state"):
        if c >= 0:  # accepted: state_ok
            state_lut[c] = book.states.code(cast(str, state_vals[c]))
        else:
            book.states.code(recs[k].state)
    rsv_lut = np.full(len(rsv_vals), NO_JOB, dtype=np.int64)
    for c, k in in_line_order(rsv_codes, len(rsv_vals), "rsv"):
        ids = split_idlist(rsv_vals[c]) if c >= 0 else recs[k].rsvlist
        if ids:
            first_id = book.jobs.code(ids[0])
            if c >= 0:
                rsv_lut[c] = first_id
    job_lists: list[list[int]] = [[] for _ in job_vals]
    for c, k in in_line_order(job_codes, len(job_vals), "job"):
        ids = job_split[c] if c >= 0 else recs[k].joblist
        job_ids = [book.jobs.code(j) for j in ids]
        if c >= 0:
            job_lists[c] = job_ids
    job_len = np.array([len(x) for x in job_lists], dtype=np.int64)
    job_flat = np.array([j for x in job_lists for j in x], dtype=np.int64)
    job_off = np.concatenate([[0], np.cumsum(job_len)])

    if native:
        ts_col, node_col, state_col, rsv_col = (np.empty(n_rows, dtype=np.int64) for _ in "tnsr")
        has_job = np.empty(n_rows, dtype=bool)
        run_row, run_job = np.empty(n_runs, dtype=np.int64), np.empty(n_runs, dtype=np.int64)
        moab_assemble(
            ok_u8,
            tokens.ms,
            sec_codes,
            tail_codes,
            node_codes,
            state_codes,
            rsv_codes,
            job_codes,
            sec_lut,
            tail_lut,
            node_lut,
            state_lut,
            rsv_lut,
            job_len,
            job_off,
            job_flat,
            ts_col,
            node_col,
            state_col,
            rsv_col,
            has_job.view(np.uint8),
            run_row,
            run_job,
        )
        batch = NodeStatusBatch(ts_col, node_col, state_col, rsv_col, has_job, run_row, run_job)
    else:
        assert ts_ms is not None
        rows = accepted_rows()
        sc = state_codes[rows]
        jc = job_codes[rows]
        counts = job_len[jc]
        run_row = np.repeat(np.arange(rows.size, dtype=np.int64), counts)
        starts = np.repeat(job_off[jc], counts)
        within = np.arange(run_row.size, dtype=np.int64) - np.repeat(
            np.cumsum(counts) - counts, counts
        )
        batch = NodeStatusBatch(
            ts_ms=ts_ms[rows],
            node=node_lut[node_codes[rows]],
            state=state_lut[sc],
            rsv=rsv_lut[rsv_codes[rows]],
            has_job=counts > 0,
            run_row=run_row,
            run_job=job_flat[starts + within] if run_row.size else np.empty(0, dtype=np.int64),
        )
    is_row = ok
    if rescued:  # their values are interned already: from_records gives the same codes
        batch = _merge_rescued(batch, accepted_rows(), rescued, book)
        is_row = ok.copy()
        is_row[[i for i, _ in rescued]] = True
    return ParsedChunk(batch, rejects, n_lines, ignored, first_lineno, is_row)


def _merge_rescued(
    batch: NodeStatusBatch,
    rows: npt.NDArray[np.int64],
    rescued: list[tuple[int, NodeStatus]],
    book: Codebook,
) -> NodeStatusBatch:
    """Put records parsed by the slow path back at their line positions (arrival order)."""
    extra = NodeStatusBatch.from_records([r for _, r in rescued], book)
    pos = np.concatenate([rows, np.array([i for i, _ in rescued], dtype=np.int64)])
    order = np.argsort(pos, kind="stable")
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    n0 = rows.size

    def cat(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return np.concatenate([a, b])[order]

    run_row = np.concatenate([inv[batch.run_row], inv[extra.run_row + n0]])
    run_job = np.concatenate([batch.run_job, extra.run_job])
    o2 = np.argsort(run_row, kind="stable")
    return NodeStatusBatch(
        cat(batch.ts_ms, extra.ts_ms),
        cat(batch.node, extra.node),
        cat(batch.state, extra.state),
        cat(batch.rsv, extra.rsv),
        cat(batch.has_job, extra.has_job),
        run_row[o2],
        run_job[o2],
    )
