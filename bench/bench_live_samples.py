"""Live node-samples benchmark: samples/s per worker through ``ship sample-files`` -> Kafka ->
worker (``live_samples = on``) -> InfluxDB, and the same path in this process without a broker.

Input: a generated trace (``--nodes`` nodes, ``--procs`` processes a node, one sample a minute
for ``--minutes`` minutes; jobs of 32 nodes; every node writes 0.5 MB/s, one job 15 MB/s a
node for 10 minutes: one hot-zone episode; ``--fs``: per-file-system speeds on every sample,
which adds the per-system streams; ``--order``: lines by minute, every node's sweep in turn, as
nodes send them live (the default), or each node's whole trace in turn). It is shipped to an
empty ``<prefix>node-samples`` first;
then one worker starts and the run is done when InfluxDB holds every ``dfs`` minute the
merger can make final (the minutes before the lowest over the partitions of their latest
sample time minus ``worker.lateness``, 60 s here), or nothing changed for 30 s.

Reported: samples/s from the worker's start, from its ``/health/`` answer and from the first
samples it forwarded to samples-partials (the broker's timestamp: the consumer group had
joined), its CPU seconds (``/proc/<pid>/stat``), peak RSS (VmHWM) and a timeline (minutes in
InfluxDB, CPU, RSS); ``--profile``: one more run with the worker under py-spy; in process
(``--in-process``): the samples family on the live runner (``streams.live``) on the messages
the shipper would send, points turned into line protocol but not sent, plain and under
cProfile. Broker, InfluxDB and worker share this machine's CPUs. Results: stdout and
``bench/out/bench_live_samples.json``.

Needs the local stack (``.venv/bin/python deploy/local/stack.py start``).

    .venv/bin/python bench/bench_live_samples.py [--nodes 1024] [--procs 2] [--minutes 60]
        [--fs] [--order time|node] [--repeat 1] [--in-process] [--skip-e2e] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_live_jobs import (  # noqa: E402
    OUT,
    Run,
    Stack,
    _Event,
    _in_process,
    _Recorder,
    _where,
    cpu_s,
    free_port,
    peak_rss_mb,
    read_records,
    source_fingerprint,
    top_functions,
)

from models.formats.sampletrace import dumps  # noqa: E402
from models.records.nodesample import NodeSample  # noqa: E402
from models.records.plausible import TimeBounds  # noqa: E402
from streams.config import Settings, load_settings  # noqa: E402

T0 = 1_704_067_200.0  # 2024-01-01T00:00Z
MB = 1_000_000


def make_trace(
    path: Path, nodes: int, procs: int, minutes: int, fs: bool, order: str = "time"
) -> int:
    """The trace (see the module's docstring); its number of samples. ``order``: ``time``
    (every node's sweep of a minute, then the next minute: what nodes sending their sweeps
    as they take them give) or ``node`` (each node's whole trace in turn, as one file per
    node concatenated)."""
    lines: dict[tuple[int, int], bytes] = {}
    for n in range(nodes):
        job = f"J{n // 32}"
        for k in range(procs):
            written = 0
            for m in range(minutes):
                rate = 15.0 if job == "J1" and 20 <= m < 30 else 0.5
                written += round(rate / procs * MB * 60)
                extra: dict[str, Any] = {}
                if fs:
                    extra["fs_rates"] = (("home", 0.01, 0.02), ("scratch", rate / procs, 0.0))
                s = NodeSample(
                    T0 + 60 * m + (n % 13) * 0.25,
                    job,
                    1000 + k,
                    f"nid{n:05d}",
                    "app",
                    1,
                    1,
                    1_000_000 + m,
                    0,
                    0,
                    0,
                    0,
                    written,
                    50.0,
                    0,
                    0,
                    start=T0 - 3600.0,
                    cores=4,
                    **extra,
                )
                lines[(m, n * procs + k) if order == "time" else (n * procs + k, m)] = dumps(s)
    path.write_bytes(b"\n".join(lines[k] for k in sorted(lines)) + b"\n")
    return len(lines)


def forwarded_samples(settings: Settings, prefix: str) -> list[tuple[float, int]]:
    """(broker timestamp s, samples) of every samples-partials message: when the worker's
    first stage forwarded samples to its merger (the first one: the consumer group joined)."""
    from models.samples.batch import SampleBatch

    out = []
    for r in read_records(prefix + "samples-partials", **settings.aiokafka_kwargs()):
        _b, head = SampleBatch.from_bytes(r.value)
        out.append((r.timestamp / 1000, int(head["rows"])))
    return sorted(out)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _env(run: Run) -> dict[str, str]:
    return {k: v for k, v in run.env.items() if k.startswith("DRAINWATCH_")}


def e2e(
    stack: Stack, trace: Path, samples: int, minutes: int, out: Path, profile: Path | None = None
) -> dict[str, Any]:
    run = Run(
        stack,
        out,
        free_port(),
        DRAINWATCH_LIVE_JOBS="off",
        DRAINWATCH_LIVE_SAMPLES="on",
        DRAINWATCH_LATENESS="60",
    )
    try:
        t = time.perf_counter()
        p = subprocess.run(
            [sys.executable, "-m", "streams.cli", "ship", "sample-files", str(trace)],
            env=run.env,
            capture_output=True,
            text=True,
        )
        t_ship = time.perf_counter() - t
        if p.returncode != 0:
            raise SystemExit(f"ship sample-files failed: {p.stderr}")
        # the last minute is open; the one before it may wait for lateness: minutes - 2 final
        want = minutes - 2
        t0 = time.perf_counter()
        wrap = None
        if profile is not None:
            wrap = [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--format",
                "raw",
                "--rate",
                "200",
                "--nonblocking",
                "-o",
                str(profile),
                "--",
            ]
        wall0 = time.time() - (time.perf_counter() - t0)
        t_health = run.start_worker(wrap)
        pid = run.worker_pid()
        n = last = 0
        last_change = None
        # (s since start, minutes, worker CPU s, worker RSS MB)
        progress: list[tuple[float, int, float, float]] = []
        cpu_done = 0.0
        while True:
            assert run.proc is not None
            if run.proc.poll() is not None:
                raise SystemExit(f"the worker stopped; see {out}/worker-{run.tag}.log")
            try:
                n = stack.count(run.db, "dfs", "write_mb_s")
            except OSError:
                time.sleep(0.5)
                continue
            now = time.perf_counter() - t0
            if n != last:
                last, last_change, cpu_done = n, now, cpu_s(pid)
                progress.append((round(now, 2), n, cpu_done, _rss_mb(pid)))
            if n >= want or (last_change is not None and now - last_change > 30) or now > 900:
                break
            time.sleep(0.1)
        t_done = last_change or now
        rss = peak_rss_mb(pid)
        fw = forwarded_samples(run.settings, run.prefix)
    finally:
        run.stop()
    first_fw = fw[0][0] - wall0 if fw else None
    return {
        "samples": samples,
        "ship_s": t_ship,
        "ship_line": p.stderr.strip().splitlines()[-1],
        "dfs_minutes_expected": want,
        "dfs_minutes": n,
        "complete": n >= want,
        "worker_startup_s": t_health,
        "done_s": t_done,
        "samples_per_s": samples / t_done,
        "samples_per_s_without_startup": samples / (t_done - t_health),
        # also without the consumer group's join: from the first samples forwarded
        "forwarded_first_s": first_fw,
        "forwarded_all_s": fw[-1][0] - wall0 if fw else None,
        "samples_per_s_from_first_forward": samples / (t_done - first_fw) if fw else None,
        "worker_cpu_s": cpu_done,
        "samples_per_worker_cpu_s": samples / cpu_done if cpu_done else None,
        "worker_peak_rss_mb": rss,
        "progress": progress,
    }


def _messages(trace: Path, settings: Settings) -> list[_Event]:
    from streams.ship.sample_files import ship_sample_files

    parts = settings.kafka.topic_partitions
    rec = _Recorder(parts)
    bounds = TimeBounds(
        settings.bounds.not_before,
        settings.bounds.not_after,
        round(settings.bounds.max_jump * 1000),
    )
    asyncio.run(
        ship_sample_files(
            rec,
            "node-samples",
            "dead-letter",
            [str(trace)],
            bounds,
            settings.bounds.max_line_bytes,
            partitions=parts,
        )
    )
    return rec.events("node-samples")


def in_process(trace: Path, samples: int, settings: Settings, profile: bool) -> dict[str, Any]:
    import cProfile
    import pstats

    from streams.tuning import tune_gc

    msgs = _messages(trace, settings)
    tune_gc()  # as the worker does before its first record
    prof = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if prof is not None:
        prof.enable()
    pipe, sink = asyncio.run(_in_process(msgs, settings, 50_000, samples=True))
    if prof is not None:
        prof.disable()
    t = time.perf_counter() - t0
    r: dict[str, Any] = {
        "samples": samples,
        "messages": len(msgs),
        "seconds": t,
        "samples_per_s": samples / t,
        "points": sink.points,
        "rows": pipe.counts["rows"],
    }
    if prof is not None:
        stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        rows = [(tt, ct, _where(f, ln, fn)) for (f, ln, fn), (_c, _n, tt, ct, _) in stats.items()]
        rows.sort(reverse=True)
        r["cprofile_self"] = [(w, tt, tt / t) for tt, _ct, w in rows[:20]]
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--procs", type=int, default=2, help="processes a node (2)")
    ap.add_argument("--minutes", type=int, default=60)
    ap.add_argument("--fs", action="store_true", help="per-file-system speeds on every sample")
    ap.add_argument(
        "--order",
        choices=("time", "node"),
        default="time",
        help="trace lines by minute (default) or by node",
    )
    ap.add_argument("--repeat", type=int, default=1, help="end-to-end runs (1)")
    ap.add_argument("--in-process", action="store_true")
    ap.add_argument("--skip-e2e", action="store_true")
    ap.add_argument("--profile", action="store_true", help="one more run under py-spy")
    ap.add_argument("--json", type=Path, default=OUT / "bench_live_samples.json")
    a = ap.parse_args()
    out = OUT / "live_samples"
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "samples.jsonl"
    n = make_trace(trace, a.nodes, a.procs, a.minutes, a.fs, a.order)
    machine = {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_at_start": os.getloadavg(),
    }
    print(
        f"machine: {machine['platform']}, {machine['cpus']} CPUs, Python {machine['python']}; "
        f"load average {machine['loadavg_at_start'][0]:.2f} at start"
    )
    print(
        f"input: {n:,} samples ({a.nodes} nodes x {a.procs} processes x {a.minutes} minutes"
        f"{', per-file-system speeds' if a.fs else ''}; lines by {a.order})"
    )
    result: dict[str, Any] = {
        "machine": machine,
        "argv": sys.argv[1:],
        "source": source_fingerprint(),
        "samples": n,
    }
    if a.in_process:
        settings = load_settings(env={"DRAINWATCH_TZ": "UTC", "DRAINWATCH_LATENESS": "60"})
        r = in_process(trace, n, settings, profile=False)
        rp = in_process(trace, n, settings, profile=True)
        result["in_process"] = {**r, "profiled": rp}
        print(
            f"in process (no broker; points to line protocol, not sent): "
            f"{r['samples_per_s']:,.0f} samples/s ({r['messages']:,} messages, "
            f"{r['seconds']:.2f} s); under cProfile, by own time:"
        )
        for w, tt, share in rp["cprofile_self"][:12]:
            print(f"  {share:6.1%}  {tt:6.2f} s  {w}")
    if not a.skip_e2e:
        stack = Stack()
        runs = [e2e(stack, trace, n, a.minutes, out) for _ in range(a.repeat)]
        result["e2e"] = runs
        for r in runs:
            print(
                f"end to end: {r['samples_per_s']:,.0f} samples/s from the worker's start "
                f"({r['samples_per_s_without_startup']:,.0f} after /health/ at "
                f"{r['worker_startup_s']:.1f} s; {r['samples_per_s_from_first_forward']:,.0f} "
                f"from the first forward at {r['forwarded_first_s']:.1f} s), {r['dfs_minutes']}/"
                f"{r['dfs_minutes_expected']} minutes in InfluxDB after {r['done_s']:.1f} s; "
                f"worker CPU {r['worker_cpu_s']:.1f} s, peak RSS "
                f"{r['worker_peak_rss_mb']:.0f} MB; ship: {r['ship_s']:.1f} s "
                f"({r['ship_line']})"
            )
    if a.profile:
        raw = out / "py-spy.txt"
        t = e2e(Stack(), trace, n, a.minutes, out, profile=raw)
        time.sleep(1)
        result["profile"] = prof = {"run": t, "raw": str(raw), **top_functions(raw)}
        print(
            f"profiled run: {t['samples_per_s_without_startup']:,.0f} samples/s after /health/ "
            f"(under py-spy, 200 Hz, {prof['samples']:,} busy samples over all threads)"
        )
        for title, key in (
            ("by what the worker was doing", "categories"),
            ("the project's functions, cumulative", "cumulative_project"),
            ("innermost frames (self)", "self"),
        ):
            print(f"{title}:")
            for name, share in prof[key][:12]:
                print(f"  {share:6.1%}  {name}")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
