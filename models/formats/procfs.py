"""Pure parsers for Linux /proc text, cgroup path -> job id resolvers, and counter deltas.

Seed 003 (Emeras et al. 2013) §3.1: job consumption is read from /proc (no kernel change, no
software on the nodes); job membership comes from the cpuset the batch system creates per job
(OAR: ``/oar/<user>_<jobid>``). Slurm puts each job in a cgroup: v2
``/system.slice/slurmstepd.scope/job_<id>/step_<s>/...``, v1 ``/slurm/uid_<u>/job_<id>/step_<s>``.

No file I/O here: functions take the text of /proc/<pid>/status, io, stat, cgroup and
/proc/net/dev. Counter deltas never go negative: a counter that decreases (the process exited and
the pid was reused, or the counter was reset) restarts from zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.records.reject import RecordError

if TYPE_CHECKING:  # numpy only in counter_deltas: the parsers and resolvers load without it
    import numpy as np


class ProcParseError(RecordError):
    """/proc text that cannot be used; ``reason`` is a short stable key for counting."""


# A /proc counter or id: ASCII digits (str.isdigit() also takes '²', which int() refuses), at
# most 19 so that int() stays cheap; values must fit in int64 (the samples' numpy columns).
_UINT_RE = re.compile(r"[0-9]{1,19}")
_INT64_MAX = 2**63 - 1


def _uint(text: str, reason: str, detail: str) -> int:
    """A non-negative integer that fits in int64, or ProcParseError(reason)."""
    s = text.strip()
    if not _UINT_RE.fullmatch(s) or int(s) > _INT64_MAX:
        raise ProcParseError(reason, detail)
    return int(s)


# ---------------------------------------------------------------- /proc/<pid>/status, io, stat


@dataclass(slots=True, frozen=True)
class ProcStatus:
    name: str
    vm_peak_kb: int
    vm_size_kb: int
    vm_rss_kb: int
    vm_swap_kb: int


def parse_status(text: str) -> ProcStatus:
    """/proc/<pid>/status. Kernel threads have no Vm* lines: they read as 0."""
    vals: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep:
            vals[key] = rest.strip()
    if "Name" not in vals:
        raise ProcParseError("status_no_name", text[:80])

    def kb(key: str) -> int:
        v = vals.get(key)
        if v is None:
            return 0
        num = v.split()[:1]  # "123456 kB"; an empty value is no number
        return _uint(num[0] if num else "", "status_bad_number", f"{key}: {v}")

    return ProcStatus(vals["Name"], kb("VmPeak"), kb("VmSize"), kb("VmRSS"), kb("VmSwap"))


@dataclass(slots=True, frozen=True)
class ProcIo:
    rchar: int
    wchar: int
    syscr: int
    syscw: int
    read_bytes: int
    write_bytes: int
    cancelled_write_bytes: int


_IO_KEYS = (
    "rchar",
    "wchar",
    "syscr",
    "syscw",
    "read_bytes",
    "write_bytes",
    "cancelled_write_bytes",
)


def parse_io(text: str) -> ProcIo:
    """/proc/<pid>/io (readable for one's own processes; root for others)."""
    vals: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep:
            vals[key.strip()] = _uint(rest, "io_bad_number", line)
    missing = [k for k in _IO_KEYS if k not in vals]
    if missing:
        raise ProcParseError("io_missing_field", ",".join(missing))
    return ProcIo(*(vals[k] for k in _IO_KEYS))


@dataclass(slots=True, frozen=True)
class ProcStat:
    pid: int
    comm: str
    state: str
    utime: int  # clock ticks
    stime: int
    starttime: int  # clock ticks after boot
    num_threads: int


def parse_stat(text: str) -> ProcStat:
    """/proc/<pid>/stat. The command (field 2) is in parentheses and may itself contain spaces and
    parentheses, so it is cut at the last ')'. Fields per proc(5): utime 14, stime 15,
    num_threads 20, starttime 22."""
    lp, rp = text.find("("), text.rfind(")")
    if lp < 0 or rp < lp:
        raise ProcParseError("stat_no_comm", text[:80])
    rest = text[rp + 2 :].split()
    if len(rest) < 20:
        raise ProcParseError("stat_short", text[:80])
    # rest[0] is field 3 (state), so field k is rest[k - 3]
    detail = text[:80]
    return ProcStat(
        _uint(text[:lp], "stat_bad_number", detail),
        text[lp + 1 : rp],
        rest[0],
        _uint(rest[11], "stat_bad_number", detail),
        _uint(rest[12], "stat_bad_number", detail),
        _uint(rest[19], "stat_bad_number", detail),
        _uint(rest[17], "stat_bad_number", detail),
    )


def parse_uptime(text: str) -> float:
    """/proc/uptime: seconds since boot (first number)."""
    try:
        up = float(text.split()[0])
    except (IndexError, ValueError):
        raise ProcParseError("uptime_bad", text[:40]) from None
    if not math.isfinite(up) or up < 0:
        raise ProcParseError("uptime_bad", text[:40])
    return up


def parse_btime(stat_text: str) -> int:
    """Boot time (epoch s) from the ``btime`` line of /proc/stat."""
    for line in stat_text.splitlines():
        if line.startswith("btime "):
            f = line.split()
            return _uint(f[1] if len(f) > 1 else "", "stat_bad_btime", line[:80])
    raise ProcParseError("stat_no_btime")


def parse_net_dev(text: str, skip: tuple[str, ...] = ("lo",)) -> tuple[int, int]:
    """/proc/net/dev (or /proc/<pid>/net/dev): total (received, transmitted) bytes over the
    interfaces not in ``skip``. Counters are per network namespace, not per process."""
    rx = tx = 0
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        if name.strip() in skip:
            continue
        f = rest.split()
        if len(f) < 16:
            raise ProcParseError("net_dev_short", line)
        rx += _uint(f[0], "net_dev_bad_number", line)
        tx += _uint(f[8], "net_dev_bad_number", line)
    return rx, tx


# ------------------------------------------------------------------------ cgroup -> job id

# Slurm (cgroup v1 and v2): a path component job_<digits>, array jobs too (job_123_4 is not
# produced by Slurm; the raw job id is used).
_SLURM_RE = re.compile(r"/job_(\d+)(?:/|$)")
# OAR cpuset: /oar/<user>_<jobid> (OAR names the job cpuset "<user>_<jobid>").
_OAR_RE = re.compile(r"/oar/[^/]*?_(\d+)(?:/|$)")

Resolver = Callable[[str], "str | None"]


def parse_cgroup(text: str) -> list[tuple[str, str, str]]:
    """/proc/<pid>/cgroup lines ``id:controllers:path`` -> (id, controllers, path)."""
    out: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        if not line:
            continue
        parts = line.split(":", 2)
        if len(parts) != 3:
            raise ProcParseError("cgroup_bad_line", line)
        out.append((parts[0], parts[1], parts[2]))
    return out


def _paths(cgroup_text: str, want: str | None = None) -> list[str]:
    rows = parse_cgroup(cgroup_text)
    if want is None:
        return [p for _, _, p in rows]
    return [p for _, ctl, p in rows if want in ctl.split(",")]


def slurm_job(cgroup_text: str) -> str | None:
    """Slurm job id from any cgroup line: v2 ``0::/.../job_<id>/...``, v1
    ``/slurm/.../job_<id>``."""
    for p in _paths(cgroup_text):
        m = _SLURM_RE.search(p)
        if m:
            return m.group(1)
    return None


def cpuset_job(cgroup_text: str) -> str | None:
    """Job id from the cpuset path, as the seed's monitor did: OAR ``/oar/<user>_<jobid>``,
    or a Slurm-style ``job_<id>`` component in the cpuset (cgroup v1) hierarchy."""
    for p in _paths(cgroup_text, "cpuset"):
        m = _OAR_RE.search(p) or _SLURM_RE.search(p)
        if m:
            return m.group(1)
    return None


def any_job(cgroup_text: str) -> str | None:
    """Slurm first, then cpuset (OAR)."""
    return slurm_job(cgroup_text) or cpuset_job(cgroup_text)


def cgroup_unit(cgroup_text: str) -> str | None:
    """Not a batch job: the cgroup path itself, for machines without a batch system. The cgroup
    v2 (``0::``) path if it is not the root, else the first non-root v1 path prefixed with its
    controllers (``memory:/a/b``); None when every path is ``/``."""
    rows = parse_cgroup(cgroup_text)
    for hid, _, p in rows:
        if hid == "0" and p not in ("", "/"):
            return p
    for hid, ctl, p in rows:
        if hid != "0" and p not in ("", "/"):
            return f"{ctl}:{p}"
    return None


RESOLVERS: dict[str, Resolver] = {
    "slurm": slurm_job,
    "cpuset": cpuset_job,
    "all": any_job,
    "cgroup": cgroup_unit,
}


# ------------------------------------------------------------------------- counters and CPU


def counter_delta(prev: int | None, cur: int) -> int:
    """Increase of a cumulative counter. No previous value (new process) counts from zero;
    a decrease (reset, pid reuse) also restarts from zero: never negative."""
    if prev is None or cur < prev:
        return cur
    return cur - prev


def cpu_percent(
    prev_ticks: int | None, prev_t: float | None, ticks: int, t: float, start_s: float, clk_tck: int
) -> float:
    """% of one core used by a process since the previous sample (``t`` in seconds since boot,
    ``start_s`` its start in seconds since boot). Without a usable previous sample (first sight,
    pid reuse, ticks decreased) it is the average since the process started."""
    if prev_ticks is None or prev_t is None or ticks < prev_ticks or t <= prev_t:
        dt = t - start_s
        return 0.0 if dt <= 0 else 100.0 * ticks / clk_tck / dt
    return 100.0 * (ticks - prev_ticks) / clk_tck / (t - prev_t)


def counter_deltas(
    group: np.ndarray, ts: np.ndarray, value: np.ndarray, first_from_zero: np.ndarray | None = None
) -> np.ndarray:
    """Vectorised :func:`counter_delta` over many series at once.

    ``group`` identifies a counter series (e.g. one code per (node, pid, process start)); rows
    may come in any order. ``value`` is (n,) or (n, k) for k counters of the same rows. Returns
    the delta of each row w.r.t. the previous row of its series in time order. The first row of
    a series gives ``value`` where ``first_from_zero`` is True (the process started inside the
    sampling window) else 0 (the baseline); a decrease gives ``value`` (restart from zero).
    """
    import numpy as np

    from models.records.nodesample import sort_order

    n = value.shape[0]
    out = np.zeros(value.shape, dtype=np.float64)
    if n == 0:
        return out
    order = sort_order(group, ts)
    g = group[order]
    v = value[order].astype(np.float64, copy=False)
    d = np.empty_like(v)
    d[0] = 0.0
    d[1:] = v[1:] - v[:-1]
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(g[1:], g[:-1], out=first[1:])
    d = np.where(d < 0, v, d)
    if first_from_zero is None:
        d[first] = 0.0
    else:
        keep = first_from_zero[order][first]
        if v.ndim == 2:
            keep = keep[:, None]
        d[first] = np.where(keep, v[first], 0.0)
    out[order] = d
    return out
