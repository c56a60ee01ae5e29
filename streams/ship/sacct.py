"""The sacct shipper (``ship jobs --sacct``): poll Slurm's accounting for jobs that ended,
incrementally, and publish their events to ``<prefix>job-events``.

Each poll asks ``sacct --parsable2`` (the replay's 27-field layout with a header, times in UTC)
for the jobs that reached an end state between the high-water mark minus ``overlap`` and now
minus ``lag``; its lines are read exactly as ``replay --format sacct`` reads a file
(``read_job_events``: bounds, caps, rejects) and give each job's submit, start and end events.
Only jobs whose end is inside the window are kept, whatever sacct listed: ``sacct
--completion`` (the jobcomp/filetxt file, for a Slurm without slurmdbd) ignores the window.

No job is lost: a record that reaches the database late (up to ``overlap`` seconds after the
job's end) is still inside the next window. None is sent twice: the events sent whose job ended
within the overlap are remembered, so a record seen again in the overlap is dropped. The
high-water mark and that set are one file (:class:`HighWaterMark`), written atomically only
after the broker acknowledged the poll's events; a shipper killed in between sends that poll
again on restart (at-least-once, the worker's job analytics key events by job). A window is at
most ``max_window`` seconds long, so a shipper starting far behind catches up in bounded polls.

sacct's output goes to a temporary file as it comes (never whole in memory), at most
``max_bytes`` (``bounds.max_snapshot_bytes``, streams.ship.slurm.run_capped): a query
that prints more is killed and the poll refused (:class:`SnapshotTooLarge`, counted in
``refused``), and the next windows are half as long, down to a second, until a poll succeeds
(then they grow back, doubling, to ``max_window``): a busy day is read in smaller windows
instead of being refused at every poll.

With ``starts``, two more queries (``--state PD`` and ``--state R``: pending or running during
the window) send each submit and start that happened in the window right away, so every
event reaches Kafka within about a period of its time (the worker's lateness must cover the
period plus the overlap); their keys stay remembered until the job's end record arrives,
which then brings only the end. A submit sent early carries what sacct knew then (e.g. the
requested CPUs), and is not sent again with the final record's values.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from models.formats.hostlist import MAX_HOSTS
from models.formats.jobsource import sort_events
from models.formats.sacct import FIELDS_27
from models.records.jobevent import JobEvent
from models.records.plausible import TimeBounds
from models.records.reject import Reject
from streams import logs
from streams.atomic import atomic_file
from streams.ship.base import RejectCollector, ShipStats, dead_letter_rejects
from streams.ship.job_files import send_events
from streams.ship.markers import Markers, shipper_id
from streams.ship.slurm import MAX_SNAPSHOT_BYTES, SnapshotFailed, SnapshotTooLarge, run_capped
from streams.sources.files import MAX_LINE_BYTES
from streams.sources.jobevents import read_job_events

END_STATES = "BF,CA,CD,DL,F,NF,OOM,PR,TO"  # every state a job ends in (sacct --state)
RUNNING = 1e18  # the "end" of a started job whose end was not seen yet: never pruned


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def event_key(e: JobEvent) -> str:
    return f"{e.job}|{e.type}|{e.ts!r}"


@dataclass
class HighWaterMark:
    """The poller's state, one JSON file: how far every ended job was sent, and the events
    sent in the overlap (not a file position: a followed file's is
    :class:`streams.ship.base.Checkpoint`)."""

    hwm: float  # every job that ended before hwm - overlap was sent
    sent: dict[str, float] = field(default_factory=dict)  # event key -> its job's end
    since: float = 0.0  # nothing that ended before this is wanted (--since)

    @classmethod
    def load(cls, path: Path) -> HighWaterMark | None:
        try:
            d = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        sent = {str(k): float(v) for k, v in d["sent"].items()}
        return cls(float(d["hwm"]), sent, float(d.get("since", 0.0)))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(str(path)) as f:
            f.write(json.dumps({"hwm": self.hwm, "sent": self.sent, "since": self.since}).encode())


@dataclass
class Poll:
    events: list[JobEvent]  # new events, in time order
    rejects: list[Reject]  # to dead-letter
    end: float  # the window's end: the high-water mark once the events are acknowledged
    behind: bool  # the window was cut at max_window: poll again at once


class SacctPoller:
    """sacct's windows, read and deduplicated (the module doc); its mark moves only on
    :meth:`commit`."""

    def __init__(
        self,
        sacct: str,
        checkpoint: Path,
        since: float,
        overlap: float = 600.0,
        lag: float = 0.0,
        max_window: float = 86_400.0,
        timeout: float = 120.0,
        bounds: TimeBounds | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_hosts: int = MAX_HOSTS,
        env: dict[str, str] | None = None,
        completion: bool = False,
        starts: bool = False,
        max_bytes: int = MAX_SNAPSHOT_BYTES,
    ) -> None:
        self.sacct = sacct
        self.completion = completion  # sacct -c: the jobcomp/filetxt file, no slurmdbd
        self.starts = starts  # also poll running jobs, for their start events
        self.path = checkpoint
        self.overlap, self.lag, self.max_window, self.timeout = overlap, lag, max_window, timeout
        self.bounds = bounds or TimeBounds()
        self.max_line_bytes, self.max_hosts = max_line_bytes, max_hosts
        self.env = {**(os.environ if env is None else env), "TZ": "UTC"}
        self.cp = HighWaterMark.load(checkpoint) or HighWaterMark(since, since=since)
        self.max_bytes = max_bytes  # one query's output, at most
        self.window = max_window  # the next window's length, at most (halved on a refusal)
        self.polls = 0
        self.dropped = 0  # events seen again in an overlap, not sent twice
        self.refused = 0  # polls refused: a query printed more than max_bytes

    def _start(self, hwm: float) -> float:
        """The next window's start: whole seconds, as sacct reads ``--starttime``."""
        return float(max(math.floor(hwm - self.overlap), math.floor(self.cp.since)))

    def argv(self, start: float, end: float, states: str = END_STATES) -> list[str]:
        head = [self.sacct, "--completion"] if self.completion else [self.sacct]
        return [
            *head,
            "--allusers",
            "--parsable2",
            "--allocations",
            "--duplicates",
            "--format",
            ",".join(FIELDS_27),
            "--state",
            states,
            "--starttime",
            _iso(start),
            "--endtime",
            _iso(end),
        ]

    def _query(self, start: float, end: float, states: str) -> tuple[list[JobEvent], list[Reject]]:
        """sacct's records of the window, read as the replay reads a file (sacct's output goes
        to a temporary file as it comes, at most ``max_bytes``)."""
        rejects = RejectCollector()
        fd, tmp = tempfile.mkstemp(prefix="sacct-", suffix=".txt")
        try:
            with os.fdopen(fd, "wb") as f:
                argv = self.argv(start, end, states)
                run_capped(argv, self.timeout, self.max_bytes, self.env, f, "sacct")
            events, _ = read_job_events(
                "sacct", [tmp], rejects, self.bounds, self.max_line_bytes, self.max_hosts
            )
        finally:
            os.unlink(tmp)
        src = f"sacct:{_iso(start)}..{_iso(end)}"
        return events, [Reject(rj.reason, src, rj.lineno, rj.text) for rj in rejects.items]

    def poll(self, now: float) -> Poll:
        """The events of jobs that ended in [hwm - overlap, min(now - lag, hwm + max_window)]
        not sent before (with ``starts``: also the submit and start of jobs that started in
        it). Raises SnapshotFailed when sacct fails or times out, SnapshotTooLarge (counted,
        the next window halved) when it prints more than ``max_bytes``."""
        start = self._start(self.cp.hwm)
        # whole seconds, as sacct reads them: the next window starts exactly where pruning cuts
        end = float(math.floor(max(min(now - self.lag, self.cp.hwm + self.window), self.cp.hwm)))
        try:
            events, bad = self._query(start, end, END_STATES)
            running: list[JobEvent] = []
            if self.starts:
                pending, bad2 = self._query(start, end, "PD")
                running, bad3 = self._query(start, end, "R")
                running = pending + running
                bad += bad2 + bad3
        except SnapshotTooLarge:
            self.refused += 1
            self.window = max(1.0, self.window / 2)
            raise
        self.window = min(self.max_window, self.window * 2)
        sent = self.cp.sent
        new = []
        ends: dict[str, float] = {}
        for e in events:
            if e.type == "end":
                ends[e.job] = max(ends.get(e.job, e.ts), e.ts)
        for e in events:
            ended = ends.get(e.job)
            if ended is None or not start <= ended <= end:
                continue  # sacct -c, and some versions, list jobs outside the window too
            k = event_key(e)
            if k in sent:
                self.dropped += 1
                sent[k] = ended  # a start sent while it ran: forgotten with its end
                continue
            sent[k] = ended
            new.append(e)
        for e in running:
            if e.type == "end" or not start <= e.ts <= end:
                continue  # ends come from the end-state query; submits and starts of this
                # window only
            k = event_key(e)
            if k in sent:
                self.dropped += 1
                continue
            sent[k] = RUNNING  # kept until the job's end is seen
            new.append(e)
        self.polls += 1
        return Poll(sort_events(new), bad, end, end < math.floor(now - self.lag))

    def commit(self, p: Poll, save: bool = True) -> None:
        """The poll's events were acknowledged: move the mark, forget what the next window
        cannot see again, and persist both (not for a dry run: ``save`` False)."""
        self.cp.hwm = p.end
        cut = self._start(p.end)
        self.cp.sent = {k: v for k, v in self.cp.sent.items() if v >= cut}
        if save:
            self.cp.save(self.path)


