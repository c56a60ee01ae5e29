"""Slurm node and queue snapshots -> one iteration of NodeStatus records (seed 000 §III-A on Slurm).

Seed 000 needs, per scheduler iteration and node, a state, the reservation or pending job the
node is held for (rsvlist, charged to its first id, §IV-A) and the running jobs (joblist). A
Slurm snapshot has all of it in three outputs, each read in its text or JSON form:

- nodes: ``scontrol show node --oneliner`` (``State=IDLE+PLANNED``; a trailing ``*`` is
  NOT_RESPONDING), ``scontrol show node --json`` (23.02+: ``"state": ["IDLE", "PLANNED"]``,
  ``"reservation"``) or ``sinfo --json`` (22.05: ``"state": "idle", "state_flags": [...]``);
- jobs: ``squeue`` with an explicit ``--format`` of ``%i %T %S %Y %N`` fields (``%Y`` is
  SchedNodes, the nodes a pending job expects; ``%S`` its expected start), or ``squeue --json``
  (``scheduled_nodes`` from 23.02; 22.05 has none);
- advance reservations (optional): ``scontrol show reservation --oneliner`` or ``--json``.

The mapping, in this order (the first row that matches decides the state):

| Slurm node (base state + flags)                                  | state    | joblist  |
|------------------------------------------------------------------|----------|----------|
| base DOWN, UNKNOWN, ERROR or FUTURE (any flags)                  | Down     | its jobs |
| DRAIN or FAIL flag, with jobs (ALLOCATED/MIXED/COMPLETING)       | Draining | its jobs |
| DRAIN or FAIL flag, no job (DRAINED, FAIL)                       | Drained  | —        |
| ALLOCATED, MIXED, or the COMPLETING flag                         | Running  | its jobs |
| IDLE + POWERED_DOWN/POWERING_DOWN/POWERING_UP/REBOOT_ISSUED, or  | Down     | —        |
|   not responding (``IDLE*``, NOT_RESPONDING)                     |          |          |
| IDLE + PLANNED (drain, charged to rsvlist[0])                    | Idle     | —        |
| IDLE in an active advance reservation (RESERVED/MAINTENANCE      | Idle     | —        |
|   flag, or named by the node or the reservation output)          |          |          |
| IDLE (unallocated idle, rsvlist 'none')                          | Idle     | —        |
| any other base state: kept, as a state of its own                | its name | its jobs |

rsvlist, for every state: the pending jobs whose SchedNodes include the node, earliest expected
start first (ties: job id), then the active reservations holding the node. Only an Idle node's
first id is drain (seed 000 §IV-A); for the other states it is reported (``has_rsv``), never
charged. An IDLE+PLANNED node no pending job names (22.05's JSON has no SchedNodes) is charged
to ``planned``; a RESERVED one no listed reservation holds, to ``reserved``; an IDLE node
without the PLANNED flag is never charged to a job, even when SchedNodes name it. A job's nodes are
those squeue lists for it in any state but PENDING. Flags the table does not name are kept:
they change nothing and are counted by name in :attr:`SlurmIteration.unknown_flags`.

Text times (``%S``, StartTime) are in the zone of the host that printed them; they only order
pending jobs within one snapshot, so they are compared as written. Everything here is pure: the
caller supplies the snapshot time. A snapshot that cannot be read raises
:class:`SlurmOutputError`: an iteration is whole or not at all.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from models.formats.hostlist import MAX_HOSTS, HostlistError, expand_hostlist
from models.records.nodestatus import KNOWN_STATES, NodeStatus
from models.records.reject import RecordError

DOWN, IDLE, RUNNING, DRAINED, DRAINING = (KNOWN_STATES[i] for i in (0, 1, 3, 4, 5))
PLANNED_UNKNOWN = "planned"  # rsvlist of an IDLE+PLANNED node no pending job names
RESERVED_UNKNOWN = "reserved"  # rsvlist of a RESERVED node no listed reservation holds

_DOWN_BASES = frozenset({"DOWN", "UNKNOWN", "ERROR", "FUTURE"})
_BUSY_BASES = frozenset({"ALLOCATED", "ALLOC", "MIXED"})
_DRAIN_FLAGS = frozenset({"DRAIN", "FAIL"})
_OFF_FLAGS = frozenset(
    {"POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "REBOOT_ISSUED", "NOT_RESPONDING", "POWER_UP"}
)
_RESERVED_FLAGS = frozenset({"RESERVED", "MAINTENANCE", "MAINT"})
# flags that exist and change nothing here (power-save requests, cloud, registration...)
_QUIET_FLAGS = frozenset(
    {
        "CLOUD",
        "DYNAMIC_NORM",
        "DYNAMIC_FUTURE",
        "INVALID_REG",
        "POWER_DOWN",
        "POWER_DRAIN",
        "POWER",
        "REBOOT_REQUESTED",
        "REBOOT",
        "RESUME",
        "UNDRAIN",
        "NO_RESPOND",
        "BLOCKED",
        "EXTERNAL",
    }
)
KNOWN_FLAGS = _DRAIN_FLAGS | _OFF_FLAGS | _RESERVED_FLAGS | _QUIET_FLAGS | {"PLANNED", "COMPLETING"}
# sinfo's long state words, accepted as a base: what they mean in base + flags
_WORDS = {
    "ALLOC": ("ALLOCATED", ()),
    "DRAINED": ("IDLE", ("DRAIN",)),
    "DRAINING": ("ALLOCATED", ("DRAIN",)),
    "COMPLETING": ("IDLE", ("COMPLETING",)),
    "PLANNED": ("IDLE", ("PLANNED",)),
    "RESERVED": ("IDLE", ("RESERVED",)),
    "MAINT": ("IDLE", ("MAINTENANCE",)),
    "FAILING": ("ALLOCATED", ("FAIL",)),
}
_PENDING = frozenset({"PENDING", "PD"})
_SHORT_STATES = {
    "R": "RUNNING",
    "CG": "COMPLETING",
    "CF": "CONFIGURING",
    "S": "SUSPENDED",
    "ST": "STOPPED",
    "SO": "STAGE_OUT",
    "SI": "SIGNALING",
    "RQ": "REQUEUED",
    "RS": "RESIZING",
}


class SlurmOutputError(RecordError):
    """A Slurm command's output that cannot be read; the whole iteration is refused."""


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    base: str  # upper case: IDLE, ALLOCATED, MIXED, DOWN, ...
    flags: tuple[str, ...] = ()  # upper case, as printed (NOT_RESPONDING for a trailing '*')
    reservations: tuple[str, ...] = ()  # named by the node output itself (23.02+)


