"""One entry point for every job source: ``iter_job_events(fmt, lines, ...)`` -> JobEvents.

Formats: ``sacct`` (:mod:`models.formats.sacct`), ``jobcomp`` (Slurm jobcomp/kafka
JSON, :mod:`models.formats.jobcomp`), ``swf`` (:mod:`models.formats.swfevents`), ``jobevents``
(the simulator's JSON lines, :mod:`models.records.jobevent`). Each record yields its submit /
start / end events as available, in record order (not globally time-sorted: use
:func:`sort_events` when order matters). Bad records are appended to ``rejects`` with a reason
and never stop the stream; lines that hold no record (blank lines, SWF comments, sacct headers
and skipped job steps) are counted in ``ignored`` by kind, so every line is a record, a reject
or ignored.

Every format normalises job ids alike (:func:`models.records.jobid.normalise_job_id`);
:func:`iter_job_records` gives each record's cluster beside its events where the format has
one (sacct ``Cluster``, jobcomp ``cluster``), so that a source can key jobs by (cluster, id).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from models.formats.jobcomp import iter_jobcomp_records
from models.formats.sacct import iter_sacct_records
from models.formats.swfevents import iter_swf_events
from models.records.jobevent import JobEvent, JobEventError, parse_jobevent_record
from models.records.jobid import job_key
from models.records.reject import Reject

FORMATS = ("sacct", "jobcomp", "swf", "jobevents")
TYPE_ORDER = {"submit": 0, "start": 1, "end": 2}

# Options each format accepts (anything else is a programming error -> TypeError).
_OPTIONS = {
    "sacct": {"input_tz", "steps", "max_hosts"},
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
            yield parse_jobevent_record(raw)
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
    ``start_records``; swf ``procs_per_node``, ``start_time``, ``unknown_wait``; sacct
    ``max_hosts`` (the largest node list expanded).
    Unknown ``fmt`` -> ValueError; unknown option -> TypeError."""
    records = iter_job_records(fmt, lines, source, rejects, ignored, **opts)  # checks now
    return (e for _, evs in records for e in evs)


def iter_job_records(
    fmt: str,
    lines: Iterable[str | bytes],
    source: str = "",
    rejects: list[Reject] | None = None,
    ignored: Counter[str] | None = None,
    **opts: Any,
) -> Iterator[tuple[str | None, list[JobEvent]]]:
    """Per record of ``lines`` in format ``fmt``: its cluster (None where the format or the
    record gives none) and its events; arguments as :func:`iter_job_events`."""
    if fmt not in _OPTIONS:
        raise ValueError(f"unknown job-event format {fmt!r}; expected one of {', '.join(FORMATS)}")
    bad = set(opts) - _OPTIONS[fmt]
    if bad:
        raise TypeError(f"format {fmt!r} takes no option(s) {', '.join(sorted(bad))}")
    opts = {k: v for k, v in opts.items() if v is not None}
    if fmt == "sacct":
        more = {"max_hosts": opts["max_hosts"]} if "max_hosts" in opts else {}
        return iter_sacct_records(
            lines,
            rejects,
            source,
            tz=opts.get("input_tz"),
            steps=bool(opts.get("steps", False)),
            ignored=ignored,
            **more,
        )
    if fmt == "jobcomp":
        return iter_jobcomp_records(lines, rejects, source, ignored=ignored, **opts)
    if fmt == "swf":
        evs = iter_swf_events(lines, rejects, source, ignored=ignored, **opts)
    else:
        evs = iter_jobevent_lines(lines, rejects, source, ignored)
    return ((None, [e]) for e in evs)


def record_events(
    records: Iterable[tuple[str | None, list[JobEvent]]], clusters: list[str | None]
) -> Iterator[JobEvent]:
    """The events of ``records`` (:func:`iter_job_records`), each one's cluster appended to
    ``clusters`` as it passes (a side array: one reference per event, no pair)."""
    for c, evs in records:
        for e in evs:
            clusters.append(c)
            yield e


def key_by_cluster(
    events: list[JobEvent], clusters: list[str | None], qualify: bool
) -> list[JobEvent]:
    """``events`` (``clusters``: each one's cluster, as :func:`record_events` gives them), each
    job id written :func:`~models.records.jobid.job_key` ``cluster:id`` when ``qualify`` (the
    run's records name more than one cluster) and its record names a cluster; else ``events``
    as read, so a run of one cluster writes what it wrote before jobs were keyed by cluster."""
    if not qualify:
        return events
    return [
        replace(e, job=job_key(c, e.job)) if c else e for e, c in zip(events, clusters, strict=True)
    ]


def event_sort_key(e: JobEvent) -> tuple[float, int, str]:
    return (e.ts, TYPE_ORDER.get(e.type, 3), e.job)


def sort_events(events: Iterable[JobEvent]) -> list[JobEvent]:
    """Events ordered by time, then submit < start < end, then job id (stable otherwise)."""
    return sorted(events, key=event_sort_key)
