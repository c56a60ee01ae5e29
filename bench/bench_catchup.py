"""Catch-up benchmark (issue 30): a backlog shipped first, then one worker started on it.

Node path (default): ``drainwatch simulate`` of ``--days`` of ``--nodes`` at ``--interval``
seconds, shipped with ``ship moab`` to a topic prefix of the run's own, then one worker: its
records/s over the catch-up, its peak RSS (VmHWM), the seconds from its start until InfluxDB
holds the last full day as final (``provisional=false``), and that day's row compared field by
field with ``drainwatch replay`` of the same file (exact equality printed).

Job path (``--jobs``): the KTH SP2 trace (``../shared/data/swf``, 334 days) repeated
``--copies`` times end to end, copy c shifted by c times the trace's span with its own job ids,
users and groups (a longer KTH-like trace made from the real one), shipped with ``ship jobs``,
then one worker with ``live_jobs = on``: events/s, peak RSS, and the seconds until InfluxDB
holds the last day's ``runtime_prediction`` points, compared (count and sum of ``actual_s``)
with the runtime model the replay runs over every event (the shipper's end of input releases
them all).

The full size of the issue (``--days 90 --nodes 1000``, ~130 M records) needs the fix for drain
partials above the broker's message limit; the end prints the time and disk a full run would
take at this run's rates. Needs the local stack (``.venv/bin/python deploy/local/stack.py
start``).

    .venv/bin/python bench/bench_catchup.py [--days 2] [--nodes 50] [--interval 60]
    .venv/bin/python bench/bench_catchup.py --jobs [--copies 1]
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_live import Stack, drop_topics, metric, run_env  # noqa: E402

OUT = ROOT / "bench" / "out" / "catchup"
DAY_MS = 86_400_000
FIELDS = (
    "accounted_node_seconds",
    "drain_node_seconds",
    "unallocated_idle_node_seconds",
    "down_node_seconds",
    "unaccounted_node_seconds",
    "drain_pct_static",
    "drain_pct_dynamic",
    "basis_seconds_per_node",
)
FULL_DAYS, FULL_NODES = 90, 1000  # the full size


def drainwatch(*args: str, env: dict[str, str] | None = None) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return r.stdout + r.stderr


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def topic_bytes(stack: Stack, prefix: str) -> int:
    """Bytes of the run's topics' segments on the broker (``<prefix>*/*.log``)."""
    sys.path.insert(0, str(ROOT / "deploy" / "local"))
    import stack as control

    data = control.Config.from_env().kafka_data
    return sum(f.stat().st_size for d in data.glob(f"{prefix}*") for f in d.glob("*.log"))


def start_worker(env: dict[str, str], log: Path, group: str) -> subprocess.Popen[bytes]:
    with open(log, "wb") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "streams.cli", "worker", "--group", group],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )


def stop_worker(p: subprocess.Popen[bytes]) -> int | None:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
    return p.returncode


# ---- node path ---------------------------------------------------------------------------------


def last_full_day(replay: Path) -> dict[str, str]:
    """The replay's last day row of a whole day's basis (``data_quality`` ok)."""
    with open(replay / "drain_daily.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["data_quality"] == "ok"]
    if not rows:
        raise SystemExit("no full day in the input: give --days 2 or more")
    return rows[-1]


def nodes_run(a: argparse.Namespace) -> dict[str, Any]:
    sim = OUT / f"sim-{a.nodes}n-{a.days:g}d-{a.interval:g}s"
    log = sim / "moab.log"
    if not log.exists():
        drainwatch(
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            str(a.nodes),
            "--days",
            f"{a.days:g}",
            "--period",
            f"{a.interval:g}",
            "--out",
            str(sim),
        )
    records = sum(1 for _ in open(log, "rb"))
    rep = sim / "replay"
    t0 = time.perf_counter()
    drainwatch("replay", "--format", "moab", str(log), "--tz", "UTC", "--out", str(rep))
    t_replay = time.perf_counter() - t0
    day = last_full_day(rep)
    day_ms = round(datetime.fromisoformat(day["day"]).replace(tzinfo=UTC).timestamp() * 1000)

    stack = Stack()
    tag, port = uuid.uuid4().hex[:8], a.port
    env = run_env(stack, tag, port)
    env["DRAINWATCH_FLUSH_INTERVAL"] = "2"
    db = f"b{tag}"
    stack.query(f'CREATE DATABASE "{db}"')
    w: subprocess.Popen[bytes] | None = None
    try:
        t0 = time.perf_counter()
        drainwatch("ship", "moab", str(log), "--no-progress", env=env)
        t_ship = time.perf_counter() - t0
        on_disk = topic_bytes(stack, f"b{tag}.")
        wlog = OUT / f"worker-{tag}.log"
        t0 = time.perf_counter()
        w = start_worker(env, wlog, f"g{tag}")
        t_first = t_all = t_final = None
        row: dict[str, Any] | None = None
        while t_final is None:
            if w.poll() is not None:
                raise SystemExit(f"the worker exited {w.returncode}; see {wlog}")
            now = time.perf_counter() - t0
            if now > a.timeout:
                raise SystemExit(f"not caught up within {a.timeout:g} s; see {wlog}")
            try:
                n = metric(port, "drainwatch_records_total")
            except OSError:
                n = 0
            if n and t_first is None:
                t_first = now
            if n >= records and t_all is None:
                t_all = now
            q = f"SELECT * FROM drain WHERE \"window\"='day' AND time = {day_ms}ms"
            series = stack.query(q, db=db)["results"][0].get("series")
            if series:
                got = dict(zip(series[0]["columns"], series[0]["values"][0], strict=True))
                if got.get("provisional") is False:
                    t_final, row = now, got
            time.sleep(0.2)
        rss = peak_rss_mb(w.pid)
    finally:
        code = stop_worker(w) if w is not None else None
        stack.query(f'DROP DATABASE "{db}"')
        drop_topics(env, tag)
    assert row is not None and t_all is not None
    # node-seconds exactly; percentages at the CSV's 15 significant digits
    diffs = {
        f: (row.get(f), float(day[f]))
        for f in FIELDS
        if (float(f"{row.get(f):.15g}") if "pct" in f else row.get(f)) != float(day[f])
    }
    return {
        "records": records,
        "log_bytes": log.stat().st_size,
        "topic_bytes": on_disk,
        "replay_s": t_replay,
        "ship_s": t_ship,
        "first_record_s": t_first,
        "all_records_s": t_all,
        "last_day": day["day"],
        "last_day_final_s": t_final,
        "worker_peak_rss_mb": rss,
        "records_per_s": records / t_all,
        "records_per_s_after_first": records / max(t_all - (t_first or 0), 0.2),
        "equal": not diffs,
        "diffs": diffs,
        "exit_code_on_sigterm": code,
    }


def print_nodes(a: argparse.Namespace, r: dict[str, Any]) -> None:
    print(
        f"node path: {a.days:g} days x {a.nodes:,} nodes at {a.interval:g} s: "
        f"{r['records']:,} records ({r['log_bytes'] / 1e6:.1f} MB of log, "
        f"{r['topic_bytes'] / 1e6:.1f} MB on the broker)"
    )
    print(
        f"  ship moab {r['ship_s']:.2f} s ({r['records'] / r['ship_s']:,.0f} records/s); "
        f"replay {r['replay_s']:.2f} s"
    )
    print(
        f"  worker: {r['records_per_s']:,.0f} records/s from its start "
        f"({r['records_per_s_after_first']:,.0f} from the first record (0.2 s polls), at "
        f"{r['first_record_s']:.2f} s); all records in {r['all_records_s']:.2f} s; "
        f"peak RSS {r['worker_peak_rss_mb']:.0f} MB; exit {r['exit_code_on_sigterm']} on "
        "SIGTERM"
    )
    print(
        f"  last full day {r['last_day']} final in InfluxDB {r['last_day_final_s']:.2f} s after "
        f"the start; equal to the replay's row (node-seconds exactly, percentages to 15 "
        f"digits): {r['equal']}" + ("" if r["equal"] else f" {r['diffs']}")
    )
    full = FULL_DAYS * FULL_NODES * 86_400 / 60
    scale = full / r["records"]
    print(
        f"  at these rates, {FULL_DAYS} days x {FULL_NODES:,} nodes at 60 s ({full / 1e6:.1f} M "
        f"records): ship {r['ship_s'] * scale / 3600:.1f} h, worker catch-up "
        f"{full / r['records_per_s'] / 3600:.1f} h; disk: log "
        f"{r['log_bytes'] * scale / 1e9:.1f} GB, broker {r['topic_bytes'] * scale / 1e9:.1f} GB "
        "(per replica, before retention)"
    )


# ---- job path ----------------------------------------------------------------------------------


def year_of_kth(copies: int) -> tuple[str, Path]:
    """(format, file): KTH SP2, or ``copies`` of it end to end, each shifted by the trace's
    span with its own ids (job-event JSON lines)."""
    from bench_live_jobs import KTH

    from streams.driver import RejectLog
    from streams.sources.jobevents import read_job_events

    if copies <= 1:
        return "swf", KTH
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"kth-end-to-end-x{copies}.jsonl"
    if path.exists():
        return "jobevents", path
    base, _ = read_job_events("swf", [str(KTH)], RejectLog())
    span = max(e.ts for e in base) - min(e.ts for e in base) + 86_400
    evs = []
    for c in range(copies):
        p = f"c{c}:"
        evs += [
            replace(
                e,
                ts=e.ts + c * span,
                job=p + e.job,
                user=e.user and p + e.user,
                group=e.group and p + e.group,
            )
            for e in base
        ]
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(e.to_json() + b"\n" for e in evs))
    tmp.rename(path)
    return "jobevents", path


def jobs_run(a: argparse.Namespace) -> dict[str, Any]:
    from bench_live_jobs import Run

    from models.jobs.runtime import RuntimePredictor
    from models.records.plausible import TimeBounds
    from streams.driver import RejectLog
    from streams.sources.jobevents import read_job_events

    fmt, path = year_of_kth(a.copies)
    OUT.mkdir(parents=True, exist_ok=True)
    run = Run(Stack(), OUT, a.port)
    try:
        s = run.settings
        bounds = TimeBounds(
            s.bounds.not_before, s.bounds.not_after, round(s.bounds.max_jump * 1000)
        )
        events, _ = read_job_events(
            fmt, [str(path)], RejectLog(), bounds, s.bounds.max_line_bytes, s.bounds.max_hosts
        )
        t_ship = run.ship(fmt, path)
        on_disk = topic_bytes(run.stack, run.prefix)
        released = list(events)  # the shipper's end of input: the merger releases all
        ends = {e.job: e.ts for e in released if e.type == "end"}
        rows = RuntimePredictor(overrun_margin=s.alerts.overrun_margin).update(
            [e for e in released if e.type != "submit"]
        )
        points = {(round(ends[r.job] * 1000), r.job, r.user): r for r in rows}
        last_ms = max(ms for ms, _, _ in points) // DAY_MS * DAY_MS
        want = [r for (ms, _, _), r in points.items() if ms >= last_ms]
        want_sum = sum(float(r.actual_s) for r in want)
        t0 = time.perf_counter()
        t_health = run.start_worker()
        pid = run.worker_pid()
        t_done = None
        n, got_sum = 0, 0.0
        while t_done is None:
            assert run.proc is not None
            if run.proc.poll() is not None:
                raise SystemExit(f"the worker stopped; see {OUT}/worker-{run.tag}.log")
            now = time.perf_counter() - t0
            if now > a.timeout:
                raise SystemExit(f"not caught up within {a.timeout:g} s")
            q = (
                'SELECT count("actual_s"), sum("actual_s") FROM "runtime_prediction" '
                f"WHERE time >= {last_ms}ms"
            )
            series = run.stack.query(q, db=run.db)["results"][0].get("series")
            if series:
                n, got_sum = int(series[0]["values"][0][1]), float(series[0]["values"][0][2])
                if n >= len(want):
                    t_done = now
            time.sleep(0.2)
        rss = peak_rss_mb(pid)
    finally:
        run.stop()
    return {
        "input": str(path),
        "events": len(events),
        "released": len(released),
        "topic_bytes": on_disk,
        "ship_s": t_ship,
        "startup_s": t_health,
        "last_day_s": t_done,
        "events_per_s": len(events) / t_done,
        "worker_peak_rss_mb": rss,
        "last_day": datetime.fromtimestamp(last_ms / 1000, UTC).date().isoformat(),
        "points": n,
        "points_expected": len(want),
        "equal": n == len(want) and got_sum == want_sum,
        "sum_actual_s": got_sum,
        "sum_expected": want_sum,
        "exit_code_on_sigterm": run.exit_code,
    }


def print_jobs(a: argparse.Namespace, r: dict[str, Any]) -> None:
    print(
        f"job path: {r['input']} ({a.copies} x KTH SP2 end to end): {r['events']:,} events, "
        f"{r['released']:,} released by the merger, {r['topic_bytes'] / 1e6:.1f} MB on the "
        "broker"
    )
    print(
        f"  ship jobs {r['ship_s']:.2f} s ({r['events'] / r['ship_s']:,.0f} events/s); worker "
        f"{r['events_per_s']:,.0f} events/s from its start (/health/ at {r['startup_s']:.2f} s),"
        f" peak RSS {r['worker_peak_rss_mb']:.0f} MB, exit {r['exit_code_on_sigterm']} on "
        "SIGTERM"
    )
    print(
        f"  last day {r['last_day']} in InfluxDB {r['last_day_s']:.2f} s after the start: "
        f"{r['points']:,} runtime_prediction points against {r['points_expected']:,}; sum "
        f"actual_s {r['sum_actual_s']:.0f} against {r['sum_expected']:.0f}; equal: "
        f"{r['equal']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--days", type=float, default=2.0, help="days of history (default 2)")
    ap.add_argument("--nodes", type=int, default=50, help="nodes (default 50)")
    ap.add_argument("--interval", type=float, default=60.0, help="seconds per iteration (60)")
    ap.add_argument("--jobs", action="store_true", help="the job path instead of the node path")
    ap.add_argument("--copies", type=int, default=1, help="KTH traces end to end (--jobs)")
    ap.add_argument("--port", type=int, default=16970, help="the worker's web port")
    ap.add_argument("--timeout", type=float, default=7200.0, help="give up after (s)")
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(OUT).free
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; {free / 1e9:.0f} GB free under {OUT}"
    )
    if a.jobs:
        print_jobs(a, jobs_run(a))
    else:
        print_nodes(a, nodes_run(a))


if __name__ == "__main__":
    main()
