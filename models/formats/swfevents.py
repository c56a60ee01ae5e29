"""SWF jobs (:mod:`models.formats.swf`) -> :class:`models.records.jobevent.JobEvent`.

Standard Workload Format (Feitelson et al., Parallel Workloads Archive, field definitions at
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html):

- absolute times: ``ts = UnixStartTime + submit`` (UnixStartTime is the trace start in UTC
  seconds since the epoch; 0 when the header lacks it, so times stay trace-relative);
- start = submit + wait, end = start + run; a job with run or wait unknown (-1) never gets a
  start or end event (submit only); a cancelled job (status 5) that was never allocated
  processors (procs_alloc unknown or 0) and has no run time is "never ran": submit + end at
  submit + wait when wait is known;
- cores = allocated processors (requested when allocation is unknown); nodes = ceil(cores /
  (MaxProcs / MaxNodes)) when the header gives both (procs per node), else nodes = cores;
  ``procs_per_node`` overrides the header;
- status: 1 completed, 0 failed, 5 cancelled; with checkpointing 2 = partial execution to be
  continued, 3 = last partial execution, completed, 4 = last partial execution, failed;
- a trace without waits (every wait -1) can say its submit times are start times (the NASA
  iPSC trace's header Note does); ``unknown_wait`` then gives the wait to assume (0), and
  ``iter_swf_events`` sets it to 0 by itself when the header says so;
- requested wall time = field 9 (requested time); user / group / queue / partition / application
  numbers become strings (``name`` = application number, for per-(user, name) history).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from fractions import Fraction
from typing import Any

from models.formats.swf import SwfHeader, SwfJob, parse_swf
from models.records.jobevent import JobEvent
from models.records.jobid import normalise_job_id
from models.records.reject import Reject

STATUS_STATE = {
    0: "FAILED",
    1: "COMPLETED",
    2: "PARTIAL",
    3: "COMPLETED",
    4: "FAILED",
    5: "CANCELLED",
}


def header_procs_per_node(header: SwfHeader) -> Fraction | None:
    """MaxProcs / MaxNodes (exact) when both are known and positive, else None."""
    if header.max_nodes and header.max_procs and header.max_nodes > 0 and header.max_procs > 0:
        return Fraction(header.max_procs, header.max_nodes)
    return None


def _s(v: int | None, prefix: str = "") -> str | None:
    return None if v is None else f"{prefix}{v}"


def swf_job_events(
    job: SwfJob,
    start_time: float = 0.0,
    ppn: Fraction | float | None = None,
    unknown_wait: float | None = None,
) -> list[JobEvent]:
    """submit / start / end events of one SWF job; ``start_time`` = header UnixStartTime."""
    cores = job.procs_alloc if job.procs_alloc else job.procs_req
    if cores is None:
        nodes = None
    elif ppn:
        nodes = max(1, math.ceil(Fraction(cores) / Fraction(ppn)))
    else:
        nodes = cores
    state = None if job.status is None else STATUS_STATE.get(job.status, f"STATUS_{job.status}")
    common: dict[str, Any] = dict(
        job=normalise_job_id(job.job),  # an int >= 0: its digits
        user=_s(job.user),
        group=_s(job.group),
        partition=_s(job.partition if job.partition is not None else job.queue),
        name=_s(job.app),
        nodes=nodes,
        cores=cores,
        req_walltime=None if job.time_req is None else float(job.time_req),
    )
    submit = start_time + job.submit
    ev = [JobEvent(type="submit", ts=float(submit), **common)]
    never_ran = job.status == 5 and not job.procs_alloc and not job.run
    wait = job.wait if job.wait is not None else unknown_wait
    if wait is None:
        return ev
    start = submit + wait
    if never_ran:
        ev.append(JobEvent(type="end", ts=float(start), state=state, **common))
        return ev
    if job.run is None:
        return ev
    ev.append(JobEvent(type="start", ts=float(start), **common))
    ev.append(JobEvent(type="end", ts=float(start + job.run), state=state, **common))
    return ev


def iter_swf_events(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    procs_per_node: float | None = None,
    start_time: float | None = None,
    unknown_wait: float | None = None,
    ignored: Counter[str] | None = None,
) -> Iterator[JobEvent]:
    """Events of every job of an SWF trace (header read first). ``start_time`` overrides the
    header's UnixStartTime; ``procs_per_node`` overrides MaxProcs / MaxNodes; ``unknown_wait``
    is the wait assumed where it is -1 (0 by default when the header says submit times are
    start times). Blank and comment lines are counted in ``ignored`` (see :func:`parse_swf`)."""
    header, jobs = parse_swf(lines, rejects=rejects, source=source, ignored=ignored)
    if unknown_wait is None and submit_is_start(header):
        unknown_wait = 0.0
    t0 = float(start_time if start_time is not None else (header.unix_start_time or 0))
    ppn = Fraction(procs_per_node) if procs_per_node else header_procs_per_node(header)
    for job in jobs:
        yield from swf_job_events(job, t0, ppn, unknown_wait)


def submit_is_start(header: SwfHeader) -> bool:
    """The header's notes say submit times are really start times (no wait information)."""
    notes = " ".join(v for k, v in header.raw.items() if k.lower().startswith("note"))
    return "submit times are actually start times" in " ".join(notes.lower().split())
