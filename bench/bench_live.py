"""Live pipeline benchmark (issue: the live drain pipeline): node records/s per worker through
shipper -> Kafka -> worker -> InfluxDB, batched and one record per message, the latency from
publishing a 27,000-node iteration to its provisional row in InfluxDB (p50/p99), the worker's
decode + account rate in process (no broker), and its peak RSS.

Needs the local stack (``.venv/bin/python deploy/local/stack.py start``).

    .venv/bin/python bench/bench_live.py [--nodes 27000] [--minutes 40] [--single 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.drain.live import PartitionDrain  # noqa: E402
from models.formats.moab import parse_moab_chunk  # noqa: E402
from models.records.nodestatus import Codebook  # noqa: E402
from streams.codecs.nodestatus import Decoder, encode, partition_of  # noqa: E402

PARTS = 8


def make_log(out: Path, nodes: int, minutes: int) -> Path:
    log = out / "moab.log"
    if not log.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "streams.cli",
                "simulate",
                "--model",
                "lublin",
                "--nodes",
                str(nodes),
                "--days",
                f"{minutes / 1440:.6f}",
                "--period",
                "60",
                "--out",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
    return log


def in_process(log: Path, max_rows: int, limit: int | None = None) -> tuple[float, float, int]:
    """(records/s decode + account, records/s encode, records) without a broker."""
    book = Codebook()
    batch = parse_moab_chunk(log.read_bytes(), book).batch
    if limit:
        import numpy as np

        batch = batch.take(np.arange(min(limit, len(batch))))
    import numpy as np

    owners = partition_of(book.nodes.names, PARTS)[batch.node]
    t0 = time.perf_counter()
    msgs = []
    for p in range(PARTS):
        rows = np.flatnonzero(owners == p)
        for lo in range(0, rows.size, max_rows):
            msgs.append((p, encode(batch.take(rows[lo : lo + max_rows]), book, "bench")))
    t_enc = time.perf_counter() - t0
    states = {p: PartitionDrain(p) for p in range(PARTS)}
    decs = {p: Decoder(states[p].book) for p in range(PARTS)}
    t0 = time.perf_counter()
    for p, m in msgs:
        states[p].add(decs[p].decode(m)[1])
    for st in states.values():
        st.partial()
    t_dec = time.perf_counter() - t0
    return len(batch) / t_dec, len(batch) / t_enc, len(batch)


class Stack:
    def __init__(self) -> None:
        env_file = ROOT / ".drainwatch" / "stack.env"
        self.env = dict(
            line.split("=", 1)
            for line in env_file.read_text().splitlines()
            if line and not line.startswith("#")
        )
        self.token = Path(self.env["DRAINWATCH_INFLUX_TOKEN_FILE"]).read_text().strip()
        self.url = self.env["DRAINWATCH_INFLUX_URL"]

    def query(self, q: str, db: str | None = None) -> dict[str, Any]:
        import base64
        import json

        params = {"q": q, "epoch": "ms", **({"db": db} if db else {})}
        req = urllib.request.Request(
            f"{self.url}/query?{urllib.parse.urlencode(params)}",
            method="POST",
            headers={"Authorization": "Basic " + base64.b64encode(self.token.encode()).decode()},
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            doc: dict[str, Any] = json.loads(r.read())
        return doc

    def count(self, db: str, measurement: str, field: str, since_ms: int | None = None) -> int:
        """Points of ``measurement`` with ``field`` (at or after ``since_ms`` if given)."""
        where = "" if since_ms is None else f" WHERE time >= {since_ms}ms"
        r = self.query(f'SELECT count("{field}") FROM "{measurement}"{where}', db=db)
        series = r["results"][0].get("series")
        return int(series[0]["values"][0][1]) if series else 0


def run_env(stack: Stack, tag: str, port: int) -> dict[str, str]:
    return {
        **os.environ,
        **stack.env,
        "PYTHONPATH": str(ROOT),
        "DRAINWATCH_TOPIC_PREFIX": f"b{tag}.",
        "DRAINWATCH_INFLUX_BUCKET": f"b{tag}/autogen",
        "DRAINWATCH_INFLUX_DATABASE": f"b{tag}",
        "DRAINWATCH_WEB_PORT": str(port),
        "DRAINWATCH_BROKER_SESSION_TIMEOUT": "10",
        "DRAINWATCH_BROKER_REBALANCE_TIMEOUT": "10",
        "DRAINWATCH_BROKER_HEARTBEAT_INTERVAL": "1",
        "DRAINWATCH_CHECKPOINT_INTERVAL": "2",
        "DRAINWATCH_FLUSH_INTERVAL": "0.5",
        "DRAINWATCH_LOG_LEVEL": "warning",
        "DRAINWATCH_TZ": "UTC",
        "DRAINWATCH_STATE_DIR": f"/tmp/bench-live-{tag}",
    }


async def delete_topics(settings: Any, prefix: str) -> None:
    """Delete a run's topics (named ``prefix...``): a broker that keeps every run's topics slows
    down (a day of runs and tests left ~4,800 partitions, and the broker's CPU in a job-events
    run rose from 0.2 s to 0.9 s)."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**settings.aiokafka_kwargs())
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics() if t.startswith(prefix)]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


