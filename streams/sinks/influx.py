"""InfluxDB sink (influxdb-client, v2 write API; docs/influxdb.md has the measurements).

Idempotent by construction: a point's series (measurement + tags) and time identify it, so a
re-written window or job total overwrites the earlier point. Writes are synchronous batches;
429 and 5xx answers and connection failures are retried with exponential backoff (honouring
Retry-After), one log line per attempt, until written — the caller blocks meanwhile, holding its
Kafka acks, so nothing is lost while InfluxDB is down and the worker catches up when it returns.
Other 4xx answers are a bug in the points and raise :class:`InfluxError`. Points are lines of
line protocol (:mod:`streams.sinks.lineproto`), which escapes tag values (job ids, cluster
names) and strings: spaces, commas, ``=``, quotes and newlines can neither break a batch nor
inject a point.
"""

from __future__ import annotations

import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from models.drain.live import LiveJob, LiveWindow
from streams.sinks.lineproto import line

BATCH = 5000
# write requests at once for a write of more than a batch: InfluxDB parses and indexes one
# request on one core, and the live job path writes ~1.5 points per job event
WRITERS = 2

_native_bodies: Callable[[Sequence[Any], int, int], list[list[bytes]]] | None
try:
    from drainwatch_native import lp_bodies as _native_bodies
except ImportError:  # pragma: no cover - the pure-Python path (tests force it too)
    _native_bodies = None


def request_bodies(points: Sequence[Any], writers: int = WRITERS,
                   batch: int = BATCH) -> list[list[bytes]]:  # fmt: skip
    """The request bodies of ``points`` (lines; '' and None left out), per writer: a line goes
    to the writer its series names (zlib's crc32 of the text before its first space, modulo
    ``writers``: the same series, the same writer, so a point written twice keeps its order),
    in bodies of at most ``batch`` lines joined by newlines, in the points' order. Compiled
    where it is built (native/src/lineproto.rs: the same bodies, tests/streams/sinks/
    test_influx_bodies.py): a Python step per line held the worker's lock ~0.37 us a point."""
    if _native_bodies is not None:
        return _native_bodies(points, writers, batch)
    parts: list[list[str]] = [[] for _ in range(max(writers, 1))]
    for p in points:
        if p:
            k = p.find(" ")
            parts[zlib.crc32((p if k < 0 else p[:k]).encode()) % len(parts)].append(p)
    return [["\n".join(part[i : i + batch]).encode() for i in range(0, len(part), batch)]
            for part in parts]  # fmt: skip


class InfluxError(RuntimeError):
    """InfluxDB refused points for a reason retrying cannot fix."""


def _num(x: float | None) -> float | None:
    return None if x is None else float(x)


def window_point(cluster: str, w: LiveWindow) -> str:
    ns = w.start_ms * 1_000_000
    fields: dict[str, Any] = {
        "nodes": w.nodes,
        "length_seconds": w.length_ms / 1000,
        **w.node_seconds(),
        "basis_seconds_per_node": float(w.basis_seconds_per_node),
        "data_quality": w.data_quality,
        "provisional": w.provisional,
        # absent, not 0: a missing basis is not a measured zero
        "drain_pct_static": _num(w.drain_pct_static),
        "drain_pct_dynamic": _num(w.drain_pct_dynamic),
    }
    return line("drain", {"cluster": cluster, "window": w.unit}, fields, ns)


def state_points(cluster: str, w: LiveWindow) -> list[str]:
    """``node_states``: node-seconds per state and (rsv, job) combination of an hour or day."""
    out = []
    ns = w.start_ms * 1_000_000
    for state, combos in (w.states or {}).items():
        for i, ms in enumerate(combos):
            if not ms:
                continue
            tags = {"cluster": cluster, "window": w.unit, "state": state,
                    "has_rsv": str(i >> 1), "has_job": str(i & 1)}  # fmt: skip
            fields = {"node_seconds": ms / 1000, "provisional": w.provisional}
            out.append(line("node_states", tags, fields, ns))
    return out


def job_point(cluster: str, j: LiveJob) -> str:
    """A job's running totals at ``j.time_ms`` (the first charge as first written, kept by the
    combiner), so every later total of the job overwrites the same point. The job id is a
    field, not a tag (InfluxDB 1.x refuses a tag's 100,001st value and stops the writes; a
    series per job is costly in any version): crc32(job id) mod 10^6 in the nanoseconds below
    the millisecond keeps two jobs first charged in the same millisecond apart, as the job
    measurements do (streams/sinks/jobpoints.py)."""
    fields = {
        "job": j.job,
        "drain_node_seconds": j.drain_ms / 1000,
        "nodes_charged": j.nodes_charged,
        "first_charged_ms": j.first_charged_ms,
        "last_charged_ms": j.last_charged_ms,
        "nodes_running": j.nodes_running,
    }
    ns = j.time_ms * 1_000_000 + zlib.crc32(j.job.encode()) % 1_000_000
    return line("drain_job", {"cluster": cluster}, fields, ns)


