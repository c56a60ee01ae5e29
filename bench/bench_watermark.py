"""Source-watermark benchmark (issue 30): how far the job merger's watermark trails the newest
event on the real phillips sacct dump (``../shared/data/sacct/phillips.log``), with and without
the shippers' markers, and the event-time latency of the alerts its releases drive.

The dump goes through ``streams.ship.job_files.ship_job_files`` (the ``ship jobs`` code) into
a recording producer; its messages, in the order the shipper sent them (what a consumer that
keeps up sees), feed :class:`models.jobs.merge.JobEventMerger` (8 partitions, lateness
``--lateness``) one message at a time, releasing after each as the worker does. Reported:

* watermark lag: after each message, newest event time seen - the merger's watermark (event
  seconds, the lateness included), p50/p90/p99/max;
* alert latency: per released event, the newest event time seen when it was released minus its
  own time: how long (event time) a short-job flood, overrun or capability row waits for it;
* at the end of the file: the events still held (without markers they are never released:
  nothing says the input ended), and the messages markers cost.

Live and paced (``--live``, the local stack running): six hours of the dump
(``--slice-start``, ``--hours``) shipped by ``ship jobs --speed X`` (the ``ship_job_files``
code, in this process) to a worker (lateness ``--live-lateness``, markers every
``--live-interval`` wall seconds, so every ``X × interval`` event seconds), with markers and
without. Reported:

* watermark lag from the worker's /metrics, read every 0.25 s while the shipper runs (event
  seconds), p50/p90/p99/max, against the bound lateness + 2 × X × interval;
* alert latency (wall seconds): from the shipper's send of the event that makes an alert (the
  first event at or after the alert's ``at``; for an alert the end of input makes, the
  end-of-input markers) to its record on ``<prefix>alerts``. Its floor is lateness / X: an
  event is released once the stream is the lateness past it.

Run: ``.venv/bin/python bench/bench_watermark.py [--lateness 600] [--interval 10] [--live]
[--speed 720]``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from models.jobs.merge import JobEventMerger  # noqa: E402
from models.records.jobevent import jobevent_from_dict  # noqa: E402
from models.records.plausible import TimeBounds  # noqa: E402
from streams.codecs.control import decode_marker, is_marker  # noqa: E402
from streams.ship.job_files import ship_job_files  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))

DUMP = REPO.parent / "shared" / "data" / "sacct" / "phillips.log"
PARTS = 8


class Recorder:
    """A producer that keeps what is sent, in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, bytes]] = []

    async def send(self, topic: str, value: bytes, key: Any = None, partition: int = 0) -> Any:
        self.sent.append((topic, partition, value))
        f = asyncio.get_running_loop().create_future()
        f.set_result(None)
        return f


def shipped(interval: float | None) -> tuple[list[tuple[int, bytes]], int]:
    rec = Recorder()
    ship = ship_job_files(
        rec,
        "je",
        "dl",
        "sacct",
        [str(DUMP)],
        TimeBounds(),
        1 << 20,
        100_000,
        progress=False,
        partitions=PARTS,
        marker_interval=interval,
    )
    st = asyncio.run(ship)
    return [(p, v) for t, p, v in rec.sent if t == "je"], st.markers


