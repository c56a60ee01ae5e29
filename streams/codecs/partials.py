"""The partials topics: what a worker's per-partition agents send to its combiners.

* ``drain-partials``: a node-status partition's absolute totals of what changed
  (:class:`models.drain.live.Partial`), JSON ``{"v": 1, "partition", "watermark_ms", "nodes",
  "windows", "jobs", "counts", "states"}``.
* ``jobs-partials``: a job-events partition's checked events by source offset, JSON
  ``{"v": 1, "partition", "events": [[offset, [row, ...]], ...]}`` with rows of
  :func:`models.records.jobevent.jobevent_row`, or a shipper's marker as an entry of one
  object, ``[offset, [{"control", "source", "ts", "sent"}]]`` (``streams.codecs.control``,
  in its place among the events: what it covers came before it); and, on partition -1, the
  drain combiner's totals of the jobs that changed, for the job path's join: ``{"v": 1,
  "partition": -1,
  "drain": [[job, drain_ms, nodes_charged, first_ms, last_ms, nodes_running, time_ms], ...],
  "watermark_ms"}``.
* ``samples-partials``: a node-samples partition's samples as one binary batch of columns
  (:meth:`models.samples.batch.SampleBatch.to_bytes`); the magic ``DWS1`` is its version. The
  header's ``events`` are ``[offset, samples]`` entries; its optional ``markers``, the shippers'
  markers among them, ``[offset, {"control", "source", "ts", "sent"}]`` (``streams.codecs.
  control``; in offset order with the events: what a marker covers came before it). A
  release before markers ignores ``markers`` and reads the samples.

The JSON partials were written without ``"v"`` by the release before versions, the same layout
otherwise: a message without ``"v"`` reads as version 1, so partials in flight across an upgrade
still read. Formats only an earlier generation wrote are refused by name (``old_generation``):
drain partials without node states, join totals without the job's point time, job partials of
event objects, JSON sample partials. Schemas: ``streams/schemas/*-partials.v1.json``.

Every message is at most ``kafka.message_max_bytes`` (``max_bytes``) by construction: a drain
partial is sent in parts (:func:`encode_drain_partials`), the join totals, job and sample
partials in runs that fit (between source offsets: a message's records share its offset).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from models.drain.live import UNITS, LiveJob, Partial
from models.records.jobevent import JobEvent, jobevent_from_row
from models.samples.batch import MAGIC as SAMPLES_MAGIC
from models.samples.batch import SampleBatch
from streams.codecs.base import MESSAGE_MAX_BYTES, CodecError, check_version, load_object
from streams.codecs.control import Marker, marker_from, marker_obj

T = TypeVar("T")

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
    """A partition's partial (:meth:`models.drain.live.PartitionDrain.partial`) as one message
    (whatever its size; the worker sends :func:`encode_drain_partials`); key: the partition."""
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


def _drain_message(
    p: Partial,
    wm: int | None,
    windows: list[bytes],
    jobs: list[bytes],
    states: list[bytes],
    counts: bytes,
) -> bytes:
    """:func:`encode_drain_partial`'s bytes (the same layout) of rows already in JSON."""
    head = b'{"v":%d,"partition":%d,"watermark_ms":%b,"nodes":%d,' % (
        VERSION,
        p.partition,
        b"null" if wm is None else b"%d" % wm,
        p.nodes,
    )
    rows = b'"windows":[%b],"jobs":[%b],"counts":%b,"states":[%b]}' % (
        b",".join(windows),
        b",".join(jobs),
        counts,
        b",".join(states),
    )
    return head + rows