@dataclass
class SinkStats:
    writes: int = 0
    points: int = 0
    retries: int = 0
    seconds: float = 0.0  # time spent writing, retries included
    last_error: str = ""
    by_status: dict[str, int] = field(default_factory=dict)


class InfluxSink:
    def __init__(
        self,
        url: str,
        token: str,
        org: str,
        bucket: str,
        cluster: str = "default",
        log: Callable[[str], None] | None = None,
        max_delay_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from influxdb_client import InfluxDBClient

        self.client = InfluxDBClient(url=url, token=token, org=org, timeout=30_000, retries=False)
        self.bucket = bucket
        self.org = org
        self.cluster = cluster
        self.log = log or (lambda m: print(m, file=sys.stderr, flush=True))
        self.max_delay_s = max_delay_s
        self.sleep = sleep
        self.stats = SinkStats()
        self._api: Any = None
        self._pool: Any = None  # the writers' threads, made at the first large write
        self._stats_lock = threading.Lock()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
        self.client.close()

    def write_windows(self, rows: Iterable[LiveWindow]) -> None:
        points = []
        for w in rows:
            points.append(window_point(self.cluster, w))
            points += state_points(self.cluster, w)
        self.write(points)

    def write_jobs(self, rows: Iterable[LiveJob]) -> None:
        self.write([job_point(self.cluster, j) for j in rows])

    def write(self, points: Sequence[str]) -> None:
        """Lines of line protocol (nanosecond times; '' for a point without fields: none).
        More than a batch is written by ``WRITERS`` requests at once, each line by the writer
        its series names (:func:`request_bodies`: the same series, the same writer, so a point
        written twice keeps its order)."""
        writers = WRITERS if len(points) > BATCH else 1
        parts = [p for p in request_bodies(points, writers, BATCH) if p]
        if len(parts) <= 1:
            for bodies in parts:
                self._write_bodies(bodies)
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(WRITERS, thread_name_prefix="influx-write")
        futures = [self._pool.submit(self._write_bodies, bodies) for bodies in parts]
        errors = [f.exception() for f in futures]  # every writer done, then the first error
        for e in errors:
            if e is not None:
                raise e

    def _write_bodies(self, bodies: Sequence[bytes]) -> None:
        for body in bodies:
            self._write_batch(body)

    def _write_batch(self, body: bytes) -> None:
        """One request: ``body``, lines joined by newlines."""
        from influxdb_client.client.write_api import SYNCHRONOUS
        from influxdb_client.rest import ApiException

        if not body:
            return
        with self._stats_lock:  # writers share the client's write API and the counts
            if self._api is None:
                self._api = self.client.write_api(write_options=SYNCHRONOUS)
        t0 = time.monotonic()
        delay, attempt = 0.5, 1
        while True:
            try:
                self._api.write(bucket=self.bucket, org=self.org, record=body)
                break
            except ApiException as e:
                status = int(e.status or 0)
                with self._stats_lock:
                    by = self.stats.by_status
                    by[str(status)] = by.get(str(status), 0) + 1
                if status != 429 and status < 500:
                    raise InfluxError(
                        f"InfluxDB refused the points: HTTP {status} {str(e.body)[:300]!r}"
                    ) from None
                wait = _retry_after(e) or delay
                why = f"HTTP {status}"
            except Exception as e:  # connection refused, reset, timeout: InfluxDB is down
                wait = delay
                why = f"{type(e).__name__}: {e}".splitlines()[0][:160]
            with self._stats_lock:
                self.stats.retries += 1
                self.stats.last_error = why
            self.log(f"influxdb: write failed (attempt {attempt}: {why}); retrying in {wait:.1f} s")
            self.sleep(wait)
            delay, attempt = min(delay * 2, self.max_delay_s), attempt + 1
        with self._stats_lock:
            self.stats.writes += 1
            self.stats.points += body.count(b"\n") + 1
            self.stats.seconds += time.monotonic() - t0


def _retry_after(e: Any) -> float | None:
    headers = getattr(e, "headers", None) or {}
    v = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(v)) if v is not None else None
    except ValueError:
        return None
