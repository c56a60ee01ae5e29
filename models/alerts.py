"""Alert state changes: one record when a condition starts to hold, one when it clears.

An alert is identified by ``<kind>:<subject>`` (a job id, ``user:alice``, ``cup40``...): while
it fires, the same condition found again sends nothing (deduplicated by id); when it clears, a
``resolved`` record with the same id and ``since`` ends the episode. Times are event times
carried by the data (no clock here), so a replay of the same input gives the same records, and
a worker restarted from its saved :class:`AlertBook` re-sends only records identical to ones
already sent (a consumer that keeps the latest record per id sees no difference).

:class:`JobAlerts` turns the job stages' rows into alerts (issue 13's kinds from job events):

* ``shortjob_flood``: A(t) of a user or group above the threshold (seed 002), from the tick rows;
* ``overrun``: a job still running past its upper run-time estimate + the margin (seed 001's
  red rows), raised while it runs and resolved when it ends;
* ``capability``: a day's CUP40 below the target (seed 004), resolved by the next day at or
  above it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import orjson

from models.state import StateFormatError
from models.statetree import (
    dict_in,
    floats_in,
    floats_out,
    keys_in,
    list_in,
    opt_floats_in,
    opt_floats_out,
    str_in,
    strs_out,
)

FIRING = "firing"
RESOLVED = "resolved"


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class Alert:
    id: str
    kind: str
    subject: str
    severity: str
    state: str  # FIRING | RESOLVED
    value: float | None
    threshold: float | None
    window: str  # what the value is measured over ("3m tick", "1d", "run")
    since: float  # event time the episode began (POSIX s)
    at: float  # event time of this change
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "subject": self.subject,
            "severity": self.severity,
            "state": self.state,
            "value": self.value,
            "threshold": self.threshold,
            "window": self.window,
            "since": self.since,
            "at": self.at,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Alert:
        """The alert of :meth:`to_dict`'s dict, field by field; a field missing or of another
        type raises (KeyError, :class:`~models.state.StateFormatError`)."""
        if not isinstance(d, Mapping) or len(d) != len(_ALERT_FIELDS):
            raise StateFormatError(f"alert: {len(_ALERT_FIELDS)} fields expected")
        details = dict_in(d["details"])
        if any(type(k) is not str for k in details):
            raise StateFormatError("alert: details with a key that is not a string")
        state = str_in(d["state"])
        if state not in (FIRING, RESOLVED):
            raise StateFormatError(f"alert: state {state!r}")
        return cls(
            str_in(d["id"]),
            str_in(d["kind"]),
            str_in(d["subject"]),
            str_in(d["severity"]),
            state,
            _value(d["value"]),
            _value(d["threshold"]),
            str_in(d["window"]),
            _value(d["since"], False),
            _value(d["at"], False),
            dict(details),
        )


_ALERT_FIELDS = tuple(f.name for f in fields(Alert))


def _value(v: Any, optional: bool = True) -> Any:
    """A number as it was (an int stays an int: its records are written as they were), or
    None when ``optional``."""
    if v is None and optional or type(v) is int or type(v) is float:
        return v
    raise StateFormatError(f"alert: expected a number, got {type(v).__name__}")


class AlertBook:
    """The open (firing) alerts by id."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open: dict[str, Alert] = {}

    def fire(
        self,
        kind: str,
        subject: str,
        at: float,
        value: float | None,
        threshold: float | None,
        window: str,
        severity: str = "warning",
        details: Mapping[str, Any] | None = None,
        since: float | None = None,
    ) -> Alert | None:
        """The firing record, or None while the alert is already firing."""
        aid = f"{kind}:{subject}"
        if aid in self.open:
            return None
        a = Alert(
            aid,
            kind,
            subject,
            severity,
            FIRING,
            value,
            threshold,
            window,
            at if since is None else since,
            at,
            details or {},
        )
        self.open[aid] = a
        return a

    def resolve(
        self, kind: str, subject: str, at: float, value: float | None = None
    ) -> Alert | None:
        """The resolved record, or None when the alert is not firing."""
        a = self.open.pop(f"{kind}:{subject}", None)
        if a is None:
            return None
        return replace(a, state=RESOLVED, at=at, value=a.value if value is None else value)

    def to_dict(self) -> dict[str, Any]:
        """The open alerts as JSON: ``{"open": [alert dict, ...]}`` (the books saved as JSON:
        the drain path's, the stalled-pipeline watch's)."""
        return {"open": [a.to_dict() for a in self.open.values()]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AlertBook:
        """The book of :meth:`to_dict`'s dict, checked field by field."""
        b = cls()
        b.open = _open(Alert.from_dict(x) for x in list_in(d["open"]))
        return b

    def snapshot(self) -> dict[str, Any]:
        """The open alerts as a state tree of columns (models.state), in the order they fired:
        an alert's id is its kind and subject, its state firing, its numbers floats (as the
        job paths make them); its details are JSON texts (free-form plain values, as its
        records carry them)."""
        alerts = list(self.open.values())
        return {
            "kind": strs_out([a.kind for a in alerts]),
            "subject": strs_out([a.subject for a in alerts]),
            "severity": strs_out([a.severity for a in alerts]),
            "window": strs_out([a.window for a in alerts]),
            "value": opt_floats_out([a.value for a in alerts]),
            "threshold": opt_floats_out([a.threshold for a in alerts]),
            "since": floats_out(a.since for a in alerts),
            "at": floats_out(a.at for a in alerts),
            "details": strs_out([orjson.dumps(dict(a.details)).decode() for a in alerts]),
        }

    def restore(self, tree: Mapping[str, Any]) -> None:
        """Replace the open alerts with those of :meth:`snapshot`'s tree (checked: a column of
        another type or length, details that are not a JSON object, an alert twice raise)."""
        t = dict_in(tree)
        kinds = keys_in(t["kind"])
        n = len(kinds)
        details: list[dict[str, Any]] = []
        for text in keys_in(t["details"], n):
            try:
                details.append(dict_in(orjson.loads(text)))
            except orjson.JSONDecodeError as e:
                raise StateFormatError(f"alerts: details that are not JSON ({e})") from None
        cols = zip(
            kinds,
            keys_in(t["subject"], n),
            keys_in(t["severity"], n),
            opt_floats_in(t["value"], n),
            opt_floats_in(t["threshold"], n),
            keys_in(t["window"], n),
            floats_in(t["since"], n),
            floats_in(t["at"], n),
            details,
            strict=True,
        )
        self.open = _open(
            Alert(f"{k}:{s}", k, s, sev, FIRING, v, th, w, since, at, d)
            for k, s, sev, v, th, w, since, at, d in cols
        )


def _open(alerts: Iterable[Alert]) -> dict[str, Alert]:
    """Open alerts by id; an alert filed under another id, twice, or not firing raises."""
    got: dict[str, Alert] = {}
    for a in alerts:
        if a.id != f"{a.kind}:{a.subject}" or a.id in got or a.state != FIRING:
            raise StateFormatError(f"alerts: open alert {a.id!r} twice, or not firing")
        got[a.id] = a
    return got


def _day_end(day: date | str, tz: ZoneInfo) -> float:
    d = (day if isinstance(day, date) else date.fromisoformat(day)) + timedelta(days=1)
    return datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()


class JobAlerts:
    """Alerts from the job stages' rows, in the order the rows come (their event time)."""

    __slots__ = ("book", "flood", "cup40_target", "margin", "tz", "lam", "interval", "_flood")

    def __init__(
        self,
        book: AlertBook | None = None,
        flood: float = 3600.0,
        cup40_target: float = 0.80,
        overrun_margin: float = 60.0,
        tz: str = "UTC",
        lam: float = 0.9,
        interval: float = 180.0,
    ) -> None:
        self.book = book or AlertBook()
        self.flood = flood
        self.cup40_target = cup40_target
        self.margin = overrun_margin
        self.tz = ZoneInfo(tz)
        self.lam = lam  # the short-job model's decay and tick (seed 002: 0.9, 3 minutes)
        self.interval = interval
        self._flood: dict[str, tuple[float, float]] = {}  # firing subject -> (A, its tick)

    def snapshot(self) -> dict[str, Any]:
        """The open alerts and the firing floods' last A(t) and tick as a state tree of
        columns (models.state); the thresholds, zone and tick are the constructor's."""
        floods = list(self._flood.values())
        return {
            "book": self.book.snapshot(),
            "flood": {
                "subject": strs_out(list(self._flood)),
                "adjust": floats_out(f[0] for f in floods),
                "tick": floats_out(f[1] for f in floods),
            },
        }

    to_dict = snapshot  # its former name

    def restore(self, tree: Mapping[str, Any]) -> None:
        """Fill these (new) alerts, made with the snapshot's settings, from :meth:`snapshot`'s
        tree, checked field by field; the book is restored in place."""
        f = dict_in(tree["flood"])
        subjects = keys_in(f["subject"])
        n = len(subjects)
        rows = zip(floats_in(f["adjust"], n), floats_in(f["tick"], n), strict=True)
        flood = dict(zip(subjects, rows, strict=True))
        if len(flood) != n:
            raise StateFormatError("alerts: a flood twice")
        self.book.restore(dict_in(tree["book"]))
        self._flood = flood

    def _decayed(self, subject: str, before: float) -> Alert | None:
        """Resolve a firing flood whose A(t), decaying from its last row with no new short
        jobs (the model writes no row then), falls to the threshold at a tick before
        ``before``: the record is at that tick, with that A(t)."""
        a, ts = self._flood[subject]
        n, v = 1, a * self.lam
        while v > self.flood:
            n += 1
            v = a * self.lam**n  # the model's own arithmetic (A * lam ** ticks)
        at = ts + n * self.interval
        if at >= before:
            return None
        del self._flood[subject]
        return self.book.resolve("shortjob_flood", subject, at, v)

    def shortjobs(self, rows: Iterable[Sequence[Any]]) -> list[Alert]:
        """Tick rows ``(ts, kind, holder, n_short, penalty_s, adjust)``: fires when A(t) rises
        above the threshold, resolves at the first tick at or below it (between the holder's
        rows A(t) decays by lam a tick; see :meth:`advance`)."""
        out: list[Alert] = []
        for ts, kind, holder, n_short, penalty, adjust in rows:
            subject = f"{kind}:{holder}"
            a: Alert | None = None
            if subject in self._flood:
                a = self._decayed(subject, ts)
                if a is not None:
                    out.append(a)
                    a = None
            if adjust > self.flood:
                details = {"n_short": n_short, "penalty_seconds": penalty}
                a = self.book.fire(
                    "shortjob_flood", subject, ts, adjust, self.flood, "3m tick", details=details
                )
                self._flood[subject] = (adjust, ts)
            elif subject in self._flood:
                del self._flood[subject]
                a = self.book.resolve("shortjob_flood", subject, ts, adjust)
            if a is not None:
                out.append(a)
        return out

    def advance(self, closed_tick: float | None) -> list[Alert]:
        """Floods whose A(t) has decayed to the threshold by the last closed tick."""
        if closed_tick is None:
            return []
        out = [self._decayed(s, closed_tick + self.interval) for s in sorted(self._flood)]
        return [a for a in out if a is not None]

    def capability(self, rows: Iterable[Sequence[Any]]) -> list[Alert]:
        """Closed days ``(day, large, small, backfill, cup40, ...)``: a day below the target
        fires (at the day's end), a day at or above it resolves; a day without usage (CUP40
        unknown) changes nothing."""
        out: list[Alert] = []
        for r in rows:
            day, large, small, cup40 = r[0], r[1], r[2], r[4]
            if cup40 is None:
                continue
            at = _day_end(day, self.tz)
            if cup40 < self.cup40_target:
                a = self.book.fire(
                    "capability",
                    "cup40",
                    at,
                    cup40,
                    self.cup40_target,
                    "1d",
                    severity="info",
                    details={"day": str(day), "large_node_hours": large, "small_node_hours": small},
                )
            else:
                a = self.book.resolve("capability", "cup40", at, cup40)
            if a is not None:
                out.append(a)
        return out

    def overrun_started(self, running: Iterable[Any], now: float) -> list[Alert]:
        """Running jobs (``models.jobs.runtime.RunningJob``) with a known estimate that event
        time ``now`` has taken past their upper estimate + the margin. The record's time is that
        deadline, not ``now``, so it is the same however late it is noticed (the value: the run
        time then; the threshold: the upper estimate + the margin)."""
        out: list[Alert] = []
        m = self.margin
        for r in running:
            deadline = r.expected_end + m
            if r.known and now > deadline:
                a = self.book.fire(
                    "overrun",
                    r.job,
                    deadline,
                    deadline - r.start,
                    deadline - r.start,
                    "run",
                    details={
                        "user": r.user,
                        "name": r.name,
                        "start": r.start,
                        "expected_end": r.expected_end,
                    },
                )
                if a is not None:
                    out.append(a)
        return out

    def overrun_ended(
        self, rows: Iterable[Sequence[Any]], ends: Mapping[str, float]
    ) -> list[Alert]:
        """Ended jobs' prediction rows ``(job, user, name, runs, predicted, upper, actual,
        overran, ...)`` with their end times: a job that overran is resolved (fired first
        when it ended before a check saw it run past)."""
        out: list[Alert] = []
        for r in rows:
            job, user, name, upper, actual, overran = r[0], r[1], r[2], r[5], r[6], r[7]
            if not overran or upper is None:
                continue
            end = ends[job]
            start = end - actual
            deadline = start + upper + self.margin
            fired = self.book.fire(
                "overrun",
                job,
                deadline,
                upper + self.margin,
                upper + self.margin,
                "run",
                details={"user": user, "name": name, "start": start, "expected_end": start + upper},
            )
            if fired is not None:
                out.append(fired)
            a = self.book.resolve("overrun", job, end, actual)
            if a is not None:
                out.append(a)
        return out


class DrainAlerts:
    """Alerts from the live drain combiner's rows (seed 000's drain, seed 001's sliding jobs):

    * ``sliding_job``: a job held queued (never seen running) whose drain reaches
      ``sliding_node_hours``; resolved when it is seen running, or when no node has been held
      for it for ``quiet_s`` of event time (cancelled, or the scheduler gave up its plan).
      Totals arrive as the combiner sums them, so the firing record's ``at`` is the data time
      of the total that crossed the threshold (its latest charge), which depends on how
      partials were batched: a worker restarted mid-episode can send a firing record with a
      later ``at`` under the same id; ``since`` (its first charge) does not change.
    * ``data_quality``: a closed window whose basis is short of its length (seed 000
      §III-B.3); per window length (``minute``/``hour``/``day``), resolved by the next closed
      window of that length with a full basis.
    """

    __slots__ = ("book", "sliding_ms", "quiet_ms", "_held", "_done")

    def __init__(
        self,
        book: AlertBook | None = None,
        sliding_node_hours: float = 100.0,
        quiet_s: float = 3600.0,
    ) -> None:
        self.book = book or AlertBook()
        self.sliding_ms = sliding_node_hours * 3_600_000.0
        self.quiet_ms = quiet_s * 1000.0
        self._held: dict[str, int] = {}  # firing sliding job -> its last charge (ms)
        self._done: dict[str, int] = {}  # resolved sliding job -> its last charge (ms)

    def to_dict(self) -> dict[str, Any]:
        return {"book": self.book.to_dict(), "held": dict(self._held), "done": dict(self._done)}

    def restore(self, d: Mapping[str, Any]) -> None:
        self.book = AlertBook.from_dict(d["book"])
        self._held = {k: int(v) for k, v in d["held"].items()}
        self._done = {k: int(v) for k, v in d["done"].items()}

    def _fire(self, j: Any) -> Alert | None:
        return self.book.fire(
            "sliding_job",
            j.job,
            j.last_charged_ms / 1000,
            j.drain_ms / 3_600_000,
            self.sliding_ms / 3_600_000,
            "job",
            severity="critical",
            details={"nodes_charged": j.nodes_charged},
            since=j.first_charged_ms / 1000,
        )

    def jobs(self, rows: Iterable[Any]) -> list[Alert]:
        """Changed job totals (``models.drain.live.LiveJob``). Drain is only charged while a
        job waits, so a job first seen already running with drain past the threshold slid
        before it started (a worker catching up): both records come at once, at its last
        charge."""
        out: list[Alert] = []
        for j in rows:
            if j.drain_ms < self.sliding_ms or j.job in self._done:
                continue
            if j.nodes_running > 0:
                fired = self._fire(j)
                if fired is not None:
                    out.append(fired)
                self._held.pop(j.job, None)
                self._done[j.job] = j.last_charged_ms
                a = self.book.resolve("sliding_job", j.job, j.last_charged_ms / 1000)
                if a is not None:
                    out.append(a)
            else:
                self._held[j.job] = j.last_charged_ms
                a = self._fire(j)
                if a is not None:
                    out.append(a)
        return out

    def quiet(self, watermark_ms: int | None) -> list[Alert]:
        """Sliding jobs no node has been held for since ``quiet_s`` before the watermark."""
        if watermark_ms is None:
            return []
        out: list[Alert] = []
        # a resolved episode is remembered as long as the combiner remembers the job (two
        # days quiet), so a later total of it raises nothing
        self._done = {k: v for k, v in self._done.items() if v + 2 * 86_400_000 >= watermark_ms}
        for job in sorted(self._held):
            last = self._held[job]
            if last + self.quiet_ms < watermark_ms:
                del self._held[job]
                self._done[job] = last
                a = self.book.resolve("sliding_job", job, (last + self.quiet_ms) / 1000)
                if a is not None:
                    out.append(a)
        return out

    def windows(self, rows: Iterable[Any]) -> list[Alert]:
        """Window rows (``models.drain.live.LiveWindow``); only closed ones count."""
        out: list[Alert] = []
        for w in rows:
            if w.provisional:
                continue
            end = (w.start_ms + w.length_ms) / 1000
            if w.data_quality != "ok":
                a = self.book.fire(
                    "data_quality",
                    w.unit,
                    end,
                    float(w.basis_seconds_per_node),
                    w.length_ms / 1000,
                    w.unit,
                    details={"window_start": w.start_ms / 1000},
                    since=w.start_ms / 1000,
                )
            else:
                a = self.book.resolve("data_quality", w.unit, end, float(w.basis_seconds_per_node))
            if a is not None:
                out.append(a)
        return out


def shipper_alerts(
    book: AlertBook, topic: str, changes: Iterable[tuple[str, str, float, float]], timeout_s: float
) -> list[Alert]:
    """``data_quality`` of a shipper (subject ``shipper:<topic>:<shipper id>``) from the
    merger's shipper changes (``models.jobs.merge.ShipperChange``): fires when its markers
    stopped for ``timeout_s`` of the shippers' clocks (its watermark no longer counts), resolves
    when it speaks again. Times are the shippers' send times, as the markers carry them."""
    out: list[Alert] = []
    for change, source, at, last in changes:
        subject = f"shipper:{topic}:{source}"
        if change == "silent":
            details = {"topic": topic, "shipper": source}
            a = book.fire(
                "data_quality",
                subject,
                at,
                at - last,
                timeout_s,
                "shipper clock",
                since=last,
                details=details,
            )
        else:
            a = book.resolve("data_quality", subject, at, 0.0)
        if a is not None:
            out.append(a)
    return out


class StallWatch:
    """``stalled``: no input on a topic for ``after_s`` — the one alert driven by the worker's
    clock, not the data's (a topic that stops cannot move event time). Times are what the
    caller passes (the shell passes wall-clock seconds). A topic is watched from its first
    input on, so a worker with none of a topic's partitions never raises it."""

    __slots__ = ("book", "after", "last", "worker")

    def __init__(self, after_s: float, worker: str, book: AlertBook | None = None) -> None:
        self.book = book or AlertBook()
        self.after = after_s
        self.worker = worker  # subject: '<topic>@<worker>', each worker watches its own input
        self.last: dict[str, float] = {}

    def seen(self, topic: str, now: float) -> list[Alert]:
        """Input arrived on ``topic``: resolves its stall if one fires."""
        self.last[topic] = now
        a = self.book.resolve("stalled", f"{topic}@{self.worker}", now, 0.0)
        return [] if a is None else [a]

    def check(self, now: float) -> list[Alert]:
        out: list[Alert] = []
        if self.after <= 0:
            return out
        for topic in sorted(self.last):
            quiet = now - self.last[topic]
            if quiet > self.after:
                a = self.book.fire(
                    "stalled",
                    f"{topic}@{self.worker}",
                    now,
                    quiet,
                    self.after,
                    "wall clock",
                    severity="critical",
                    since=self.last[topic],
                    details={"topic": topic, "worker": self.worker},
                )
                if a is not None:
                    out.append(a)
        return out
