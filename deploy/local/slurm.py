#!/usr/bin/env python3
"""A small real Slurm cluster on loopback, for the `ship slurm` test: munged, slurmctld and one
slurmd per virtual node (Debian's build allows several slurmds on one host), all in one directory.

    python deploy/local/slurm.py install             # apt-get the packages, only when missing
    python deploy/local/slurm.py start DIR [--nodes 8]   # start, wait until every node is idle
    python deploy/local/slurm.py stop DIR

`install` needs root (apt-get); it is idempotent and does nothing when slurmctld, slurmd, scontrol,
squeue and munged are already on PATH. `start` writes DIR/slurm.conf, a munge key and socket of
its own (no system daemon is touched), picks free ports, starts the daemons in their own sessions
and records their pids in DIR/pids; `stop` sends each recorded pid SIGTERM (SIGKILL after 10 s).
Clients need `SLURM_CONF=DIR/slurm.conf` (DIR/env has it). Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
COMMANDS = ("slurmctld", "slurmd", "scontrol", "squeue", "sbatch", "munged")


class SlurmError(RuntimeError):
    """The cluster could not be installed or started; the message says why and where to look."""


def _which(name: str) -> str | None:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def installed() -> bool:
    return all(_which(c) for c in COMMANDS)


def install() -> str:
    """Install the Debian packages when a command is missing; returns what was done."""
    if installed():
        return "slurm: already installed"
    if os.geteuid() != 0:
        raise SlurmError("slurm packages missing and not root: cannot apt-get install them")
    if not shutil.which("apt-get"):
        raise SlurmError("slurm packages missing and no apt-get on this machine")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:  # a fresh machine may have no package lists yet
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, text=True)
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0 or not installed():
        tail = "\n".join((run.stdout + run.stderr).splitlines()[-15:])
        raise SlurmError(f"apt-get install {' '.join(PACKAGES)} failed:\n{tail}")
    return f"slurm: installed {' '.join(PACKAGES)}"


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _port_base(nodes: int) -> int:
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(21000, 39000, 50)
        if all(_free(base + i) for i in range(nodes + 1)):
            return base
    raise SlurmError("no free port range for slurmctld and the slurmds")


def _conf(d: Path, base: int, nodes: int) -> str:
    return f"""\
