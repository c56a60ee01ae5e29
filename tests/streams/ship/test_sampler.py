"""The sampler against this machine's real /proc: child processes that write and burn CPU."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from models.formats.sampletrace import parse_trace
from streams.cli import main
from streams.ship.sampler import Sampler, resolver_by_name
from streams.sinks.jsonlines import JsonLinesSink

MB = 1 << 20
CHILD = r"""
import os, sys, time
path = sys.argv[1]
print("ready", flush=True)
sys.stdin.readline()                      # wait: first sweep happens now
with open(path, "wb") as f:
    for _ in range(8):
        f.write(os.urandom(MB))
    f.flush()
    os.fsync(f.fileno())
data = bytearray(50 * MB)                 # touch 50 MiB so rss grows
for i in range(0, len(data), 4096):
    data[i] = 1
print("written", flush=True)
t = time.process_time()
x = 0
while time.process_time() - t < 1.5:      # burn 1.5 s of CPU time (however long that takes)
    x += 1
print("burnt", flush=True)
sys.stdin.readline()
""".replace("MB", str(MB))


def _spawn(tmp_path: Path) -> subprocess.Popen:
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "out.bin")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "ready"
    return p


def test_sampler_measures_a_real_child(tmp_path):
    t_spawn = time.time()
    child = _spawn(tmp_path)
    try:
        sampler = Sampler(lambda pid, cg: "job-1" if pid == child.pid else None, node="testnode")
        first = sampler.sweep()
        assert [s.pid for s in first] == [child.pid]
        s1 = first[0]
        assert s1.job == "job-1" and s1.node == "testnode"
        assert s1.command.startswith("python")
        assert abs(s1.start - t_spawn) < 5  # process start time from /proc/<pid>/stat
        assert s1.cores == len(os.sched_getaffinity(child.pid))
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "written"
        assert child.stdout.readline().strip() == "burnt"
        (s2,) = sampler.sweep()
        # the child wrote 8 MiB and fsynced it: the counter grew by at least that
        assert s2.write_bytes - s1.write_bytes >= 8 * MB
        assert s2.syscw - s1.syscw >= 8
        assert s2.vm_rss_kb * 1024 >= 50 * MB and s2.vm_peak_kb >= s2.vm_size_kb > 0
        # it burnt >= 1.5 s of CPU between the sweeps (single-threaded: never > 1 core)
        interval = s2.ts - s1.ts
        assert s2.core * interval / 100 >= 1.45
        assert s2.core <= 102.0
        assert s2.receive >= s1.receive and s2.transmit >= s1.transmit
    finally:
        child.kill()
        child.wait()
    # the child is gone: no sample, no error
    assert sampler.sweep() == []
    assert sampler.stats["sweeps"] == 3 and sampler.stats["samples"] == 2


def test_process_vanishing_mid_read_is_skipped_and_counted(tmp_path):
    child = _spawn(tmp_path)

    def resolver(pid: int, cgroup: str) -> str | None:
        if pid != child.pid:
            return None
        child.kill()  # gone between the cgroup read and the stat read
        child.wait()
        return "job-2"

    sampler = Sampler(resolver)
    assert sampler.sweep() == []
    assert sampler.stats["vanished"] == 1


def test_run_on_a_fixed_grid_and_json_lines_sink(tmp_path):
    child = _spawn(tmp_path)
    try:
        sampler = Sampler(lambda pid, cg: "j" if pid == child.pid else None)
        buf = io.BytesIO()
        sink = JsonLinesSink(buf)
        slept: list[float] = []
        clock = iter([0.0, 0.2, 10.3, 10.4, 20.1, 99.0])
        n = sampler.run(
            sink, period=10.0, count=3, sleep=slept.append, monotonic=lambda: next(clock)
        )
        assert n == 3 and sink.lines == 3
        # the grid is 0, 10, 20: sleeps 9.8 then 9.7, no sleep after the last sweep
        assert slept == pytest.approx([9.8, 9.7])
        got = list(parse_trace(buf.getvalue().splitlines()))
        assert [s.pid for s in got] == [child.pid] * 3
    finally:
        child.kill()
        child.wait()


def test_named_resolvers_on_this_machine():
    # no batch system here: slurm finds no job in this process's cgroups
    text = Path("/proc/self/cgroup").read_text()
    assert resolver_by_name("slurm")(os.getpid(), text) is None
    assert (
        resolver_by_name("all")(os.getpid(), "0::/system.slice/slurmstepd.scope/job_9/step_0\n")
        == "9"
    )


def test_ship_samples_command(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    rc = main(
        [
            "ship",
            "samples",
            "--count",
            "2",
            "--period",
            "0.05",
            "--resolver",
            "cgroup",
            "--node",
            "n1",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    err = capsys.readouterr().err
    assert "2 sweeps" in err
    lines = out.read_bytes().splitlines()
    samples = list(parse_trace(lines))
    assert len(samples) == len(lines)  # every line it wrote parses
    assert all(s.node == "n1" for s in samples)
