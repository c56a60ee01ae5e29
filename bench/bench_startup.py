"""Start-up of the command line: wall seconds of ``drainwatch --help`` and
``drainwatch replay --help`` (the installed entry point, a fresh interpreter each time; median
and best of ``--runs``), and the slowest imports of the second by ``python -X importtime``.

    .venv/bin/python bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = Path(sys.executable).parent / "drainwatch"


def timed(args: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([str(ENTRY), *args], check=True, capture_output=True)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, {platform.platform()}, "
        f"python {platform.python_version()}; load avg {os.getloadavg()[0]:.1f}"
    )
    for args in (["--help"], ["replay", "--help"]):
        ts = timed(args, a.runs)
        print(
            f"drainwatch {' '.join(args)}: median {statistics.median(ts):.3f} s, best "
            f"{min(ts):.3f} s over {a.runs} runs"
        )
    cmd = [sys.executable, "-X", "importtime", "-m", "streams.cli", "replay", "--help"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    rows = []
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cum, name = line.split("|")
            if cum.strip().isdigit():
                rows.append((int(cum), name.rstrip()))
    top = [(us, n) for us, n in sorted(rows, reverse=True) if not n.startswith("   ")][:8]
    print("replay --help, top-level imports by cumulative time (python -X importtime):")
    for us, name in top:
        print(f"  {us / 1000:6.1f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