@dataclass(frozen=True, slots=True)
class SlurmJob:
    job_id: str
    state: str  # upper case long name: PENDING, RUNNING, COMPLETING, ...
    nodes: tuple[str, ...] = ()  # allocated nodes (empty while pending)
    sched_nodes: tuple[str, ...] = ()  # a pending job's expected nodes (SchedNodes, %Y)
    start: float | None = None  # expected/actual start, seconds; only compared with others


@dataclass(frozen=True, slots=True)
class SlurmReservation:
    name: str
    nodes: tuple[str, ...]
    active: bool
    start: float | None = None


@dataclass(slots=True)
class SlurmIteration:
    records: list[NodeStatus]
    unknown_flags: Counter[str] = field(default_factory=Counter)
    planned_unnamed: int = 0  # IDLE+PLANNED nodes no pending job's SchedNodes include


# --- nodes --------------------------------------------------------------------------------


def split_state(text: str) -> tuple[str, tuple[str, ...]]:
    """'DOWN*+DRAIN' -> ('DOWN', ('NOT_RESPONDING', 'DRAIN')); sinfo words ('drained',
    'planned') -> their base and flag; trailing markers of sinfo (``~#!%$@^-``) dropped."""
    parts = [p.strip().upper() for p in text.strip().split("+") if p.strip()]
    if not parts:
        raise SlurmOutputError("bad_node_state", repr(text))
    head = parts[0]
    flags: list[str] = []
    if head.endswith("*"):
        flags.append("NOT_RESPONDING")
    head = head.rstrip("*~#!%$@^-")
    base, extra = _WORDS.get(head, (head, ()))
    flags.extend(extra)
    flags.extend(p.rstrip("*") for p in parts[1:])
    return base, tuple(flags)


_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:]*)=")


def _pairs(record: str) -> dict[str, str]:
    """key=value pairs of one scontrol record; a value runs up to the next key (values such as
    OS= and Reason= hold spaces)."""
    out: dict[str, str] = {}
    ms = list(_KEY.finditer(record))
    for m, nxt in zip(ms, [*ms[1:], None], strict=True):
        end = nxt.start() if nxt is not None else len(record)
        out.setdefault(m.group(1), record[m.end() : end].strip())
    return out


