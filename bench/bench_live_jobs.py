"""Live job-events benchmark (issue: the live job-events path): job events/s per worker through
``ship jobs`` -> Kafka -> worker (``live_jobs = on``) -> InfluxDB, with and without the worker's
start-up; the latency from publishing the job events that make a short-job flood alert fire to
its record on ``<prefix>alerts`` (p50/p99), with a steady background of other jobs; and the
worker's peak RSS.

Throughput: the KTH SP2 trace (``../shared/data/swf``, ~85k events; ``--copies N``: N copies of
it, copy c shifted by c hours with its own job ids, users and groups, as bench_jobs.py builds
its stream) is shipped to an empty ``<prefix>job-events`` first; then one worker starts and the
run is done when InfluxDB holds one ``runtime_prediction`` point per ended job the merger can
release (events up to the lowest over the partitions of their latest event time, minus
``worker.lateness``: computed here from the shipped events and their partitions). The job id
is a field, not a tag, of every per-job measurement, so the copies are bounded only by time
(``--copies 6``, 512,568 events, runs in about 15 s).

Latency: each episode publishes ten 1-second 8-core jobs of a new user (A = 4,792 > 3,600
slot-seconds) and filler jobs on every partition of job-events that start 190 s later (the
merger releases an event only when every partition is past it, and the tick row comes when
event time passes the tick); the time runs from the broker's acknowledgement of that burst to
the ``shortjob_flood:user:...`` firing record arriving on the alerts topic. Run with
``worker.lateness`` 1 s and the default ``worker.flush_interval`` (2 s; ``--flush-interval``),
which bounds it: events wait for a flush to reach jobs-partials, the alert for the next one.

Also reported per throughput run: when the worker's first stage had forwarded the first, half
and all of the events to jobs-partials (the broker's timestamps of those messages), and the
worker's CPU seconds (``/proc/<pid>/stat``; peak RSS is VmHWM of ``/proc/<pid>/status``): the
broker, InfluxDB and the worker share this machine's CPUs. ``--in-process`` runs the worker's
job family on the live runner (``streams.live``) in this process on the same events without a
broker (points turned into line protocol, not sent), plain and under cProfile; ``--profile``
runs one more throughput pass with the worker under py-spy (``.venv/bin/pip install py-spy``)
and prints where its samples went. The table and machine go to stdout, everything to
``bench/out/bench_live_jobs.json`` (``--json``).

Needs the local stack (``.venv/bin/python deploy/local/stack.py start``).

    .venv/bin/python bench/bench_live_jobs.py [--repeat N] [--copies 1] [--episodes 80]
        [--in-process] [--profile] [--skip-latency] [--flush-interval 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.jobs.runtime import RuntimePredictor  # noqa: E402
from models.records.jobevent import JobEvent  # noqa: E402
from models.records.plausible import TimeBounds  # noqa: E402
from streams.config import Settings, load_settings  # noqa: E402
from streams.driver import RejectLog  # noqa: E402
from streams.sources.jobevents import read_job_events  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from bench_live import Stack, delete_topics  # noqa: E402

from tests.integration.kafka_read import read_records  # noqa: E402
from tests.streams.standins import Producer, Topic  # noqa: E402

KTH = ROOT.parent / "shared" / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
OUT = ROOT / "bench" / "out"
D = 1_704_067_200.0  # 2024-01-01T00:00Z, a multiple of the 3-minute tick
H = 3600.0


class Run:
    """One worker's world: own topic prefix, consumer group, database, state dir, web port."""

    def __init__(self, stack: Stack, out: Path, port: int, **extra: str) -> None:
        self.stack, self.out, self.port = stack, out, port
        self.tag = uuid.uuid4().hex[:8]
        self.db = f"bj{self.tag}"
        self.prefix = f"bj{self.tag}."
        self.state = Path(f"/tmp/bench-live-jobs-{self.tag}")
        self.env = {
            **os.environ,
            **stack.env,
            "PYTHONPATH": str(ROOT),
            "DRAINWATCH_TOPIC_PREFIX": self.prefix,
            "DRAINWATCH_INFLUX_DATABASE": self.db,
            "DRAINWATCH_INFLUX_BUCKET": f"{self.db}/autogen",
            "DRAINWATCH_TZ": "UTC",
            "DRAINWATCH_STATE_DIR": str(self.state),
            "DRAINWATCH_WEB_PORT": str(port),
            "DRAINWATCH_BROKER_SESSION_TIMEOUT": "10",
            "DRAINWATCH_BROKER_REBALANCE_TIMEOUT": "10",
            "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL": "1",
            "DRAINWATCH_CHECKPOINT_INTERVAL": "1",
            "DRAINWATCH_FLUSH_INTERVAL": "1",
            "DRAINWATCH_LOG_LEVEL": "warning",
            "DRAINWATCH_LIVE_JOBS": "on",
            "DRAINWATCH_SECTION_NODES": "100",
            **extra,
        }
        self.env.pop("DRAINWATCH_STACK_LOGS", None)
        self.proc: subprocess.Popen[bytes] | None = None
        self.wrapped = False
        self.exit_code: int | None = None  # the worker's, after a SIGTERM (0: a clean stop)
        stack.query(f'CREATE DATABASE "{self.db}"')

    @property
    def settings(self) -> Settings:
        return load_settings(env={k: v for k, v in self.env.items() if k.startswith("DRAINWATCH_")})

    def ship(self, fmt: str, path: Path) -> float:
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "streams.cli",
                "ship",
                "jobs",
                "--format",
                fmt,
                str(path),
                "--no-progress",
            ],
            env=self.env,
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - t0

    def start_worker(self, wrap: list[str] | None = None) -> float:
        """Start the worker; seconds until its /health/ answers."""
        log = self.out / f"worker-{self.tag}.log"
        self.wrapped = bool(wrap)
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                *(wrap or []),
                sys.executable,
                "-m",
                "streams.cli",
                "worker",
                "--group",
                f"g{self.tag}",
            ],
            env=self.env,
            stdout=open(log, "wb"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
        )
        while time.perf_counter() - t0 < 120:
            if self.proc.poll() is not None:
                raise SystemExit(f"worker exited {self.proc.returncode}; see {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health/", timeout=1):
                    return time.perf_counter() - t0
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"worker did not answer /health/ within 120 s; see {log}")

    def worker_pid(self) -> int:
        """The worker's pid (under py-spy: py-spy's child)."""
        assert self.proc is not None
        if not self.wrapped:
            return self.proc.pid
        for _ in range(100):
            kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
            if kids.split():
                return int(kids.split()[0])
            time.sleep(0.05)
        raise SystemExit("py-spy started no worker")

    def stop(self) -> None:
        """SIGTERM the worker (then kill), drop the database, topics and state dir. Under
        py-spy the worker gets the signal; py-spy then writes its profile and exits."""
        p = self.proc
        if p is not None and p.poll() is None:
            pid = p.pid
            if self.wrapped:
                try:
                    pid = self.worker_pid()
                except (OSError, SystemExit):
                    pass
            os.kill(pid, signal.SIGTERM)
            try:
                p.wait(60 if self.wrapped else 30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
            if pid != p.pid:  # py-spy's child must not outlive it
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if p is not None:
            self.exit_code = p.returncode
        steps: list[tuple[str, Callable[[], object]]] = [
            ("database", lambda: self.stack.query(f'DROP DATABASE "{self.db}"')),
            ("topics", lambda: asyncio.run(delete_topics(self.settings, self.prefix))),
        ]
        for what, undo in steps:
            try:
                undo()
            except Exception as e:  # cleanup is best effort
                print(f"cleanup of {self.tag} ({what}): {e}", file=sys.stderr)
        shutil.rmtree(self.state, ignore_errors=True)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM of /proc/<pid>/status), MB; NaN when gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def partition_of(job: str, n: int) -> int:
    """The job-events partition ``drainwatch ship jobs`` gives a job (crc32 of its id)."""
    from streams.ship.job_files import job_partition

    return job_partition(job, n)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/<pid>/stat)."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def stack_pids() -> dict[str, int]:
    """The local stack's broker and InfluxDB processes (their pid files), to charge them
    their CPU: on this machine they share the worker's CPUs."""
    out = {}
    for name, f in (("broker", "kafka/kafka.pid"), ("influxdb", "influxdb/influxd.pid")):
        with contextlib.suppress(OSError, ValueError):
            out[name] = int((ROOT / ".drainwatch" / f).read_text().strip())
    return out


