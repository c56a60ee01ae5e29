"""Normalised job events: one submit, start or end of one job.

Every job source (simulator JSON lines, Slurm sacct / jobcomp-kafka, SWF) is turned into these,
so that the drain analytics (seed 000) and the job analytics (seeds 001, 002, 004) share one shape.
Times are POSIX seconds (UTC), float. A submit may carry ``reserved_start``: the start of the
reservation the scheduler holds for the job, when its nodes are needed (seed 001's Figure 9). A
start event may carry it too, when the reservation was made after the submit was written (the
simulator: EASY reserves for a job only once it heads the queue); consumers take the submit's
value, else the start's.

The JSON-lines format (:func:`parse_jobevent_record`, what ``--format jobevents`` and ``ship jobs``
read) normalises the job id (:func:`models.records.jobid.normalise_job_id`: ``123``, ``"123"``,
``123.0`` and ``" 123"`` are one job) and checks every number against its physical range
(:mod:`models.records.plausible`): counts 0 .. 2**31 - 1 (``bad_nodes``, ``bad_cores``),
``req_walltime`` 0 .. ten years (``bad_req_walltime``), ``exit_code`` a C int
(``bad_exit_code``); ``ts`` and ``reserved_start`` are checked against the run's time bounds
by the source (``implausible_time``, ``implausible_reserved_start``). :func:`jobevent_from_dict`
and the row form below are the schema checks of the worker's own topics (types, finite,
int64), which the compiled reader (native/src/jobevents.rs) mirrors.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from models.records.jobid import JobIdError, normalise_job_id
from models.records.ranges import EXIT_CODE_MAX, EXIT_CODE_MIN, count_ok, duration_ok
from models.records.reject import RecordError

EVENT_TYPES = ("submit", "start", "end")
# Integers must fit int64 downstream (the analytics' numpy columns, orjson in to_json), and a
# float must be finite (orjson writes NaN and inf as null)
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
FLOAT_MAX = sys.float_info.max


class JobEventError(RecordError):
    """A job-event record that cannot be used; ``reason`` is a short stable key for counting."""


@dataclass(slots=True)
class JobEvent:
    """One event, never changed once made (not ``frozen``: a frozen dataclass sets each field
    through ``object.__setattr__``, 1.4 us an event against 0.16 us, and the live worker makes
    one per job event it merges; code that needs another value makes another event with
    ``dataclasses.replace``). Not hashable."""

    type: str
    ts: float
    job: str
    user: str | None = None
    group: str | None = None
    account: str | None = None
    partition: str | None = None
    name: str | None = None
    nodes: int | None = None
    cores: int | None = None
    req_walltime: float | None = None
    node_list: tuple[str, ...] = field(default_factory=tuple)
    state: str | None = None
    exit_code: int | None = None
    backfill: bool | None = None
    reserved_start: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "ts": self.ts, "job": self.job}
        for k in (
            "user",
            "group",
            "account",
            "partition",
            "name",
            "nodes",
            "cores",
            "req_walltime",
            "state",
            "exit_code",
            "backfill",
            "reserved_start",
        ):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        if self.node_list:
            d["node_list"] = list(self.node_list)
        return d

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())


def parse_ts(value: Any) -> float:
    """POSIX seconds from a number or an ISO 8601 string that carries its UTC offset (or 'Z')."""
    if isinstance(value, bool):
        raise JobEventError("bad_ts", repr(value))
    if isinstance(value, int | float):
        ts = float(value)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise JobEventError("bad_ts", value) from e
        if dt.tzinfo is None:
            raise JobEventError("ts_without_offset", value)
        ts = dt.timestamp()
    else:
        raise JobEventError("bad_ts", repr(value))
    if not math.isfinite(ts):
        raise JobEventError("bad_ts", repr(value))
    return ts


def _opt_int(d: dict[str, Any], key: str) -> int | None:
    """A count (nodes, cores): a non-negative integer (an integral float too) within int64."""
    v = d.get(key)
    if v is None:
        return None
    if (
        isinstance(v, bool)
        or not isinstance(v, int | float)
        or (isinstance(v, float) and not (math.isfinite(v) and v.is_integer()))
        or not 0 <= v <= INT64_MAX
    ):
        raise JobEventError(f"bad_{key}", repr(v))
    return int(v)


def _node_list(v: Any) -> tuple[str, ...]:
    """A node list: a list of node names or one comma-separated string ("" entries dropped)."""
    if v is None:
        return ()
    if isinstance(v, str):
        return tuple(x for x in v.split(",") if x)
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return tuple(x for x in v if x)
    raise JobEventError("bad_node_list", repr(v))


def jobevent_from_dict(d: Any) -> JobEvent:
    """Validate one decoded JSON object into a JobEvent (raises JobEventError with a reason)."""
    if not isinstance(d, dict):
        raise JobEventError("not_an_object")
    typ = d.get("type")
    if typ not in EVENT_TYPES:
        raise JobEventError("bad_type", repr(typ))
    if "ts" not in d:
        raise JobEventError("missing_ts")
    job = d.get("job")
    if job is None or job == "":
        raise JobEventError("missing_job")
    rw = d.get("req_walltime")
    if rw is not None and (
        isinstance(rw, bool)
        or not isinstance(rw, int | float)
        or not 0 <= rw <= FLOAT_MAX  # also NaN and inf (a float of any integer in range)
    ):
        raise JobEventError("bad_req_walltime", repr(rw))
    nl = _node_list(d.get("node_list"))
    bf = d.get("backfill")
    if bf is not None and not isinstance(bf, bool):
        raise JobEventError("bad_backfill", repr(bf))
    rs = d.get("reserved_start")
    try:
        reserved = None if rs is None else parse_ts(rs)
    except JobEventError as e:
        raise JobEventError("bad_reserved_start", repr(rs)) from e
    ec = d.get("exit_code")
    if ec is not None and (
        isinstance(ec, bool) or not isinstance(ec, int) or not INT64_MIN <= ec <= INT64_MAX
    ):
        raise JobEventError("bad_exit_code", repr(ec))

    def s(k: str) -> str | None:
        v = d.get(k)
        return None if v is None else str(v)

    return JobEvent(
        type=typ,
        ts=parse_ts(d["ts"]),
        job=str(job),
        user=s("user"),
        group=s("group"),
        account=s("account"),
        partition=s("partition"),
        name=s("name"),
        nodes=_opt_int(d, "nodes"),
        cores=_opt_int(d, "cores"),
        req_walltime=None if rw is None else float(rw),
        node_list=nl,
        state=s("state"),
        exit_code=ec,
        backfill=bf,
        reserved_start=reserved,
    )


def jobevent_from_own_dict(d: dict[str, Any]) -> JobEvent:
    """A JobEvent from :meth:`JobEvent.to_dict`'s output (already validated: no checks), for
    the worker's own internal topics."""
    nl = d.get("node_list")
    if nl:
        d = {**d, "node_list": tuple(nl)}
    return JobEvent(**d)


