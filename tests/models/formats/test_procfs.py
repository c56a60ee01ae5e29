"""/proc parsers, cgroup job resolvers and counter deltas (seed 003 §3.1)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats import procfs
from models.formats.procfs import (
    ProcParseError,
    counter_delta,
    counter_deltas,
    cpu_percent,
    cpuset_job,
    parse_cgroup,
    parse_io,
    parse_net_dev,
    parse_stat,
    parse_status,
    slurm_job,
)

STATUS = """Name:\tpython3
Umask:\t0022
State:\tR (running)
Pid:\t4242
VmPeak:\t  123456 kB
VmSize:\t  120000 kB
VmLck:\t       0 kB
VmHWM:\t   70000 kB
VmRSS:\t   65536 kB
VmSwap:\t      12 kB
Threads:\t1
"""

IO = """rchar: 5000
wchar: 1048576
syscr: 10
syscw: 20
read_bytes: 4096
write_bytes: 1048576
cancelled_write_bytes: 0
"""

NET_DEV = (
    "\n".join(
        [
            "Inter-|   Receive                                                |  Transmit",
            " face |bytes    packets errs drop fifo frame compressed multicast"
            "|bytes    packets errs drop fifo colls carrier compressed",
            "    lo:  999999  100 0 0 0 0 0 0   999999  100 0 0 0 0 0 0",
            "  eth0: 1000000 2000 0 0 0 0 0 0   300000 1500 0 0 0 0 0 0",
            "   ib0:     500    5 0 0 0 0 0 0      700    7 0 0 0 0 0 0",
        ]
    )
    + "\n"
)


def test_parse_status_fields_in_kb():
    s = parse_status(STATUS)
    assert (s.name, s.vm_peak_kb, s.vm_size_kb, s.vm_rss_kb, s.vm_swap_kb) == (
        "python3",
        123456,
        120000,
        65536,
        12,
    )


def test_parse_status_kernel_thread_has_no_vm_lines():
    s = parse_status("Name:\tkthreadd\nState:\tS (sleeping)\n")
    assert (s.vm_peak_kb, s.vm_rss_kb, s.vm_swap_kb) == (0, 0, 0)


def test_parse_status_without_name_is_an_error():
    with pytest.raises(ProcParseError) as e:
        parse_status("VmRSS: 1 kB\n")
    assert e.value.reason == "status_no_name"


def test_parse_io():
    io = parse_io(IO)
    assert (io.syscr, io.syscw, io.read_bytes, io.write_bytes, io.wchar) == (
        10,
        20,
        4096,
        1048576,
        1048576,
    )
    with pytest.raises(ProcParseError) as e:
        parse_io("rchar: 1\n")
    assert e.value.reason == "io_missing_field"


def test_parse_io_keeps_wchar_and_checks_it():
    io = parse_io(IO.replace("wchar: 1048576", "wchar: 3000000"))
    assert (io.wchar, io.write_bytes) == (3000000, 1048576)
    with pytest.raises(ProcParseError) as e:
        parse_io(IO.replace("wchar: 1048576\n", ""))
    assert e.value.reason == "io_missing_field" and str(e.value).endswith("wchar")
    for bad in ("-1", "x", "1.5", str(2**63)):
        with pytest.raises(ProcParseError) as e:
            parse_io(IO.replace("wchar: 1048576", f"wchar: {bad}"))
        assert e.value.reason == "io_bad_number"


def test_parse_stat_command_with_spaces_and_parentheses():
    # fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    #              utime stime cutime cstime priority nice num_threads itrealvalue starttime
    text = (
        "77 (my (odd) cmd) R 1 77 77 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 123456 "
        "1000 200 18446744073709551615\n"
    )
    s = parse_stat(text)
    assert (s.pid, s.comm, s.state, s.utime, s.stime, s.num_threads, s.starttime) == (
        77,
        "my (odd) cmd",
        "R",
        250,
        50,
        3,
        123456,
    )
    with pytest.raises(ProcParseError):
        parse_stat("77 (x) R 1 2")


def test_parse_real_proc_self():
    """This machine's /proc for this process parses and makes sense."""
    me = Path("/proc/self")
    st_ = parse_stat((me / "stat").read_text())
    assert st_.pid == os.getpid()
    status = parse_status((me / "status").read_text())
    assert status.vm_rss_kb > 1000 and status.vm_size_kb >= status.vm_rss_kb
    io = parse_io((me / "io").read_text())
    assert io.rchar > 0
    rx, tx = parse_net_dev(Path("/proc/net/dev").read_text())
    assert rx >= 0 and tx >= 0
    up = procfs.parse_uptime(Path("/proc/uptime").read_text())
    assert up > st_.starttime / os.sysconf("SC_CLK_TCK") - 1