def forwarded(settings: Settings, prefix: str) -> list[tuple[float, int, int]]:
    """(broker timestamp s, job-events partition, events) of every jobs-partials message: when
    the worker's first stage forwarded which events to its merger."""
    out = []
    for r in read_records(prefix + "jobs-partials", **settings.aiokafka_kwargs()):
        d = orjson.loads(r.value)
        out.append((r.timestamp / 1000, int(d["partition"]), len(d["events"])))
    return sorted(out)


def source_fingerprint() -> dict[str, Any]:
    """What code was measured (others may be editing it): a hash of every .py file under
    streams/ and models/, and the newest of them."""
    import hashlib

    h = hashlib.sha1()
    newest = (0.0, "")
    for f in sorted([*ROOT.glob("streams/**/*.py"), *ROOT.glob("models/**/*.py")]):
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
        newest = max(newest, (f.stat().st_mtime, str(f.relative_to(ROOT))))
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(newest[0]))
    return {"sha1": h.hexdigest()[:12], "newest_file": newest[1], "newest_mtime": when}


# ---- throughput ------------------------------------------------------------------------------
def make_input(copies: int, out: Path) -> tuple[str, Path]:
    """(format, file): the KTH trace, or ``copies`` copies of it as job-event JSON lines."""
    if copies <= 1:
        return "swf", KTH
    path = out / f"kth-x{copies}.jsonl"
    if path.exists():
        return "jobevents", path
    base, _ = read_job_events("swf", [str(KTH)], RejectLog())
    evs: list[JobEvent] = []
    for c in range(copies):
        p = f"c{c}:"
        evs += [
            replace(
                e,
                ts=e.ts + c * H,
                job=p + e.job,
                user=e.user and p + e.user,
                group=e.group and p + e.group,
            )
            for e in base
        ]
    evs.sort(key=lambda e: e.ts)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(e.to_json() + b"\n" for e in evs))
    tmp.rename(path)
    return "jobevents", path


def shipped(settings: Settings, prefix: str) -> tuple[int, int, dict[int, float]]:
    """(messages, events, latest event time by partition) of ``<prefix>job-events`` as shipped
    (a message holds one event or several as JSON lines, whatever ``ship jobs`` sends)."""
    latest: dict[int, float] = {}
    messages = events = 0
    for r in read_records(prefix + "job-events", **settings.aiokafka_kwargs()):
        messages += 1
        for line in r.value.splitlines():
            if line.strip():
                ts = float(orjson.loads(line)["ts"])
                events += 1
                if ts > latest.get(r.partition, float("-inf")):
                    latest[r.partition] = ts
    return messages, events, latest


