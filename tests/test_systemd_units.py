"""deploy/systemd/: one unit per shipper and the worker; each restarts on failure, reads the
environment file, runs as the unprivileged drainwatch user, and its command line is one the
real CLI parser accepts. `systemd-analyze verify` checks the syntax where it exists."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streams.cli import build_parser

UNITS = Path(__file__).resolve().parents[1] / "deploy" / "systemd"
BIN = "/opt/drainwatch/.venv/bin/drainwatch"


def _units() -> dict[str, configparser.ConfigParser]:
    out = {}
    for p in sorted(UNITS.glob("*.service")):
        c = configparser.ConfigParser(interpolation=None, strict=True)
        c.optionxform = str  # type: ignore[assignment,method-assign]
        c.read(p)
        out[p.name] = c
    return out


def test_every_shipper_and_the_worker_has_a_unit() -> None:
    cmds = {" ".join(shlex.split(u["Service"]["ExecStart"])[1:3]) for u in _units().values()}
    assert cmds == {"worker", "ship slurm", "ship jobs", "ship moab", "ship samples"}
    jobs = [
        u["Service"]["ExecStart"]
        for u in _units().values()
        if " ship jobs " in u["Service"]["ExecStart"]
    ]
    assert any("--sacct" in j for j in jobs) and any("--jobcomp-topic" in j for j in jobs)


@pytest.mark.parametrize("name", sorted(_units()))
def test_unit_is_restarted_unprivileged_and_its_command_parses(name: str) -> None:
    s = _units()[name]["Service"]
    assert s["Restart"] == "on-failure"
    assert s["EnvironmentFile"] == "/etc/drainwatch/drainwatch.env"
    assert s["User"] == "drainwatch" and s["NoNewPrivileges"] == "yes"
    argv = shlex.split(s["ExecStart"])
    assert argv[0] == BIN
    args = build_parser().parse_args(argv[1:])  # exits (SystemExit) on a bad option
    assert callable(args.func)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verify() -> None:
    for p in sorted(UNITS.glob("*.service")):
        r = subprocess.run(
            ["systemd-analyze", "verify", str(p)], capture_output=True, text=True, timeout=60
        )
        # the only complaint allowed: the program is not installed on this machine
        problems = [
            line
            for line in (r.stdout + r.stderr).splitlines()
            if line.strip() and f"Command {BIN} is not executable" not in line
        ]
        assert not problems, (p.name, problems)


# --- the samples unit's privilege (issue 31, class 8) -------------------------------------------

SAMPLES = "drainwatch-ship-samples.service"
PROC_IO_CAPS = {"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"}
CGROUP_DROPIN = UNITS / "dropin" / "drainwatch-ship-samples.service.d" / "cgroup-io.conf"


def _dropin_lines(path: Path) -> list[tuple[str, str]]:
    """``key=value`` lines of a drop-in, in order (keys repeat: an empty one resets)."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out.append((key.strip(), value.strip()))
    return out


def test_only_the_samples_unit_has_capabilities_and_only_the_two_proc_io_needs() -> None:
    for name, unit in _units().items():
        s = unit["Service"]
        if name != SAMPLES:
            assert "AmbientCapabilities" not in s and "CapabilityBoundingSet" not in s, name
            continue
        assert set(s["AmbientCapabilities"].split()) == PROC_IO_CAPS
        assert set(s["CapabilityBoundingSet"].split()) == PROC_IO_CAPS
        assert "--io" not in s["ExecStart"]  # the default: /proc/<pid>/io per process


def test_samples_unit_closes_what_else_the_capabilities_allow() -> None:
    s = _units()[SAMPLES]["Service"]
    denied = s["SystemCallFilter"].lstrip("~").split()
    assert s["SystemCallFilter"].startswith("~")
    assert {"@debug", "open_by_handle_at", "name_to_handle_at"} <= set(denied)
    assert s["ProtectHome"] == "yes" and s["NoNewPrivileges"] == "yes"
    hidden = {p.lstrip("-") for p in s["InaccessiblePaths"].split()}
    assert {"/etc/munge", "/etc/shadow", "/etc/ssh"} <= hidden
    for key in (
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectControlGroups",
        "PrivateDevices",
        "RestrictNamespaces",
        "LockPersonality",
    ):
        assert s[key] == "yes", key


