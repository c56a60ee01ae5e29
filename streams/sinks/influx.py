"""InfluxDB sink (influxdb-client, v2 write API; docs/influxdb.md has the measurements).

Idempotent by construction: a point's series (measurement + tags) and time identify it, so a
re-written window or job total overwrites the earlier point, and a replay written twice
overwrites itself. Writes are synchronous batches; 429 and 5xx answers and connection failures
are retried with exponential backoff (honouring Retry-After), one log line per attempt, until
written — the caller blocks meanwhile, holding its Kafka acks, so nothing is lost while InfluxDB
is down and the worker catches up when it returns. Other 4xx answers are a bug in the points and
raise :class:`InfluxError`. Points are lines of line protocol (:mod:`streams.sinks.lineproto`),
which escapes tag values (job ids, cluster names) and strings: spaces, commas, ``=``, quotes and
newlines can neither break a batch nor inject a point.

:class:`InfluxSink` is a :class:`~streams.contracts.Sink` (the driver writes ``replay --influx``
through it like any other sink: table rows in, the measurements of
:mod:`streams.sinks.points` out) and the live worker's writer of ready lines
(:meth:`InfluxSink.write_lines`).
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from models.drain.live import LiveJob, LiveWindow
from streams.contracts import Row, Table
from streams.logs import get as get_logger
from streams.logs import mask
from streams.sinks.lineproto import line
from streams.sinks.points import Measurement, measurement_of

BATCH = 5000
# write requests at once for a write of more than a batch: InfluxDB parses and indexes one
# request on one core, and the live job path writes ~1.5 points per job event
WRITERS = 2
# lines the Sink contract holds before it writes them (memory stays bounded on a long replay)
FLUSH_POINTS = 4 * BATCH

_LOG = get_logger("influx")

_native_bodies: Callable[[Sequence[Any], int, int], list[list[bytes]]] | None
try:
    from drainwatch_native import lp_bodies as _native_bodies
except ImportError:  # pragma: no cover - the pure-Python path (tests force it too)
    _native_bodies = None


def request_bodies(
    points: Sequence[Any], writers: int = WRITERS, batch: int = BATCH
) -> list[list[bytes]]:
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
    return [
        ["\n".join(part[i : i + batch]).encode() for i in range(0, len(part), batch)]
        for part in parts
    ]


class InfluxError(RuntimeError):
    """InfluxDB refused points for a reason retrying cannot fix."""


def _num(x: float | None) -> float | None:
    return None if x is None else float(x)


def window_point(cluster: str, w: LiveWindow) -> str:
    """A window's ``drain`` point (the reference of LIVE_WINDOWS' rows in streams.sinks.points)."""
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
            tags = {
                "cluster": cluster,
                "window": w.unit,
                "state": state,
                "has_rsv": str(i >> 1),
                "has_job": str(i & 1),
            }
            fields = {"node_seconds": ms / 1000, "provisional": w.provisional}
            out.append(line("node_states", tags, fields, ns))
    return out


def job_point(cluster: str, j: LiveJob) -> str:
    """A job's running totals at ``j.time_ms`` (the first charge as first written, kept by the
    combiner), so every later total of the job overwrites the same point. The job id is a
    field, not a tag (InfluxDB 1.x refuses a tag's 100,001st value and stops the writes; a
    series per job is costly in any version): crc32(job id) mod 10^6 in the nanoseconds below
    the millisecond keeps two jobs first charged in the same millisecond apart, as the job
    measurements do (streams/sinks/points.py)."""
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


class LineSink:
    """Table rows as InfluxDB line protocol: the :class:`~streams.contracts.Sink` contract in
    front of ``write_lines``, the writer of ready lines (InfluxDB itself for
    :class:`InfluxSink`; for the live worker, the checkpoint's batch that its write queue
    writes, streams/live/checkpoint.py).

    :meth:`declare` notes a table's measurement (:mod:`streams.sinks.points`); a table
    without one is ignored by this sink, and so is a table whose rows carry no time of their
    own (run-time predictions, the drain-job join, size groups: their caller knows each row's
    time and gives it to :meth:`write_timed`). :meth:`write` turns rows into lines and holds
    them; past ``flush_points`` lines they go to ``write_lines``. :meth:`commit` hands over
    the rest; :meth:`abort` drops them. :meth:`document` does nothing: InfluxDB keeps no
    files."""

    def __init__(
        self,
        cluster: str,
        tz: str,
        write_lines: Callable[[Sequence[str]], None],
        flush_points: int = FLUSH_POINTS,
    ) -> None:
        self.cluster = cluster
        self.zone = ZoneInfo(tz)  # the zone of day columns (their point is the local midnight)
        self.write_lines = write_lines
        self.flush_points = flush_points
        self._measurements: dict[str, Measurement] = {}  # declared tables' (by file)
        self._pending: list[str] = []  # lines taken, not yet handed over

    def declare(self, table: Table) -> None:
        """Note ``table``'s measurement; a table without one (or without a time column) is
        ignored: its rows are no point of this sink."""
        m = measurement_of(table)
        if m is not None and m.time:
            self._measurements[table.file] = m

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        """The rows' lines, held (handed over at once past ``flush_points``); returns the
        rows taken (0 for a table this sink ignores)."""
        if table.file not in self._measurements:
            self.declare(table)
        m = self._measurements.get(table.file)
        if m is None or m.table != table:
            return 0
        batch = rows if isinstance(rows, list) else list(rows)
        self._take(m.lines(self.cluster, batch, self.zone))
        return len(batch)

    def write_timed(self, table: Table, rows: Sequence[Row], times: Sequence[float]) -> int:
        """Rows of a table whose point time is not a column (run-time predictions at the
        job's end, the drain-job join at the job's stamp...), each at its time in ``times``
        (POSIX seconds); held as :meth:`write`'s."""
        m = measurement_of(table)
        if m is None:
            raise ValueError(f"{table.file}: no InfluxDB measurement")
        self._take(m.lines(self.cluster, rows, self.zone, times))
        return len(rows)

    def document(self, name: str, data: bytes) -> None:
        """Nothing: InfluxDB keeps no files (summaries, lookup tables)."""

    def commit(self) -> None:
        """Hand every line still held to ``write_lines``."""
        pending, self._pending = self._pending, []
        if pending:
            self.write_lines(pending)

    def abort(self) -> None:
        """Drop the lines not yet handed over."""
        self._pending = []

    def _take(self, lines: Iterable[str]) -> None:
        self._pending += [p for p in lines if p]  # '': a row without fields, no point
        if len(self._pending) >= self.flush_points:
            self.commit()


