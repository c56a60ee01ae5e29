"""Standard Workload Format (SWF) traces: header comments and the 18-field job records.

SWF is the format of the Parallel Workloads Archive (Chapin, Cirne, Feitelson et al., "Benchmarks
and standards for the evaluation of parallel job schedulers", JSSPP 1999; field list as published
at https://www.cs.huji.ac.il/labs/parallel/workload/swf.html). A trace starts with ``;`` comment
lines carrying ``Key: value`` header fields (MaxNodes, MaxProcs, UnixStartTime, TimeZoneString...),
then one job per line with 18 whitespace-separated numbers; ``-1`` means "unknown".

Pure: no file I/O here. A bad job line becomes a :class:`models.records.reject.Reject` and never
stops the parse or loses the lines around it.

Ranges (issue 31 class 4; :mod:`models.records.plausible`): beyond the standard's ``-1``
(unknown) and ``negative_value``, each field has a physical range, and a job line with a value
beyond it is rejected as ``bad_<field>`` (:data:`FIELD_NAMES`): the durations (wait, run,
average CPU time, requested time, think time) 0 .. ten years, the processor counts
0 .. 2**31 - 1, the memory fields (KiB) 0 .. 4 PiB, the numbers and ids (job, submit, status,
user, group, application, queue, partition, preceding job) 0 .. 2**63 - 1; absolute times
(UnixStartTime + submit ...) are checked against the run's bounds by the source.

The header's MaxNodes and MaxProcs are a machine's size: 1 .. 2**31 - 1; UnixStartTime an
integer 0 .. 2**63 - 1. A header value that is no such number (``MaxNodes: -5``) is what an
operator expects a broken header field to be: ignored, as if the header lacked it (the section
size and processors per node then come from the options or the jobs), and reported, not
fatal: the line is a reject (``bad_max_nodes``, ``bad_max_procs``, ``bad_unix_start_time``)
counted in the summary and written to ``--rejects`` with its line number, while every job of
the trace is read.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from models.records.ranges import MAX_COUNT, MAX_DURATION_S, MAX_MEMORY_KIB
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


FIELD_NAMES = (
    "job",
    "submit",
    "wait",
    "run",
    "procs_alloc",
    "cpu_avg",
    "mem_used",
    "procs_req",
    "time_req",
    "mem_req",
    "status",
    "user",
    "group",
    "app",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
# Each field's largest value (physical ranges, see the module docstring); the rest: MAX_INT
_LARGEST = {
    **dict.fromkeys(("wait", "run", "cpu_avg", "time_req", "think_time"), MAX_DURATION_S),
    **dict.fromkeys(("procs_alloc", "procs_req"), MAX_COUNT),
    **dict.fromkeys(("mem_used", "mem_req"), MAX_MEMORY_KIB),
}
_MAX = tuple(_LARGEST.get(name, MAX_INT) for name in FIELD_NAMES)
# Header fields read: (key, reason when bad, smallest, largest value)
HEADER_FIELDS = (
    ("MaxNodes", "bad_max_nodes", 1, MAX_COUNT),
    ("MaxProcs", "bad_max_procs", 1, MAX_COUNT),
    ("UnixStartTime", "bad_unix_start_time", 0, MAX_INT),
)

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
    'negative_value' | 'missing_required' | 'bad_<field>': beyond the field's range)."""
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
        elif v > _MAX[i]:
            raise SwfError(f"bad_{FIELD_NAMES[i]}", f"field {i + 1} = {tok}")
        else:
            vals.append(v)
    if vals[0] is None or vals[1] is None:
        raise SwfError("missing_required", "job number and submit time are required")
    # each field's kind follows _INT_FIELD; the two required ones were checked just above
    return SwfJob(*cast(list[Any], vals))


def _header_int(s: str | None, lo: int, hi: int) -> int | None:
    """The integer a header value starts with (``MaxNodes: 128 (2 procs each)``); None for an
    absent or empty value. Raises ValueError for one that is no integer or lies outside
    ``lo .. hi`` (the caller ignores it and reports its line)."""
    if s is None or not s.split():
        return None
    tok = s.split()[0]
    if len(tok) > 30 or not tok.lstrip("+-").isascii() or not tok.lstrip("+-").isdigit():
        raise ValueError(tok)
    n = int(tok)
    if not lo <= n <= hi:
        raise ValueError(tok)
    return n


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


def parse_header(
    comment_lines: Iterable[str],
    rejects: list[Reject] | None = None,
    source: str = "",
    linenos: Iterable[int] | None = None,
) -> SwfHeader:
    """Header fields from the leading ``;`` lines of a trace. A MaxNodes, MaxProcs or
    UnixStartTime that is no number in its range is ignored (None) and, when ``rejects`` is
    given, appended to it with its reason and line (``linenos``: each comment line's number,
    else counted from 1)."""
    raw: dict[str, str] = {}
    where: dict[str, tuple[int, str]] = {}  # key -> its first line: number, text
    last: str | None = None
    numbers = iter(linenos) if linenos is not None else itertools.count(1)
    for line in comment_lines:
        no = next(numbers)
        s = line.rstrip("\r\n")
        kv = _header_field(s)
        if kv is not None:
            key, val = kv
            raw[key] = f"{raw[key]}\n{val}" if key in raw else val
            where.setdefault(key, (no, s))
            last = key
        elif last is not None:
            cont = s.lstrip(";").strip()
            if cont:
                raw[last] = f"{raw[last]}\n{cont}" if raw[last] else cont
            else:
                last = None  # a bare ";" ends a continued field
    tzs = raw.get("TimeZoneString")
    got: dict[str, int | None] = {}
    for key, reason, lo, hi in HEADER_FIELDS:
        try:
            got[key] = _header_int(raw.get(key), lo, hi)
        except ValueError:
            got[key] = None
            if rejects is not None:
                no, text = where[key]
                rejects.append(Reject(reason, source, no, text))
    return SwfHeader(
        max_nodes=got["MaxNodes"],
        max_procs=got["MaxProcs"],
        unix_start_time=got["UnixStartTime"],
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
    skipped and counted in ``ignored`` (when given) as ``blank`` and ``comment``. A header
    field out of its range is a reject (see :func:`parse_header`), not an ignored line."""
    it = iter(lines)
    header_lines: list[str] = []
    header_nos: list[int] = []
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
            if st:
                header_lines.append(line)
                header_nos.append(lineno)
            elif ignored is not None:
                ignored["blank"] += 1
            continue
        first = (lineno, line)
        break
    bad: list[Reject] = []
    header = parse_header(header_lines, bad, source, header_nos)
    if ignored is not None and len(header_lines) > len(bad):
        ignored["comment"] += len(header_lines) - len(bad)
    if rejects is not None:
        rejects += bad

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
