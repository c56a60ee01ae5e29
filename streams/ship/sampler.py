"""The node sampler, the reader of ``ship samples``: every period, read /proc for every process
of every job on this node.

Seed 003 (Emeras et al., JSSPP 2013) §3.1: a daemon per node measures each job every minute from
/proc (memory from status, I/O counters from io, CPU from stat, network bytes), tags each measure
with its time stamp, and writes the raw values out; processing happens later. Job membership
comes from the job's cpuset / cgroup (see :mod:`models.formats.procfs` resolvers). No root is needed
beyond what /proc lets a user read: /proc/<pid>/io of other users' processes needs
CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH together (deploy/systemd/README.md); when it is unreadable
the I/O counters are written as 0 (``wchar`` left out: unknown) and counted in
``stats['io_denied']``. ``io="cgroup"`` needs no capability: it opens no /proc/<pid>/io and
reads each job's I/O from its cgroup's ``io.stat`` (block devices only; see
:mod:`streams.ship.cgroupio`).

Output goes to a *sink*: any callable taking the list of samples of one sweep. The JSON-lines
sink (:class:`streams.sinks.jsonlines.JsonLinesSink`) writes :mod:`models.formats.sampletrace`
lines; ``ship samples --kafka`` sends each sweep instead (:mod:`streams.ship.samples`).
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from models.formats import procfs
from models.records.nodesample import NodeSample
from streams.ship import cgroupio

IO_SOURCES = ("proc", "cgroup")  # where a process's I/O counters come from (see the module doc)

# (pid, text of /proc/<pid>/cgroup) -> job id, or None for "not a job process"
PidResolver = Callable[[int, str], "str | None"]
Sink = Callable[[list[NodeSample]], None]


def resolver_by_name(name: str) -> PidResolver:
    """A cgroup-path resolver of :data:`models.procfs.RESOLVERS` as a :data:`PidResolver`."""
    f = procfs.RESOLVERS[name]
    return lambda pid, cgroup: f(cgroup)


class Sampler:
    """Reads /proc (or another mount of it: ``proc``) and keeps, per process (pid + start time),
    the previous CPU tick count so each sweep gives the CPU % over the last interval."""

    def __init__(
        self,
        resolver: PidResolver,
        node: str | None = None,
        proc: str | Path = "/proc",
        clock: Callable[[], float] = time.time,
        job_class: str = "",
        io: str = "proc",
        cgroup_root: str | Path = cgroupio.DEFAULT_ROOT,
    ) -> None:
        if io not in IO_SOURCES:
            raise ValueError(f"io source {io!r} is not one of {', '.join(IO_SOURCES)}")
        self.resolver = resolver
        self.job_io = cgroupio.JobIo(cgroup_root) if io == "cgroup" else None
        self.node = node or socket.gethostname()
        self.proc = Path(proc)
        self.clock = clock
        self.job_class = job_class
        self.clk_tck = os.sysconf("SC_CLK_TCK")
        self.btime = procfs.parse_btime(self._read("stat"))
        self._prev: dict[tuple[int, int], tuple[int, float]] = {}
        self.stats: Counter[str] = Counter()

    def _read(self, rel: str) -> str:
        with open(self.proc / rel, encoding="utf-8", errors="replace") as f:
            return f.read()

    def sweep(self) -> list[NodeSample]:
        """One measure of every job process now running. Processes that vanish mid-read are
        skipped (counted in ``stats['vanished']``)."""
        now = self.clock()
        up = procfs.parse_uptime(self._read("uptime"))
        try:
            rx, tx = procfs.parse_net_dev(self._read("net/dev"))
        except (OSError, procfs.ProcParseError):
            rx = tx = 0
            self.stats["net_unreadable"] += 1
        out: list[NodeSample] = []
        seen: dict[tuple[int, int], tuple[int, float]] = {}
        # io="cgroup": job -> (index in out, (pid, start ticks), the job's cgroup) per process
        members: dict[str, list[tuple[int, tuple[int, int], str | None]]] = {}
        for name in os.listdir(self.proc):
            if not name.isdigit():
                continue
            pid = int(name)
            try:
                cgroup = self._read(f"{name}/cgroup")
                job = self.resolver(pid, cgroup)
                if job is None:
                    continue
                st = procfs.parse_stat(self._read(f"{name}/stat"))
                status = procfs.parse_status(self._read(f"{name}/status"))
                io = None
                if self.job_io is None:
                    try:
                        io = procfs.parse_io(self._read(f"{name}/io"))
                    except PermissionError:
                        self.stats["io_denied"] += 1
                try:
                    cores = len(os.sched_getaffinity(pid))
                except OSError:
                    cores = 0
            except (FileNotFoundError, ProcessLookupError):
                self.stats["vanished"] += 1
                continue
            except PermissionError:
                self.stats["denied"] += 1
                continue
            except procfs.ProcParseError as e:
                self.stats[f"parse_{e.reason}"] += 1
                continue
            ticks = st.utime + st.stime
            key = (pid, st.starttime)
            prev = self._prev.get(key)
            start_s = st.starttime / self.clk_tck
            core = procfs.cpu_percent(
                prev[0] if prev else None,
                prev[1] if prev else None,
                ticks,
                up,
                start_s,
                self.clk_tck,
            )
            seen[key] = (ticks, up)
            if self.job_io is not None:
                path = cgroupio.job_cgroup(cgroup, job, partial(self.resolver, pid))
                members.setdefault(job, []).append((len(out), key, path))
            out.append(
                NodeSample(
                    ts=round(now, 3),
                    job=job,
                    pid=pid,
                    node=self.node,
                    command=status.name,
                    vm_peak_kb=status.vm_peak_kb,
                    vm_size_kb=status.vm_size_kb,
                    vm_rss_kb=status.vm_rss_kb,
                    vm_swap_kb=status.vm_swap_kb,
                    syscr=io.syscr if io else 0,
                    syscw=io.syscw if io else 0,
                    read_bytes=io.read_bytes if io else 0,
                    write_bytes=io.write_bytes if io else 0,
                    core=round(core, 3),
                    receive=rx,
                    transmit=tx,
                    start=round(self.btime + start_s, 2),
                    cores=cores,
                    job_class=self.job_class,
                    wchar=io.wchar if io else None,
                )
            )
        if self.job_io is not None:
            out = self._carry_job_io(out, members)
        self._prev = seen  # processes gone since the last sweep are forgotten
        self.stats["sweeps"] += 1
        self.stats["samples"] += len(out)
        return out

    def _carry_job_io(
        self,
        out: list[NodeSample],
        members: dict[str, list[tuple[int, tuple[int, int], str | None]]],
    ) -> list[NodeSample]:
        """io="cgroup": each job's io.stat counters on its oldest process's sample (the
        carrier; :class:`streams.ship.cgroupio.JobIo`), 0 on the others."""
        assert self.job_io is not None
        now: dict[str, tuple[tuple[int, int], cgroupio.CgroupIo]] = {}
        where: dict[str, int] = {}
        for job, procs in members.items():
            index, key, path = min(procs, key=lambda m: (m[1][1], m[1][0]))
            counters = self.job_io.read(path) if path is not None else None
            if counters is None:
                self.stats["io_cgroup_unreadable"] += 1
                continue
            now[job], where[job] = (key, counters), index
        for job, (_, io) in self.job_io.carry(now).items():
            i = where[job]
            out[i] = replace(out[i], read_bytes=io.rbytes, write_bytes=io.wbytes)
        return out

    def run(
        self,
        sink: Sink,
        period: float = 60.0,
        count: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> int:
        """Sweep every ``period`` seconds (on a fixed grid: a slow sweep does not shift the
        next ones; missed ticks are skipped) until ``count`` sweeps are done (None: forever).
        Returns the number of sweeps."""
        if period <= 0:
            raise ValueError("period must be > 0")
        t0 = monotonic()
        k = 0
        while count is None or k < count:
            sink(self.sweep())
            k += 1
            if count is not None and k >= count:
                break
            now = monotonic()
            nxt = t0 + period * (int((now - t0) / period) + 1)
            sleep(max(0.0, nxt - now))
        return k