ClusterName=dwtest
SlurmctldHost=localhost
SlurmctldPort={base}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge/munge.socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=2,bf_resolution=10,sched_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=30
MessageTimeout=10
KillWait=5
MinJobAge=300
NodeName=n[1-{nodes}] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[{base + 1}-{base + nodes}] \
CPUs=1 RealMemory=500 State=UNKNOWN
PartitionName=main Nodes=n[1-{nodes}] Default=YES MaxTime=INFINITE State=UP
"""


def env_of(d: Path) -> dict[str, str]:
    """The environment a client of the cluster in ``d`` needs."""
    return {**os.environ, "SLURM_CONF": str(d / "slurm.conf")}


def _spawn(d: Path, name: str, cmd: list[str]) -> int:
    log = open(d / "log" / f"{name}.out", "ab")  # noqa: SIM115 - the child keeps it
    with log:
        p = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env_of(d),
            cwd=d,
        )
    with open(d / "pids", "a") as f:
        f.write(f"{p.pid} {name}\n")
    return p.pid


def _tail(p: Path, n: int = 20) -> str:
    try:
        return "\n".join(p.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return f"({p} not written)"


def start(d: Path, nodes: int = 8, timeout: float = 60.0) -> dict[str, str]:
    """Start a cluster of ``nodes`` one-CPU nodes n1..nN in ``d``; returns the client env."""
    if not installed():
        raise SlurmError("slurm is not installed (python deploy/local/slurm.py install)")
    d = d.resolve()
    for sub in ("munge", "state", "log", *(f"spool/n{i}" for i in range(1, nodes + 1))):
        (d / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(d / "munge", 0o700)
    key = d / "munge" / "munge.key"
    if not key.exists():
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
    base = _port_base(nodes)
    (d / "slurm.conf").write_text(_conf(d, base, nodes))
    (d / "env").write_text(f"SLURM_CONF={d / 'slurm.conf'}\n")
    m = d / "munge"
    _spawn(
        d,
        "munged",
        [
            _which("munged") or "munged",
            "-F",
            "--force",
            f"--socket={m}/munge.socket",
            f"--key-file={key}",
            f"--log-file={d}/log/munged.log",
            f"--pid-file={m}/munged.pid",
            f"--seed-file={m}/munged.seed",
        ],
    )
    deadline = time.monotonic() + timeout
    while not (m / "munge.socket").exists():
        if time.monotonic() > deadline:
            raise SlurmError(f"munged did not start:\n{_tail(d / 'log' / 'munged.out')}")
        time.sleep(0.05)
    _spawn(d, "slurmctld", [_which("slurmctld") or "slurmctld", "-D", "-i"])
    for i in range(1, nodes + 1):
        _spawn(d, f"slurmd-n{i}", [_which("slurmd") or "slurmd", "-D", "-N", f"n{i}"])
    want = f"idle {nodes}"
    last = ""
    while time.monotonic() < deadline:
        r = subprocess.run(
            ["sinfo", "-h", "-o", "%T %D"],
            env=env_of(d),
            capture_output=True,
            text=True,
            timeout=15,
        )
        last = (r.stdout + r.stderr).strip()
        if last == want:
            return env_of(d)
        time.sleep(0.3)
    stop(d)
    raise SlurmError(
        f"nodes not idle after {timeout:.0f}s (sinfo: {last!r}); slurmctld log:\n"
        f"{_tail(d / 'log' / 'slurmctld.log')}"
    )


def stop(d: Path, grace: float = 10.0) -> None:
    """SIGTERM every daemon recorded in ``d/pids`` (slurmds first), SIGKILL after ``grace``."""
    pids_file = d / "pids"
    if not pids_file.exists():
        return
    _cancel_jobs(d)
    procs = [line.split(" ", 1) for line in pids_file.read_text().splitlines() if line]
    order = sorted(procs, key=lambda p: (p[1] == "munged", p[1] == "slurmctld"))
    for pid, _ in order:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGTERM)
    deadline = time.monotonic() + grace
    for pid, _ in order:
        while time.monotonic() < deadline and _alive(int(pid)):
            time.sleep(0.05)
        if _alive(int(pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    pids_file.unlink()
    _kill_leftovers(d)


def _cancel_jobs(d: Path, wait: float = 20.0) -> None:
    """Cancel every job of the cluster and wait (KillWait is 5 s) until squeue lists none."""
    env = env_of(d)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["scancel", "--user", str(os.geteuid())], env=env, capture_output=True, timeout=15
        )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            r = subprocess.run(
                ["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True, timeout=15
            )
            if r.returncode != 0 or not r.stdout.strip():
                return
            time.sleep(0.3)


def _kill_leftovers(d: Path) -> None:
    """SIGKILL job processes of this cluster that outlived their slurmd (their command line or
    working directory is under ``d``)."""
    root = str(d.resolve())
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(p / "cwd")
        except OSError:
            continue
        if root in cmd or cwd == root or cwd.startswith(root + "/"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(p.name), signal.SIGKILL)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of another parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install")
    s = sub.add_parser("start")
    s.add_argument("dir", type=Path)
    s.add_argument("--nodes", type=int, default=8)
    t = sub.add_parser("stop")
    t.add_argument("dir", type=Path)
    a = ap.parse_args()
    try:
        if a.cmd == "install":
            print(install())
        elif a.cmd == "start":
            start(a.dir, a.nodes)
            print(f"slurm: {a.nodes} nodes idle; export SLURM_CONF={a.dir.resolve()}/slurm.conf")
        else:
            stop(a.dir)
    except SlurmError as e:
        print(f"slurm.py {a.cmd}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
