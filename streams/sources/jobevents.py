"""Job-event files (sacct, jobcomp, SWF, the simulator's JSON lines) -> time-sorted batches.

A file's records are not in event order (a record carries its submit, start and end), so the
whole input is read and sorted first, then cut into batches of at most ``batch`` events that
never straddle a day edge of the configured zone (the stages close their days at those edges).
Every line is accounted for: it gives events (``records`` counts the events), is rejected with
a reason, or holds no record (blank lines, SWF comments, sacct headers and skipped job steps)
and is counted as ``ignored``.
"""

from __future__ import annotations

import bisect
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import BinaryIO, TypeVar

from models.formats.hostlist import MAX_HOSTS
from models.formats.jobsource import iter_job_records, key_by_cluster, record_events, sort_events
from models.formats.swf import parse_header
from models.jobs.capability import DayCalendar
from models.records.jobevent import JobEvent
from models.records.plausible import RESERVED_REASON, TimeBounds, keep_plausible, keep_within
from models.records.reject import Reject, shown_path
from streams.contracts import InputStats, RejectLog
from streams.sources.files import (
    LINE_TOO_LONG,
    MAX_LINE_BYTES,
    capped_lines,
    check_format,
    open_binary,
    reading,
)

BATCH = 8192
T = TypeVar("T")


def text_lines(
    f: BinaryIO,
    source: str,
    rejects: list[Reject],
    max_line_bytes: int = MAX_LINE_BYTES,
    stats: InputStats | None = None,
) -> Iterator[str]:
    """The lines of a job-event file as text (bad UTF-8 replaced; a line ends at LF, CRLF or a
    bare CR), each longer than ``max_line_bytes`` rejected as ``line_too_long`` and read as an
    empty line; ``stats.lines`` counts the lines read so far (the number of the line given last,
    which :func:`with_lines` reads), and is the number of lines when the reading ends."""
    n = 0
    try:
        for line in capped_lines(f, source, rejects, max_line_bytes):
            n += 1
            if stats is not None:
                stats.lines = n
            yield line.decode("utf-8", "replace")
    finally:
        if stats is not None:
            stats.lines = n


def with_lines(records: Iterable[T], stats: InputStats, at: list[int]) -> Iterator[T]:
    """``records``, each one's source line appended to ``at`` (the side array) as it passes.
    ``records`` come from a parser reading :func:`text_lines` with ``stats``; the parsers are
    lazy (a line's records, or its reject, are made before the next line is read), so a
    record's line is the one read last."""
    for r in records:
        at.append(stats.lines or 0)
        yield r


def _event_text(e: JobEvent) -> str:
    return e.to_json().decode()


def _reserved(e: JobEvent) -> float | None:
    return e.reserved_start


def too_long(bad: Sequence[Reject]) -> int:
    """The ``line_too_long`` rejects among ``bad``. Each such line was read as an empty line,
    which the parser skipped (and counted) as blank: it is a reject, not an ignored line."""
    return sum(r.reason == LINE_TOO_LONG for r in bad)


