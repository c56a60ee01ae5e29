"""Slurm ``sacct --parsable2`` records -> :class:`SacctJob` -> :class:`JobEvent`.

Default layout: the 26 fields Open XDMoD's Slurm shredder asks for (see ../shared/data/README.md)::

    TZ=UTC sacct --allusers --parsable2 --noheader --allocations --duplicates --format \
    jobid,jobidraw,cluster,partition,qos,account,group,gid,user,uid,submit,eligible,start,end,\
    elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqtres,alloctres,timelimit,nodelist,jobname

A 27th field, when present, is ``Flags`` (``SchedBackfill`` / ``SchedMain`` / ``SchedSubmit``,
Slurm >= 20.11) and sets the backfill flag. A header line (first field ``JobID``, as printed
without ``--noheader``) switches to name-based columns, so any field order or subset works as long
as ``jobid``, ``submit``, ``start`` and ``end`` are present.

A ``|`` inside a job name (the one free-text field of the layout) does not shift the fields:
a line with more fields than its layout takes the fields before ``JobName`` from the front,
those after it from the back, and joins the middle ones back with ``|`` as the name. Without a
header, 27 or more fields are the 27-field layout when the last one is a ``Flags`` value (empty,
or a comma list of words one of which is Slurm's: ``SchedSubmit``, ``SchedMain``,
``SchedBackfill``, ``SchedNotSet``, ``StartReceived``), else the 26-field layout with a longer
name.

Identity (:mod:`models.records.jobid`): ``JobID`` is normalised as every format's job id
(whitespace stripped; array ``123_4`` and het-job ``123+1`` ids kept) and ``Cluster`` is
kept with the events (:func:`iter_sacct_records`), so the source can tell the jobs of a
``sacct -M all`` dump's clusters apart.

Ranges (issue 31 class 4; :mod:`models.records.plausible`): NNodes, NCPUS, ReqCPUS 0 .. 2**31 - 1
(``bad_nnodes`` ...), UID and GID 0 .. 2**32 - 1, Elapsed and Timelimit 0 .. ten years
(``bad_elapsed``, ``bad_timelimit``), ReqMem at most 4 PiB (``bad_reqmem``), ExitCode 0 .. 255
either side of the colon (``bad_exitcode``); the times are checked against the run's bounds
by the source.

Value formats (Slurm's sacct man page and ``time_str2secs``):
- times ``2016-12-22T10:11:12`` in the time zone sacct ran in (``tz``, default UTC);
  ``Unknown`` / ``None`` / empty -> None;
- durations ``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS``, ``MM``, ``D-HH``, ``D-HH:MM`` (optional
  fractional seconds); ``UNLIMITED``, ``Partition_Limit``, ``INVALID`` -> None;
- ``State`` ``CANCELLED by 380693`` -> ``CANCELLED`` (the uid is kept in ``cancelled_by``);
- ``ExitCode`` ``rc:signal``; ``ReqMem`` ``31000Mn`` (per node), ``2000Mc`` (per CPU), ``4G``;
- ``NodeList`` a hostlist expression (:mod:`models.formats.hostlist`); ``None assigned`` =
  never ran.

A job that never ran (``NodeList`` ``None assigned`` or no ``Start``) yields submit (+ end when it
has an end time: Slurm sets Start = End = cancel time for jobs cancelled while pending). Bad lines
become :class:`models.records.reject.Reject` records with a reason; parsing never stops on one.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from models.formats.hostlist import MAX_HOSTS, HostlistError, expand_hostlist
from models.records.jobevent import JobEvent
from models.records.jobid import normalise_job_id
from models.records.ranges import (
    MAX_COUNT,
    MAX_EXIT,
    MAX_MEMORY_KIB,
    MAX_UID,
    duration_ok,
)
from models.records.reject import RecordError, Reject

FIELDS_26 = (
    "jobid",
    "jobidraw",
    "cluster",
    "partition",
    "qos",
    "account",
    "group",
    "gid",
    "user",
    "uid",
    "submit",
    "eligible",
    "start",
    "end",
    "elapsed",
    "exitcode",
    "state",
    "nnodes",
    "ncpus",
    "reqcpus",
    "reqmem",
    "reqtres",
    "alloctres",
    "timelimit",
    "nodelist",
    "jobname",
)
FIELDS_27 = (*FIELDS_26, "flags")
REQUIRED = ("jobid", "submit", "start", "end")
# sacct's Flags words (Slurm's slurmdb_job_flags_str), lower case
_FLAG_WORDS = frozenset(
    {"schedsubmit", "schedmain", "schedbackfill", "schednotset", "startreceived"}
)
_WORD_RE = re.compile(r"[A-Za-z]+")

_NO_TIME = frozenset({"", "unknown", "none", "n/a", "invalid"})
_NO_LIMIT = frozenset({"", "unlimited", "partition_limit", "invalid", "none", "unknown"})
_MEM_RE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([nc]?)$")
# an unsigned integer field: ASCII digits (str.isdigit() also takes '²', which int() refuses),
# at most 18 of them, so every value fits in int64 (the analytics' numpy columns)
_UINT_RE = re.compile(r"[0-9]{1,18}")
_MEM_MB = {"": 1.0, "K": 1.0 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


class SacctError(RecordError):
    """A sacct record that cannot be used; ``reason`` is a short stable key for counting."""


@dataclass(slots=True, frozen=True)
class SacctJob:
    """One parsed sacct record. Times are POSIX seconds (UTC); durations are seconds."""

    jobid: str
    jobidraw: str | None
    cluster: str | None
    partition: str | None
    qos: str | None
    account: str | None
    group: str | None
    gid: int | None
    user: str | None
    uid: int | None
    submit: float
    eligible: float | None
    start: float | None
    end: float | None
    elapsed: float | None
    exit_code: int | None
    exit_signal: int | None
    state: str | None
    cancelled_by: str | None
    nnodes: int | None
    ncpus: int | None
    reqcpus: int | None
    reqmem_mb: float | None
    reqmem_per: str | None  # "node", "cpu" or None (newer Slurm prints no suffix)
    reqtres: str | None
    alloctres: str | None
    timelimit: float | None
    nodelist: tuple[str, ...]
    jobname: str | None
    backfill: bool | None

    @property
    def ran(self) -> bool:
        """True when the job started on nodes. Slurm sets Start = End = cancel time for a job
        cancelled while pending and prints ``None assigned`` as its node list."""
        if self.start is None:
            return False
        if self.nodelist or self.end is None:
            return True
        return self.end > self.start or (self.elapsed or 0) > 0


@lru_cache(maxsize=1 << 14)
def parse_duration(text: str) -> float | None:
    """Slurm duration -> seconds; None for UNLIMITED / Partition_Limit / INVALID / empty.
    Raises SacctError('bad_duration')."""
    s = text.strip()
    if s.lower() in _NO_LIMIT:
        return None
    days = 0
    rest = s
    if "-" in s:
        d, _, rest = s.partition("-")
        if not _UINT_RE.fullmatch(d):
            raise SacctError("bad_duration", text)
        days = int(d)
    parts = rest.split(":")
    if not parts or len(parts) > 3 or any(p == "" for p in parts):
        raise SacctError("bad_duration", text)
    try:
        nums = [float(p) if "." in p else int(p) for p in parts]
    except ValueError as e:  # not a number, or an integer of more than 4300 digits
        raise SacctError("bad_duration", text) from e
    if any(n < 0 for n in nums) or any("." in p for p in parts[:-1]):
        raise SacctError("bad_duration", text)
    if "-" in s:  # D-H, D-H:M, D-H:M:S
        h, m, sec = (nums + [0, 0])[:3]
    elif len(nums) == 3:  # H:M:S
        h, m, sec = nums
    elif len(nums) == 2:  # M:S
        h, (m, sec) = 0, nums
    else:  # M
        h, m, sec = 0, nums[0], 0
    try:
        seconds = float(days * 86400 + h * 3600 + m * 60 + sec)
    except OverflowError as e:  # an integer beyond any float
        raise SacctError("bad_duration", text) from e
    if not math.isfinite(seconds):  # '1e999.' or 400 digits with a fraction
        raise SacctError("bad_duration", text)
    return seconds


@lru_cache(maxsize=1 << 16)
def parse_time(text: str, tz: ZoneInfo | None = None) -> float | None:
    """sacct time (``2016-12-22T10:11:12``, local to ``tz``; UTC when None) -> POSIX seconds;
    None for Unknown/None. Raises SacctError('bad_time')."""
    s = text.strip()
    if s.lower() in _NO_TIME:
        return None
    try:
        dt = datetime.fromisoformat(s)
    except ValueError as e:
        raise SacctError("bad_time", text) from e
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz or UTC)
    return dt.timestamp()


def parse_reqmem(text: str) -> tuple[float | None, str | None]:
    """``31000Mn`` -> (31000.0, 'node'); ``2000Mc`` -> (2000.0, 'cpu'); ``4G`` -> (4096.0, None)."""
    s = text.strip()
    if s == "" or s == "0":
        return (None if s == "" else 0.0), None
    m = _MEM_RE.match(s)
    if m is None:
        raise SacctError("bad_reqmem", text)
    num, unit, per = m.groups()
    mb = float(num) * _MEM_MB[unit]
    if not (math.isfinite(mb) and mb <= MAX_MEMORY_KIB / 1024):  # 4 PiB
        raise SacctError("bad_reqmem", text)
    return mb, {"n": "node", "c": "cpu", "": None}[per]


def parse_exitcode(text: str) -> tuple[int | None, int | None]:
    s = text.strip()
    if s == "":
        return None, None
    rc, sep, sig = s.partition(":")
    if not _UINT_RE.fullmatch(rc) or (sep and not _UINT_RE.fullmatch(sig)):
        raise SacctError("bad_exitcode", text)
    code, signal = int(rc), (int(sig) if sep else None)
    if code > MAX_EXIT or (signal is not None and signal > MAX_EXIT):  # an exit status: 0..255
        raise SacctError("bad_exitcode", text)
    return code, signal


def parse_flags(text: str | None) -> bool | None:
    """``SchedBackfill`` -> True, ``SchedMain`` / ``SchedSubmit`` -> False, else None."""
    if not text:
        return None
    flags = {f.strip().lower() for f in text.split(",")}
    if "schedbackfill" in flags:
        return True
    if "schedmain" in flags or "schedsubmit" in flags:
        return False
    return None


def _int(text: str | None, name: str, most: int = MAX_COUNT) -> int | None:
    """An unsigned integer field within 0 .. ``most`` (a count by default); SacctError
    ``bad_<name>`` otherwise."""
    if text is None:
        return None
    s = text.strip()
    if s == "":
        return None
    if not _UINT_RE.fullmatch(s) or int(s) > most:
        raise SacctError(f"bad_{name}", text)
    return int(s)


def _duration(text: str | None, name: str) -> float | None:
    """A duration field (Elapsed, Timelimit): :func:`parse_duration`, within 0 .. ten years
    (SacctError ``bad_<name>`` beyond)."""
    if text is None:
        return None
    v = parse_duration(text)
    if v is not None and not duration_ok(v):
        raise SacctError(f"bad_{name}", text)
    return v


def _str(text: str | None) -> str | None:
    if text is None:
        return None
    s = text.strip()
    return s or None


def sacct_job_from_fields(
    vals: dict[str, str], tz: ZoneInfo | None = None, max_hosts: int = MAX_HOSTS
) -> SacctJob:
    """Build a SacctJob from ``{field name: text}``; raises SacctError with a reason (a node
    list of more than ``max_hosts`` hosts: ``hostlist_too_large``)."""
    jobid = normalise_job_id(vals.get("jobid"))  # text: None or stripped, never raises
    if not jobid:
        raise SacctError("missing_jobid")
    submit = parse_time(vals.get("submit", ""), tz)
    if submit is None:
        raise SacctError("missing_submit")
    start = parse_time(vals.get("start", ""), tz)
    end = parse_time(vals.get("end", ""), tz)
    if start is not None and start < submit:
        raise SacctError("start_before_submit", f"{vals.get('submit')} > {vals.get('start')}")
    if start is not None and end is not None and end < start:
        raise SacctError("end_before_start", f"{vals.get('start')} > {vals.get('end')}")
    if start is None and end is not None and end < submit:  # never ran: no negative wait
        raise SacctError("end_before_submit", f"{vals.get('submit')} > {vals.get('end')}")
    state_s = (vals.get("state") or "").strip()
    state, _, by = state_s.partition(" by ")
    rc, sig = parse_exitcode(vals.get("exitcode", ""))
    mem, per = parse_reqmem(vals.get("reqmem", ""))
    try:
        nodelist = tuple(expand_hostlist(vals.get("nodelist"), max_hosts))
    except HostlistError as e:
        reason = e.reason if e.reason == "hostlist_too_large" else "bad_nodelist"
        raise SacctError(reason, str(e)) from e
    return SacctJob(
        jobid=jobid,
        jobidraw=_str(vals.get("jobidraw")),
        cluster=_str(vals.get("cluster")),
        partition=_str(vals.get("partition")),
        qos=_str(vals.get("qos")),
        account=_str(vals.get("account")),
        group=_str(vals.get("group")),
        gid=_int(vals.get("gid"), "gid", MAX_UID),
        user=_str(vals.get("user")),
        uid=_int(vals.get("uid"), "uid", MAX_UID),
        submit=submit,
        eligible=parse_time(vals.get("eligible", ""), tz),
        start=start,
        end=end,
        elapsed=_duration(vals.get("elapsed"), "elapsed"),
        exit_code=rc,
        exit_signal=sig,
        state=state.strip().upper() or None,
        cancelled_by=by.strip() or None,
        nnodes=_int(vals.get("nnodes"), "nnodes"),
        ncpus=_int(vals.get("ncpus"), "ncpus"),
        reqcpus=_int(vals.get("reqcpus"), "reqcpus"),
        reqmem_mb=mem,
        reqmem_per=per,
        reqtres=_str(vals.get("reqtres")),
        alloctres=_str(vals.get("alloctres")),
        timelimit=_duration(vals.get("timelimit"), "timelimit"),
        nodelist=nodelist,
        jobname=vals.get("jobname"),
        backfill=parse_flags(vals.get("flags")),
    )


def _is_header(fields: list[str]) -> bool:
    return fields[0].strip().lower() == "jobid"


def _is_flags(text: str) -> bool:
    """Whether ``text`` is a ``Flags`` value: empty, or a comma list of words one of which is
    Slurm's (a later Slurm's new word beside them is still a Flags value)."""
    words = [w.strip() for w in text.split(",")]
    if text.strip() == "":
        return True
    return all(_WORD_RE.fullmatch(w) for w in words) and any(
        w.lower() in _FLAG_WORDS for w in words
    )


def layout(fields: list[str], names: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The field names of one record's ``fields`` (split at every ``|``): the header's
    ``names`` when given, else the 26- or 27-field layout (27 or more fields: the 27-field one
    when the last is a Flags value, see the module docstring); None when they cannot fit (fewer
    fields than the layout, or more without a JobName to hold them)."""
    n = len(fields)
    if names is None:
        if n == 26:
            return FIELDS_26
        if n < 26:
            return None
        return FIELDS_27 if _is_flags(fields[-1]) else FIELDS_26
    if n == len(names) or (n > len(names) and "jobname" in names):
        return names
    return None


