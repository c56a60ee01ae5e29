"""deploy/systemd/: one unit per shipper and the worker; each restarts on failure, reads the
environment file, runs as the unprivileged drainwatch user, and its command line is one the
real CLI parser accepts. `systemd-analyze verify` checks the syntax where it exists."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
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
    jobs = [u["Service"]["ExecStart"] for u in _units().values() if " ship jobs " in
            u["Service"]["ExecStart"]]  # fmt: skip
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
        r = subprocess.run(["systemd-analyze", "verify", str(p)], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
        # the only complaint allowed: the program is not installed on this machine
        problems = [line for line in (r.stdout + r.stderr).splitlines()
                    if line.strip() and f"Command {BIN} is not executable" not in line]  # fmt: skip
        assert not problems, (p.name, problems)
