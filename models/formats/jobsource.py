"""One entry point for every job source: ``iter_job_events(fmt, lines, ...)`` -> JobEvents.

Formats: ``sacct`` (:mod:`models.formats.sacct`), ``jobcomp`` (Slurm jobcomp/kafka
JSON, :mod:`models.formats.jobcomp`), ``swf`` (:mod:`models.formats.swfevents`), ``jobevents``
(the simulator's JSON lines, :mod:`models.records.jobevent`). Each record yields its submit /
start / end events as available, in record order (not globally time-sorted: use
:func:`sort_events` when order matters). Bad records are appended to ``rejects`` with a reason
and never stop the stream; lines that hold no record (blank lines, SWF comments, sacct headers
and skipped job steps) are counted in ``ignored`` by kind, so every line is a record, a reject
or ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from models.formats.jobcomp import iter_jobcomp_events
from models.formats.sacct import iter_sacct_events
from models.formats.swfevents import iter_swf_events
from models.records.jobevent import JobEvent, JobEventError, parse_jobevent_line
from models.records.reject import Reject

FORMATS = ("sacct", "jobcomp", "swf", "jobevents")
TYPE_ORDER = {"submit": 0, "start": 1, "end": 2}

# Options each format accepts (anything else is a programming error -> TypeError).
_OPTIONS = {
    "sacct": {"input_tz", "steps"},
    "jobcomp": {"start_records"},
    "swf": {"procs_per_node", "start_time", "unknown_wait"},
    "jobevents": set(),
}


def iter_jobevent_lines(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    ignored: Counter[str] | None = None,
) -> Iterator[JobEvent]:
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            if ignored is not None:
                ignored["blank"] += 1
            continue
        try:
            yield parse_jobevent_line(raw)
        except JobEventError as e:
            if rejects is not None:
                text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
                rejects.append(Reject(e.reason, source, lineno, text.rstrip("\r\n")))


def iter_job_events(
    fmt: str,
    lines: Iterable[str | bytes],
    source: str = "",
    rejects: list[Reject] | None = None,
    ignored: Counter[str] | None = None,
    **opts: Any,
) -> Iterator[JobEvent]:
    """JobEvents of ``lines`` in format ``fmt``; the lines that hold no record are counted in
    ``ignored`` (when given) by kind. Options: sacct ``input_tz`` (IANA zone sacct printed its
    times in, default UTC; not the zone of reporting days), ``steps`` (keep steps); jobcomp
    ``start_records``; swf ``procs_per_node``, ``start_time``, ``unknown_wait``.
    Unknown ``fmt`` -> ValueError; unknown option -> TypeError."""
    if fmt not in _OPTIONS:
        raise ValueError(f"unknown job-event format {fmt!r}; expected one of {', '.join(FORMATS)}")
    bad = set(opts) - _OPTIONS[fmt]
    if bad:
        raise TypeError(f"format {fmt!r} takes no option(s) {', '.join(sorted(bad))}")
    opts = {k: v for k, v in opts.items() if v is not None}
    if fmt == "sacct":
        return iter_sacct_events(
            lines,
            rejects,
            source,
            tz=opts.get("input_tz"),
            steps=bool(opts.get("steps", False)),
            ignored=ignored,
        )
    if fmt == "jobcomp":
        return iter_jobcomp_events(lines, rejects, source, ignored=ignored, **opts)
    if fmt == "swf":
        return iter_swf_events(lines, rejects, source, ignored=ignored, **opts)
    return iter_jobevent_lines(lines, rejects, source, ignored)


def event_sort_key(e: JobEvent) -> tuple[float, int, str]:
    return (e.ts, TYPE_ORDER.get(e.type, 3), e.job)


def sort_events(events: Iterable[JobEvent]) -> list[JobEvent]:
    """Events ordered by time, then submit < start < end, then job id (stable otherwise)."""
    return sorted(events, key=event_sort_key)
