"""drainwatch's compiled Moab node-status tokenizer, the rest of its fast path, and the drain
accountant loops (src/)."""

from collections.abc import Sequence
from typing import Any

def tokenize_moab(
    data: bytes | memoryview,
) -> tuple[int, bytes, tuple[tuple[bytes, list[str], bytes], ...], bytes]:
    """(lines, ok per line (0/1 bytes), per column (codes: little-endian u32 per line,
    0xFFFFFFFF where refused; distinct values, numbered in order of first appearance; the line
    each is first seen on, little-endian u32) for head second, head after the milliseconds,
    node, state, rsvlist, joblist; the milliseconds, little-endian u16 per line)."""

def moab_accept(
    tok_ok: Any,
    sec: Any,
    tail: Any,
    node: Any,
    state: Any,
    job: Any,
    sec_lut: Any,
    bad_seconds: int,
    tail_ok: Any,
    node_ok: Any,
    state_ok: Any,
    job_len: Any,
    out_ok: Any,
) -> tuple[int, int]:
    """Per line (uint32 codes): accepted when the tokenizer took it and its values passed
    their per-value checks (uint8 tables; sec_lut int64 with bad_seconds); writes out_ok
    (uint8) and returns (accepted lines, their job entries: job_len per value, int64)."""

def moab_assemble(
    ok: Any,
    ms: Any,
    sec: Any,
    tail: Any,
    node: Any,
    state: Any,
    rsv: Any,
    job: Any,
    sec_lut: Any,
    tail_lut: Any,
    node_lut: Any,
    state_lut: Any,
    rsv_lut: Any,
    job_len: Any,
    job_off: Any,
    job_flat: Any,
    out_ts: Any,
    out_node: Any,
    out_state: Any,
    out_rsv: Any,
    out_has_job: Any,
    out_run_row: Any,
    out_run_job: Any,
) -> None:
    """The accepted lines' batch columns from the int64 tables (filled in place: time in ms,
    node, state, first reservation, has-job as uint8; each job entry's row and job)."""

def drain_intervals(
    node: Any,
    ts: Any,
    state: Any,
    rsv: Any,
    has_job: Any,
    last_ts: Any,
    last_state: Any,
    last_rsv: Any,
    last_combo: Any,
    none_ts: int,
    no_job: int,
    out: Any,
) -> tuple[int, int, int, int]:
    """A batch of records (int64 arrays; has_job uint8) against each node's latest accepted
    record (the four last_* int64 arrays, updated in place): (duplicates, out of order,
    accepted, m); the first m columns of ``out`` (int64, 6 rows at least as long as the batch)
    are the intervals closed: node, start, end, state, combo, rsv."""

def drain_accrue(
    node: Any,
    start: Any,
    end: Any,
    state: Any,
    combo: Any,
    rsv: Any,
    max_gap_ms: int,
    idle: int,
    no_job: int,
    fine_edges: Any,
    hour_edges: Any,
    day_edges: Any,
    node_ms: Any,
    node_gap_ms: Any,
    last_fine: Any,
    last_hour: Any,
    last_day: Any,
    job_drain_ms: Any,
    job_first_ms: Any,
    job_last_ms: Any,
) -> tuple[int, int, int, bytes, bytes, bytes, bytes, bytes, bytes]:
    """Intervals split at the fine edges and summed (arrays updated in place): (gaps, first
    fine window, windows, their category sums, nodes new per fine / hour / day window as
    (edge, count) pairs, drain (job, node) pairs), int64 arrays as little-endian bytes."""

def sample_lines(
    data: bytes | memoryview,
) -> tuple[Any, ...]:
    """Node-sample trace lines to columns (src/samples.rs): (status per line: 0 blank, 1 taken,
    2 Python decides; little-endian u64 (start, end) per line; the taken lines' ts, start,
    core (f64), pid, write_bytes, read_bytes, vmRss, vmSwap, cores (i64), job and node codes
    (u32), as little-endian bytes; job values; node values)."""

def lp_lines(
    prefix: str,
    tags: Any,
    fields: Any,
    cluster: str,
    rows: list[Any],
    times: list[float] | None,
    time_col: int,
    time_div: float,
    job_col: int,
    width: int,
) -> list[str | None]:
    """Each row (tuple or list) as one line of InfluxDB line protocol (src/lineproto.rs): ''
    for a row without fields, None for a row with a value left to Python's
    ``Measurement.line``. tags: (",key=", column or -1 for the cluster) in key order; fields:
    ("key=", column, kind) in key order; times: each row's POSIX seconds, else column
    ``time_col`` / ``time_div``; job_col >= 0: crc32(job id) % 10^6 in the nanoseconds; a row
    of another ``width`` is None."""

def lp_float(x: float) -> str:
    """repr(x) without a trailing '.0' (the line protocol's float text)."""

def lp_bodies(points: Sequence[Any], writers: int, batch: int) -> list[list[bytes]]:
    """The request bodies of lines of line protocol ('' and None left out; src/lineproto.rs):
    per writer (zlib's crc32 of the text before a line's first space, modulo ``writers``),
    bodies of at most ``batch`` lines joined by newlines, in the lines' order."""

def jobevent_rows(value: bytes, not_before_ms: float, not_after_ms: float) -> list[bytes | None]:
    """A job-events message's lines (``bytes.splitlines()`` when it holds a line feed, else
    the whole message): for each, the JSON of the row ``jobevent_row`` gives (src/jobevents.rs;
    the common line only), or None: the line is left to Python (bad, blank, or unusual)."""