TAIL_POINTS = 1000  # the latest points the done poll counts before it counts them all


def expected_rows(
    events: list[JobEvent], latest: dict[int, float], parts: int, settings: Settings
) -> tuple[int, int, int, int]:
    """(events the merger releases, runtime_prediction points they give, the time in ms from
    which the latest ~TAIL_POINTS of them are, how many are from then): released are the
    events up to the lowest over the partitions of their latest event time minus the lateness;
    one point per ended job (series job + user, time: its end)."""
    wm = min(latest.values()) - settings.worker.lateness if len(latest) == parts else float("-inf")
    released = [e for e in events if e.ts <= wm]
    ends = {e.job: e.ts for e in released if e.type == "end"}
    rows = RuntimePredictor(overrun_margin=settings.alerts.overrun_margin).update(
        [e for e in released if e.type != "submit"]
    )
    points = sorted({(round(ends[r.job] * 1000), r.job, r.user) for r in rows})
    if len(points) < TAIL_POINTS:  # few enough to count them all every time
        return len(released), len(points), 0, 0
    tail_ms = points[-TAIL_POINTS][0]
    tail_n = sum(1 for ms, _, _ in points if ms >= tail_ms)
    return len(released), len(points), tail_ms, tail_n


def throughput(
    stack: Stack, fmt: str, path: Path, out: Path, profile: Path | None = None
) -> dict[str, Any]:
    run = Run(stack, out, free_port())
    try:
        settings = run.settings
        rejects = RejectLog()
        bounds = TimeBounds(
            settings.bounds.not_before,
            settings.bounds.not_after,
            round(settings.bounds.max_jump * 1000),
        )
        events, _ = read_job_events(
            fmt,
            [str(path)],
            rejects,
            bounds,
            settings.bounds.max_line_bytes,
            settings.bounds.max_hosts,
        )
        t_ship = run.ship(fmt, path)
        n_msgs, n_shipped, latest = shipped(settings, run.prefix)
        n_released, want, tail_ms, tail_n = expected_rows(
            events, latest, settings.kafka.topic_partitions, settings
        )
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
        others = stack_pids()
        others_cpu0 = {k: cpu_s(v) for k, v in others.items()}
        others_done = dict(others_cpu0)
        polls, poll_s = 0, 0.0
        wall0, t0 = time.time(), time.perf_counter()
        t_health = run.start_worker(wrap)
        pid = run.worker_pid()
        first = last_change = None
        n = tail = 0
        last: tuple[str, int] | None = None
        cpu = cpu_first = cpu_done = 0.0
        outages: list[str] = []
        while True:
            assert run.proc is not None
            if run.proc.poll() is not None:
                raise SystemExit(f"the worker stopped; see {out}/worker-{run.tag}.log")
            try:
                # a count of every point costs InfluxDB ~36 ms of CPU at 85,000 (KTH x 3), on
                # the CPUs the run shares: once points come, the latest ones only, until all
                # of those are in; then every point, until all are in
                q0 = time.perf_counter()
                if first is not None and tail < tail_n:
                    tail = stack.count(run.db, "runtime_prediction", "actual_s", tail_ms)
                    progress = ("latest", tail)
                else:
                    n = stack.count(run.db, "runtime_prediction", "actual_s")
                    progress = ("all", n)
                polls, poll_s = polls + 1, poll_s + time.perf_counter() - q0
            except OSError as e:  # InfluxDB restarted under us (a shared stack): note it
                outages.append(f"{time.perf_counter() - t0:.1f} s: {e}")
                time.sleep(0.5)
                continue
            now = time.perf_counter() - t0
            cpu = cpu_s(pid)
            if n and first is None:
                first, cpu_first = now, cpu
            if progress != last:
                last, last_change, cpu_done = progress, now, cpu
                with contextlib.suppress(OSError):
                    others_done = {k: cpu_s(v) for k, v in others.items()}
            if n >= want or (last_change is not None and now - last_change > 30):
                break
            if now > 1800:
                raise SystemExit("not done within 30 minutes")
            time.sleep(0.1)
        t_done = last_change or now
        rss = peak_rss_mb(pid)
        try:
            fw = forwarded(settings, run.prefix)
        except Exception as e:  # a diagnostic only
            print(f"  (no forwarding timeline: {e})", file=sys.stderr)
            fw = []
    finally:
        run.stop()
    total = sum(k for _, _, k in fw) or 1
    cum, half = 0, None
    for ts, _, k in fw:
        cum += k
        if half is None and cum >= total / 2:
            half = ts - wall0
    last_by_part = {p: ts - wall0 for ts, p, _ in fw}
    return {
        "input": str(path.relative_to(ROOT.parent) if path.is_relative_to(ROOT.parent) else path),
        "format": fmt,
        "events": len(events),
        "events_shipped": n_shipped,
        "job_events_messages": n_msgs,
        "events_released": n_released,
        "runtime_points_expected": want,
        "runtime_points": n,
        "complete": n == want,
        "ship_s": t_ship,
        "ship_events_per_s": len(events) / t_ship,
        "worker_startup_s": t_health,
        "first_point_s": first,
        "done_s": t_done,
        "events_per_s": len(events) / t_done,
        "events_per_s_without_startup": len(events) / (t_done - t_health),
        # also without the consumer group's join: from the first events forwarded
        "events_per_s_from_first_forward": len(events) / (t_done - (fw[0][0] - wall0))
        if fw
        else None,
        "worker_peak_rss_mb": rss,
        "worker_cpu_s_to_first_point": cpu_first,
        "worker_cpu_s_to_done": cpu_done,
        "events_per_worker_cpu_s": len(events) / cpu_done if cpu_done else None,
        # the broker's and InfluxDB's CPU from the worker's start to done (this bench's own
        # polls of InfluxDB, a count query every 0.1 s, included: poll_query_ms_mean)
        **{f"{k}_cpu_s_to_done": others_done[k] - others_cpu0[k] for k in others},
        "polls": polls,
        "poll_query_ms_mean": 1000 * poll_s / polls if polls else None,
        "forwarded_first_s": fw[0][0] - wall0 if fw else None,
        "forwarded_half_s": half,
        "forwarded_all_s": fw[-1][0] - wall0 if fw else None,
        "forwarded_last_by_partition_s": dict(sorted(last_by_part.items())),
        "partials_messages": len(fw),
        "under_py_spy": profile is not None,
        "worker_exit_code_on_sigterm": run.exit_code,
        "influx_outages": outages,
    }