def run(msgs: list[tuple[int, bytes]], lateness: float, timeout: float) -> dict[str, Any]:
    m = JobEventMerger(lateness, PARTS, timeout)
    offs: dict[int, int] = {}
    lags: list[float] = []
    delays: list[float] = []
    total = 0

    def took(out: list[Any]) -> None:
        top = m.newest()
        assert top is not None
        delays.extend(top - e.ts for e in out)

    for p, v in msgs:
        off = offs[p] = offs.get(p, -1) + 1
        if is_marker(v):
            mk = decode_marker(v)
            assert mk is not None
            m.add_marker(p, off, mk.source, mk.ts, mk.sent, mk.end)
        else:
            events = [jobevent_from_dict(orjson.loads(line)) for line in v.split(b"\n")]
            total += len(events)
            assert not m.add_many(p, off, events)
        took(m.release())
        if m.end_due():
            took(m.end())
        lag = m.lag()
        if lag is not None and not m.input_ended:
            lags.append(lag)
    return {"lags": lags, "delays": delays, "held": len(m.held), "events": total}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lateness", type=float, default=600.0)
    ap.add_argument("--interval", type=float, default=10.0, help="worker.marker_interval")
    ap.add_argument("--timeout", type=float, default=300.0, help="worker.shipper_timeout")
    ap.add_argument("--live", action="store_true", help="also the paced live run (the stack)")
    ap.add_argument("--speed", type=float, default=720.0, help="live: ship jobs --speed")
    ap.add_argument("--live-lateness", type=float, default=600.0, help="live: worker.lateness")
    ap.add_argument("--live-interval", type=float, default=1.0, help="live: marker interval, s")
    ap.add_argument("--slice-start", default="2017-01-01T01:00", help="live: UTC")
    ap.add_argument("--hours", type=float, default=6.0, help="live: hours of the dump")
    a = ap.parse_args()
    if not DUMP.exists():
        print(f"{DUMP} absent (public test data): nothing to measure")
        return 0
    rows = []
    for label, interval in (("no markers", None), (f"markers every {a.interval:g} s", a.interval)):
        msgs, markers = shipped(interval)
        r = run(msgs, a.lateness, a.timeout)
        rows.append((label, r, len(msgs) - markers, markers))
    n = rows[0][1]["events"]
    print(f"phillips sacct dump, {n:,} events, {PARTS} partitions, lateness {a.lateness:g} s")
    head = ["", "lag p50", "p90", "p99", "max", "alert p50", "p99", "max"]
    head += ["held at end", "data msgs", "markers"]
    print(" | ".join(f"{h:>12}" for h in head))
    for label, r, data, markers in rows:
        lag, d = r["lags"], r["delays"]
        figures = [pct(lag, 0.5), pct(lag, 0.9), pct(lag, 0.99), max(lag)]
        figures += [pct(d, 0.5), pct(d, 0.99), max(d)]
        cells = [label, *(f"{x:,.0f}" for x in figures)]
        cells += [f"{r['held']:,}", f"{data:,}", f"{markers:,}"]
        print(" | ".join(f"{c:>12}" for c in cells))
    if a.live:
        live_table(a)
    return 0


# ---- paced, live -----------------------------------------------------------------------------
class TimedProducer:
    """A producer that notes the wall time each job event and end-of-input marker was sent."""

    def __init__(self, producer: Any, topic: str) -> None:
        self.producer, self.topic = producer, topic
        self.event_sent: list[tuple[float, float]] = []  # (event time, wall time sent)
        self.end_sent: float | None = None

    async def send(self, topic: str, value: bytes, key: Any = None, partition: int = 0) -> Any:
        fut = await self.producer.send(topic, value, key=key, partition=partition)
        now = time.time()
        if topic == self.topic and is_marker(value):
            mk = decode_marker(value)
            if mk is not None and mk.end and self.end_sent is None:
                self.end_sent = now
        elif topic == self.topic:
            self.event_sent += [(orjson.loads(line)["ts"], now) for line in value.split(b"\n")]
        return fut


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=2) as r:
        return str(r.read().decode())


def slice_file(start: str, hours: float, out: Path) -> int:
    """The dump's events from ``start`` (UTC) for ``hours``, as job-event JSON lines."""
    from streams.driver import RejectLog
    from streams.sources.jobevents import read_job_events

    events, _ = read_job_events("sacct", [str(DUMP)], RejectLog())
    lo = datetime.fromisoformat(start).replace(tzinfo=UTC).timestamp()
    part = [e for e in events if lo <= e.ts < lo + hours * 3600]
    out.write_bytes(b"".join(e.to_json() + b"\n" for e in part))
    return len(part)


