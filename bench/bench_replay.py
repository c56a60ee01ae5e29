"""Replay benchmark (issue: drain accounting core): lines/s of the full Moab replay
(parse + account + windows + reports) against the line-by-line reference, on the same simulated
log in one run, and peak memory on logs of two sizes (it should not grow with the lines).

    .venv/bin/python bench/bench_replay.py [--lines 5000000] [--skip-reference]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def ensure_log(path: Path, lines: int) -> Path:
    from bench_simulate import make_log

    log = path / "moab.log"
    marker = path / f"lines-{lines}"
    if not (log.exists() and marker.exists()):
        path.mkdir(parents=True, exist_ok=True)
        make_log(path, lines=lines)
        marker.touch()
    return log


def head(src: Path, dst: Path, n: int) -> Path:
    if not dst.exists():
        with open(src, "rb") as f, open(dst, "wb") as g:
            for i, line in enumerate(f):
                if i >= n:
                    break
                g.write(line)
    return dst


def fast(log: Path, out: Path, threads: int | None) -> dict:
    env = dict(os.environ)
    if threads:
        env["POLARS_MAX_THREADS"] = str(threads)
    code = (
        "import resource,sys,time; from streams.cli import main; t=time.perf_counter();"
        f"rc=main(['replay','--format','moab',{str(log)!r},'--out',{str(out)!r},"
        "'--no-progress','--tz','America/Chicago']);"
        "ru=resource.getrusage(resource.RUSAGE_SELF);"
        "print(time.perf_counter()-t, ru.ru_utime+ru.ru_stime, ru.ru_maxrss)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    wall, cpu, rss = map(float, r.stdout.split())
    summary = json.loads((out / "summary_drain.json").read_text())
    t = summary["timings_s"]
    return {
        "wall": wall,
        "cpu": cpu,
        "maxrss_mb": rss / 1024,
        "lines": summary["lines"],
        "loop_s": t["read_drain_input"] + t["step_drain"],
        "parse_s": t["read_drain_input"],
        "account_s": t["step_drain"],
        "drain_days": (out / "drain_daily.csv").read_text(),
    }


def reference(log: Path) -> dict:
    from tests import reference_drain as ref

    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    with open(log, encoding="utf-8") as f:
        res = ref.replay(f, tz="America/Chicago")
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    lines = sum(1 for _ in open(log, "rb"))
    drain = sum(v[1] for v in ref.summarise_hours(res).values())
    return {
        "wall": wall,
        "cpu": (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime),
        "lines": lines,
        "drain_ms": drain,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--dir", default=str(ROOT / "bench" / "out" / "replay"))
    ap.add_argument("--skip-reference", action="store_true")
    a = ap.parse_args()
    d = Path(a.dir)
    log = ensure_log(d, a.lines)
    small = head(log, d / "moab-1M.log", 1_000_000)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, {platform.platform()}, "
        f"python {platform.python_version()}; load avg {os.getloadavg()[0]:.1f}"
    )
    print(f"input: {log} ({log.stat().st_size / 1e6:.0f} MB)")
    f1 = fast(log, d / "out-1t", threads=1)
    print(
        f"fast, 1 thread : {f1['lines']:,} lines in {f1['wall']:.2f} s wall, {f1['cpu']:.2f} s "
        f"CPU -> {f1['lines'] / f1['wall']:,.0f} lines/s wall, {f1['lines'] / f1['cpu']:,.0f} "
        f"lines/s per CPU-second; peak RSS {f1['maxrss_mb']:.0f} MB"
    )
    print(
        f"                 parse + account + windows alone: {f1['lines'] / f1['loop_s']:,.0f} "
        f"lines/s (parse {f1['parse_s']:.2f} s, account {f1['account_s']:.2f} s); the rest "
        "is interpreter start, imports, file reading and report writing"
    )
    f2 = fast(log, d / "out-mt", threads=None)
    print(
        f"fast, all cores: {f2['lines'] / f2['wall']:,.0f} lines/s wall; "
        f"peak RSS {f2['maxrss_mb']:.0f} MB"
    )
    fs = fast(small, d / "out-small", threads=1)
    print(
        f"memory: peak RSS {fs['maxrss_mb']:.0f} MB at {fs['lines']:,} lines vs "
        f"{f1['maxrss_mb']:.0f} MB at {f1['lines']:,} lines"
    )
    if not a.skip_reference:
        r = reference(log)
        print(
            f"reference      : {r['lines']:,} lines in {r['wall']:.1f} s wall, {r['cpu']:.1f} s "
            f"CPU -> {r['lines'] / r['wall']:,.0f} lines/s"
        )
        print(
            f"ratio fast(1 thread)/reference: {r['wall'] / f1['wall']:.1f}x wall, "
            f"{r['cpu'] / f1['cpu']:.1f}x CPU"
        )
        fast_drain = sum(
            int(round(float(x.split(",")[2]) * 1000)) for x in f1["drain_days"].splitlines()[1:]
        )
        print(
            f"drain node-ms: fast {fast_drain:,} reference {r['drain_ms']:,} "
            f"{'EQUAL' if fast_drain == r['drain_ms'] else 'DIFFERENT'}"
        )


if __name__ == "__main__":
    main()