# ---- alert latency ---------------------------------------------------------------------------
def _job(
    out: list[JobEvent],
    job: str,
    start: float,
    end: float,
    user: str,
    group: str,
    name: str,
    cores: int,
) -> None:
    kw: dict[str, Any] = {"user": user, "group": group, "name": name, "nodes": 1, "cores": cores}
    out += [
        JobEvent("submit", start, job, **kw),
        JobEvent("start", start, job, **kw),
        JobEvent("end", end, job, **kw),
    ]


def episode(k: int, parts: int) -> list[JobEvent]:
    """Episode k at event time D + k hours: ten 1-second 8-core jobs of user flood<k> (group
    fg<k>), and 700-second fillers (two per partition) starting 190 s later, past the tick."""
    e0 = D + k * H
    ev: list[JobEvent] = []
    for i in range(10):
        _job(ev, f"fl{k}-{i}", e0, e0 + 1, f"flood{k}", f"fg{k}", "x", 8)
    have: Counter[int] = Counter()
    i = 0
    while min((have[p] for p in range(parts)), default=0) < 2:
        job = f"fi{k}-{i}"
        p = partition_of(job, parts)
        if have[p] < 2:
            have[p] += 1
            _job(ev, job, e0 + 190, e0 + 890, "fill", "fillg", "filler", 1)
        i += 1
    return sorted(ev, key=lambda e: (e.ts, e.job))


async def _latency(run: Run, episodes: int, bg_rate: float, flush: float) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    settings = run.settings
    topic, alerts = run.prefix + "job-events", run.prefix + "alerts"
    prod = AIOKafkaProducer(**settings.aiokafka_kwargs(), acks="all", linger_ms=0)
    cons = AIOKafkaConsumer(
        alerts,
        **settings.aiokafka_kwargs(),
        group_id=None,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=10,
    )
    await prod.start()
    await cons.start()
    arrived: dict[tuple[str, str], float] = {}
    kinds: Counter[str] = Counter()

    async def receive() -> None:
        async for m in cons:
            d = orjson.loads(m.value)
            arrived.setdefault((d["id"], d["state"]), time.perf_counter())
            kinds[f"{d['kind']}:{d['state']}"] += 1

    rx = asyncio.create_task(receive())
    parts = len(await prod.partitions_for(topic))
    samples: list[float] = []
    from_first: list[float] = []
    missed = bg_events = 0
    rng = random.Random(0)

    async def send(evs: list[JobEvent]) -> None:
        futs = [await prod.send(topic, e.to_json(), key=e.job.encode()) for e in evs]
        await asyncio.gather(*futs)

    from aiokafka.errors import KafkaError

    aborted = None
    try:
        for k in range(episodes + 1):  # episode 0 warms up (group join, first state)
            burst = episode(k, parts)
            t_first = time.perf_counter()
            await send(burst)
            t_pub = time.perf_counter()
            want = (f"shortjob_flood:user:flood{k}", "firing")
            # background until the alert came and a random part of a flush interval more
            bg_ts, bg_end, j = D + k * H + 900, D + (k + 1) * H - 800, 0
            extra = rng.uniform(0.2, 0.2 + flush)
            t_seen: float | None = None
            deadline = t_pub + (120 if k == 0 else 60)
            while True:
                now = time.perf_counter()
                if t_seen is None and want in arrived:
                    t_seen = arrived[want]
                if t_seen is not None and now - t_seen > extra or now > deadline:
                    break
                evs: list[JobEvent] = []
                for _ in range(max(1, round(bg_rate * 0.02 / 3))):
                    if bg_ts < bg_end:
                        _job(evs, f"bg{k}-{j}", bg_ts, bg_ts + 700, "bg", "bgg", "bgjob", 1)
                        bg_ts += 0.05
                        j += 1
                if evs:
                    evs.sort(key=lambda e: (e.ts, e.job))
                    await send(evs)
                    bg_events += len(evs)
                await asyncio.sleep(max(0.0, 0.02 - (time.perf_counter() - now)))
            if t_seen is None:
                missed += 1
                print(f"  episode {k}: no alert within {deadline - t_pub:.0f} s", file=sys.stderr)
            elif k:
                samples.append(t_seen - t_pub)
                from_first.append(t_seen - t_first)
    except KafkaError as e:  # the broker went away (someone restarted the stack): keep what came
        aborted = f"{type(e).__name__}: {e}"
        print(f"  latency run aborted after {len(samples)} episodes: {aborted}", file=sys.stderr)
    finally:
        rx.cancel()
        for stop in (prod.stop, cons.stop):
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await stop()
    return {
        "samples": samples,
        "from_first_send": from_first,
        "missed": missed,
        "background_events": bg_events,
        "alert_records": dict(kinds),
        "aborted": aborted,
    }