async def paced_run(run: Any, path: Path, speed: float, interval: float | None) -> dict[str, Any]:
    """Ship ``path`` paced into ``run``'s worker; the lags read from /metrics meanwhile and
    the alert records with their arrival times."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from streams.kafka import ensure_topics

    settings = run.settings
    parts = await ensure_topics(settings)
    topic, alerts = run.prefix + "job-events", run.prefix + "alerts"
    prod = AIOKafkaProducer(**settings.aiokafka_kwargs(), acks="all", linger_ms=20)
    cons = AIOKafkaConsumer(
        alerts,
        **settings.aiokafka_kwargs(),
        group_id=None,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=10,
    )
    await prod.start()
    await cons.start()
    arrived: dict[tuple[str, str], tuple[float, float]] = {}  # (id, state) -> (at, wall)

    async def receive() -> None:
        async for m in cons:
            d = orjson.loads(m.value)
            arrived.setdefault((d["id"], d["state"]), (d["at"], time.time()))

    lags: list[float] = []
    done = asyncio.Event()

    async def sample() -> None:
        url = f"http://127.0.0.1:{run.port}/metrics"
        while not done.is_set():
            with contextlib.suppress(OSError):
                text = await asyncio.to_thread(
                    lambda: urllib.request.urlopen(url, timeout=2).read()
                )
                for line in text.decode().splitlines():
                    if line.startswith('drainwatch_watermark_lag_seconds{family="jobs"}'):
                        lags.append(float(line.rsplit(" ", 1)[1]))
            await asyncio.sleep(0.25)

    rx, sampler = asyncio.create_task(receive()), asyncio.create_task(sample())
    timed = TimedProducer(prod, topic)
    t0 = time.time()
    try:
        await ship_job_files(
            timed,
            topic,
            run.prefix + "dead-letter",
            "jobevents",
            [str(path)],
            TimeBounds(),
            1 << 20,
            100_000,
            progress=False,
            partitions=parts[topic],
            marker_interval=interval,
            speed=speed,
        )
        wall = time.time() - t0
        done.set()
        await sampler
        await asyncio.sleep(10)  # the alerts the end of input makes
    finally:
        rx.cancel()
        for stop in (prod.stop, cons.stop):
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await stop()
    return {"lags": lags, "arrived": arrived, "timed": timed, "wall": wall}


def alert_latency(r: dict[str, Any]) -> tuple[list[float], list[float]]:
    """Per alert record: arrival - the send of the event that made it (the first event at or
    after its ``at``); those made by the end of input apart (from the end markers' send)."""
    timed: TimedProducer = r["timed"]
    sent = sorted(timed.event_sent)
    times = [ts for ts, _ in sent]
    by_event, by_end = [], []
    for at, wall in r["arrived"].values():
        i = bisect.bisect_left(times, at)
        if i < len(sent):
            by_event.append(wall - sent[i][1])
        elif timed.end_sent is not None:
            by_end.append(wall - timed.end_sent)
    return by_event, by_end


def live_table(a: argparse.Namespace) -> None:
    from bench_live import Stack
    from bench_live_jobs import OUT, Run, free_port

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "watermark-slice.jsonl"
    n = slice_file(a.slice_start, a.hours, path)
    bound = a.live_lateness + 2 * a.speed * a.live_interval
    print(
        f"\npaced live: {n} events of {a.slice_start} + {a.hours:g} h at {a.speed:g} x real "
        f"time, lateness {a.live_lateness:g} s, 8 partitions; lag in event s (bound "
        f"{bound:,.0f} with markers), alert latency in wall s (floor lateness / speed = "
        f"{a.live_lateness / a.speed:.2f} s)"
    )
    head = ["", "lag p50", "p90", "p99", "max", "samples", "alert p50", "p99", "max"]
    head += ["alerts", "at end", "end p50", "wall s"]
    print(" | ".join(f"{h:>10}" for h in head))
    stack = Stack()
    for label, interval in ((f"every {a.live_interval:g} s", a.live_interval), ("none", None)):
        run = Run(
            stack,
            OUT,
            free_port(),
            DRAINWATCH_LATENESS=str(a.live_lateness),
            DRAINWATCH_MARKER_INTERVAL=str(a.live_interval),
        )
        try:
            run.start_worker()
            r = asyncio.run(paced_run(run, path, a.speed, interval))
        finally:
            run.stop()
        lag = r["lags"]
        ev, end = alert_latency(r)
        cells = [f"markers {label}" if interval else "no markers"]
        cells += [f"{pct(lag, q):,.0f}" for q in (0.5, 0.9, 0.99)] + [f"{max(lag):,.0f}"]
        cells += [f"{len(lag)}"]
        cells += [f"{pct(ev, q):.2f}" for q in (0.5, 0.99)] + [f"{max(ev, default=0):.2f}"]
        cells += [f"{len(ev)}", f"{len(end)}", f"{pct(end, 0.5):.2f}", f"{r['wall']:.1f}"]
        print(" | ".join(f"{c:>10}" for c in cells))


if __name__ == "__main__":
    raise SystemExit(main())
