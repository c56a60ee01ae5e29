"""The partials topics: what a worker's per-partition agents send to its combiners.

* ``drain-partials``: a node-status partition's absolute totals of what changed
  (:class:`models.drain.live.Partial`), JSON ``{"v": 1, "partition", "watermark_ms", "nodes",
  "windows", "jobs", "counts", "states"}``.
* ``jobs-partials``: a job-events partition's checked events by source offset, JSON
  ``{"v": 1, "partition", "events": [[offset, [row, ...]], ...]}`` with rows of
  :func:`models.records.jobevent.jobevent_row`; and, on partition -1, the drain combiner's
  totals of the jobs that changed, for the job path's join: ``{"v": 1, "partition": -1,
  "drain": [[job, drain_ms, nodes_charged, first_ms, last_ms, nodes_running, time_ms], ...],
  "watermark_ms"}``.
* ``samples-partials``: a node-samples partition's samples as one binary batch of columns
  (:meth:`models.samples.batch.SampleBatch.to_bytes`); the magic ``DWS1`` is its version.

The JSON partials were written without ``"v"`` by the release before versions, the same layout
otherwise: a message without ``"v"`` reads as version 1, so partials in flight across an upgrade
still read. Formats only an earlier generation wrote are refused by name (``old_generation``):
drain partials without node states, join totals without the job's point time, job partials of
event objects, JSON sample partials. Schemas: ``streams/schemas/*-partials.v1.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from models.drain.live import UNITS, LiveJob, Partial
from models.records.jobevent import JobEvent, jobevent_from_row
from models.samples.batch import MAGIC as SAMPLES_MAGIC
from models.samples.batch import SampleBatch
from streams.codecs.base import CodecError, check_version, load_object

VERSION = 1  # of the JSON partials; the sample partials' is SAMPLES_MAGIC
JOIN_PARTITION = -1  # the join totals' partition on jobs-partials
JOIN_KEY = b"drain"  # their message key
JOIN_ROWS = 2000  # jobs per join message
_STATE_UNITS = ("hour", "day")  # the windows a partial reports node states of


def _old(what: str, before: str) -> CodecError:
    return CodecError(
        "old_generation", f"{what}: written by drainwatch before {before}; not read by this release"
    )


def _bad(what: str, detail: str) -> CodecError:
    return CodecError("bad_message", f"{what}: {detail}")


def _ints(x: Any, n: int) -> bool:
    """``x`` is a list of ``n`` values: a string, then integers."""
    return (
        type(x) is list and len(x) == n and type(x[0]) is str and all(type(v) is int for v in x[1:])
    )


# ---- drain-partials -------------------------------------------------------------------------
def encode_drain_partial(p: Partial) -> bytes:
    """A partition's partial (:meth:`models.drain.live.PartitionDrain.partial`); key: the
    partition number."""
    return orjson.dumps(
        {
            "v": VERSION,
            "partition": p.partition,
            "watermark_ms": p.watermark_ms,
            "nodes": p.nodes,
            "windows": [list(w) for w in p.windows],
            "jobs": [list(j) for j in p.jobs],
            "counts": p.counts,
            "states": [[u, st, d] for u, st, d in p.states],
        }
    )


def decode_drain_partial(value: bytes) -> Partial:
    """The partial for :meth:`models.drain.live.DrainCombiner.add`; every field checked."""
    what = "drain partial"
    d = load_object(value, what)
    check_version(d, what, VERSION, missing_ok=True)
    if "states" not in d and "windows" in d:
        raise _old(what, "partials carried node states ('states')")
    partition, wm, nodes = d.get("partition"), d.get("watermark_ms"), d.get("nodes")
    if type(partition) is not int or type(nodes) is not int:
        raise _bad(what, "'partition' and 'nodes' must be integers")
    if wm is not None and type(wm) is not int:
        raise _bad(what, "'watermark_ms' must be an integer or null")
    windows, jobs, counts, states = (d.get(k) for k in ("windows", "jobs", "counts", "states"))
    if type(windows) is not list or not all(_ints(w, 8) and w[0] in UNITS for w in windows):
        raise _bad(what, "'windows' must be [unit, 7 integers] rows")
    if type(jobs) is not list or not all(_ints(j, 7) for j in jobs):
        raise _bad(what, "'jobs' must be [job, 6 integers] rows")
    if type(counts) is not dict or not all(type(v) is int for v in counts.values()):
        raise _bad(what, "'counts' must map names to integers")
    if type(states) is not list or not all(_state(s) for s in states):
        raise _bad(what, "'states' must be [unit, start_ms, {state: [integers]}] rows")
    return Partial(
        partition,
        wm,
        nodes,
        [tuple(w) for w in windows],
        [tuple(j) for j in jobs],
        counts,
        [(u, st, sd) for u, st, sd in states],
    )


def _state(s: Any) -> bool:
    return (
        type(s) is list
        and len(s) == 3
        and s[0] in _STATE_UNITS
        and type(s[1]) is int
        and type(s[2]) is dict
        and all(type(v) is list and all(type(x) is int for x in v) for v in s[2].values())
    )


# ---- jobs-partials --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class JobPartial:
    """A job-events partition's events by source offset, in offset order."""

    partition: int
    events: list[tuple[int, list[JobEvent]]]


@dataclass(frozen=True, slots=True)
class DrainTotals:
    """The drain combiner's totals of the jobs that changed, and its watermark (every
    node-status partition is past it), for the job path's join
    (:meth:`models.drain.jobjoin.DrainJobJoin.drain`)."""

    rows: list[tuple[str, int, int, int, int, int, int]]  # LiveJob's fields in order
    watermark_ms: int | None