def quantile(xs: list[float], q: float) -> float:
    """Nearest-rank quantile."""
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, math.ceil(q * len(s)) - 1))]


def latency(stack: Stack, out: Path, episodes: int, bg_rate: float, flush: float) -> dict[str, Any]:
    extra = {"DRAINWATCH_LATENESS": "1", "DRAINWATCH_FLUSH_INTERVAL": str(flush)}
    run = Run(stack, out, free_port(), **extra)
    try:
        t_health = run.start_worker()
        r = asyncio.run(_latency(run, episodes, bg_rate, flush))
        assert run.proc is not None
        rss = peak_rss_mb(run.proc.pid)
    finally:
        run.stop()
    s = r.pop("samples")
    f = r.pop("from_first_send")
    return {
        "episodes": len(s),
        "flush_interval_s": flush,
        "lateness_s": 1.0,
        "background_events_per_s": bg_rate,
        "worker_startup_s": t_health,
        "p50_s": quantile(s, 0.5) if s else None,
        "p99_s": quantile(s, 0.99) if s else None,
        "min_s": min(s, default=None),
        "max_s": max(s, default=None),
        "mean_s": statistics.fmean(s) if s else None,
        "p50_from_first_send_s": quantile(f, 0.5) if f else None,
        "worker_peak_rss_mb": rss,
        "worker_exit_code_on_sigterm": run.exit_code,
        "samples_s": s,
        **r,
    }


# ---- in process ------------------------------------------------------------------------------
class _Event:
    """A stand-in for a faust event: value, message (topic, partition, offset), ack()."""

    __slots__ = ("value", "message")

    def __init__(self, topic: str, partition: int, offset: int, value: bytes) -> None:
        from types import SimpleNamespace

        self.value = value
        tp = SimpleNamespace(topic=topic, partition=partition)
        self.message = SimpleNamespace(topic=topic, offset=offset, tp=tp)

    def ack(self) -> None:
        pass


class _LineSink:
    """InfluxSink's work up to the HTTP request: the lines joined into one payload."""

    def __init__(self) -> None:
        self.points = self.bytes = 0

    def write_lines(self, points: list[Any]) -> None:
        self.points += len(points)
        self.bytes += len("\n".join(p for p in points if p).encode())


class _Recorder:
    """A stand-in for AIOKafkaProducer: keeps (topic, partition, value); partition by the
    default partitioner (murmur2 of the key) when not given."""

    def __init__(self, parts: int) -> None:
        self.parts = parts
        self.sent: list[tuple[str, int, bytes]] = []

    async def send(
        self, topic: str, value: bytes, key: bytes | None = None, partition: int | None = None
    ) -> asyncio.Future[None]:
        if partition is None:
            partition = partition_of((key or b"").decode(), self.parts)
        self.sent.append((topic, partition, value))
        f: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f

    async def partitions_for(self, topic: str) -> set[int]:
        return set(range(self.parts))

    def events(self, topic: str) -> list[_Event]:
        """What was sent to ``topic``, as a consumer hands it over: value, partition, offset."""
        offsets = [0] * self.parts
        out = []
        for t, p, value in self.sent:
            if t == topic:
                out.append(_Event(topic, p, offsets[p], value))
                offsets[p] += 1
        return out


def _messages(fmt: str, path: Path, settings: Settings) -> list[_Event]:
    """The job-events messages ``drainwatch ship jobs`` would send for ``path`` (its own
    function, recorded), as the consumer hands them over: value, partition, offset."""
    from streams.ship.job_files import ship_job_files

    parts = settings.kafka.topic_partitions
    rec = _Recorder(parts)
    bounds = TimeBounds(
        settings.bounds.not_before,
        settings.bounds.not_after,
        round(settings.bounds.max_jump * 1000),
    )
    asyncio.run(
        ship_job_files(
            rec,
            "job-events",
            "dead-letter",
            fmt,
            [str(path)],
            bounds,
            settings.bounds.max_line_bytes,
            settings.bounds.max_hosts,
            progress=False,
            partitions=parts,
        )
    )
    return rec.events("job-events")