def encode_drain_partials(p: Partial, max_bytes: int = MESSAGE_MAX_BYTES) -> list[bytes]:
    """``p`` as messages of at most ``max_bytes`` each, for the combiner to apply in order
    (:meth:`models.drain.live.DrainCombiner.add`, one by one: the same state as ``p`` whole).

    The rules that keep it exact: rows are absolute totals, each in one part; windows first,
    then the hour and day node states (the combiner ignores the states of a window it does not
    have, so a window's states come in the same part as its row or a later one), then jobs;
    only the last part carries the watermark (no window closes before all its totals came);
    nodes and counts ride on every part (absolute too). One message, equal to
    :func:`encode_drain_partial`, when ``p`` fits."""
    counts = orjson.dumps(p.counts)
    sections: list[list[bytes]] = [
        [orjson.dumps(w) for w in p.windows],
        [orjson.dumps(j) for j in p.jobs],
        [orjson.dumps([u, st, d]) for u, st, d in p.states],
    ]
    base = max(len(_drain_message(p, wm, [], [], [], counts)) for wm in (None, p.watermark_ms))
    parts: list[list[list[bytes]]] = []
    cur: list[list[bytes]] = [[], [], []]
    size = base
    for sec in (0, 2, 1):  # windows, states, jobs
        for row in sections[sec]:
            add = len(row) + (1 if cur[sec] else 0)  # a comma after the section's first row
            if size + add > max_bytes and any(cur):
                parts.append(cur)
                cur, size, add = [[], [], []], base, len(row)
            if size + add > max_bytes:
                raise ValueError(
                    f"drain partial of partition {p.partition}: a row of {len(row)} bytes does "
                    f"not fit a message of {max_bytes} bytes (kafka.message_max_bytes)"
                )
            cur[sec].append(row)
            size += add
    parts.append(cur)
    last = len(parts) - 1
    out = [
        _drain_message(p, p.watermark_ms if i == last else None, w, j, s, counts)
        for i, (w, j, s) in enumerate(parts)
    ]
    assert all(len(v) <= max_bytes for v in out), "encode_drain_partials: sizes miscounted"
    return out


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
    # the shippers' markers among them (streams.codecs.control), by source offset
    markers: list[tuple[int, Marker]] = field(default_factory=list)


def job_marker_entry(m: Marker) -> list[bytes]:
    """The rows of a marker's entry: ``[offset, [{"control", "source", "ts", "sent"}]]`` (an
    entry of one object; event rows are lists), so it goes through the encoders unchanged."""
    return [orjson.dumps(marker_obj(m))]


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


def split_job_partial(
    p: int, entries: Sequence[Sequence[Any]], max_bytes: int = MESSAGE_MAX_BYTES
) -> list[bytes]:
    """:func:`encode_job_partial` of ``entries`` in messages of at most ``max_bytes``, cut
    between entries (an entry's rows share its source offset, which the merger keeps once:
    they stay in one message). ValueError if one entry alone does not fit."""
    if not entries:
        return []
    items = [b"[%d,[%b]]" % (off, b",".join(rows)) for off, rows in entries]
    head = b'{"v":%d,"partition":%d,"events":[' % (VERSION, p)
    return _runs(items, head, b"]}", max_bytes, 0, f"job partial of partition {p}")


def _runs(
    items: list[bytes], head: bytes, tail: bytes, max_bytes: int, most: int, what: str
) -> list[bytes]:
    """``head + b",".join(run) + tail`` of runs of ``items`` in order, each at most
    ``max_bytes`` (and ``most`` items, 0: any number)."""
    base = len(head) + len(tail)
    out: list[bytes] = []
    run: list[bytes] = []
    size = base
    for item in items:
        add = len(item) + (1 if run else 0)
        if run and (size + add > max_bytes or len(run) == most):
            out.append(head + b",".join(run) + tail)
            run, size, add = [], base, len(item)
        if size + add > max_bytes:
            raise ValueError(
                f"{what}: an entry of {len(item)} bytes does not fit a message of {max_bytes} "
                "bytes (kafka.message_max_bytes)"
            )
        run.append(item)
        size += add
    if run:
        out.append(head + b",".join(run) + tail)
    return out


