"""Job I/O from cgroup files only: the sampler's mode that needs no capability
(``drainwatch ship samples --io cgroup``).

``/proc/<pid>/io`` of another user's process is mode 0400 and ptrace-checked: reading it takes
both CAP_DAC_READ_SEARCH (the file mode) and CAP_SYS_PTRACE (``ptrace_may_access``,
PTRACE_MODE_READ_FSCREDS); neither alone will do (deploy/systemd/README.md). A job's cgroup v2
``io.stat`` is world-readable: this mode reads each job's I/O there and opens no
``/proc/<pid>/io`` at all. The trade-off, per job instead of per process:

* ``io.stat`` counts block-device I/O (bios the job's cgroup submitted), so a network or
  parallel file system (Lustre, GPFS, NFS, BeeGFS) shows nothing; ``/proc/<pid>/io``'s
  ``write_bytes`` counts its page-cache writes. On such a cluster the DFS load and its
  hot-zone alert need the /proc mode.
* ``wchar`` and the read/write call counts (``syscr``, ``syscw``) have no cgroup counterpart:
  written as unknown (``wchar`` left out) and 0, so write sizes are not measured.
* Only cgroup v2 (the unified hierarchy): on v1 the counters stay 0, counted in the sampler's
  ``stats['io_cgroup_unreadable']``.

The job's counters ride on one process sample of the job, its *carrier* (the oldest process
the sweep saw); the job's other processes carry 0, so sums over processes count each byte
once. When the carrier changes (it ended), the new one carries the counters less what the old
one had already reported: its series went from 0 to that, so the per-process deltas count
exactly the bytes since the last sweep, never a byte twice (a carrier first seen already older
than the period, after a restart of the sampler, is a baseline as in the /proc mode).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from models.formats import procfs

DEFAULT_ROOT = Path("/sys/fs/cgroup")
_UINT = re.compile(r"[0-9]{1,19}")  # ASCII digits only (str.isdigit() takes '²' too)
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class CgroupIo:
    """A cgroup's cumulative block I/O, summed over its devices."""

    rbytes: int = 0
    wbytes: int = 0
    rios: int = 0
    wios: int = 0


def parse_io_stat(text: str) -> CgroupIo:
    """cgroup v2 ``io.stat``: ``MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N`` per
    device (keys in any order, unknown ones ignored) -> the sums over the devices."""
    sums = {"rbytes": 0, "wbytes": 0, "rios": 0, "wios": 0}
    for line in text.splitlines():
        for item in line.split()[1:]:
            key, sep, value = item.partition("=")
            if sep and key in sums:
                if not _UINT.fullmatch(value) or int(value) > _INT64_MAX:
                    raise procfs.ProcParseError("io_stat_bad_number", line)
                sums[key] += int(value)
    return CgroupIo(**sums)


def v2_path(cgroup_text: str) -> str | None:
    """The cgroup v2 path of a process (its ``0::`` line), None without one."""
    for hid, _, path in procfs.parse_cgroup(cgroup_text):
        if hid == "0" and path.startswith("/"):
            return path
    return None


def job_cgroup(cgroup_text: str, job: str, resolve: Callable[[str], str | None]) -> str | None:
    """The job's own cgroup v2 directory: the highest ancestor of the process's cgroup that
    still resolves to ``job`` (Slurm: ``.../job_<id>``, above its steps and tasks; the
    ``cgroup`` resolver: the process's cgroup itself). None on cgroup v1."""
    path = v2_path(cgroup_text)
    if path is None:
        return None
    best = path
    parts = path.strip("/").split("/")
    for n in range(len(parts) - 1, 0, -1):
        parent = "/" + "/".join(parts[:n])
        if resolve(f"0::{parent}\n") != job:
            break
        best = parent
    return best


@dataclass(slots=True)
class _Carrier:
    proc: tuple[int, int]  # (pid, start time in ticks)
    offset: CgroupIo  # the job's counters already reported by earlier carriers
    last: CgroupIo  # the job's counters at the last sweep


class JobIo:
    """Reads each job's ``io.stat`` once a sweep and says which process carries it and with
    which values (see the module's doc)."""

    def __init__(self, root: str | Path = DEFAULT_ROOT) -> None:
        self.root = Path(root)
        self._carriers: dict[str, _Carrier] = {}

    def read(self, path: str) -> CgroupIo | None:
        """The cgroup's counters; None when its ``io.stat`` is unreadable (v1, no io
        controller, the job gone)."""
        try:
            with open(self.root / path.lstrip("/") / "io.stat", encoding="ascii") as f:
                return parse_io_stat(f.read())
        except (OSError, UnicodeDecodeError, procfs.ProcParseError):
            return None

    def carry(
        self, jobs: dict[str, tuple[tuple[int, int], CgroupIo]]
    ) -> dict[str, tuple[tuple[int, int], CgroupIo]]:
        """``jobs``: job -> (its carrier this sweep, its counters now) -> job -> (carrier,
        the counters it reports). Jobs absent from a sweep are forgotten."""
        out: dict[str, tuple[tuple[int, int], CgroupIo]] = {}
        carriers: dict[str, _Carrier] = {}
        for job, (proc, now) in jobs.items():
            c = self._carriers.get(job)
            if c is None:
                c = _Carrier(proc, CgroupIo(), now)
            elif c.proc != proc:  # the old carrier reported up to c.last
                c = _Carrier(proc, c.last, now)
            if any(n < o for n, o in zip(_values(now), _values(c.offset), strict=True)):
                c.offset = CgroupIo()  # the counters went back (a new cgroup): from zero
            c.last = now
            carriers[job] = c
            reported = (n - o for n, o in zip(_values(now), _values(c.offset), strict=True))
            out[job] = (proc, CgroupIo(*reported))
        self._carriers = carriers
        return out


def _values(io: CgroupIo) -> tuple[int, int, int, int]:
    return (io.rbytes, io.wbytes, io.rios, io.wios)