async def _in_process(
    msgs: list[_Event], settings: Settings, per_flush: int, samples: bool = False
) -> Any:
    """The worker's job family (``samples``: the samples family) on the live runner over
    ``msgs`` without a broker: input takes of 512 messages (64 for samples), every
    ``per_flush`` records a publish, the partials in takes of 64, a flush (the state saved at
    every fifth)."""
    from types import SimpleNamespace

    from streams.app import AppTopics
    from streams.live.context import WorkerContext
    from streams.live.jobs import JobsCombine, JobsForward
    from streams.live.runner import Combiner, Forwarder
    from streams.live.samples import SamplesCombine, SamplesForward
    from streams.topics import topic_names

    parts = settings.kafka.topic_partitions
    names = topic_names(settings.kafka.topic_prefix)
    topics = {f: Topic(getattr(names, f)) for f in AppTopics.__annotations__}
    app = SimpleNamespace(
        producer=Producer({t.name: t for t in topics.values()}), conf=SimpleNamespace(id="bench")
    )

    class NoState:  # a first start: no saved state to read; saves kept nowhere
        refused: list[str] = []

        async def candidates(self, owner: str) -> list[tuple[str, bytes]]:
            return []

        async def save(self, owner: str, data: bytes) -> None:
            return None

    sink = _LineSink()
    ctx = WorkerContext(app, settings, sink, topics=SimpleNamespace(**topics), store=NoState())  # type: ignore[arg-type]
    if samples:
        fwd = Forwarder(ctx, SamplesForward(ctx))
        pipe = Combiner(ctx, SamplesCombine(ctx, parts))
    else:
        fwd = Forwarder(ctx, JobsForward(ctx))
        pipe = Combiner(ctx, JobsCombine(ctx, parts))
    take_n = 64 if samples else 512
    partials, poff = topics["samples_partials" if samples else "jobs_partials"], 0
    chunks: list[list[_Event]] = [[]]
    n = 0
    for m in msgs:  # about ``per_flush`` events between two flushes
        chunks[-1].append(m)
        n += m.value.count(b"\n") + 1
        if n >= per_flush:
            chunks.append([])
            n = 0
    for c, chunk in enumerate(chunks):
        for i in range(0, len(chunk), take_n):
            await fwd.on_events(chunk[i : i + take_n])
        await fwd.publish()
        got = [_Event(partials.name, 0, poff + i, v) for i, (_, v) in enumerate(partials.sent)]
        poff += len(got)
        partials.sent.clear()
        for i in range(0, len(got), 64):
            await pipe.on_partials(got[i : i + 64])
        # the rows written at each; the state saved at every fifth and the last, as the worker
        # saves it at its timer's flush (every 2 s: ~100,000 job events at 50,000/s)
        await pipe.flush(save=c % 5 == 4 or c == len(chunks) - 1)
    if ctx.writes is not None:
        await ctx.writes.barrier()
    ctx.counts.update({f"sent:{k}": len(t.sent) for k, t in topics.items() if t.sent})
    pipe.counts = ctx.counts  # type: ignore[attr-defined]
    return pipe, sink


def in_process(
    fmt: str, path: Path, events: int, settings: Settings, per_flush: int, profile: bool
) -> dict[str, Any]:
    """Events/s of the worker's job path in this process (no broker, points to line protocol
    but not sent; the garbage collector tuned as the worker tunes it); with ``profile``,
    cProfile's functions by cumulative time."""
    import cProfile
    import pstats

    from streams.tuning import tune_gc

    msgs = _messages(fmt, path, settings)
    tune_gc()  # as the worker does before its first record
    prof = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if prof is not None:
        prof.enable()
    pipe, sink = asyncio.run(_in_process(msgs, settings, per_flush))
    if prof is not None:
        prof.disable()
    t = time.perf_counter() - t0
    r: dict[str, Any] = {
        "events": events,
        "messages": len(msgs),
        "seconds": t,
        "events_per_s": events / t,
        "points": sink.points,
        "rows": pipe.counts["rows"],
        "messages_sent": {k[5:]: v for k, v in pipe.counts.items() if k.startswith("sent:")},
        "events_per_flush": per_flush,
    }
    if prof is not None:
        st = pstats.Stats(prof)
        stats: dict[Any, Any] = st.stats  # type: ignore[attr-defined]
        total = t
        rows = []
        for (file, line, func), (_cc, nc, tt, ct, _callers) in stats.items():
            rows.append((ct, tt, nc, _where(file, line, func)))
        rows.sort(reverse=True)
        r["cprofile_cumulative"] = [(w, ct, ct / total, n) for ct, _tt, n, w in rows[:40]]
        rows.sort(key=lambda x: x[1], reverse=True)
        r["cprofile_self"] = [(w, tt, tt / total, n) for _ct, tt, n, w in rows[:25]]
    return r


def _where(file: str, line: int, func: str) -> str:
    for marker in ("site-packages/", str(ROOT) + "/", "/lib/python3."):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{func} ({file}:{line})"


# ---- profile ---------------------------------------------------------------------------------
# Where a sample's CPU went: the first rule whose frame names all occur in its stack (the
# worker's own code first, then the Faust / aiokafka machinery around it).
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("start-up: imports", ("_find_and_load",)),
    ("flush: InfluxDB write (line protocol + HTTP, in a thread)", ("InfluxSink.write",)),
    ("flush: the state as a document", ("JobsCombine.snapshot",)),
    ("flush: the state as a document", ("pack",)),
    ("flush: saving the state to worker-state", ("StateStore.save",)),
    ("flush: metric and alert messages", ("Combiner.flush", "send_many")),
    ("flush: other (rows made at a flush)", ("Combiner.flush",)),
    ("merge + analytics (on_partials)", ("Combiner.on_partials",)),
    ("decode job events (forward step)", ("Forwarder.on_events",)),
    ("forward to jobs-partials (publish)", ("Forwarder.publish",)),
    ("faust: delivering consumed messages to the agents", ("Conductor.",)),
    ("faust: delivering consumed messages to the agents", ("Stream.",)),
    ("faust/aiokafka: fetching and decoding records", ("Fetcher",)),
    ("faust/aiokafka: fetching and decoding records", ("Consumer.",)),
    ("aiokafka: producer sender and connections", ("Sender.",)),
    ("aiokafka: producer sender and connections", ("AIOKafkaConnection.",)),
    ("the drain family (idle input)", ("DrainForward",)),
    ("the drain family (idle input)", ("DrainCombine",)),
)


