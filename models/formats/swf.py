"""Standard Workload Format (SWF) traces: header comments and the 18-field job records.

SWF is the format of the Parallel Workloads Archive (Chapin, Cirne, Feitelson et al., "Benchmarks
and standards for the evaluation of parallel job schedulers", JSSPP 1999; field list as published
at https://www.cs.huji.ac.il/labs/parallel/workload/swf.html). A trace starts with ``;`` comment
lines carrying ``Key: value`` header fields (MaxNodes, MaxProcs, UnixStartTime, TimeZoneString...),
then one job per line with 18 whitespace-separated numbers; ``-1`` means "unknown".

Pure: no file I/O here. A bad job line becomes a :class:`models.records.reject.Reject` and never
stops the parse or loses the lines around it.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from models.records.reject import RecordError, Reject

N_FIELDS = 18
UNKNOWN = -1  # the standard's value of any field that is not known (parsed as None)
# Largest integer field: int64, so times stay finite floats and every value fits a numpy column
MAX_INT = 2**63 - 1

# A header key of "; Key: value" (the colon followed by a blank or the end of line, so
# "http://..." continuation lines are not taken for keys). Matched by hand around this: the one
# pattern it replaces had lazy groups next to \s* and backtracked quadratically on long blanks.
_KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9_ ]*")


class SwfError(RecordError):
    """An SWF job line that cannot be used; ``reason`` is a short stable key for counting."""


@dataclass(slots=True)
class SwfHeader:
    """The header fields of a trace. ``raw`` keeps every ``Key: value`` field; a key given more
    than once (e.g. ``Queue``) or continued on following comment lines is joined with newlines."""

    max_nodes: int | None = None
    max_procs: int | None = None
    unix_start_time: int | None = None
    time_zone_string: str | None = None
    raw: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class SwfJob:
    """One SWF job record (fields 1-18 of the standard, in order). Unknown values (-1) are None;
    ``job`` and ``submit`` are always present. Times are seconds; submit is relative to the
    header's UnixStartTime."""

    job: int
    submit: int
    wait: int | None
    run: int | None
    procs_alloc: int | None
    cpu_avg: float | None
    mem_used: float | None
    procs_req: int | None
    time_req: int | None
    mem_req: float | None
    status: int | None
    user: int | None
    group: int | None
    app: int | None
    queue: int | None
    partition: int | None
    preceding_job: int | None
    think_time: int | None


# Field kinds, in order: True = integer, False = float (may carry decimals in some traces).
_INT_FIELD = (
    True,
    True,
    True,
    True,
    True,
    False,
    False,
    True,
    True,
    False,
    True,
    True,
    True,
    True,
    True,
    True,
    True,
    True,
)


def _number(tok: str, is_int: bool) -> int | float:
    try:
        if is_int:
            try:
                n = int(tok)
            except ValueError:
                v = float(tok)  # "3600.0" is still a whole number of seconds
                if not v.is_integer():
                    raise
                n = int(v)
            if abs(n) > MAX_INT:  # 400 digits: no finite time, no numpy column
                raise ValueError(tok)
            return n
        return float(tok)
    except (ValueError, OverflowError) as e:
        raise SwfError("bad_number", tok) from e


def parse_swf_job(line: str) -> SwfJob:
    """One SWF job line -> SwfJob. Raises SwfError('wrong_field_count' | 'bad_number' |
    'negative_value' | 'missing_required')."""
    toks = line.split()
    if len(toks) != N_FIELDS:
        raise SwfError("wrong_field_count", f"{len(toks)} fields")
    vals: list[int | float | None] = []
    for i, tok in enumerate(toks):
        v = _number(tok, _INT_FIELD[i])
        if v != v or v in (float("inf"), float("-inf")):
            raise SwfError("bad_number", tok)
        if v == UNKNOWN:
            vals.append(None)
        elif v < 0:
            raise SwfError("negative_value", f"field {i + 1} = {tok}")
        else:
            vals.append(v)
    if vals[0] is None or vals[1] is None:
        raise SwfError("missing_required", "job number and submit time are required")
    # each field's kind follows _INT_FIELD; the two required ones were checked just above
    return SwfJob(*cast(list[Any], vals))


def _int_or_none(s: str | None) -> int | None:
    if s is None:
        return None
    try:
        n = int(s.split()[0])
    except (ValueError, IndexError):
        return None
    return n if abs(n) <= MAX_INT else None


def _header_field(line: str) -> tuple[str, str] | None:
    """``; Key: value`` -> (key, value stripped); None for any other comment line."""
    if not line.startswith(";"):
        return None
    key, colon, val = line[1:].partition(":")
    key = key.strip()
    if not colon or not _KEY_RE.fullmatch(key):
        return None
    if val and not val[0].isspace():  # "http://..."
        return None
    val = val.strip()
    if "\n" in val:  # one line's field (as the former pattern's '.')
        return None
    return key, val


def parse_header(comment_lines: Iterable[str]) -> SwfHeader:
    """Header fields from the leading ``;`` lines of a trace."""
    raw: dict[str, str] = {}
    last: str | None = None
    for line in comment_lines:
        s = line.rstrip("\r\n")
        kv = _header_field(s)
        if kv is not None:
            key, val = kv
            raw[key] = f"{raw[key]}\n{val}" if key in raw else val
            last = key
        elif last is not None:
            cont = s.lstrip(";").strip()
            if cont:
                raw[last] = f"{raw[last]}\n{cont}" if raw[last] else cont
            else:
                last = None  # a bare ";" ends a continued field
    tzs = raw.get("TimeZoneString")
    return SwfHeader(
        max_nodes=_int_or_none(raw.get("MaxNodes")),
        max_procs=_int_or_none(raw.get("MaxProcs")),
        unix_start_time=_int_or_none(raw.get("UnixStartTime")),
        time_zone_string=tzs.strip() if tzs else None,
        raw=raw,
    )


def parse_swf(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    ignored: Counter[str] | None = None,
) -> tuple[SwfHeader, Iterator[SwfJob]]:
    """Split a trace into its header (read now, from the leading ``;`` lines) and a lazy iterator
    of jobs. Bad job lines are appended to ``rejects`` (when given) with their reason and 1-based
    line number, and skipped; blank lines and comment lines (the header's and later ones) are
    skipped and counted in ``ignored`` (when given) as ``blank`` and ``comment``."""
    it = iter(lines)
    header_lines: list[str] = []
    first: tuple[int, str] | None = None
    lineno = 0
    for raw_line in it:
        lineno += 1
        line = (
            raw_line.decode("utf-8", "replace")
            if isinstance(raw_line, bytes | bytearray)
            else raw_line
        )
        st = line.strip()
        if not st or st.startswith(";"):
            if ignored is not None:
                ignored["comment" if st else "blank"] += 1
            if st:
                header_lines.append(line)
            continue
        first = (lineno, line)
        break
    header = parse_header(header_lines)

    def jobs() -> Iterator[SwfJob]:
        if first is None:
            return
        for no, raw_line in itertools.chain([first], enumerate(it, start=lineno + 1)):
            line = (
                raw_line.decode("utf-8", "replace")
                if isinstance(raw_line, bytes | bytearray)
                else raw_line
            )
            st = line.strip()
            if not st or st.startswith(";"):
                if ignored is not None:
                    ignored["comment" if st else "blank"] += 1
                continue
            try:
                yield parse_swf_job(st)
            except SwfError as e:
                if rejects is not None:
                    rejects.append(Reject(e.reason, source, no, line.rstrip("\r\n")))

    return header, jobs()