def drop_topics(env: dict[str, str], tag: str) -> None:
    """:func:`delete_topics` of the run ``tag`` (``b<tag>.``), best effort."""
    from streams.config import load_settings

    settings = load_settings(
        env={
            k: v
            for k, v in env.items()
            if k.startswith("DRAINWATCH_") and k != "DRAINWATCH_STACK_LOGS"
        }
    )
    try:
        asyncio.run(delete_topics(settings, f"b{tag}."))
    except Exception as e:  # cleanup is best effort
        print(f"cleanup of b{tag} (topics): {e}", file=sys.stderr)


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


def start_worker(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "worker"],
        env=env,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )  # noqa: SIM115
    for _ in range(300):
        try:
            metric(port, "drainwatch_records_total")
            return p
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"worker did not start; see {log}")


def ship(env: dict[str, str], log: Path, max_rows: int | None = None) -> float:
    t0 = time.perf_counter()
    if max_rows is None:
        subprocess.run(
            [sys.executable, "-m", "streams.cli", "ship", "moab", str(log), "--no-progress"],
            env=env,
            check=True,
            capture_output=True,
        )
    else:
        asyncio.run(_ship_unbatched(env, log, max_rows or 1))
    return time.perf_counter() - t0


async def _ship_unbatched(env: dict[str, str], log: Path, max_rows: int) -> None:
    from aiokafka import AIOKafkaProducer

    from streams.config import load_settings
    from streams.kafka import ensure_topics
    from streams.ship.moab import MoabShipper, ship_files

    settings = load_settings(
        env={
            k: v
            for k, v in env.items()
            if k.startswith("DRAINWATCH_") and k != "DRAINWATCH_STACK_LOGS"
        }
    )
    await ensure_topics(settings)
    prod = AIOKafkaProducer(**settings.aiokafka_kwargs(), acks="all", linger_ms=5)
    await prod.start()
    try:
        topic = settings.kafka.topic_prefix + "node-status"
        sh = MoabShipper(prod, topic, settings.kafka.topic_prefix + "dead-letter", PARTS)
        sh.max_rows = max_rows
        await ship_files(sh, [str(log)], progress=False)
    finally:
        await prod.stop()


def throughput(stack: Stack, log: Path, records: int, max_rows: int | None, out: Path) -> dict:
    tag, port = uuid.uuid4().hex[:8], 16950 + (1 if max_rows else 0)
    env = run_env(stack, tag, port)
    stack.query(f'CREATE DATABASE "b{tag}"')
    t_ship = ship(env, log, max_rows)
    w = start_worker(env, port, out / f"worker-{tag}.log")
    try:
        while metric(port, "drainwatch_records_total") == 0:
            time.sleep(0.01)
        t0 = time.perf_counter()
        while metric(port, "drainwatch_records_total") < records:
            time.sleep(0.02)
        t = time.perf_counter() - t0
        import resource as _  # noqa: F401

        rss = _rss_mb(w.pid)
    finally:
        w.send_signal(signal.SIGTERM)
        w.wait(30)
        stack.query(f'DROP DATABASE "b{tag}"')
        drop_topics(env, tag)
    return {
        "records": records,
        "ship_s": t_ship,
        "worker_s": t,
        "records_per_s": records / t,
        "worker_rss_mb": rss,
    }


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def latency(stack: Stack, log: Path, out: Path, iterations: int) -> list[float]:
    """Publish one iteration at a time (one producer, in process); time until the row of its
    minute (opened by the intervals its records close) shows in InfluxDB."""
    tag, port = uuid.uuid4().hex[:8], 16960
    env = run_env(stack, tag, port)
    stack.query(f'CREATE DATABASE "b{tag}"')
    w = start_worker(env, port, out / f"worker-lat-{tag}.log")
    try:
        return asyncio.run(_latency(stack, env, tag, log, iterations))
    finally:
        w.send_signal(signal.SIGTERM)
        w.wait(30)
        stack.query(f'DROP DATABASE "b{tag}"')
        drop_topics(env, tag)