def top_functions(raw: Path, n: int = 15) -> dict[str, Any]:
    """From py-spy's collapsed stacks (``--format raw``): the functions by share of samples on
    the stack (cumulative), all and the project's own (streams/, models/), by share as the
    innermost frame (self), and the samples by :data:`CATEGORIES`."""
    cum: Counter[str] = Counter()
    own: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    cats: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        c = int(count)
        total += c
        names = [_frame(f) for f in stack.split(";")]
        for name in set(names):
            cum[name] += c
            if name.split(" (", 1)[-1].startswith(("streams/", "models/")):
                own[name] += c
        leaf[names[-1]] += c
        for cat, needles in CATEGORIES:
            if all(any(f.startswith(x) or f" {x}" in f for f in names) for x in needles):
                cats[cat] += c
                break
        else:
            cats["other (event loop, timers, web, idle agents)"] += c

    def share(ctr: Counter[str], k: int = n) -> list[tuple[str, float]]:
        return [(name, v / max(total, 1)) for name, v in ctr.most_common(k)]

    return {
        "samples": total,
        "cumulative": share(cum),
        "cumulative_project": share(own),
        "self": share(leaf),
        "categories": share(cats, len(cats)),
    }


def _frame(f: str) -> str:
    """``func (path/to/file.py:123)`` -> ``func (path/to/file.py)``: one name per function,
    paths relative to site-packages, the repository or the standard library."""
    name, _, where = f.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", str(ROOT) + "/", "/lib/python3.11/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