class InfluxSink:
    """InfluxDB as a :class:`~streams.contracts.Sink`, and the writer of ready lines.

    The contract: :meth:`declare` notes a table's measurement (:mod:`streams.sinks.points`);
    a table without one is ignored by this sink, and so is a table whose rows carry no time of
    their own (run-time predictions, job utilisation, the drain-job join, size groups: their
    caller knows each row's time and gives it to :meth:`write_timed`). :meth:`write` turns rows
    into the lines the live path writes for that table and holds them; past ``flush_points``
    lines they are written. :meth:`commit` writes the rest and returns once InfluxDB has every
    line (retrying as above; :class:`InfluxError` when it refuses them). :meth:`abort` drops
    the lines not yet written: InfluxDB has no transaction, so lines written before stay (they
    are idempotent: the next run writes them again). :meth:`document` does nothing: InfluxDB
    keeps no files.

    ``post``: the request that writes one body (default: influxdb-client's synchronous write
    API on ``url``); a test gives a stand-in and no client is made."""

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
        *,
        tz: str = "UTC",
        flush_points: int = FLUSH_POINTS,
        post: Callable[[bytes], None] | None = None,
    ) -> None:
        self.client: Any = None
        if post is None:
            from influxdb_client import InfluxDBClient

            self.client = InfluxDBClient(
                url=url, token=token, org=org, timeout=30_000, retries=False
            )
        self.url = url
        self.bucket = bucket
        self.org = org
        self.cluster = cluster
        self.log = log
        self.max_delay_s = max_delay_s
        self.sleep = sleep
        self.flush_points = flush_points
        self.stats = SinkStats()
        self._post = post
        self._api: Any = None
        self._pool: Any = None  # the writers' threads, made at the first large write
        self._stats_lock = threading.Lock()
        self.rows = LineSink(cluster, tz, self.write_lines, flush_points)  # the contract

    def __repr__(self) -> str:
        return f"InfluxSink({mask(self.url)!r}, bucket={self.bucket!r})"

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
        if self.client is not None:
            self.client.close()

    # ---- the Sink contract (its LineSink's, the lines written to InfluxDB) ------------------

    @property
    def zone(self) -> ZoneInfo:
        """The zone of day columns (their point is the local midnight)."""
        return self.rows.zone

    @zone.setter
    def zone(self, zone: ZoneInfo) -> None:
        self.rows.zone = zone

    def declare(self, table: Table) -> None:
        self.rows.declare(table)

    def write(self, table: Table, rows: Iterable[Row]) -> int:
        return self.rows.write(table, rows)

    def write_timed(self, table: Table, rows: Sequence[Row], times: Sequence[float]) -> int:
        return self.rows.write_timed(table, rows, times)

    def document(self, name: str, data: bytes) -> None:
        """Nothing: InfluxDB keeps no files (summaries, lookup tables)."""

    def commit(self) -> None:
        """Write every line still held; returns once InfluxDB has them all."""
        self.rows.commit()

    def abort(self) -> None:
        """Drop the lines not yet written (those written before stay: see the class)."""
        self.rows.abort()

    # ---- ready lines (the live worker) -------------------------------------------------------

    def write_lines(self, points: Sequence[str]) -> None:
        """Lines of line protocol (nanosecond times; '' for a point without fields: none),
        written before this returns. More than a batch is written by ``WRITERS`` requests at
        once, each line by the writer its series names (:func:`request_bodies`: the same
        series, the same writer, so a point written twice keeps its order)."""
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

    def _send(self, body: bytes) -> None:
        """One request of ``body`` (the stand-in's, else the client's write API)."""
        if self._post is not None:
            self._post(body)
            return
        from influxdb_client.client.write_api import SYNCHRONOUS

        with self._stats_lock:  # writers share the client's write API
            if self._api is None:
                self._api = self.client.write_api(write_options=SYNCHRONOUS)
        self._api.write(bucket=self.bucket, org=self.org, record=body)

    def _write_batch(self, body: bytes) -> None:
        """One body (lines joined by newlines), retried until written or refused."""
        from influxdb_client.rest import ApiException

        if not body:
            return
        t0 = time.monotonic()
        delay, attempt = 0.5, 1
        while True:
            try:
                self._send(body)
                break
            except ApiException as e:
                status = int(e.status or 0)
                with self._stats_lock:
                    by = self.stats.by_status
                    by[str(status)] = by.get(str(status), 0) + 1
                if status != 429 and status < 500:
                    answer = mask(str(e.body))[:300]  # masked, then cut
                    raise InfluxError(
                        f"InfluxDB refused the points: HTTP {status} {answer!r}"
                    ) from None
                wait = _retry_after(e) or delay
                why = f"HTTP {status}"
            except Exception as e:  # connection refused, reset, timeout: InfluxDB is down
                wait = delay
                why = mask(f"{type(e).__name__}: {e}".splitlines()[0])[:160]
            with self._stats_lock:
                self.stats.retries += 1
                self.stats.last_error = why
            if self.log is not None:
                self.log(
                    f"influxdb: write failed (attempt {attempt}: {why}); retrying in {wait:.1f} s"
                )
            else:
                _LOG.warning(
                    "write failed (attempt %d: %s); retrying in %.1f s", attempt, why, wait
                )
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