async def _latency(stack: Stack, env: dict[str, str], tag: str, log: Path, n: int) -> list[float]:
    from aiokafka import AIOKafkaProducer

    from streams.config import load_settings
    from streams.ship.moab import MoabShipper

    lines = log.read_bytes().splitlines(keepends=True)
    ts = parse_moab_chunk(b"".join(lines), Codebook()).batch.ts_ms
    minute = ts // 60_000  # one iteration per minute (period 60 s)
    starts = [0] + [i for i in range(1, len(minute)) if minute[i] != minute[i - 1]] + [len(lines)]
    settings = load_settings(
        env={
            k: v
            for k, v in env.items()
            if k.startswith("DRAINWATCH_") and k != "DRAINWATCH_STACK_LOGS"
        }
    )
    prod = AIOKafkaProducer(**settings.aiokafka_kwargs(), acks="all", linger_ms=5)
    await prod.start()
    samples = []
    try:
        topic = settings.kafka.topic_prefix + "node-status"
        sh = MoabShipper(prod, topic, settings.kafka.topic_prefix + "dead-letter", PARTS)
        for k in range(min(n + 1, len(starts) - 1)):
            chunk = b"".join(lines[starts[k] : starts[k + 1]])
            # the minute of the iteration's records: its first row comes with this iteration
            want = int(ts[starts[k + 1] - 1] // 60_000 * 60_000)
            t0 = time.perf_counter()
            await sh.ship(chunk, "bench", 1)
            while k:
                r = stack.query(
                    f"SELECT * FROM drain WHERE \"window\"='minute' AND time = {want}ms",
                    db=f"b{tag}",
                )
                if r["results"][0].get("series"):
                    break
                if time.perf_counter() - t0 > 60:
                    raise SystemExit("no row within 60 s")
                await asyncio.sleep(0.02)
            if k:  # the first iteration only opens the nodes' first intervals
                samples.append(time.perf_counter() - t0)
    finally:
        await prod.stop()
    return samples


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=27000)
    ap.add_argument("--minutes", type=int, default=40)
    ap.add_argument("--single", type=int, default=20000, help="records in the unbatched run")
    ap.add_argument("--latency-iterations", type=int, default=20)
    a = ap.parse_args()
    out = ROOT / "bench" / "out" / "live"
    out.mkdir(parents=True, exist_ok=True)
    log = make_log(out / f"sim-{a.nodes}-{a.minutes}", a.nodes, a.minutes)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    rate, enc, n = in_process(log, 8192)
    print(f"in process, batched: decode+account {rate:,.0f} records/s; encode {enc:,.0f}/s ({n:,})")
    rate1, enc1, n1 = in_process(log, 1, a.single)
    print(
        f"in process, 1 record/message: decode+account {rate1:,.0f} records/s ({n1:,}); "
        f"batching buys x{rate / rate1:.0f}"
    )
    stack = Stack()
    single_log = out / f"single-{a.single}.log"
    single_log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[: a.single]))
    t = throughput(stack, log, n, None, out)
    print(
        f"through Kafka, batched: {t['records_per_s']:,.0f} records/s per worker "
        f"({t['records']:,} in {t['worker_s']:.2f} s; shipper {t['records'] / t['ship_s']:,.0f}"
        f"/s; worker peak RSS {t['worker_rss_mb']:.0f} MB)"
    )
    t1 = throughput(stack, single_log, a.single, 1, out)
    print(
        f"through Kafka, 1 record/message: {t1['records_per_s']:,.0f} records/s per worker "
        f"({t1['records']:,} in {t1['worker_s']:.2f} s); batched/unbatched "
        f"x{t['records_per_s'] / t1['records_per_s']:.0f}"
    )
    lat = sorted(latency(stack, log, out, a.latency_iterations))
    p50 = lat[len(lat) // 2]
    p99 = lat[min(len(lat) - 1, round(0.99 * (len(lat) - 1)))]
    print(
        f"latency, publish of a {a.nodes:,}-node iteration -> its provisional row in InfluxDB "
        f"(flush_interval 0.5 s): p50 {p50:.2f} s, p99 {p99:.2f} s, "
        f"max {lat[-1]:.2f} s over {len(lat)}"
    )


if __name__ == "__main__":
    main()