# ---- main ------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1, help="throughput runs (default 1)")
    ap.add_argument("--copies", type=int, default=1, help="copies of the KTH trace (default 1)")
    ap.add_argument("--episodes", type=int, default=80, help="latency episodes (default 80)")
    ap.add_argument(
        "--background",
        type=float,
        default=1000.0,
        help="background job events/s in the latency run (1000)",
    )
    ap.add_argument(
        "--flush-interval",
        type=float,
        default=2.0,
        help="worker.flush_interval of the latency run (2, the default)",
    )
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="also the job path in this process, no broker; cProfile",
    )
    ap.add_argument("--profile", action="store_true", help="one more run under py-spy")
    ap.add_argument(
        "--json",
        type=Path,
        default=OUT / "bench_live_jobs.json",
        help="result file (bench/out/bench_live_jobs.json)",
    )
    a = ap.parse_args()
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # its retries while a broker is away
    out = OUT / "live_jobs"
    out.mkdir(parents=True, exist_ok=True)
    machine: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "loadavg_at_start": os.getloadavg(),
    }
    print(
        f"machine: {machine['platform']}, {machine['cpus']} CPUs, Python {machine['python']}; "
        f"load average {machine['loadavg_at_start'][0]:.2f} (1 min) at start; the broker, "
        f"InfluxDB and the worker share these CPUs"
    )
    fmt, path = make_input(a.copies, out)
    src = source_fingerprint()
    print(
        f"code measured: streams/ + models/ sha1 {src['sha1']}, newest {src['newest_file']} "
        f"({src['newest_mtime']})"
    )
    result: dict[str, Any] = {
        "machine": machine,
        "argv": sys.argv[1:],
        "source": source_fingerprint(),
    }

    def save() -> None:  # after every part: a broken run keeps what it measured
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(result, indent=1))

    if a.in_process:
        settings = load_settings(env={"DRAINWATCH_TZ": "UTC", "DRAINWATCH_SECTION_NODES": "100"})
        n = len(read_job_events(fmt, [str(path)], RejectLog())[0])
        r = in_process(fmt, path, n, settings, 20_000, profile=False)
        rp = in_process(fmt, path, n, settings, 20_000, profile=True)
        result["in_process"] = {**r, "profiled": rp}
        save()
        print(
            f"in process (no broker; points to line protocol, not sent): "
            f"{r['events_per_s']:,.0f} events/s ({r['events']:,} in {r['messages']:,} "
            f"messages, {r['seconds']:.2f} s); "
            f"under cProfile, by cumulative time:"
        )
        for w, ct, share, _n in rp["cprofile_cumulative"]:
            if "asyncio/" not in w and "_contextvars" not in w and "bench_live_jobs" not in w:
                print(f"  {share:6.1%}  {ct:6.2f} s  {w}")
    stack = Stack()
    runs = []
    for i in range(a.repeat):
        t = throughput(stack, fmt, path, out)
        runs.append(t)
        result["throughput"] = runs
        save()
        down = f"; INFLUXDB WAS DOWN at {t['influx_outages'][0]}" if t["influx_outages"] else ""
        print(
            f"throughput run {i + 1}: {t['events']:,} events in {t['job_events_messages']:,} "
            f"messages ({t['events_released']:,} "
            f"releasable, {t['runtime_points']:,}/{t['runtime_points_expected']:,} runtime "
            f"points) in {t['done_s']:.2f} s from worker start (start-up "
            f"{t['worker_startup_s']:.2f} s, first point "
            f"{t['first_point_s'] or float('nan'):.2f} s): "
            f"{t['events_per_s']:,.0f} events/s, {t['events_per_s_without_startup']:,.0f} "
            f"without start-up; shipper {t['ship_events_per_s']:,.0f}/s; "
            f"peak RSS {t['worker_peak_rss_mb']:.0f} MB{down}"
        )
        nan = float("nan")
        print(
            f"  first stage (decode, forward to jobs-partials): first at "
            f"{t['forwarded_first_s'] or nan:.2f} s, half at {t['forwarded_half_s'] or nan:.2f} s"
            f", all at {t['forwarded_all_s'] or nan:.2f} s; worker CPU "
            f"{t['worker_cpu_s_to_done']:.2f} s to done "
            f"({t['worker_cpu_s_to_first_point']:.2f} s to the first point): "
            f"{t['events_per_worker_cpu_s']:,.0f} events per CPU-second; broker CPU "
            f"{t.get('broker_cpu_s_to_done', nan):.2f} s, InfluxDB CPU "
            f"{t.get('influxdb_cpu_s_to_done', nan):.2f} s (its count polls "
            f"{t['poll_query_ms_mean'] or nan:.1f} ms each); "
            f"{t['events_per_s_from_first_forward'] or nan:,.0f} events/s from the first "
            f"forward (after the group join)"
        )
    result["throughput"] = runs
    if not a.skip_latency:
        lat = latency(stack, out, a.episodes, a.background, a.flush_interval)
        result["latency"] = lat
        save()
        if lat["episodes"]:
            print(
                f"alert latency (publish -> shortjob_flood firing on alerts; flush_interval "
                f"{lat['flush_interval_s']:g} s, lateness 1 s, background "
                f"{a.background:,.0f} events/s): p50 {lat['p50_s']:.2f} s, p99 "
                f"{lat['p99_s']:.2f} s, min {lat['min_s']:.2f}, max {lat['max_s']:.2f} over "
                f"{lat['episodes']} episodes ({lat['missed']} missed"
                f"{', ABORTED: ' + lat['aborted'] if lat['aborted'] else ''}); worker peak "
                f"RSS {lat['worker_peak_rss_mb']:.0f} MB"
            )
        else:
            print(f"alert latency: no episode measured ({lat['aborted']})")
    if a.profile:
        raw = out / "py-spy.txt"
        t = throughput(stack, fmt, path, out, profile=raw)
        time.sleep(1)
        result["profile"] = {"run": t, "raw": str(raw), **top_functions(raw)}
        save()
        prof = result["profile"]
        print(
            f"profiled run: {t['events_per_s_without_startup']:,.0f} events/s without start-up "
            f"(under py-spy, 200 Hz, {prof['samples']:,} busy samples over all threads); "
            f"samples by what the worker was doing:"
        )
        for name, share in prof["categories"]:
            print(f"  {share:6.1%}  {name}")
        print("the project's functions by share of samples on the stack (cumulative):")
        for name, share in prof["cumulative_project"][:12]:
            print(f"  {share:6.1%}  {name}")
        print("innermost frames (self):")
        for name, share in prof["self"][:12]:
            print(f"  {share:6.1%}  {name}")
    lat_r: dict[str, Any] = result.get("latency", {})
    summary: dict[str, Any] = {
        "events_per_s_median": statistics.median([r["events_per_s"] for r in runs])
        if runs
        else None,
        "events_per_s_without_startup_median": statistics.median(
            [r["events_per_s_without_startup"] for r in runs]
        )
        if runs
        else None,
        "worker_startup_s_median": statistics.median([r["worker_startup_s"] for r in runs])
        if runs
        else None,
        "events_per_s_from_first_forward_median": statistics.median(
            [r["events_per_s_from_first_forward"] or 0.0 for r in runs]
        )
        if runs
        else None,
        "in_process_events_per_s": result.get("in_process", {}).get("events_per_s"),
        "alert_latency_p50_s": lat_r.get("p50_s"),
        "alert_latency_p99_s": lat_r.get("p99_s"),
        "worker_peak_rss_mb_throughput": max((r["worker_peak_rss_mb"] for r in runs), default=None),
        "worker_peak_rss_mb_latency": lat_r.get("worker_peak_rss_mb"),
        "target_events_per_s": 50_000,
    }
    result["summary"] = summary
    table = [
        ("job events/s per worker, from its start", "events_per_s_median", "{:,.0f}"),
        (
            "job events/s per worker, after /health/",
            "events_per_s_without_startup_median",
            "{:,.0f}",
        ),
        (
            "job events/s per worker, after the group join",
            "events_per_s_from_first_forward_median",
            "{:,.0f}",
        ),
        ("worker start-up to /health/ (s)", "worker_startup_s_median", "{:.2f}"),
        ("job events/s in process (no broker)", "in_process_events_per_s", "{:,.0f}"),
        ("alert latency p50 (s)", "alert_latency_p50_s", "{:.2f}"),
        ("alert latency p99 (s)", "alert_latency_p99_s", "{:.2f}"),
        ("worker peak RSS, throughput run (MB)", "worker_peak_rss_mb_throughput", "{:.0f}"),
        ("worker peak RSS, latency run (MB)", "worker_peak_rss_mb_latency", "{:.0f}"),
    ]
    print()
    print(f"{'measure (target: 50,000 job events/s)':<48}{'value':>12}")
    for label, key, f in table:
        if summary[key] is not None:
            print(f"{label:<48}{f.format(summary[key]):>12}")
    result["source_at_end"] = source_fingerprint()
    if result["source_at_end"]["sha1"] != src["sha1"]:
        print(
            f"WARNING: streams/ or models/ changed during the run (now "
            f"{result['source_at_end']['sha1']}, newest {result['source_at_end']['newest_file']}"
            f"): the parts may have measured different code"
        )
    save()
    print(f"written {a.json}")


if __name__ == "__main__":
    main()