def parse_jobevent_line(line: bytes | str) -> JobEvent:
    """One JSON-lines record -> JobEvent; JobEventError('bad_json') for undecodable text."""
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise JobEventError("bad_json", str(e)) from e
    return jobevent_from_dict(d)


def parse_jobevent_record(line: bytes | str) -> JobEvent:
    """One line of the JSON-lines job-event format -> JobEvent, its job id normalised
    (``missing_job``, ``bad_job``) and its numbers within their physical ranges
    (:func:`check_ranges`); JobEventError with the reason otherwise."""
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise JobEventError("bad_json", str(e)) from e
    if isinstance(d, dict) and "job" in d:
        try:
            job = normalise_job_id(d["job"])
        except JobIdError as e:
            raise JobEventError("bad_job", str(e)) from None
        if job != d["job"]:
            d["job"] = job
    return check_ranges(jobevent_from_dict(d))


def check_ranges(e: JobEvent) -> JobEvent:
    """``e`` when its numbers lie within their physical ranges (issue 31, class 4): nodes and
    cores 0 .. 2**31 - 1, req_walltime 0 .. ten years, exit_code a C int; else JobEventError
    with the field's reason (``bad_nodes``, ``bad_cores``, ``bad_req_walltime``,
    ``bad_exit_code``). Times are checked against the run's bounds by the source."""
    if e.nodes is not None and not count_ok(e.nodes):
        raise JobEventError("bad_nodes", repr(e.nodes))
    if e.cores is not None and not count_ok(e.cores):
        raise JobEventError("bad_cores", repr(e.cores))
    if e.req_walltime is not None and not duration_ok(e.req_walltime):
        raise JobEventError("bad_req_walltime", repr(e.req_walltime))
    if e.exit_code is not None and not EXIT_CODE_MIN <= e.exit_code <= EXIT_CODE_MAX:
        raise JobEventError("bad_exit_code", repr(e.exit_code))
    return e


