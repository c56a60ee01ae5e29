"""Benchmark: what the node sampler costs the jobs (seed 003 §3.2, Tables 3-4: 0.10 % at 60 s,
0.69 % at 10 s, 0.21-0.35 % with 16-32 processes; Xeon E5420, 8 cores, sysbench primes).

Run: .venv/bin/python bench/bench_sampler_overhead.py [--seconds 35] [--pairs 2]

1. Direct cost: many sweeps of the real /proc in this process, every process of the machine
   counted as a job process (worst case: the node's whole process table), CPU time per sweep
   and per sample; overhead at period P = CPU per sweep / (P x cores).
2. A/B: one CPU-bound worker per core doing a fixed amount of pure-Python work (calibrated to
   ~--seconds), timed without the sampler and with `drainwatch ship samples --period 10`
   running beside it (resolver: cgroup, i.e. every process in a non-root cgroup), runs
   interleaved. The sampler's own CPU time (rusage) is reported too. On a shared VM the
   run-to-run noise is larger than the effect; the direct cost is the number to trust.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streams.ship.sampler import Sampler  # noqa: E402

CORES = os.cpu_count() or 1


def work(n: int) -> int:
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def calibrate(seconds: float) -> int:
    n = 1_000_000
    t = time.perf_counter()
    work(n)
    dt = time.perf_counter() - t
    return int(n * seconds / dt)


def run_workers(n: int) -> float:
    t = time.perf_counter()
    procs = [mp.Process(target=work, args=(n,)) for _ in range(CORES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return time.perf_counter() - t


def direct_cost(sweeps: int = 100) -> tuple[float, float, float]:
    """CPU ms per sweep, ms per sample, samples per sweep (all processes as job processes)."""
    s = Sampler(lambda pid, cg: "all")
    s.sweep()  # warm (first sight of every process)
    t = time.process_time()
    n = 0
    for _ in range(sweeps):
        n += len(s.sweep())
    cpu = time.process_time() - t
    return 1000 * cpu / sweeps, 1000 * cpu / max(n, 1), n / sweeps


def startup_cost() -> float:
    """CPU s of one `ship samples --count 1` process (interpreter, imports, one sweep)."""
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "ship",
            "samples",
            "--count",
            "1",
            "--resolver",
            "cgroup",
            "--out",
            os.devnull,
        ],
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    _, _, ru = os.wait4(p.pid, 0)
    p.returncode = 0
    return ru.ru_utime + ru.ru_stime


def with_sampler(n: int, period: float) -> tuple[float, float, int]:
    """Workers' wall time with the sampler running; sampler CPU s; samples written."""
    out = Path("/tmp") / f"overhead_{os.getpid()}.jsonl"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "ship",
            "samples",
            "--period",
            str(period),
            "--resolver",
            "cgroup",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # let it start (imports) before the timed work
    wall = run_workers(n)
    p.send_signal(signal.SIGINT)
    _, _, ru = os.wait4(p.pid, 0)
    p.returncode = 0
    lines = out.read_bytes().count(b"\n") if out.exists() else 0
    out.unlink(missing_ok=True)
    return wall, ru.ru_utime + ru.ru_stime, lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=35.0)
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()} {CORES} cores python {platform.python_version()}; "
        f"load average before: {os.getloadavg()}"
    )

    ms_sweep, ms_sample, per_sweep = direct_cost()
    print(
        f"direct: {per_sweep:.0f} processes per sweep, {ms_sweep:.2f} ms CPU per sweep, "
        f"{ms_sample:.3f} ms CPU per process sample"
    )
    for period in (60.0, 30.0, 10.0):
        ovh = ms_sweep / 1000 / (period * CORES) * 100
        print(
            f"  period {period:4.0f} s: {3600 / period * ms_sweep / 1000:6.2f} CPU s per hour"
            f" = {ovh:.4f} % of the node's CPU ({CORES} cores)"
        )
    for procs in (8, 16, 32):
        ovh = procs * ms_sample / 1000 / (60 * CORES) * 100
        print(
            f"  {procs} job processes at 60 s: {ovh:.5f} % (seed Table 4: 16 -> 0.21 %, "
            f"32 -> 0.35 %)"
        )

    start = statistics.median(startup_cost() for _ in range(3))
    print(f"sampler process start-up + first sweep: {start:.3f} s CPU (python, imports)")
    if args.pairs <= 0:
        return
    n = calibrate(args.seconds)
    print(f"A/B: {CORES} workers x {n:,} loop iterations each (~{args.seconds:.0f} s)")
    base: list[float] = []
    samp: list[float] = []
    cpu_s = 0.0
    lines = 0
    for _ in range(args.pairs):
        base.append(run_workers(n))
        w, c, k = with_sampler(n, 10.0)
        samp.append(w)
        cpu_s += c
        lines += k
    b, s = statistics.mean(base), statistics.mean(samp)
    print(f"  no sampler: {', '.join(f'{x:.2f}' for x in base)} s (mean {b:.2f})")
    print(f"  sampler 10 s: {', '.join(f'{x:.2f}' for x in samp)} s (mean {s:.2f})")
    steady = cpu_s - args.pairs * start
    print(
        f"  wall-time overhead {100 * (s - b) / b:+.2f} % (seed Table 3 at 10 s: 0.69 %); "
        f"sampler CPU {cpu_s:.3f} s over {sum(samp):.0f} s ({lines} samples), "
        f"{steady:.3f} s without start-up = {100 * steady / (sum(samp) * CORES):.4f} % of "
        f"the node's CPU"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
