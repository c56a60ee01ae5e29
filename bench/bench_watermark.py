"""Source-watermark benchmark (issue 30): how far the job merger's watermark trails the newest
event on the real phillips sacct dump (``../shared/data/sacct/phillips.log``), with and without
the shippers' markers, and the event-time latency of the alerts its releases drive.

The dump goes through ``streams.sources.jobship.ship_job_files`` (the ``ship jobs`` code) into
a recording producer; its messages, in the order the shipper sent them (what a consumer that
keeps up sees), feed :class:`models.jobs.merge.JobEventMerger` (8 partitions, lateness
``--lateness``) one message at a time, releasing after each as the worker does. Reported:

* watermark lag: after each message, newest event time seen - the merger's watermark (event
  seconds, the lateness included), p50/p90/p99/max;
* alert latency: per released event, the newest event time seen when it was released minus its
  own time: how long (event time) a short-job flood, overrun or capability row waits for it;
* at the end of the file: the events still held (without markers they are never released:
  nothing says the input ended), and the messages markers cost.

Run: ``.venv/bin/python bench/bench_watermark.py [--lateness 600] [--interval 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from models.jobs.merge import JobEventMerger  # noqa: E402
from models.records.jobevent import jobevent_from_dict  # noqa: E402
from models.records.plausible import TimeBounds  # noqa: E402
from streams.codecs.control import decode_marker, is_marker  # noqa: E402
from streams.sources.jobship import ship_job_files  # noqa: E402

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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
