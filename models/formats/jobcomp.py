"""Slurm ``jobcomp/kafka`` (and ``jobcomp/elasticsearch``) JSON job records -> JobEvents.

Both plugins serialise the same record, built by ``jobcomp_common_job_record_to_data()`` in
Slurm's ``src/plugins/jobcomp/common/jobcomp_common.c`` (SchedMD/slurm; plugin guides
https://slurm.schedmd.com/jobcomp_kafka.html and https://slurm.schedmd.com/elasticsearch.html).
Fields used here, as named in that record:

- ``jobid`` (int), ``username`` / ``user_id``, ``groupname`` / ``group_id``, ``account``,
  ``partition``, ``job_name``, ``cluster``, ``qos``;
- ``@submit``, ``@eligible``, ``@start``, ``@end``: UTC ``%FT%T`` strings (``2024-05-01T10:11:12``,
  no offset); ``@start`` is ``Unknown`` for a job cancelled while pending whose expected start
  was in the future; ``elapsed`` = end - start (s); ``@queue_wait`` = start - eligible (s);
- ``nodes`` (hostlist expression), ``total_nodes``, ``total_cpus``, ``alloc_node`` (the submit
  host, not a compute node);
- ``state`` (``COMPLETED``, ``FAILED``, ``TIMEOUT``, ``CANCELLED``, ``NODE_FAIL`` ...),
  ``exit_code`` and ``derived_ec`` as ``"rc:signal"``;
- ``time_limit`` in seconds (absent when unlimited);
- ``array_job_id`` / ``array_task_id``, ``het_job_id`` / ``het_job_offset`` (ignored).

Since Slurm 25.05 jobcomp/kafka can also publish a record when a job starts. Such a record's
``state`` is ``RUNNING``. By default every record is taken as a completion record and yields
submit (+ start if it ran) + end; with ``start_records=True`` a ``RUNNING`` record yields submit +
start and a completion record yields only its end, so a stream carrying both does not count a
job twice. Timestamps given as numbers (epoch seconds) or with an offset are accepted too.

Identity (:mod:`models.records.jobid`): ``jobid`` is normalised as every format's job id
(``4242``, ``4242.0`` and ``" 4242"`` are one job; ``missing_jobid``, ``bad_jobid``) and
``cluster`` is kept with the events (:func:`iter_jobcomp_records`). Ranges (issue 31 class 4;
:mod:`models.records.plausible`): ``total_nodes`` and ``total_cpus`` 0 .. 2**31 - 1
(``bad_total_nodes``, ``bad_total_cpus``), ``time_limit`` 0 .. ten years (``bad_time_limit``),
exit codes ``rc:signal`` 0 .. 255 each or an integer within a C int (``bad_exit_code``); the
times are checked against the run's bounds by the source.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

from models.formats.hostlist import HostlistError, expand_hostlist
from models.records.jobevent import JobEvent, JobEventError
from models.records.jobid import JobIdError, normalise_job_id
from models.records.ranges import (
    EXIT_CODE_MAX,
    EXIT_CODE_MIN,
    MAX_EXIT,
    count_ok,
    duration_ok,
)
from models.records.reject import Reject

_NO_TIME = frozenset({"", "unknown", "none", "n/a"})
_INT64_MAX = 2**63 - 1
# an unsigned integer given as text: ASCII digits (str.isdigit() also takes '²', which int()
# refuses), at most 18 of them so that it fits in int64
_UINT_RE = re.compile(r"[0-9]{1,18}")


def _finite(v: Any) -> float | None:
    """``v`` as a float when it is a finite JSON number (not a boolean), else None."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer beyond any float
        return None
    return f if math.isfinite(f) else None


def _ts(d: dict[str, Any], key: str, required: bool = False) -> float | None:
    v = d.get(key)
    if v is None or (isinstance(v, str) and v.strip().lower() in _NO_TIME):
        if required:
            raise JobEventError(f"missing_{key.lstrip('@')}")
        return None
    if isinstance(v, bool):
        raise JobEventError(f"bad_{key.lstrip('@')}", repr(v))
    if isinstance(v, int | float):
        f = _finite(v)
        if f is None:
            raise JobEventError(f"bad_{key.lstrip('@')}", repr(v))
        return f
    if not isinstance(v, str):
        raise JobEventError(f"bad_{key.lstrip('@')}", repr(v))
    try:
        dt = datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
    except ValueError as e:
        raise JobEventError(f"bad_{key.lstrip('@')}", v) from e
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _int(d: dict[str, Any], key: str) -> int | None:
    """A count (``total_nodes``, ``total_cpus``): 0 .. 2**31 - 1, as a number or digits."""
    v = d.get(key)
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        raise JobEventError(f"bad_{key}", repr(v))
    if isinstance(v, str) and _UINT_RE.fullmatch(v.strip()) and count_ok(int(v)):
        return int(v)
    f = _finite(v)
    if f is not None and f == int(f) and 0 <= v <= _INT64_MAX and count_ok(int(v)):
        return int(v)
    raise JobEventError(f"bad_{key}", repr(v))


def _str(d: dict[str, Any], *keys: str) -> str | None:
    for k in keys:
        v = d.get(k)
        if v is not None and v != "":
            return str(v)
    return None