def record_fields(fields: list[str], cols: tuple[str, ...]) -> dict[str, str]:
    """``{name: text}`` of a record split at every ``|``: the fields before JobName from the
    front, those after it from the back, and the ones between joined back with ``|`` as the
    name (a name holding ``|``); ``len(fields) >= len(cols)``, and equal when the layout has no
    JobName (see :func:`layout`)."""
    extra = len(fields) - len(cols)
    if extra == 0:
        return dict(zip(cols, fields, strict=True))
    at = cols.index("jobname")
    vals = dict(zip(cols[:at], fields[:at], strict=True))
    vals["jobname"] = "|".join(fields[at : at + extra + 1])
    vals.update(zip(cols[at + 1 :], fields[at + extra + 1 :], strict=True))
    return vals


def parse_sacct(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    tz: str | None = None,
    steps: bool = False,
    max_hosts: int = MAX_HOSTS,
    ignored: Counter[str] | None = None,
) -> Iterator[SacctJob]:
    """Parse ``sacct --parsable2`` lines lazily. ``tz``: IANA zone the times were printed in
    (default UTC). Job steps (``123.batch``, ``123.0``) are skipped unless ``steps``. Bad lines go
    to ``rejects`` (when given) and are skipped; ``max_hosts`` caps a node list's expansion.
    Lines that hold no record are counted in ``ignored`` (when given): ``blank``, ``header``
    (a usable header line) and ``job_step`` (a skipped step)."""
    zone = None if tz in (None, "UTC", "Etc/UTC") else ZoneInfo(tz)
    names: tuple[str, ...] | None = None
    for lineno, raw in enumerate(lines, start=1):
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else raw
        text = line.rstrip("\r\n")
        if not text.strip():
            if ignored is not None:
                ignored["blank"] += 1
            continue
        fields = text.split("|")
        if _is_header(fields):
            names = tuple(f.strip().lower() for f in fields)
            missing = [r for r in REQUIRED if r not in names]
            if missing:
                if rejects is not None:
                    rejects.append(Reject("header_missing_fields", source, lineno, text))
                names = None
            elif ignored is not None:
                ignored["header"] += 1
            continue
        cols = layout(fields, names)
        if cols is None:
            if rejects is not None:
                rejects.append(Reject("wrong_field_count", source, lineno, text))
            continue
        vals = record_fields(fields, cols)
        if not steps and "." in vals.get("jobid", ""):
            if ignored is not None:
                ignored["job_step"] += 1
            continue
        try:
            yield sacct_job_from_fields(vals, zone, max_hosts)
        except SacctError as e:
            if rejects is not None:
                rejects.append(Reject(e.reason, source, lineno, text))