# ---- the worker's internal form: a positional row --------------------------------------------
# The live path forwards checked events between its own agents as rows in the field order of
# :class:`JobEvent` (JSON arrays: smaller and faster to write and read than objects, and built
# without the record); an internal topic's rows are written and read by one release.
_STR_KEYS = ("user", "group", "account", "partition", "name")
_NUMBER = (int, float)


def jobevent_row(d: Any) -> list[Any]:
    """A decoded JSON object, validated, as a JobEvent's fields in order (raises JobEventError
    with the reason, as :func:`jobevent_from_dict`, whose result it equals field by field). The
    common record (plain JSON types, times as numbers, the node list as an array) is checked
    with plain type tests; anything else is left to :func:`jobevent_from_dict`."""
    row = _plain_row(d)
    if row is None:
        e = jobevent_from_dict(d)
        row = [
            e.type,
            e.ts,
            e.job,
            e.user,
            e.group,
            e.account,
            e.partition,
            e.name,
            e.nodes,
            e.cores,
            e.req_walltime,
            e.node_list,
            e.state,
            e.exit_code,
            e.backfill,
            e.reserved_start,
        ]
    return row


def _plain_row(d: Any) -> list[Any] | None:
    if type(d) is not dict:
        return None
    g: Any = d.get
    typ, ts, job = g("type"), g("ts"), g("job")  # Any: plain JSON values
    if typ not in EVENT_TYPES or type(job) is not str or not job:
        return None
    if type(ts) not in _NUMBER or ts - ts != 0:  # bool, NaN, inf, an ISO string: checked
        return None
    row: list[Any] = [typ, float(ts), job]
    for k in _STR_KEYS:
        v = g(k)
        if v is not None and type(v) is not str:
            return None
        row.append(v)
    for k in ("nodes", "cores"):
        v = g(k)
        if v is not None and (type(v) is not int or not 0 <= v <= INT64_MAX):
            return None
        row.append(v)
    rw = g("req_walltime")
    if rw is not None:
        if type(rw) not in _NUMBER or not 0 <= rw <= FLOAT_MAX:
            return None
        rw = float(rw)
    row.append(rw)
    nl = g("node_list")
    if nl is None:
        row.append(())
    elif type(nl) is list and all(type(x) is str for x in nl):
        row.append(tuple(x for x in nl if x))
    else:
        return None
    state, ec, bf, rs = g("state"), g("exit_code"), g("backfill"), g("reserved_start")
    if state is not None and type(state) is not str:
        return None
    if ec is not None and (type(ec) is not int or not INT64_MIN <= ec <= INT64_MAX):
        return None
    if bf is not None and type(bf) is not bool:
        return None
    if rs is not None:
        if type(rs) not in _NUMBER or rs - rs != 0:
            return None
        rs = float(rs)
    row += [state, ec, bf, rs]
    return row


def jobevent_from_row(row: list[Any]) -> JobEvent:
    """A JobEvent from :func:`jobevent_row`'s row as read back from JSON (checked already)."""
    nl = row[11]
    if nl.__class__ is not tuple:
        row[11] = tuple(nl)
    return JobEvent(*row)