def _records(text: str, first_key: str) -> list[dict[str, str]]:
    """scontrol records, one a line (--oneliner) or blocks separated by blank lines."""
    if not text.strip() or text.strip().startswith("No "):  # 'No nodes in the system'
        return []
    starts = [m.start(1) for m in _KEY.finditer(text) if m.group(1) == first_key]
    if not starts or text[: starts[0]].strip():
        raise SlurmOutputError("bad_scontrol_output", text.strip()[:120])
    bounds = [*starts, len(text)]
    return [_pairs(text[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def _names(expr: str | None, max_hosts: int) -> tuple[str, ...]:
    try:
        return tuple(expand_hostlist(expr, max_hosts))
    except HostlistError as e:
        raise SlurmOutputError(e.reason, str(e)) from None


_NODE_KEYS = re.compile(r"(?:^|\s)(NodeName|State|ReservationName)=(\S*)")


def parse_scontrol_nodes(text: str) -> list[SlurmNode]:
    """``scontrol show node [--oneliner]`` text -> nodes, in the order printed. Only NodeName,
    State and ReservationName are read (the first of each in a record: Reason comes later)."""
    if not text.strip() or text.strip().startswith("No "):  # 'No nodes in the system'
        return []
    out: list[SlurmNode] = []
    name: str | None = None
    state: str | None = None
    rsv = ""
    first = True

    def close() -> None:
        if name is not None:
            if not name or state is None:
                raise SlurmOutputError("bad_node_record", (name or "")[:80])
            base, flags = split_state(state)
            rsvs = tuple(r for r in rsv.split(",") if r and r != "(null)")
            out.append(SlurmNode(name, base, flags, rsvs))

    for m in _NODE_KEYS.finditer(text):
        key, value = m.group(1), m.group(2)
        if key == "NodeName":
            if first and text[: m.start()].strip():
                raise SlurmOutputError("bad_scontrol_output", text.strip()[:120])
            first = False
            close()
            name, state, rsv = value, None, ""
        elif name is None:
            raise SlurmOutputError("bad_scontrol_output", text.strip()[:120])
        elif key == "State" and state is None:
            state = value
        elif key == "ReservationName" and not rsv:
            rsv = value
    if first:
        raise SlurmOutputError("bad_scontrol_output", text.strip()[:120])
    close()
    return out


def _json(text: str | bytes, key: str) -> list[Any]:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise SlurmOutputError("bad_json", str(e)) from None
    if not isinstance(doc, dict):
        raise SlurmOutputError("bad_json", "not a JSON object")
    errors = doc.get("errors") or []
    if errors:
        raise SlurmOutputError("slurm_error", orjson.dumps(errors).decode()[:200])
    items = doc.get(key)
    if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
        raise SlurmOutputError("bad_json", f"no list of objects under {key!r}")
    return items


def _upper_list(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v.upper()] if v else []
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return [x.upper() for x in v]
    raise SlurmOutputError("bad_json", f"expected a string or a list of strings: {v!r}"[:120])


def parse_nodes_json(text: str | bytes) -> list[SlurmNode]:
    """``scontrol show node --json`` (23.02+: state is a list, base first) or ``sinfo --json``
    (22.05: ``state`` a string and ``state_flags`` a list) -> nodes."""
    out = []
    for d in _json(text, "nodes"):
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise SlurmOutputError("bad_node_record", "node without a name")
        words = _upper_list(d.get("state")) + _upper_list(d.get("state_flags") or [])
        if not words:
            raise SlurmOutputError("bad_node_state", name)
        base, extra = split_state(words[0])
        rsv = d.get("reservation") or ""
        rsvs = tuple(r for r in (rsv.split(",") if isinstance(rsv, str) else []) if r)
        out.append(SlurmNode(name, base, (*extra, *words[1:]), rsvs))
    return out


# --- jobs ---------------------------------------------------------------------------------

SQUEUE_FORMAT = "%i|%T|%S|%Y|%N"  # what `ship slurm` asks squeue for
_FIELD = re.compile(r"%[.]?\d*([A-Za-z])")
_HEADERS = {
    "i": "JOBID",
    "A": "JOBID",
    "T": "STATE",
    "t": "ST",
    "S": "START_TIME",
    "Y": "SCHEDNODES",
    "N": "NODELIST",
}


def format_fields(fmt: str) -> tuple[str, list[str]]:
    """An squeue ``-o`` string of ``%X`` fields joined by one delimiter -> (delimiter, letters)."""
    letters = _FIELD.findall(fmt)
    seps = {s for s in _FIELD.split(fmt)[0::2][1:-1]}
    if len(seps) != 1 or not next(iter(seps)).strip():  # padded blanks make empty cells vanish
        raise SlurmOutputError(
            "bad_squeue_format",
            f"{fmt!r}: fields joined by one delimiter other than blanks, e.g. '%i|%T|%S|%Y|%N'",
        )
    need = {"Y", "N"} | ({"i"} if "A" not in letters else set())
    if not need <= set(letters) or not {"T", "t"} & set(letters):
        raise SlurmOutputError("bad_squeue_format", f"{fmt!r} needs %i, %T (or %t), %Y and %N")
    return seps.pop(), letters


_EPOCH = datetime(1970, 1, 1)


def _text_time(v: str) -> float | None:
    """A text time as written (no zone: only compared within one snapshot); N/A -> None."""
    v = v.strip()
    if not v or v in ("N/A", "Unknown", "(null)", "None"):
        return None
    try:
        t = datetime.fromisoformat(v).replace(tzinfo=None) if "T" in v else None
    except ValueError:
        return None
    return None if t is None else (t - _EPOCH).total_seconds()


def _job_state(v: str) -> str:
    s = v.strip().upper()
    return _SHORT_STATES.get(s, "PENDING" if s == "PD" else s)


def parse_squeue_text(
    text: str, fmt: str = SQUEUE_FORMAT, max_hosts: int = MAX_HOSTS
) -> list[SlurmJob]:
    """squeue output printed with ``-o FMT`` (a header line, if any, is skipped)."""
    sep, letters = format_fields(fmt)
    header = [_HEADERS.get(x, "") for x in letters]
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split(sep)
        if len(cells) != len(letters):
            raise SlurmOutputError("bad_squeue_line", line[:120])
        if [c.strip() for c in cells] == header:
            continue
        d = dict(zip(letters, cells, strict=True))
        job_id = (d.get("i") or d.get("A") or "").strip()
        if not job_id:
            raise SlurmOutputError("bad_squeue_line", line[:120])
        state = _job_state(d.get("T") or d.get("t") or "")
        out.append(
            SlurmJob(
                job_id,
                state,
                _names(d["N"], max_hosts),
                _names(d["Y"], max_hosts),
                _text_time(d.get("S", "")),
            )
        )
    return out


def _number(v: Any) -> float | None:
    """A JSON time: an int (<= 23.02) or {"set": bool, "infinite": bool, "number": int}."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite"):
            return None
        v = v.get("number")
    if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
        return None
    return float(v)


def parse_squeue_json(text: str | bytes, max_hosts: int = MAX_HOSTS) -> list[SlurmJob]:
    """``squeue --json``: job_id, job_state (a string, or a list from 23.11), nodes,
    scheduled_nodes (23.02+), start_time (an int, or a number object from 23.11)."""
    out = []
    for d in _json(text, "jobs"):
        jid = d.get("job_id")
        if isinstance(jid, dict):
            jid = jid.get("number")
        if isinstance(jid, bool) or not isinstance(jid, int | str) or jid == "":
            raise SlurmOutputError("bad_job_record", "job without a job_id")
        job_id = str(jid)
        task = d.get("array_task_id")
        task = task.get("number") if isinstance(task, dict) and task.get("set") else task
        if isinstance(task, int) and not isinstance(task, bool) and d.get("array_job_id"):
            arr = d["array_job_id"]
            arr = arr.get("number") if isinstance(arr, dict) else arr
            if isinstance(arr, int) and arr:
                job_id = f"{arr}_{task}"
        states = _upper_list(d.get("job_state") or "")
        if not states:
            raise SlurmOutputError("bad_job_record", f"job {job_id} without a state")
        nodes = d.get("nodes") if isinstance(d.get("nodes"), str) else ""
        sched = d.get("scheduled_nodes") if isinstance(d.get("scheduled_nodes"), str) else ""
        out.append(
            SlurmJob(
                job_id,
                _job_state(states[0]),
                _names(nodes, max_hosts),
                _names(sched, max_hosts),
                _number(d.get("start_time")),
            )
        )
    return out


# --- reservations -------------------------------------------------------------------------


def parse_reservations_text(text: str, max_hosts: int = MAX_HOSTS) -> list[SlurmReservation]:
    """``scontrol show reservation [--oneliner]``; active when ``State=ACTIVE``."""
    out = []
    for d in _records(text, "ReservationName"):
        out.append(
            SlurmReservation(
                d["ReservationName"],
                _names(d.get("Nodes"), max_hosts),
                d.get("State", "").upper() == "ACTIVE",
                _text_time(d.get("StartTime", "")),
            )
        )
    return out


def parse_reservations_json(
    text: str | bytes, now_s: float, max_hosts: int = MAX_HOSTS
) -> list[SlurmReservation]:
    """``scontrol show reservation --json``: active when start <= ``now_s`` < end."""
    out = []
    for d in _json(text, "reservations"):
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise SlurmOutputError("bad_reservation", "reservation without a name")
        start, end = _number(d.get("start_time")), _number(d.get("end_time"))
        active = (start is None or start <= now_s) and (end is None or now_s < end)
        nodes = d.get("node_list") if isinstance(d.get("node_list"), str) else ""
        out.append(SlurmReservation(name, _names(nodes, max_hosts), active, start))
    return out


# --- the mapping --------------------------------------------------------------------------


def _planned_by_node(jobs: Iterable[SlurmJob]) -> dict[str, list[str]]:
    """node -> pending jobs whose SchedNodes include it, earliest expected start first (no
    start last; ties by numeric job id, then text)."""
    pend = [j for j in jobs if j.state == "PENDING" and j.sched_nodes]
    inf = float("inf")

    def key(j: SlurmJob) -> tuple[float, int, str]:
        head = j.job_id.split("_")[0].split("+")[0]
        return (inf if j.start is None else j.start, int(head) if head.isdigit() else 0, j.job_id)

    out: dict[str, list[str]] = {}
    for j in sorted(pend, key=key):
        for n in dict.fromkeys(j.sched_nodes):
            out.setdefault(n, []).append(j.job_id)
    return out


def slurm_iteration(
    ts_ms: int,
    nodes: Sequence[SlurmNode],
    jobs: Sequence[SlurmJob],
    reservations: Sequence[SlurmReservation] = (),
    planned_flag: bool = True,
) -> SlurmIteration:
    """One NodeStatus per node at ``ts_ms`` (the snapshot time), by the table of the module
    docstring; nodes in the order given, a node listed twice is kept once (its first line).
    ``planned_flag`` False (Slurm before 21.08 has no PLANNED flag): an IDLE node in a pending
    job's SchedNodes is held for it, flag or not."""
    planned = _planned_by_node(jobs)
    running: dict[str, list[str]] = {}
    for j in jobs:
        if j.state != "PENDING":
            for n in dict.fromkeys(j.nodes):
                running.setdefault(n, []).append(j.job_id)
    held: dict[str, list[str]] = {}
    for r in sorted(
        (r for r in reservations if r.active),
        key=lambda r: (r.start if r.start is not None else 0.0, r.name),
    ):
        for n in dict.fromkeys(r.nodes):
            held.setdefault(n, []).append(r.name)
    it = SlurmIteration([])
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            continue
        seen.add(node.name)
        flags = set(node.flags)
        it.unknown_flags.update(f for f in node.flags if f not in KNOWN_FLAGS)
        rsvs = list(dict.fromkeys([*node.reservations, *held.get(node.name, ())]))
        plan = planned.get(node.name, [])
        joblist = tuple(running.get(node.name, ()))
        busy = node.base in _BUSY_BASES or "COMPLETING" in flags
        if node.base in _DOWN_BASES:
            state = DOWN
        elif flags & _DRAIN_FLAGS:
            state = DRAINING if busy or joblist else DRAINED
        elif busy:
            state = RUNNING
        elif node.base != "IDLE":
            state = node.base.capitalize()
        elif flags & _OFF_FLAGS:
            state = DOWN
        else:
            state = IDLE
            if "PLANNED" in flags and not plan:
                plan = [PLANNED_UNKNOWN]
                it.planned_unnamed += 1
            if flags & _RESERVED_FLAGS and not rsvs:
                rsvs = [RESERVED_UNKNOWN]
        if state == IDLE and "PLANNED" not in flags and planned_flag:
            plan = []  # SchedNodes name a node the controller does not hold: not drain (yet)
        it.records.append(NodeStatus(ts_ms, node.name, state, (*plan, *rsvs), joblist))
    return it