def _exit_status(job: SacctJob) -> int | None:
    """Shell-style status: the return code, or 128 + signal when killed by a signal."""
    if job.exit_code is None:
        return None
    if job.exit_code == 0 and job.exit_signal:
        return 128 + job.exit_signal
    return job.exit_code


def sacct_job_events(job: SacctJob) -> list[JobEvent]:
    """submit / start / end events of one record (start only if it ran, end only if it ended)."""
    nodes = job.nnodes
    cores = job.ncpus if job.ncpus else job.reqcpus
    common: dict[str, Any] = dict(
        job=job.jobid,
        user=job.user,
        group=job.group,
        account=job.account,
        partition=job.partition,
        name=job.jobname,
        nodes=nodes,
        cores=cores,
        req_walltime=job.timelimit,
    )
    ev = [JobEvent(type="submit", ts=job.submit, **common)]
    ran = job.ran
    if ran:
        assert job.start is not None  # SacctJob.ran is False without a start
        ev.append(
            JobEvent(
                type="start",
                ts=job.start,
                node_list=job.nodelist,
                backfill=job.backfill,
                **common,
            )
        )
    if job.end is not None:
        ev.append(
            JobEvent(
                type="end",
                ts=job.end,
                node_list=job.nodelist if ran else (),
                state=job.state,
                exit_code=_exit_status(job),
                backfill=job.backfill if ran else None,
                **common,
            )
        )
    return ev


def iter_sacct_records(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    tz: str | None = None,
    steps: bool = False,
    max_hosts: int = MAX_HOSTS,
    ignored: Counter[str] | None = None,
) -> Iterator[tuple[str | None, list[JobEvent]]]:
    """Per record: its cluster (``Cluster``, None when not given) and its events, so that a
    source can key jobs by (cluster, job id) (:mod:`models.records.jobid`)."""
    for job in parse_sacct(lines, rejects, source, tz, steps, max_hosts, ignored):
        yield job.cluster, sacct_job_events(job)


def iter_sacct_events(
    lines: Iterable[str | bytes],
    rejects: list[Reject] | None = None,
    source: str = "",
    tz: str | None = None,
    steps: bool = False,
    max_hosts: int = MAX_HOSTS,
    ignored: Counter[str] | None = None,
) -> Iterator[JobEvent]:
    jobs = parse_sacct(lines, rejects, source, tz, steps, max_hosts, ignored)
    for job in jobs:
        yield from sacct_job_events(job)