def parse_since(text: str, now: Callable[[], float]) -> float:
    """``now`` or an ISO 8601 time (UTC when it has no offset) -> epoch seconds."""
    if text == "now":
        return now()
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


class SacctShipper:
    """A poll every ``period`` seconds (at once while the poller is behind) until ``stop`` or
    ``count`` polls: its events and dead letters sent and acknowledged, then the poller's mark
    committed and a round of markers at it. Without a ``producer`` (--dry-run) the events go
    to ``out`` as JSON lines and the mark is not saved."""

    def __init__(
        self,
        poller: SacctPoller,
        producer: Any | None,
        topic: str,
        dead_topic: str,
        partitions: int,
        period: float,
        count: int | None,
        marker_interval: float,
        out: IO[bytes] | None = None,
    ) -> None:
        self.poller, self.producer = poller, producer
        self.topic, self.dead_topic, self.partitions = topic, dead_topic, partitions
        self.period, self.count, self.marker_interval = period, count, marker_interval
        self.out = out
        self.markers = None
        if producer is not None:  # named by its checkpoint: the same shipper on a restart
            sid = shipper_id("sacct", str(poller.path.resolve()))
            self.markers = Markers(producer, topic, partitions, sid, marker_interval)
        self.stats = ShipStats()

    async def mark(self) -> None:
        """A round of markers at the poller's guarantee: every job that ended before the
        high-water mark minus the overlap was sent (with its submit and start)."""
        if self.markers is not None:
            ts = self.poller.cp.hwm - self.poller.overlap
            await asyncio.gather(*await self.markers.round(ts=ts))

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        poller, producer, st = self.poller, self.producer, self.stats
        k = 0
        while not stop.is_set():
            try:
                p = await asyncio.to_thread(poller.poll, time.time())
            except SnapshotFailed as e:
                st.failed_polls += 1
                logs.get("ship.jobs").warning("sacct poll failed: %s", e)
                p = None
            if p is not None:
                if producer is None:
                    if self.out is not None:
                        self.out.write(b"".join(e.to_json() + b"\n" for e in p.events))
                        self.out.flush()
                    st.events += len(p.events)
                    st.dead_letters += len(p.rejects)
                else:
                    futs = await dead_letter_rejects(producer, self.dead_topic, p.rejects)
                    st.dead_letters += len(futs)
                    await send_events(producer, self.topic, p.events, self.partitions, st, futs)
                poller.commit(p, save=producer is not None)  # after the broker's ack
                await self.mark()
            k += 1
            if self.count is not None and k >= self.count:
                break
            if p is None or not p.behind:  # a marker round every marker_interval meanwhile
                until = time.monotonic() + self.period
                while not stop.is_set() and (left := until - time.monotonic()) > 0:
                    try:
                        await asyncio.wait_for(stop.wait(), min(left, self.marker_interval))
                    except TimeoutError:
                        pass
                    if self.markers is not None and self.markers.due():
                        await self.mark()

    async def last_markers(self) -> None:
        await self.mark()

    def summary(self) -> str:
        p, st = self.poller, self.stats
        return (
            f"{p.polls:,} sacct polls ({st.failed_polls:,} failed), {st.events:,} events in "
            f"{st.messages:,} messages, {p.dropped:,} seen again and not re-sent, "
            f"{p.refused:,} polls refused as larger than bounds.max_snapshot_bytes, "
            f"{st.dead_letters:,} dead letters"
        )