def encode_drain_totals(
    jobs: Sequence[LiveJob], watermark_ms: int | None, max_bytes: int = MESSAGE_MAX_BYTES
) -> list[bytes]:
    """The join messages of ``jobs`` (at most JOIN_ROWS each and ``max_bytes``; key
    JOIN_KEY), each with the watermark. The rows are absolute totals: any cut reads the same."""
    rows = [
        orjson.dumps(
            [
                j.job,
                j.drain_ms,
                j.nodes_charged,
                j.first_charged_ms,
                j.last_charged_ms,
                j.nodes_running,
                j.time_ms,
            ]
        )
        for j in jobs
    ]
    head = b'{"v":%d,"partition":%d,"drain":[' % (VERSION, JOIN_PARTITION)
    tail = b'],"watermark_ms":%b}' % (b"null" if watermark_ms is None else b"%d" % watermark_ms)
    return _runs(rows, head, tail, max_bytes, JOIN_ROWS, "drain totals")


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
    markers: list[tuple[int, Marker]] = []
    for e in entries:
        if type(e) is not list or len(e) != 2 or type(e[0]) is not int or type(e[1]) is not list:
            raise _bad(what, "'events' must be [offset, [row, ...]] entries")
        off, rows = e
        if rows and type(rows[0]) is not list:
            if type(rows[0]) is dict and "control" in rows[0] and len(rows) == 1:
                markers.append((off, marker_from(rows[0], what)))  # a shipper's marker
                continue
            if type(rows[0]) is dict:
                raise _old(what, "job partials carried rows (event objects)")
            raise _bad(what, f"a record is {type(rows[0]).__name__}, not a row")
        try:
            out.append((off, [jobevent_from_row(r) for r in rows]))
        except (TypeError, IndexError, KeyError, AttributeError):
            raise _bad(what, f"a record at offset {off} is not a job-event row") from None
    return JobPartial(p, out, markers)


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
    # the shippers' markers among them (streams.codecs.control), by source offset
    markers: list[tuple[int, Marker]] = field(default_factory=list)


def encode_sample_partial(p: int, entries: Sequence[Sequence[Any]]) -> bytes:
    """The (offset, SampleBatch or Marker) entries as one batch of columns, a third of the
    lines' size and read back without parsing; each batch entry's offset and number of
    samples in the header's ``events``, each marker's offset and fields in its ``markers``
    (present only when there is one)."""
    batches = [(off, b) for off, b in entries if not isinstance(b, Marker)]
    marks = [[off, marker_obj(m)] for off, m in entries if isinstance(m, Marker)]
    batch = SampleBatch.concat([b for _off, b in batches])
    head: dict[str, Any] = {"partition": p, "events": [[off, len(b)] for off, b in batches]}
    if marks:
        head["markers"] = marks
    return batch.to_bytes(head)


def sample_entry_weight(x: Any) -> int:
    """The samples of a samples-partials entry (a marker: 1)."""
    return 1 if isinstance(x, Marker) else len(x)


def split_sample_partial(
    p: int, entries: Sequence[Sequence[Any]], max_bytes: int = MESSAGE_MAX_BYTES
) -> list[bytes]:
    """:func:`encode_sample_partial` of ``entries`` in messages of at most ``max_bytes``, cut
    between entries (an entry's samples share its source offset, which the merger keeps once).
    One message when they fit (one encoding); else cut in proportion to the samples and each
    run checked again. ValueError if one entry alone does not fit."""
    what = f"sample partial of partition {p}"
    return _fitted(
        list(entries),
        lambda run: encode_sample_partial(p, run),
        lambda e: sample_entry_weight(e[1]),
        max_bytes,
        what,
    )


def _fitted(
    entries: list[T],
    encode: Callable[[list[T]], bytes],
    weight: Callable[[T], int],
    max_bytes: int,
    what: str,
) -> list[bytes]:
    """``encode(run)`` of runs of ``entries`` in order, each at most ``max_bytes``: the whole
    if it fits, else runs of about equal weight, as many as the size asks, each fitted again."""
    if not entries:
        return []
    value = encode(entries)
    if len(value) <= max_bytes:
        return [value]
    if len(entries) == 1:
        raise ValueError(
            f"{what}: one source message takes {len(value)} bytes, more than a message of "
            f"{max_bytes} bytes (kafka.message_max_bytes)"
        )
    pieces = min(len(entries), -(-len(value) // max_bytes) + 1)
    total = sum(max(1, weight(e)) for e in entries)
    runs: list[list[T]] = [[]]
    acc = 0
    for e in entries:
        if runs[-1] and acc * pieces >= total * len(runs):
            runs.append([])
        runs[-1].append(e)
        acc += max(1, weight(e))
    if len(runs) == 1:  # all the weight in the first entry: cut after it
        runs = [entries[:1], entries[1:]]
    return [v for run in runs for v in _fitted(run, encode, weight, max_bytes, what)]


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
    marks = head.get("markers", [])
    if type(marks) is not list:
        raise _bad(what, "'markers' must be [offset, marker] entries")
    markers: list[tuple[int, Marker]] = []
    for e in marks:
        if type(e) is not list or len(e) != 2 or type(e[0]) is not int or type(e[1]) is not dict:
            raise _bad(what, "'markers' must be [offset, marker] entries")
        markers.append((e[0], marker_from(e[1], what)))
    return SamplePartial(p, out, markers)