def _exit_status(v: Any) -> int | None:
    """``"rc:signal"`` -> rc, or 128 + signal when rc is 0 and a signal killed the job."""
    if v is None or v == "":
        return None
    if isinstance(v, int) and not isinstance(v, bool) and EXIT_CODE_MIN <= v <= EXIT_CODE_MAX:
        return v
    if not isinstance(v, str):
        raise JobEventError("bad_exit_code", repr(v))
    rc, _, sig = v.partition(":")
    if not _UINT_RE.fullmatch(rc.strip()) or (sig and not _UINT_RE.fullmatch(sig.strip())):
        raise JobEventError("bad_exit_code", v)
    r, s = int(rc), int(sig or 0)
    if r > MAX_EXIT or s > MAX_EXIT:  # an exit status and a signal: 0..255 each
        raise JobEventError("bad_exit_code", v)
    return 128 + s if r == 0 and s else r


def jobcomp_record_events(d: Any, start_records: bool = False) -> list[JobEvent]:
    """Events of one decoded jobcomp record; raises JobEventError with a reason."""
    if not isinstance(d, dict):
        raise JobEventError("not_an_object")
    try:
        jobid = normalise_job_id(d.get("jobid"))
    except JobIdError as e:
        raise JobEventError("bad_jobid", str(e)) from None
    if jobid is None:
        raise JobEventError("missing_jobid")
    state = _str(d, "state")
    state = state.upper() if state else None
    submit = _ts(d, "@submit")
    start = _ts(d, "@start")
    end = _ts(d, "@end")
    running = state == "RUNNING"
    if not running and end is None:
        raise JobEventError("missing_end")
    if start is not None and end is not None and not running and end < start:
        raise JobEventError("end_before_start")
    # as sacct: a job neither starts nor ends before it was submitted (no negative waits)
    if submit is not None and start is not None and start < submit:
        raise JobEventError("start_before_submit")
    if submit is not None and end is not None and not running and end < submit:
        raise JobEventError("end_before_submit")
    try:
        nodelist = tuple(expand_hostlist(_str(d, "nodes")))
    except HostlistError as e:
        raise JobEventError("bad_nodes", str(e)) from e
    tl = d.get("time_limit")
    if tl is not None and ((tl_s := _finite(tl)) is None or not duration_ok(tl_s)):
        raise JobEventError("bad_time_limit", repr(tl))
    ec = _exit_status(
        d.get("derived_ec") if d.get("derived_ec") not in (None, "") else d.get("exit_code")
    )
    common: dict[str, Any] = dict(
        job=jobid,
        user=_str(d, "username", "user_id"),
        group=_str(d, "groupname", "group_id"),
        account=_str(d, "account"),
        partition=_str(d, "partition"),
        name=_str(d, "job_name"),
        nodes=_int(d, "total_nodes"),
        cores=_int(d, "total_cpus"),
        req_walltime=None if tl is None else float(tl),
    )
    ran = start is not None and (bool(nodelist) or (end is not None and end > start))
    ev: list[JobEvent] = []
    if running:
        if start is None:
            raise JobEventError("missing_start")
        if submit is not None:
            ev.append(JobEvent(type="submit", ts=submit, **common))
        ev.append(JobEvent(type="start", ts=start, node_list=nodelist, **common))
        return ev
    if not start_records:
        if submit is not None:
            ev.append(JobEvent(type="submit", ts=submit, **common))
        if ran:
            assert start is not None  # ran implies a start
            ev.append(
                JobEvent(
                    type="start",
                    ts=start,
                    node_list=nodelist,
                    **common,
                )
            )
    elif not ran and submit is not None:
        ev.append(JobEvent(type="submit", ts=submit, **common))  # never started: no start record
    assert end is not None  # not running: a missing end was rejected above
    ev.append(
        JobEvent(
            type="end",
            ts=end,
            node_list=nodelist if ran else (),
            state=state,
            exit_code=ec,
            **common,
        )
    )
    return ev


def iter_jobcomp_events(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    start_records: bool = False,
    ignored: Counter[str] | None = None,
) -> Iterator[JobEvent]:
    """One JSON record per line (as consumed from the Kafka topic or an Elasticsearch export);
    blank lines are counted in ``ignored`` (when given) as ``blank``."""
    for _, evs in iter_jobcomp_records(lines, rejects, source, start_records, ignored):
        yield from evs


def record_cluster(d: Any) -> str | None:
    """The ``cluster`` of a decoded record, stripped; None when not given."""
    v = d.get("cluster") if isinstance(d, dict) else None
    s = None if v is None else str(v).strip()
    return s or None


def iter_jobcomp_records(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    start_records: bool = False,
    ignored: Counter[str] | None = None,
) -> Iterator[tuple[str | None, list[JobEvent]]]:
    """Per record: its ``cluster`` (None when not given) and its events (see
    :func:`iter_jobcomp_events`), so that a source can key jobs by (cluster, job id)."""
    for lineno, raw in enumerate(lines, start=1):
        text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        if not text.strip():
            if ignored is not None:
                ignored["blank"] += 1
            continue
        try:
            d = orjson.loads(text)
        except orjson.JSONDecodeError:
            if rejects is not None:
                rejects.append(Reject("bad_json", source, lineno, text.rstrip("\r\n")))
            continue
        if isinstance(d, dict) and "_source" in d and isinstance(d["_source"], dict):
            d = d["_source"]  # an Elasticsearch hit
        try:
            evs = jobcomp_record_events(d, start_records=start_records)
        except JobEventError as e:
            if rejects is not None:
                rejects.append(Reject(e.reason, source, lineno, text.rstrip("\r\n")))
            continue
        yield record_cluster(d), evs