def test_cgroup_io_dropin_runs_without_any_capability() -> None:
    lines = _dropin_lines(CGROUP_DROPIN)
    starts = [v for k, v in lines if k == "ExecStart"]
    assert starts[0] == "" and len(starts) == 2  # reset, then the one command
    argv = shlex.split(starts[1])
    assert argv[0] == BIN and argv[1:3] == ["ship", "samples"]
    args = build_parser().parse_args(argv[1:])
    assert args.io == "cgroup" and args.kafka
    unit = shlex.split(_units()[SAMPLES]["Service"]["ExecStart"])
    assert [a for a in argv if a not in ("--io", "cgroup")] == unit  # the same run otherwise
    assert dict(lines)["AmbientCapabilities"] == ""
    assert dict(lines)["CapabilityBoundingSet"] == ""


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_sees_the_capabilities_with_and_without_the_dropin(tmp_path: Path) -> None:
    """systemd's own reading (``systemd-analyze security --offline``, systemd 250+) of the unit
    alone and with the cgroup-io drop-in: ptrace and DAC override, then neither."""
    system = tmp_path / "etc" / "systemd" / "system"
    system.mkdir(parents=True)
    shutil.copy(UNITS / SAMPLES, system / SAMPLES)

    def security() -> str:
        r = subprocess.run(
            ["systemd-analyze", "security", "--offline=true", f"--root={tmp_path}", SAMPLES],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if "--offline" in r.stderr and "unrecognized" in r.stderr:
            pytest.skip("systemd-analyze security --offline needs systemd 250+")
        return r.stdout

    alone = security()
    assert "✗ CapabilityBoundingSet=~CAP_SYS_PTRACE" in alone
    shutil.copytree(CGROUP_DROPIN.parent, system / CGROUP_DROPIN.parent.name)
    with_dropin = security()
    assert "✓ CapabilityBoundingSet=~CAP_SYS_PTRACE" in with_dropin
    assert "✓ CapabilityBoundingSet=~CAP_(DAC_*|FOWNER|IPC_OWNER)" in with_dropin
    assert "✓ AmbientCapabilities=" in with_dropin
    r = subprocess.run(
        ["systemd-analyze", "verify", SAMPLES],
        cwd=system,
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [
        line
        for line in (r.stdout + r.stderr).splitlines()
        if line.strip() and f"Command {BIN} is not executable" not in line
    ]
    assert not problems, problems


PROBE = """
import sys
from streams.ship.sampler import Sampler
pid = int(sys.argv[1])
s = Sampler(lambda p, cgroup: "job" if p == pid else None, node="n")
(sample,) = s.sweep()
print(s.stats["io_denied"])
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run as two users with chosen capabilities",
)
@pytest.mark.parametrize(
    ("caps", "denied"),
    [("", 1), ("+sys_ptrace", 1), ("+dac_read_search", 1), ("+sys_ptrace,+dac_read_search", 0)],
)
def test_proc_io_of_another_user_needs_both_capabilities(caps: str, denied: int) -> None:
    """The kernel's two checks on /proc/<pid>/io (mode 0400: DAC; then ptrace_may_access
    PTRACE_MODE_READ_FSCREDS), through the sampler as an unprivileged user: one capability
    alone is refused, the two together read it."""
    other = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "60"]
    )
    try:
        time.sleep(0.2)
        grant = [f"--inh-caps={caps}", f"--ambient-caps={caps}"] if caps else ["--inh-caps=-all"]
        r = subprocess.run(
            [
                "setpriv",
                "--reuid=64999",
                "--regid=64999",
                "--clear-groups",
                *grant,
                sys.executable,
                "-c",
                PROBE,
                str(other.pid),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(UNITS.parents[1])},
        )
        assert r.returncode == 0, r.stderr
        assert int(r.stdout.split()[-1]) == denied, (caps, r.stdout)
    finally:
        other.kill()
        other.wait()
