"""Job events from a stream split over partitions, merged back into the replay's order.

Job events are keyed by job, so one partition holds a job's submit, start and end in order, but
the job analytics (short-job ticks, usage days, turnover, predictions) need every job in time
order. Each partition's events come with their source offsets; :class:`JobEventMerger` holds
them until every partition is past them, then releases them in the replay's order
(``models.formats.jobsource.event_sort_key``: time, then submit < start < end, then job id).

Event time only: a partition's watermark is its latest event time minus the allowed lateness;
the merger's is the lowest over the partitions (all of ``partitions`` once each has reported,
when that set is given). An event at or behind what was already released is late: counted and
returned to be dead-lettered, never fed to an analytic. A re-sent event is recognised by
(partition, offset) and ignored, so at-least-once delivery cannot count a job twice.

Shipper markers (issue 30, ``streams.codecs.control``): a shipper tells every partition how
far its input has got. A partition's bound is the larger of its latest event time and the
lowest marker time over the live shippers that sent markers on it (every event a marker
covers came before it on that partition, so none of those shippers can still send an older
one there); the watermark is the lowest bound minus the lateness. A shipper whose latest send
time is ``shipper_timeout_s`` behind the newest send time seen (the shippers' own clocks: no
clock here) stops counting, and is reported; a shipper that ended on a partition holds it no
longer, and once every live shipper has ended on every partition the merger releases all it
holds (:meth:`JobEventMerger.end`), as the replay does at the end of its input.
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import attrgetter
from typing import Any

from models.formats.jobsource import TYPE_ORDER, event_sort_key
from models.records.jobevent import EVENT_TYPES, JobEvent, jobevent_from_dict
from models.state import StateFormatError
from models.statetree import (
    array_in,
    bool_in,
    dict_in,
    float_in,
    int_in,
    keys_in,
    list_in,
    opt_float_in,
    opt_floats_in,
    opt_floats_out,
    opt_int_in,
    opt_ints_in,
    opt_ints_out,
    ragged_in,
    ragged_out,
    str_in,
    strs_in,
    strs_out,
)

_TS, _TYPE, _JOB = attrgetter("ts"), attrgetter("type"), attrgetter("job")
_INF = float("inf")

SILENT, BACK = "silent", "back"
# a shipper's change of standing: (SILENT or BACK, shipper id, at, its last send time), in
# the shippers' clocks
ShipperChange = tuple[str, str, float, float]


class Shipper:
    """What the markers of one shipper said: its latest send time, its latest event time per
    partition (None: none sent yet), the partitions its input ended on, and whether it stopped
    counting (silent for the timeout)."""

    __slots__ = ("sent", "ts", "ended", "out")

    def __init__(self) -> None:
        self.sent: float | None = None
        self.ts: dict[int, float | None] = {}
        self.ended: set[int] = set()
        self.out = False

    def done(self) -> bool:
        """Its input ended on every partition it spoke on."""
        return bool(self.ts) and self.ended >= self.ts.keys()


class JobEventMerger:
    """Subclasses merge other records: ``sort_key``, ``encode`` and ``decode`` (to_dict),
    ``held_snapshot`` and ``held_restore`` (snapshot) are the record's."""

    @staticmethod
    def sort_key(e: Any) -> Any:
        return event_sort_key(e)

    def _sort_events(self, events: list[Any]) -> list[Any]:
        """Job events in :func:`event_sort_key` order, stable: the keys made by C-level maps
        (no Python call per event) with each event's place as the last key."""
        n = len(events)
        ranks = map(TYPE_ORDER.get, map(_TYPE, events), repeat(3, n))
        keys = sorted(zip(map(_TS, events), ranks, map(_JOB, events), range(n), strict=True))
        return [events[k[3]] for k in keys]

    @staticmethod
    def encode(e: Any) -> Any:
        return e.to_dict()

    @staticmethod
    def decode(d: Any) -> Any:
        return jobevent_from_dict(d)

    def __init__(
        self,
        lateness_s: float = 600.0,
        partitions: int | None = None,
        shipper_timeout_s: float | None = None,
    ) -> None:
        if lateness_s < 0:
            raise ValueError("lateness must be >= 0")
        self.lateness_s = float(lateness_s)
        self.partitions = partitions
        self.shipper_timeout_s = shipper_timeout_s  # None: a silent shipper always counts
        self.shippers: dict[str, Shipper] = {}  # shipper id -> what its markers said
        self.newest_sent: float | None = None  # the newest send time of any marker
        self.input_ended = False  # every live shipper ended everywhere; all was released
        self.latest: dict[int, float] = {}  # partition -> latest event time
        self.offsets: dict[int, int] = {}  # partition -> highest offset taken
        self.held: list[Any] = []
        self.released_to: float | None = None  # every event at or before it was released
        self.duplicates = 0
        self.late = 0

    @property
    def watermark(self) -> float | None:
        latest, n = self.latest, self.partitions
        if not self.shippers:  # no markers: the lowest latest event time over the partitions
            if not latest or n is not None and len(latest) < n:
                return None
            return min(latest.values()) - self.lateness_s
        bounds = self.bounds()
        if not bounds or self.partitions is not None and len(bounds) < self.partitions:
            return None
        # a partition every shipper on it ended on holds the others no longer
        open_ = [b for b, done in bounds.values() if not done]
        lo = min(open_) if open_ else min(b for b, _ in bounds.values())
        return None if lo == -_INF else lo - self.lateness_s

    def bounds(self) -> dict[int, tuple[float, bool]]:
        """Per partition: how far it is (the larger of its latest event time and the lowest
        marker time of the live shippers not ended on it; a live shipper not done that has not
        marked it yet holds it at its events: its first round may reach the other partitions
        first), and whether every live shipper that spoke on it ended there (done)."""
        live = [sh for sh in self.shippers.values() if not sh.out]
        out: dict[int, tuple[float, bool]] = {p: (t, False) for p, t in self.latest.items()}
        for p in {p for sh in live for p in sh.ts}:
            lo: float | None = None  # the lowest marker time of a shipper not ended on p
            top = -_INF  # the highest marker time of one ended on p
            for sh in live:
                if p not in sh.ts:
                    if not sh.done():  # it may still send here: p is at its events only
                        lo = -_INF
                    continue
                t = sh.ts[p]
                if p in sh.ended:
                    top = max(top, -_INF if t is None else t)
                else:
                    lo = min(lo if lo is not None else _INF, -_INF if t is None else t)
                    # (a shipper that sent nothing yet holds p at its events)
            base = self.latest.get(p, -_INF)
            out[p] = (max(base, lo), False) if lo is not None else (max(base, top), True)
        return out

    def newest(self) -> float | None:
        """The newest event time seen (before any, the newest marker time: a marker is sent
        after the events it covers, and claims the time up to the next one, which a round's
        first marker would show before the rest of its round came)."""
        if self.latest:
            return max(self.latest.values())
        times = [t for sh in self.shippers.values() for t in sh.ts.values() if t is not None]
        return max(times, default=None)

    def lag(self) -> float | None:
        """How far the watermark trails the newest event time (s; lateness included); 0 once
        every shipper's input ended and all was released; None before the watermark is
        known."""
        if self.input_ended:
            return 0.0
        wm, top = self.watermark, self.newest()
        return None if wm is None or top is None else top - wm

    def add_marker(
        self,
        partition: int,
        offset: int,
        source: str,
        ts: float | None,
        sent: float | None,
        end: bool = False,
    ) -> list[ShipperChange]:
        """Take shipper ``source``'s marker on ``partition`` (at ``offset``): its latest event
        time ``ts``, its send time ``sent`` (its clock), ``end`` when its input ended. Returns
        the shippers that fell silent or came back (an alert each). A re-sent marker (its
        offset already taken) is ignored."""
        if offset <= self.offsets.get(partition, -1):
            return []
        self.offsets[partition] = offset
        sh = self.shippers.get(source)
        if sh is None:
            sh = self.shippers[source] = Shipper()
        changes: list[ShipperChange] = []
        if sh.out:  # it speaks again: it counts again
            sh.out = False
            last = sh.sent or 0.0
            changes.append((BACK, source, last if sent is None else sent, last))
        if sent is not None:
            sh.sent = sent if sh.sent is None else max(sh.sent, sent)
            if self.newest_sent is None or sent > self.newest_sent:
                self.newest_sent = sent
        prev = sh.ts.get(partition)
        if ts is not None and (prev is None or ts > prev) or partition not in sh.ts:
            sh.ts[partition] = ts
        if end:
            sh.ended.add(partition)
        else:
            sh.ended.discard(partition)
            self.input_ended = False
        return changes + self._timeouts()

    def _timeouts(self) -> list[ShipperChange]:
        """Shippers whose latest send time is the timeout behind the newest: they stop
        counting (a shipper whose input ended is forgotten instead: it has nothing to say)."""
        t, newest = self.shipper_timeout_s, self.newest_sent
        if t is None or newest is None:
            return []
        out: list[ShipperChange] = []
        for source, sh in list(self.shippers.items()):
            if sh.out or sh.sent is None or sh.sent >= newest - t:
                continue
            if sh.done():
                del self.shippers[source]
                continue
            sh.out = True
            out.append((SILENT, source, newest, sh.sent))
        return out

    def end_due(self) -> bool:
        """Every live shipper that spoke has ended on every partition (of ``partitions``,
        else of those seen), and what it sent is not yet all released."""
        if self.input_ended:
            return False
        live = [sh for sh in self.shippers.values() if not sh.out]
        if not live:
            return False
        if self.partitions is not None:
            parts: set[int] = set(range(self.partitions))
        else:
            parts = set(self.latest) | {p for sh in live for p in sh.ts}
        return all(sh.ended >= parts for sh in live)

    def end(self) -> list[Any]:
        """Every shipper's input ended: every held record, in order (:meth:`flush`); the
        watermark lag is 0 until a record or a watermark marker comes again."""
        out = self.flush()
        self.input_ended = True
        return out

    def add(self, partition: int, offset: int, event: Any) -> str | None:
        """Take one event; returns None, ``"duplicate"`` (already taken: ignored) or ``"late"``
        (behind what was released: not taken, dead-letter it)."""
        if offset <= self.offsets.get(partition, -1):
            self.duplicates += 1
            return "duplicate"
        self.offsets[partition] = offset
        ts = event.ts
        if ts > self.latest.get(partition, float("-inf")):
            self.latest[partition] = ts
        if self.released_to is not None and ts <= self.released_to:
            self.late += 1
            return "late"
        self.held.append(event)
        self.input_ended = False
        return None

    def add_many(self, partition: int, offset: int, records: list[Any]) -> list[Any]:
        """Take the records of one message (one offset); returns the late ones (at or behind
        what was released: not taken, dead-letter them). A message already taken is ignored
        (counted as duplicates)."""
        if offset <= self.offsets.get(partition, -1):
            self.duplicates += len(records)
            return []
        self.offsets[partition] = offset
        if not records:
            return []
        times = list(map(_TS, records))
        top = max(times)
        if top > self.latest.get(partition, float("-inf")):
            self.latest[partition] = top
        self.input_ended = False
        done = self.released_to
        if done is None or min(times) > done:  # none late (the usual message): C-level
            self.held += records
            return []
        late = []
        for r, ts in zip(records, times, strict=True):
            if ts <= done:
                self.late += 1
                late.append(r)
            else:
                self.held.append(r)
        return late

    def release(self) -> list[Any]:
        """The held events at or before the watermark, in the replay's order."""
        wm = self.watermark
        if wm is None or not self.held or (self.released_to is not None and wm <= self.released_to):
            return []
        # split by C-level maps (no Python call per held event: the merger scans what it
        # holds at every message, tens of thousands of events behind a lagging partition)
        held = self.held
        out = self.sort(list(compress(held, map(wm.__ge__, map(_TS, held)))))
        if out:
            self.held = list(compress(held, map(wm.__lt__, map(_TS, held))))
        self.released_to = wm
        return out

    def sort(self, records: list[Any]) -> list[Any]:
        """``records`` in ``sort_key`` order (stable)."""
        if type(self).sort_key is JobEventMerger.sort_key:
            return self._sort_events(records)
        return sorted(records, key=self.sort_key)

    def flush(self) -> list[Any]:
        """End of a finite input: every held event, in order."""
        out = self.sort(self.held)
        self.held = []
        if out:
            self.released_to = max(out[-1].ts, self.released_to or out[-1].ts)
        return out

    # ---- durable state ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The merger with its settings, JSON-able (the held records by ``encode``)."""
        return {
            "lateness_s": self.lateness_s,
            "partitions": self.partitions,
            "latest": sorted(self.latest.items()),
            "offsets": sorted(self.offsets.items()),
            "held": [self.encode(e) for e in self.held],
            "released_to": self.released_to,
            "duplicates": self.duplicates,
            "late": self.late,
            **self.marks_snapshot(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobEventMerger:
        """The merger of :meth:`to_dict` (its held records checked by ``decode``)."""
        self = cls(float_in(d["lateness_s"]), opt_int_in(d["partitions"]))
        self._counters(d)
        self.marks_restore(d)
        self.held = [cls.decode(e) for e in list_in(d["held"])]
        return self

    def snapshot(self) -> dict[str, Any]:
        """What the merger holds, a tree for :func:`models.state.pack`; its settings
        (``lateness_s``, ``partitions``) come from the constructor of the merger restored."""
        return {
            "latest": sorted(self.latest.items()),
            "offsets": sorted(self.offsets.items()),
            "held": self.held_snapshot(self.held),
            "released_to": self.released_to,
            "duplicates": self.duplicates,
            "late": self.late,
            **self.marks_snapshot(),
        }

    def restore(self, tree: dict[str, Any]) -> None:
        """Fill this (new) merger with :meth:`snapshot`'s state."""
        self._counters(tree)
        self.held = self.held_restore(tree["held"])
        self.marks_restore(tree)

    def marks_snapshot(self) -> dict[str, Any]:
        """The shippers' markers as plain values: ``shippers`` rows ``[id, sent, out,
        [[partition, ts], ...], [ended partition, ...]]``, the newest send time, and whether
        every input ended (the timeout is configuration)."""
        return {
            "shippers": [
                [src, sh.sent, sh.out, [[p, t] for p, t in sorted(sh.ts.items())], sorted(sh.ended)]
                for src, sh in self.shippers.items()
            ],
            "newest_sent": self.newest_sent,
            "input_ended": self.input_ended,
        }

    def marks_restore(self, tree: dict[str, Any]) -> None:
        """:meth:`marks_snapshot`'s state (none in a state saved before markers)."""
        shippers: dict[str, Shipper] = {}
        for row in list_in(tree.get("shippers", [])):
            src, sent, out, ts, ended = list_in(row, 5)
            sh = Shipper()
            sh.sent, sh.out = opt_float_in(sent), bool_in(out)
            sh.ts = {int_in(p): opt_float_in(t) for p, t in (list_in(x, 2) for x in list_in(ts))}
            sh.ended = {int_in(p) for p in list_in(ended)}
            if str_in(src) in shippers:
                raise StateFormatError(f"merger: shipper {src!r} twice")
            shippers[src] = sh
        newest_sent = opt_float_in(tree.get("newest_sent"))
        ended = bool_in(tree.get("input_ended", False))
        self.shippers, self.newest_sent, self.input_ended = shippers, newest_sent, ended

    def _counters(self, d: dict[str, Any]) -> None:
        pairs = [list_in(x, 2) for x in list_in(d["latest"])]
        self.latest = {int_in(p): float_in(t) for p, t in pairs}
        pairs = [list_in(x, 2) for x in list_in(d["offsets"])]
        self.offsets = {int_in(p): int_in(o) for p, o in pairs}
        self.released_to = opt_float_in(d["released_to"])
        self.duplicates = int_in(d["duplicates"])
        self.late = int_in(d["late"])

    @staticmethod
    def held_snapshot(held: list[Any]) -> Any:
        """The held records in a state tree (job events: columns)."""
        return events_out(held)

    @staticmethod
    def held_restore(tree: Any) -> list[Any]:
        return events_in(tree)


# ---- state trees (models.state) -------------------------------------------------------------
# A stage's state goes into a tree of plain values and NumPy arrays. Collections that grow
# with the jobs (running jobs, queued jobs, held events) are columns: NumPy arrays, strings as
# codes into a vocabulary kept as one joined text, so packing one costs no Python call per
# item. The readers below check every value's type and every column's length and raise
# StateFormatError for anything else: a restore never guesses.


_BACKFILL = (False, True, None)  # code 0, 1, -1


def events_out(events: list[JobEvent]) -> dict[str, Any]:
    """Job events as columns (``JobEvent``'s fields)."""
    import numpy as np  # at first use: the command line's parser imports this module

    n = len(events)
    g = attrgetter
    node_lists = list(map(g("node_list"), events))
    bf = {None: -1, False: 0, True: 1}
    return {
        "type": strs_out(list(map(g("type"), events))),
        "ts": np.fromiter(map(g("ts"), events), np.float64, n),
        "job": strs_out(list(map(g("job"), events))),
        **{k: strs_out(list(map(g(k), events))) for k in _EVENT_STRS},
        **{k: opt_ints_out(list(map(g(k), events))) for k in _EVENT_INTS},
        **{k: opt_floats_out(list(map(g(k), events))) for k in _EVENT_FLOATS},
        "node_list": ragged_out(node_lists),
        "nodes_listed": strs_out(list(chain.from_iterable(node_lists))),
        "backfill": np.fromiter(map(bf.__getitem__, map(g("backfill"), events)), np.int8, n),
    }


_EVENT_STRS = ("user", "group", "account", "partition", "name", "state")
_EVENT_INTS = ("nodes", "cores", "exit_code")
_EVENT_FLOATS = ("req_walltime", "reserved_start")


def events_in(tree: Any) -> list[JobEvent]:
    """The job events of :func:`events_out`."""
    import numpy as np

    t = dict_in(tree)
    ts = array_in(t["ts"], "f")
    n = len(ts)
    if not np.isfinite(ts).all():
        raise StateFormatError("job events: a time that is not finite")
    types = strs_in(t["type"], n)
    if not set(types) <= set(EVENT_TYPES):
        raise StateFormatError("job events: an unknown event type")
    jobs = strs_in(t["job"], n)
    col: dict[str, list[Any]] = {k: strs_in(t[k], n, none=True) for k in _EVENT_STRS}
    col |= {k: opt_ints_in(t[k], n) for k in _EVENT_INTS}
    col |= {k: opt_floats_in(t[k], n) for k in _EVENT_FLOATS}
    listed = keys_in(t["nodes_listed"])
    node_lists = ragged_in(t["node_list"], tuple(listed), n)
    bf = array_in(t["backfill"], "i", n)
    if n and (bf.min() < -1 or bf.max() > 1):
        raise StateFormatError("job events: a backfill flag outside -1, 0, 1")
    backfill = list(map(_BACKFILL.__getitem__, bf.tolist()))
    c = col
    return list(
        map(
            JobEvent,
            types,
            ts.tolist(),
            jobs,
            c["user"],
            c["group"],
            c["account"],
            c["partition"],
            c["name"],
            c["nodes"],
            c["cores"],
            c["req_walltime"],
            node_lists,
            c["state"],
            c["exit_code"],
            backfill,
            c["reserved_start"],
        )
    )
