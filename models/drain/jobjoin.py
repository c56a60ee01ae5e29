"""The drain stream's job totals joined with job events, as they come (seed 000 §V).

The live form of ``drainwatch replay --format moab --jobs FILE``'s per-job rows: each job
charged drain gets its size (job events, else the nodes seen running it), run time, drain per
node and drain / run time (:class:`models.drain.jobs.JobDrain`, the replay's own record), and
is written again whenever either side changes. Both sides arrive in their own order (the drain
combiner's totals as it flushes, job events in event time), so a row is final once both have
stopped changing: the join is eventually the replay's.

Alert ``failure_to_launch`` (seed 000 §V-C): a job that was held idle for at least
``ftl_node_hours`` of drain, then ran less than ``ftl_s`` (30 s). It is an event, not a state:
the firing and the resolved record come together, at the job's end, once per job. Its value is
the drain known when the two sides first met the rule (the drain stream can lag the job's end,
so a worker that sees the total later reports it later, with the larger value).

Memory: jobs leave when ``retention_s`` of event time (the latest job event) has passed since
their last charge and their end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from models.alerts import Alert, AlertBook
from models.drain.jobs import (
    FAILURE_TO_LAUNCH_S,
    JobDrain,
    JobTimes,
    drain_jobs_row,
    fold_event,
)
from models.records.jobevent import JobEvent


class DrainJobJoin:
    __slots__ = (
        "times",
        "drains",
        "dirty",
        "ftl_s",
        "ftl_ms",
        "retention_s",
        "book",
        "alerted",
        "now",
        "_prune_at",
    )

    def __init__(
        self,
        ftl_node_hours: float = 10.0,
        ftl_s: float = FAILURE_TO_LAUNCH_S,
        retention_s: float = 2 * 86400.0,
        book: AlertBook | None = None,
    ) -> None:
        self.times: dict[str, JobTimes] = {}
        # job -> (drain_ms, nodes_charged, first_ms, last_ms, nodes_running)
        self.drains: dict[str, tuple[int, int, int, int, int]] = {}
        self.dirty: set[str] = set()
        self.ftl_s = ftl_s
        self.ftl_ms = ftl_node_hours * 3_600_000.0
        self.retention_s = retention_s
        self.book = book or AlertBook()
        self.alerted: dict[str, float] = {}  # job -> its end: failure to launch already sent
        self.now: float | None = None  # latest job event time
        self._prune_at: float | None = None

    def events(self, events: Iterable[JobEvent]) -> None:
        """Job events (as :func:`models.drain.jobs.job_times` folds them: the latest wins)."""
        times, drains, dirty = self.times, self.drains, self.dirty
        for e in events:
            jt = times.get(e.job)
            if jt is None:
                jt = times[e.job] = JobTimes()
            fold_event(jt, e)
            if e.job in drains:
                dirty.add(e.job)
            if self.now is None or e.ts > self.now:
                self.now = e.ts

    def drain(self, rows: Iterable[Sequence[Any]]) -> None:
        """Totals ``(job, drain_ms, nodes_charged, first_ms, last_ms, nodes_running)``."""
        for job, d, charged, first, last, running in rows:
            self.drains[job] = (int(d), int(charged), int(first), int(last), int(running))
            self.dirty.add(job)

    def record(self, job: str) -> JobDrain:
        d, charged, first, last, running = self.drains[job]
        jt = self.times.get(job)
        size = jt.nodes if jt and jt.nodes else (running or None)
        return JobDrain(
            job,
            d / 1000,
            charged,
            first,
            last,
            size,
            jt.runtime if jt else None,
            running > 0 or bool(jt and jt.start is not None),
        )

    def take(self) -> tuple[list[tuple[Any, ...]], list[Alert]]:
        """The changed jobs' rows (``drain_jobs.csv`` with job events: job, drain_ms,
        nodes_charged, first_ms, last_ms, size, runtime, drain per node, drain / run time) and
        the failure-to-launch records."""
        rows: list[tuple[Any, ...]] = []
        alerts: list[Alert] = []
        for job in sorted(self.dirty):
            j = self.record(job)
            d_ms = self.drains[job][0]
            rows.append(drain_jobs_row(j, d_ms))
            jt = self.times.get(job)
            if (
                j.runtime_s is not None
                and j.runtime_s < self.ftl_s
                and d_ms >= self.ftl_ms
                and job not in self.alerted
                and jt is not None
                and jt.end is not None
            ):
                at = jt.end
                self.alerted[job] = at
                details = {
                    "size": j.size,
                    "runtime_s": j.runtime_s,
                    "nodes_charged": j.nodes_charged,
                }
                for a in (
                    self.book.fire(
                        "failure_to_launch",
                        job,
                        at,
                        d_ms / 3_600_000,
                        self.ftl_ms / 3_600_000,
                        "job",
                        severity="critical",
                        details=details,
                        since=j.first_charged_ms / 1000,
                    ),
                    self.book.resolve("failure_to_launch", job, at),
                ):
                    if a is not None:
                        alerts.append(a)
        self.dirty.clear()
        self._prune()
        return rows, alerts

    def _prune(self) -> None:
        now = self.now
        if now is None or self._prune_at is not None and now < self._prune_at:
            return
        self._prune_at = now + self.retention_s / 8
        cut = now - self.retention_s
        cut_ms = cut * 1000
        self.times = {
            k: v for k, v in self.times.items() if v.end is None or v.end >= cut or k in self.drains
        }
        old = [
            k
            for k, v in self.drains.items()
            if v[3] < cut_ms and (k not in self.times or self.times[k].end is not None)
        ]
        for k in old:
            del self.drains[k]
            self.times.pop(k, None)
        self.alerted = {k: v for k, v in self.alerted.items() if v >= cut}
