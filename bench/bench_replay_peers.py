"""drainwatch's Moab replay against the query a skilled operator would write: a polars lazy query
and DuckDB SQL (``bench/peers_drain.py``) computing ``drain_jobs.csv`` and ``drain_daily.csv``
with the same rules, checked equal to drainwatch's output, each in a fresh process, in one run.

Logs: the 5M-line simulated log of ``bench_replay.py`` (400 nodes, a report every 120 s) and a
1,024-node two-day log (a report every 60 s: about 2.95M lines), both America/Chicago. Reported
per log: wall seconds, CPU seconds (all threads) and peak RSS of each, and drainwatch / peer
ratios (below 1: drainwatch is faster); drainwatch twice, with its compiled code (native/: the
tokenizer and the accountant's loops) and without (polars' reader, numpy), both checked
equal. DuckDB is a benchmark-only dependency (``.venv/bin/pip install duckdb``).

    .venv/bin/python bench/bench_replay_peers.py [--only 5m|1024] [--repeat 1]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
OUT = ROOT / "bench" / "out"
TZ = "America/Chicago"


def logs(only: str | None) -> list[tuple[str, Path]]:
    from bench_replay import ensure_log
    from bench_simulate import make_log

    out = []
    if only in (None, "5m"):
        out.append(("5M lines, 400 nodes", ensure_log(OUT / "replay", 5_000_000)))
    if only in (None, "1024"):
        d = OUT / "replay-1024"
        log, marker = d / "moab.log", d / "two-days"
        if not (log.exists() and marker.exists()):
            d.mkdir(parents=True, exist_ok=True)
            make_log(d, lines=1024 * 1440 * 2, nodes=1024, period=60.0)
            marker.touch()
        out.append(("1,024 nodes, two days", log))
    return out


# as installed: the processes read and write bytecode caches (a shell may say not to)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_drainwatch(log: Path, out: Path, native: bool = True) -> dict[str, Any]:
    """The whole replay command in a fresh process; ``native=False`` hides the compiled code
    (native/: the tokenizer and the accountant's loops) as where no Rust toolchain built it,
    so the replay cuts lines with polars' CSV reader and accounts with numpy."""
    hide = "" if native else "sys.modules['drainwatch_native']=None;"
    code = (
        f"import resource,sys,time; {hide} from streams.cli import main; t=time.perf_counter();"
        "c=time.process_time();"
        f"rc=main(['replay','--format','moab',{str(log)!r},'--out',{str(out)!r},"
        f"'--no-progress','--tz',{TZ!r}]);"
        "ru=resource.getrusage(resource.RUSAGE_SELF);"
        "print(time.perf_counter()-t, time.process_time()-c, ru.ru_maxrss)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True, env=ENV
    )
    wall, cpu, rss = map(float, r.stdout.split())
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss / 1024}


def run_peer(which: str, log: Path) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "peers_drain.py"), which, str(log), TZ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
    )
    d: dict[str, Any] = json.loads(r.stdout)
    return d


def _ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _node_ms(text: str) -> int:
    return int(Decimal(text) * 1000)


def drainwatch_tables(out: Path) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    jobs = {
        r["job"]: [
            _node_ms(r["drain_node_seconds"]),
            int(r["nodes_charged"]),
            _ms(r["first_charged"]),
            _ms(r["last_charged"]),
        ]
        for r in csv.DictReader((out / "drain_jobs.csv").open())
    }
    days = {}
    for r in csv.DictReader((out / "drain_daily.csv").open()):
        days[r["day"]] = [
            _node_ms(r["accounted_node_seconds"]),
            _node_ms(r["drain_node_seconds"]),
            _node_ms(r["unallocated_idle_node_seconds"]),
            _node_ms(r["down_node_seconds"]),
            _node_ms(r["unaccounted_node_seconds"]),
            float(r["drain_pct_static"]),
            float(r["drain_pct_dynamic"]),
            float(r["basis_seconds_per_node"]),
            r["data_quality"],
        ]
    return jobs, days