def read_job_events(
    fmt: str,
    paths: list[str],
    rejects: RejectLog,
    bounds: TimeBounds | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_hosts: int = MAX_HOSTS,
) -> tuple[list[JobEvent], list[InputStats]]:
    """Every plausible event of every file, sorted; per-file statistics. An event whose time is
    outside ``bounds`` is rejected (``implausible_time``), so one end dated 2400 cannot charge
    four centuries of node-hours. A job whose end precedes its start (in any of the files) has
    both events rejected (``end_before_start``). Every reject names the line its record was
    read from (each event's line is kept beside it: :func:`with_lines`).
    Lines longer than ``max_line_bytes`` are rejected (``line_too_long``) without being held
    whole; sacct node lists naming more than ``max_hosts`` hosts are rejected
    (``hostlist_too_large``). A ``reserved_start`` outside ``bounds`` is rejected
    (``implausible_reserved_start``), every other number beyond its physical range by the
    parsers (issue 31 class 4, models.records.plausible). A job is (cluster, id) where the
    format gives the cluster: when the files name more than one cluster, its events' job ids
    are ``cluster:id`` (models.records.jobid), so ``sacct -M all`` dumps do not mix jobs of
    one id. File names are shown with backslash escapes where not UTF-8 (``shown_path``)."""
    bounds = bounds or TimeBounds()
    for p in paths:  # an archive or unreadable compression is refused before a line is read
        check_format(p)
    events: list[JobEvent] = []
    stats: list[InputStats] = []
    read: list[tuple[InputStats, list[JobEvent], list[str | None], list[int], list[Reject]]] = []
    opts = {"max_hosts": max_hosts} if fmt == "sacct" else {}
    for p in paths:
        src = shown_path(p)
        st = InputStats(src, bytes=os.path.getsize(p))
        bad: list[Reject] = []
        skipped: Counter[str] = Counter()
        with reading(p), open_binary(p) as f:
            lines = text_lines(f, src, bad, max_line_bytes, st)
            at: list[int] = []  # each event's line
            records = iter_job_records(fmt, lines, src, bad, skipped, **opts)
            cls: list[str | None] = []  # each event's cluster
            evs = list(with_lines(record_events(records, cls), st, at))
        st.ignored = skipped.total() - too_long(bad)
        read.append((st, evs, cls, at, bad))
    # a job is (cluster, id): ids are qualified when the files name more than one cluster
    qualify = len({c for _, _, cls, _, _ in read for c in cls if c}) > 1
    per_file: list[tuple[InputStats, list[JobEvent], list[int], list[Reject]]] = []
    for st, evs, cls, at, bad in read:
        text = _event_text
        evs = keep_plausible(key_by_cluster(evs, cls, qualify), bounds, st.path, text, bad, at)
        evs = keep_within(evs, bounds, _reserved, RESERVED_REASON, st.path, text, bad, at)
        cls.clear()
        per_file.append((st, evs, at, bad))
    # a job that ends before it starts is used by no analytic: both events are rejected
    start = {e.job: e.ts for _, evs, _, _ in per_file for e in evs if e.type == "start"}
    backwards = {
        e.job
        for _, evs, _, _ in per_file
        for e in evs
        if e.type == "end" and e.job in start and e.ts < start[e.job]
    }
    for st, evs, at, bad in per_file:
        if backwards:
            kept = []
            for e, line in zip(evs, at, strict=True):
                if e.job in backwards and e.type in ("start", "end"):
                    bad.append(Reject("end_before_start", st.path, line, e.to_json().decode()))
                else:
                    kept.append(e)
            evs = kept
        st.tally([e.ts for e in evs], bad, rejects)
        events += evs
        stats.append(st)
    return sort_events(events), stats


class JobEventFiles:
    def __init__(
        self, events: list[JobEvent], inputs: list[InputStats], tz: str, batch: int = BATCH
    ) -> None:
        self.events = events
        self.inputs = inputs
        self.cal = DayCalendar(tz)
        self.batch = batch

    def batches(self, rejects: RejectLog) -> Iterator[list[JobEvent]]:
        return day_batches(self.cal, self.events, self.batch)


def day_batches(
    cal: DayCalendar, events: list[JobEvent], batch: int | None = None
) -> Iterator[list[JobEvent]]:
    """``events`` (sorted) in runs of at most ``batch`` that never straddle a day edge of
    ``cal``'s zone (the stages close their days at those edges): the replay's source and the
    live merger's releases are cut alike."""
    n = len(events)
    key = attrgetter("ts")
    i = 0
    while i < n:
        _d, _lo, hi = cal.span(events[i].ts)
        j = bisect.bisect_left(
            events, hi, lo=i, hi=n if batch is None else min(n, i + batch), key=key
        )
        yield events[i:j]
        i = j


def swf_max_nodes(path: str) -> int | None:
    """MaxNodes of an SWF file's header comments."""
    with reading(path), open_binary(path) as f:
        head = []
        for line in text_lines(f, path, []):
            if not line.lstrip().startswith(";"):
                if line.strip():
                    break
                continue
            head.append(line)
    return parse_header(head).max_nodes


def section_size(
    fmt: str, paths: list[str], events: list[JobEvent], nodes: int | None
) -> tuple[int, str]:
    """Capability section size and where it came from: the option, else the SWF header's
    MaxNodes, else the distinct nodes in the node lists, else the largest job."""
    if nodes:
        return nodes, "option"
    if fmt == "swf":
        sizes = [m for m in (swf_max_nodes(p) for p in paths) if m]
        if sizes:
            return max(sizes), "swf MaxNodes"
    names = {n for e in events if e.type == "start" for n in e.node_list}
    if names:
        return len(names), "distinct nodes in node lists"
    big = max((e.nodes or 1 for e in events if e.type == "start"), default=1)
    return big, "largest job"