def encode_job_partial(p: int, entries: Sequence[Sequence[Any]]) -> bytes:
    """A partials message of partition ``p``: its (offset, rows) entries, the rows already in
    JSON (bytes of :func:`models.records.jobevent.jobevent_row`'s lists). Joined as bytes, not
    built as objects and dumped: the job path forwards every event through here."""
    events = b",".join(b"[%d,[%b]]" % (off, b",".join(rows)) for off, rows in entries)
    return b'{"v":%d,"partition":%d,"events":[%b]}' % (VERSION, p, events)


def encode_drain_totals(jobs: Sequence[LiveJob], watermark_ms: int | None) -> list[bytes]:
    """The join messages of ``jobs`` (at most JOIN_ROWS each; key JOIN_KEY)."""
    return [
        orjson.dumps(
            {
                "v": VERSION,
                "partition": JOIN_PARTITION,
                "drain": [
                    [
                        j.job,
                        j.drain_ms,
                        j.nodes_charged,
                        j.first_charged_ms,
                        j.last_charged_ms,
                        j.nodes_running,
                        j.time_ms,
                    ]
                    for j in jobs[i : i + JOIN_ROWS]
                ],
                "watermark_ms": watermark_ms,
            }
        )
        for i in range(0, len(jobs), JOIN_ROWS)
    ]


def decode_job_partial(value: bytes) -> JobPartial | DrainTotals:
    """A jobs-partials message: a partition's events, or (partition -1) the drain totals.
    The rows were checked by the forwarder that wrote them (one release writes and reads this
    topic): a row is only checked to make a JobEvent."""
    what = "jobs partial"
    d = load_object(value, what)
    check_version(d, what, VERSION, missing_ok=True)
    p = d.get("partition")
    if type(p) is not int:
        raise _bad(what, "'partition' must be an integer")
    if "drain" in d:
        return _drain_totals(d, p)
    entries = d.get("events")
    if type(entries) is not list or len(d) > 2 + ("v" in d):
        raise _bad(what, "fields are v, partition and events (or drain, watermark_ms)")
    out: list[tuple[int, list[JobEvent]]] = []
    for e in entries:
        if type(e) is not list or len(e) != 2 or type(e[0]) is not int or type(e[1]) is not list:
            raise _bad(what, "'events' must be [offset, [row, ...]] entries")
        off, rows = e
        if rows and type(rows[0]) is not list:
            if type(rows[0]) is dict:
                raise _old(what, "job partials carried rows (event objects)")
            raise _bad(what, f"a record is {type(rows[0]).__name__}, not a row")
        try:
            out.append((off, [jobevent_from_row(r) for r in rows]))
        except (TypeError, IndexError, KeyError, AttributeError):
            raise _bad(what, f"a record at offset {off} is not a job-event row") from None
    return JobPartial(p, out)


def _drain_totals(d: dict[str, Any], p: int) -> DrainTotals:
    what = "drain totals"
    rows, wm = d["drain"], d.get("watermark_ms")
    if p != JOIN_PARTITION or "events" in d:
        raise _bad(what, f"on partition {JOIN_PARTITION}, without events")
    if wm is not None and type(wm) is not int:
        raise _bad(what, "'watermark_ms' must be an integer or null")
    if type(rows) is not list:
        raise _bad(what, "'drain' must be a list of rows")
    for r in rows:
        if not _ints(r, 7):
            if _ints(r, 6):
                raise _old(what, "the join's rows carried the job's point time")
            raise _bad(what, "'drain' rows must be [job, 6 integers]")
    return DrainTotals([tuple(r) for r in rows], wm)


# ---- samples-partials -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SamplePartial:
    """A node-samples partition's samples by source offset, in offset order (each batch a
    slice of one batch: views of the message's bytes)."""

    partition: int
    events: list[tuple[int, SampleBatch]]


def encode_sample_partial(p: int, entries: Sequence[Sequence[Any]]) -> bytes:
    """The (offset, SampleBatch) entries as one batch of columns, a third of the lines' size
    and read back without parsing; each entry's offset and number of samples in the header."""
    batch = SampleBatch.concat([b for _off, b in entries])
    return batch.to_bytes({"partition": p, "events": [[off, len(b)] for off, b in entries]})


def decode_sample_partial(value: bytes) -> SamplePartial:
    """The entries :func:`encode_sample_partial` wrote; the batch and header checked whole."""
    what = "sample partial"
    head4 = bytes(value[:4])
    if head4 != SAMPLES_MAGIC:
        if head4[:3] == SAMPLES_MAGIC[:3]:
            raise CodecError(
                "bad_version",
                f"{what}: {head4!r}, this release reads {SAMPLES_MAGIC.decode()}",
            )
        if bytes(value[:1]) == b"{":
            raise _old(what, f"the binary sample partials ({SAMPLES_MAGIC.decode()})")
        raise CodecError("bad_json", f"{what}: no {SAMPLES_MAGIC.decode()} magic")
    try:
        batch, head = SampleBatch.from_bytes(value)
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise _bad(what, str(err) or type(err).__name__) from None
    p, entries = head.get("partition"), head.get("events")
    if type(p) is not int or type(entries) is not list:
        raise _bad(what, "the header needs 'partition' and 'events'")
    out: list[tuple[int, SampleBatch]] = []
    lo = 0
    for e in entries:
        if type(e) is not list or len(e) != 2 or not all(type(x) is int for x in e) or e[1] < 0:
            raise _bad(what, "'events' must be [offset, samples] entries")
        out.append((e[0], batch.slice(lo, lo + e[1])))
        lo += e[1]
    if lo != len(batch):
        raise _bad(what, f"'events' hold {lo} samples, the batch {len(batch)}")
    return SamplePartial(p, out)