def test_net_dev_skips_loopback():
    assert parse_net_dev(NET_DEV) == (1000500, 300700)


# --------------------------------------------------------------------------- resolvers

SLURM_V2 = "0::/system.slice/slurmstepd.scope/job_12345/step_0/user/task_0\n"
SLURM_V1 = (
    "12:cpuset:/slurm/uid_1000/job_12345/step_batch\n"
    "11:memory:/slurm/uid_1000/job_12345/step_batch/task_0\n"
    "1:name=systemd:/system.slice/slurmd.service\n"
)
OAR = "3:cpuset:/oar/user_12345\n2:cpu:/\n0::/\n"


@pytest.mark.parametrize("text", [SLURM_V2, SLURM_V1])
def test_slurm_resolver(text):
    assert slurm_job(text) == "12345"
    assert procfs.any_job(text) == "12345"


def test_slurm_resolver_needs_a_whole_component():
    assert slurm_job("0::/system.slice/not_a_job_12345x/step\n") is None
    assert slurm_job("0::/system.slice/slurmstepd.scope/job_7\n") == "7"


def test_cpuset_resolver_oar_and_slurm_v1():
    assert cpuset_job(OAR) == "12345"
    assert cpuset_job(SLURM_V1) == "12345"
    # a Slurm v2 path is not a cpuset (v1) path
    assert cpuset_job(SLURM_V2) is None
    assert procfs.any_job(OAR) == "12345"


def test_resolvers_on_this_machines_proc_self_cgroup():
    text = Path("/proc/self/cgroup").read_text()
    rows = parse_cgroup(text)
    assert rows and all(len(r) == 3 for r in rows)
    # no batch system here: no job ids
    assert slurm_job(text) is None and cpuset_job(text) is None
    unit = procfs.cgroup_unit(text)
    paths = [p for _, _, p in rows if p not in ("", "/")]
    assert (unit is None) == (not paths)
    if unit is not None:
        assert unit.split(":")[-1] in paths


def test_bad_cgroup_line():
    with pytest.raises(ProcParseError):
        parse_cgroup("garbage\n")


# --------------------------------------------------------------------------- counters


def test_counter_delta_never_negative():
    assert counter_delta(None, 500) == 500  # new process: from zero
    assert counter_delta(100, 500) == 400
    assert counter_delta(500, 100) == 100  # reset / pid reuse: restarts from zero
    assert counter_delta(7, 7) == 0


def test_cpu_percent():
    # 250 ticks at 100 Hz over 5 s = 50 % of a core
    assert cpu_percent(1000, 100.0, 1250, 105.0, 10.0, 100) == pytest.approx(50.0)
    # first sight: average since start (start at 100 s, now 110 s, 500 ticks = 5 s of CPU)
    assert cpu_percent(None, None, 500, 110.0, 100.0, 100) == pytest.approx(50.0)
    # ticks went down (pid reused): since start again, never negative
    assert cpu_percent(900, 100.0, 100, 110.0, 109.0, 100) == pytest.approx(100.0)


def _ref_counter_deltas(group, ts, value, first_from_zero):
    out = [0.0] * len(value)
    last: dict[int, tuple[float, float]] = {}
    for i in sorted(range(len(value)), key=lambda i: (group[i], ts[i])):
        g = group[i]
        if g not in last:
            out[i] = value[i] if first_from_zero[i] else 0.0
        else:
            d = value[i] - last[g][1]
            out[i] = value[i] if d < 0 else d
        last[g] = (ts[i], value[i])
    return out


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 10**6), st.integers(0, 10**9), st.booleans()),
        min_size=0,
        max_size=60,
        unique_by=lambda r: (r[0], r[1]),
    )
)
def test_counter_deltas_matches_reference(rows):
    group = np.array([r[0] for r in rows], np.int64)
    ts = np.array([r[1] for r in rows], np.float64)
    value = np.array([r[2] for r in rows], np.float64)
    ffz = np.array([r[3] for r in rows], bool)
    got = counter_deltas(group, ts, value, ffz)
    assert (got >= 0).all()
    assert got.tolist() == _ref_counter_deltas(
        group.tolist(), ts.tolist(), value.tolist(), ffz.tolist()
    )
