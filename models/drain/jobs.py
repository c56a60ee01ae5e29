"""Per-job drain analytics (seed 000 §IV, §V): size groups, perpetually sliding jobs, failure to
launch, drain/runtime ratio. Inputs are the accountant's per-job sums plus, when given, job events
(sizes, start and end times); everything here is plain arithmetic on those numbers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from models.records.jobevent import JobEvent

# seed 000 §V-D: (name, smallest size, largest size) in nodes
SIZE_GROUPS: tuple[tuple[str, int, int | None], ...] = (
    ("Tiny", 1, 128),
    ("Sub1k", 129, 999),
    ("1k+", 1000, 1999),
    ("2k+", 2000, 3999),
    ("4k+", 4000, 7999),
    ("8k+", 8000, 15999),
    ("16k+", 16000, None),
)
FAILURE_TO_LAUNCH_S = 30.0  # seed 000 §V-C: drain, then ran less than 30 seconds


def size_group(nodes: int) -> str:
    """Seed 000 §V-D job-size group of a job on ``nodes`` nodes."""
    if nodes < 1:
        raise ValueError(f"job size must be >= 1 node, got {nodes}")
    for name, lo, hi in SIZE_GROUPS:
        if nodes >= lo and (hi is None or nodes <= hi):
            return name
    raise AssertionError("unreachable")


@dataclass(slots=True)
class JobTimes:
    """What job events tell about one job (times in POSIX seconds)."""

    nodes: int | None = None
    submit: float | None = None
    start: float | None = None
    end: float | None = None

    @property
    def runtime(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, self.end - self.start)


def job_times(events: Iterable[JobEvent]) -> dict[str, JobTimes]:
    """Fold submit/start/end events into one record per job (the latest value of each wins)."""
    out: dict[str, JobTimes] = {}
    for e in events:
        jt = out.get(e.job)
        if jt is None:
            jt = out[e.job] = JobTimes()
        if e.nodes is not None and e.nodes > 0:
            jt.nodes = e.nodes
        if e.type == "submit":
            jt.submit = e.ts
        elif e.type == "start":
            jt.start = e.ts
        else:
            jt.end = e.ts
    return out


@dataclass(slots=True)
class JobDrain:
    """One job's drain record as the per-job report shows it."""

    job: str
    drain_s: float  # node-seconds charged to the job while nodes idled for it
    nodes_charged: int
    first_charged_ms: int
    last_charged_ms: int
    size: int | None = None  # nodes: from job events, else nodes seen running it
    runtime_s: float | None = None
    seen_running: bool = False

    @property
    def drain_per_node(self) -> float | None:
        """Seed 000 §V-A.2 sliding ranking key: accumulated drain / job size."""
        return None if not self.size else self.drain_s / self.size

    @property
    def drain_runtime_ratio(self) -> float | None:
        """Seed 000 §V-C: [DrainTime] / [RunTime] node-hours; run node-hours = runtime x size."""
        if self.runtime_s is None or not self.size:
            return None
        run = self.runtime_s * self.size
        return float("inf") if run == 0 else self.drain_s / run


def sliding_jobs(jobs: Iterable[JobDrain]) -> list[JobDrain]:
    """Seed 000 §V-A.2: jobs still queued (never seen running, never started) ranked by drain per
    node, highest first. A queued job without a known size is ranked by drain per node charged."""
    queued = [j for j in jobs if not j.seen_running and j.runtime_s is None]

    def key(j: JobDrain) -> float:
        return j.drain_s / (j.size or max(j.nodes_charged, 1))

    return sorted(queued, key=lambda j: (-key(j), j.job))


def failure_to_launch(
    jobs: Iterable[JobDrain], threshold_s: float = FAILURE_TO_LAUNCH_S
) -> list[JobDrain]:
    """Seed 000 §V-C: jobs that accrued drain, then ran < ``threshold_s``; worst first."""
    out = [
        j for j in jobs if j.drain_s > 0 and j.runtime_s is not None and j.runtime_s < threshold_s
    ]
    return sorted(out, key=lambda j: (-j.drain_s, j.job))


@dataclass(slots=True)
class SizeGroupRow:
    group: str
    jobs: int
    drain_s: float
    mean_drain_s: float
    mean_drain_per_node: float


def by_size_group(jobs: Iterable[JobDrain]) -> list[SizeGroupRow]:
    """Seed 000 §V-D, Figure 2: drain summed and averaged per size group (jobs of known size)."""
    acc: dict[str, list[float]] = {name: [] for name, _, _ in SIZE_GROUPS}
    per_node: dict[str, list[float]] = {name: [] for name, _, _ in SIZE_GROUPS}
    for j in jobs:
        if j.size:
            g = size_group(j.size)
            acc[g].append(j.drain_s)
            per_node[g].append(j.drain_s / j.size)
    rows = []
    for name, _, _ in SIZE_GROUPS:
        v = acc[name]
        if v:
            rows.append(
                SizeGroupRow(name, len(v), sum(v), sum(v) / len(v), sum(per_node[name]) / len(v))
            )
    return rows
