"""``ship samples --io cgroup``: the sampler's mode that needs no capability. It opens no
/proc/<pid>/io, reads each job's cgroup v2 io.stat, and puts the job's counters on one process
sample (its oldest), so the DFS analytics' per-process deltas count every byte once, also
when that process ends and another one carries on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.formats import procfs
from models.records.nodesample import to_arrays
from models.samples.dfs import io_from_samples
from streams.cli import build_parser
from streams.ship import cgroupio
from streams.ship.sampler import Sampler, resolver_by_name

CLK = 100  # ticks per second in the fake /proc (the sampler reads the real SC_CLK_TCK)
JOB = "/system.slice/slurmstepd.scope/job_{job}/step_{step}/user/task_0"


class FakeNode:
    """A /proc and a /sys/fs/cgroup of a node running Slurm jobs, under a temporary dir."""

    def __init__(self, root: Path) -> None:
        self.proc, self.cgroup = root / "proc", root / "cgroup"
        self.proc.mkdir(parents=True)
        self.cgroup.mkdir()
        (self.proc / "stat").write_text("cpu 1 2 3 4\nbtime 1700000000\n")
        (self.proc / "net").mkdir()
        (self.proc / "net" / "dev").write_text("Inter-|\n face |\n")
        self.uptime(1000.0)

    def uptime(self, seconds: float) -> None:
        (self.proc / "uptime").write_text(f"{seconds} 0\n")

    def process(self, pid: int, cgroup: str, start_s: float, io_bytes: int = 0) -> None:
        d = self.proc / str(pid)
        d.mkdir()
        (d / "cgroup").write_text(f"0::{cgroup}\n")
        fields = ["S"] + ["0"] * 10 + ["5", "5"] + ["0"] * 4 + ["1", "0", str(int(start_s * CLK))]
        (d / "stat").write_text(f"{pid} (app) {' '.join(fields)} 0 0 0\n")
        (d / "status").write_text("Name:\tapp\nVmRSS:\t1000 kB\n")
        # a /proc/<pid>/io the cgroup mode must never use (it would add these bytes)
        (d / "io").write_text(
            f"rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: {io_bytes}\n"
            f"write_bytes: {io_bytes}\ncancelled_write_bytes: 0\n"
        )

    def end(self, pid: int) -> None:
        for f in (self.proc / str(pid)).iterdir():
            f.unlink()
        (self.proc / str(pid)).rmdir()

    def io_stat(self, cgroup: str, rbytes: int, wbytes: int) -> None:
        d = self.cgroup / cgroup.lstrip("/")
        d.mkdir(parents=True, exist_ok=True)
        half = wbytes // 2  # two devices: the counters are summed
        (d / "io.stat").write_text(
            f"8:0 rbytes={rbytes} wbytes={half} rios=3 wios=4 dbytes=0 dios=0\n"
            f"259:0 rbytes=0 wbytes={wbytes - half} rios=0 wios=1 dbytes=0 dios=0\n"
        )


def test_parse_io_stat_sums_devices_and_refuses_bad_numbers() -> None:
    io = cgroupio.parse_io_stat("8:0 rbytes=10 wbytes=20 rios=1 wios=2\n8:16 wbytes=5 x=y\n")
    assert io == cgroupio.CgroupIo(rbytes=10, wbytes=25, rios=1, wios=2)
    assert cgroupio.parse_io_stat("") == cgroupio.CgroupIo()
    with pytest.raises(procfs.ProcParseError):
        cgroupio.parse_io_stat("8:0 rbytes=²")


def test_job_cgroup_is_the_highest_ancestor_of_the_same_job() -> None:
    slurm = procfs.RESOLVERS["slurm"]
    text = "0::" + JOB.format(job=7, step=0) + "\n"
    job = slurm(text)
    assert cgroupio.job_cgroup(text, job, slurm) == "/system.slice/slurmstepd.scope/job_7"
    unit = procfs.RESOLVERS["cgroup"]
    text = "0::/user.slice/app.scope\n"
    assert cgroupio.job_cgroup(text, unit(text), unit) == "/user.slice/app.scope"
    assert cgroupio.job_cgroup("3:cpuset:/slurm/job_7\n", "7", slurm) is None  # v1 only


def _sampler(node: FakeNode, clock: list[float]) -> Sampler:
    s = Sampler(
        resolver_by_name("slurm"),
        node="n1",
        proc=node.proc,
        clock=lambda: clock[0],
        io="cgroup",
        cgroup_root=node.cgroup,
    )
    s.clk_tck = CLK
    return s


def test_cgroup_mode_counts_each_job_byte_once(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    step0, step1 = JOB.format(job=7, step=0), JOB.format(job=7, step=1)
    job_cg = "/system.slice/slurmstepd.scope/job_7"
    # job 7: an old process (the carrier) and a younger one in another step
    node.process(100, step0, start_s=10.0, io_bytes=999_999)
    node.process(200, step1, start_s=500.0, io_bytes=999_999)
    node.io_stat(job_cg, rbytes=1_000, wbytes=10_000)
    clock = [1_700_001_000.0]
    s = _sampler(node, clock)
    sweeps = [s.sweep()]
    by_pid = {x.pid: x for x in sweeps[0]}
    assert by_pid[100].write_bytes == 10_000 and by_pid[100].read_bytes == 1_000
    assert by_pid[200].write_bytes == 0 and by_pid[200].read_bytes == 0
    assert all(x.wchar is None and x.syscw == 0 for x in sweeps[0])  # unknown in this mode
    # a minute later: 6,000 more bytes written
    clock[0] += 60
    node.uptime(1060.0)
    node.io_stat(job_cg, rbytes=1_000, wbytes=16_000)
    sweeps.append(s.sweep())
    # the carrier ends; the young process carries on, with 4,000 more bytes
    node.end(100)
    clock[0] += 60
    node.uptime(1120.0)
    node.io_stat(job_cg, rbytes=1_000, wbytes=20_000)
    sweeps.append(s.sweep())
    (only,) = sweeps[2]
    assert only.pid == 200 and only.write_bytes == 4_000  # only what 100 had not reported
    clock[0] += 60
    node.uptime(1180.0)
    node.io_stat(job_cg, rbytes=1_000, wbytes=21_000)
    sweeps.append(s.sweep())
    assert sweeps[3][0].write_bytes == 5_000
    # the DFS analytics over these samples: the first sweep is the baseline (the job ran before),
    # then 6,000 + 4,000 + 1,000 bytes: the handover to pid 200 (whose series carried 0 until
    # then) counts the interval exactly, and no byte twice
    rates = io_from_samples(to_arrays(x for sweep in sweeps for x in sweep))
    assert np.sum(rates.write_amount) * 1e6 == pytest.approx(11_000)
    assert s.stats["io_denied"] == 0 and s.stats["io_cgroup_unreadable"] == 0


def test_cgroup_mode_without_io_stat_counts_it(tmp_path: Path) -> None:
    node = FakeNode(tmp_path)
    node.process(100, JOB.format(job=8, step=0), start_s=10.0, io_bytes=5)
    s = _sampler(node, [1_700_001_000.0])
    (x,) = s.sweep()
    assert x.write_bytes == 0 and x.read_bytes == 0
    assert s.stats["io_cgroup_unreadable"] == 1


def test_ship_samples_takes_io_cgroup() -> None:
    args = build_parser().parse_args(["ship", "samples", "--kafka", "--io", "cgroup"])
    assert args.io == "cgroup"
    assert build_parser().parse_args(["ship", "samples"]).io == "proc"
    with pytest.raises(ValueError):
        Sampler(resolver_by_name("all"), io="nope")