def same(peer: dict[str, Any], jobs: dict[str, list[Any]], days: dict[str, list[Any]]) -> str:
    """'' when the peer's tables equal drainwatch's (node-ms exactly, ratios to 1e-12)."""
    if peer["jobs"] != jobs:
        diff = sorted(set(peer["jobs"].items()) ^ set(jobs.items()), key=str)[:3]  # type: ignore[arg-type]
        return f"drain_jobs differ: {len(peer['jobs'])} vs {len(jobs)} jobs, e.g. {diff}"
    if sorted(peer["days"]) != sorted(days):
        return f"days differ: {sorted(peer['days'])} vs {sorted(days)}"
    for day, want in days.items():
        got = peer["days"][day]
        if got[:5] != want[:5] or got[8] != want[8]:
            return f"{day}: {got} vs {want}"
        for g, w in zip(got[5:8], want[5:8], strict=True):
            if abs(g - w) > 1e-12 * max(1.0, abs(w)):
                return f"{day}: {got} vs {want}"
    return ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("5m", "1024"))
    ap.add_argument("--repeat", type=int, default=1, help="runs of each, the fastest reported")
    ap.add_argument("--json", type=Path, default=OUT / "bench_replay_peers.json")
    a = ap.parse_args()
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, {platform.platform()}, "
        f"python {platform.python_version()}; load avg {os.getloadavg()[0]:.1f}"
    )
    result: dict[str, Any] = {"machine": platform.platform(), "cpus": os.cpu_count()}
    # bytecode cached once, as an installed package has it
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "models", "streams"],
        cwd=ROOT,
        check=True,
        env=ENV,
    )
    for name, log in logs(a.only):
        lines = sum(1 for _ in open(log, "rb"))
        print(
            f"\n{name}: {log.relative_to(ROOT)} ({log.stat().st_size / 1e6:.0f} MB, "
            f"{lines:,} lines)"
        )
        out, out2 = log.parent / "out-peers", log.parent / "out-peers-no-native"
        runs: dict[str, dict[str, Any]] = {}
        for who in ("drainwatch", "drainwatch-no-native", "polars", "duckdb"):
            best: dict[str, Any] | None = None
            for _ in range(a.repeat):
                if who.startswith("drainwatch"):
                    native = who == "drainwatch"
                    r = run_drainwatch(log, out if native else out2, native)
                else:
                    r = run_peer(who, log)
                if best is None or r["wall_s"] < best["wall_s"]:
                    best = r
            assert best is not None
            runs[who] = best
        jobs, days = drainwatch_tables(out)
        row: dict[str, Any] = {"lines": lines, "bytes": log.stat().st_size}
        dw = runs["drainwatch"]
        runs["drainwatch-no-native"] |= dict(
            zip(("jobs", "days"), drainwatch_tables(out2), strict=True)
        )
        for who, r in runs.items():
            check = "" if who == "drainwatch" else same(r, jobs, days)
            ratio = (
                ""
                if who == "drainwatch"
                else f"; drainwatch/{who}: {dw['wall_s'] / r['wall_s']:.2f}x wall, "
                f"{dw['cpu_s'] / r['cpu_s']:.2f}x CPU"
            )
            verdict = (
                ""
                if who == "drainwatch"
                else f"; DIFFERENT: {check}"
                if check
                else ("; same tables")
            )
            print(
                f"  {who:28s} {r['wall_s']:6.2f} s wall {r['cpu_s']:6.2f} s CPU "
                f"{r['peak_rss_mb']:6.0f} MB peak{ratio}{verdict}"
            )
            row[who] = {k: r[k] for k in ("wall_s", "cpu_s", "peak_rss_mb")}
            if who != "drainwatch":
                row[who]["same_tables"] = not check
        result[name] = row
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
