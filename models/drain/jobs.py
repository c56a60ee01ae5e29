"""Per-job drain analytics (seed 000 §IV, §V): size groups (the seed's absolute sizes, or the same
boundaries relative to the machine), perpetually sliding jobs, failure to launch, drain/runtime
ratio. Inputs are the accountant's per-job sums plus, when given, job events
(sizes, start and end times); everything here is plain arithmetic on those numbers."""

from __future__ import annotations

import math
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
BLUE_WATERS_NODES = 26_846  # seed 000 §III-B.3: "Blue Waters, it has 26,846 schedulable nodes"
RELATIVE_BELOW = 5_000  # size_groups("auto"): machines under this many nodes get relative groups
SIZE_GROUP_MODES = ("auto", "absolute", "relative")
FAILURE_TO_LAUNCH_S = 30.0  # seed 000 §V-C: drain, then ran less than 30 seconds


@dataclass(slots=True, frozen=True)
class SizeGroups:
    """Size groups as used on one machine: ``groups`` is (name, smallest, largest) in nodes of
    this machine (largest None: no bound; smallest > largest: no job size falls in it).

    ``absolute``: the seed's sizes as printed (made for Blue Waters: on a 100-node machine every
    job is Tiny). ``relative``: the same boundaries as fractions of Blue Waters' 26,846 nodes,
    scaled to ``machine_nodes``: a job of s nodes is in the group whose lower bound lo satisfies
    lo / 26,846 <= s / machine_nodes < next lo / 26,846 (exact integer arithmetic), so on
    26,846 nodes the relative groups are the seed's."""

    scale: str  # "absolute" or "relative"
    machine_nodes: int | None
    groups: tuple[tuple[str, int, int | None], ...]

    def group(self, nodes: int) -> str:
        if nodes < 1:
            raise ValueError(f"job size must be >= 1 node, got {nodes}")
        for name, lo, hi in self.groups:
            if nodes >= lo and (hi is None or nodes <= hi):
                return name
        raise AssertionError("unreachable")


ABSOLUTE_SIZE_GROUPS = SizeGroups("absolute", None, SIZE_GROUPS)


def relative_size_groups(
    machine_nodes: int, reference_nodes: int = BLUE_WATERS_NODES
) -> SizeGroups:
    """The seed's groups scaled from ``reference_nodes`` (Blue Waters) to ``machine_nodes``."""
    if machine_nodes < 1 or reference_nodes < 1:
        raise ValueError("machine and reference node counts must be >= 1")
    los = [lo for _, lo, _ in SIZE_GROUPS]
    # smallest s with s / machine >= lo / reference: ceil(lo x machine / reference), at least 1
    starts = [max(1, -(-lo * machine_nodes // reference_nodes)) for lo in los]
    starts[0] = 1
    groups = tuple(
        (name, starts[i], starts[i + 1] - 1 if i + 1 < len(starts) else None)
        for i, (name, _, _) in enumerate(SIZE_GROUPS)
    )
    return SizeGroups("relative", machine_nodes, groups)


def size_groups(
    mode: str, machine_nodes: int | None, relative_below: int = RELATIVE_BELOW
) -> SizeGroups:
    """``absolute``, ``relative`` (to ``machine_nodes``), or ``auto``: relative when the machine
    has fewer than ``relative_below`` nodes, the seed's absolute sizes otherwise (and when the
    machine size is unknown)."""
    if mode not in SIZE_GROUP_MODES:
        raise ValueError(f"size groups must be one of {', '.join(SIZE_GROUP_MODES)}, got {mode!r}")
    if mode == "auto":
        small = machine_nodes is not None and 0 < machine_nodes < relative_below
        mode = "relative" if small else "absolute"
    if mode == "relative":
        if not machine_nodes or machine_nodes < 1:
            raise ValueError("relative size groups need the machine's node count")
        return relative_size_groups(machine_nodes)
    return ABSOLUTE_SIZE_GROUPS


def size_group(nodes: int) -> str:
    """Seed 000 §V-D job-size group of a job on ``nodes`` nodes (the seed's absolute sizes)."""
    return ABSOLUTE_SIZE_GROUPS.group(nodes)


@dataclass(slots=True)
class JobTimes:
    """What job events tell about one job (times in POSIX seconds)."""

    nodes: int | None = None
    submit: float | None = None
    start: float | None = None
    end: float | None = None
    backfill: bool | None = None  # None: the source does not say

    @property
    def runtime(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, self.end - self.start)


def fold_event(jt: JobTimes, e: JobEvent) -> None:
    """One submit/start/end event into its job's record (the latest value of each wins)."""
    if e.nodes is not None and e.nodes > 0:
        jt.nodes = e.nodes
    if e.backfill is not None:
        jt.backfill = e.backfill
    if e.type == "submit":
        jt.submit = e.ts
    elif e.type == "start":
        jt.start = e.ts
    else:
        jt.end = e.ts


def job_times(events: Iterable[JobEvent]) -> dict[str, JobTimes]:
    """Fold submit/start/end events into one record per job (the latest value of each wins)."""
    out: dict[str, JobTimes] = {}
    for e in events:
        jt = out.get(e.job)
        if jt is None:
            jt = out[e.job] = JobTimes()
        fold_event(jt, e)
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


def drain_jobs_row(j: JobDrain, drain_ms: int) -> tuple[object, ...]:
    """``drain_jobs.csv``'s row with job events (drain in exact node-milliseconds)."""
    return (
        j.job,
        drain_ms,
        j.nodes_charged,
        j.first_charged_ms,
        j.last_charged_ms,
        j.size,
        j.runtime_s,
        j.drain_per_node,
        j.drain_runtime_ratio,
    )


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
    nodes_lo: int = 1  # the group's sizes on this machine
    nodes_hi: int | None = None
    scale: str = "absolute"


def by_size_group(
    jobs: Iterable[JobDrain], groups: SizeGroups = ABSOLUTE_SIZE_GROUPS
) -> list[SizeGroupRow]:
    """Seed 000 §V-D, Figure 2: drain summed and averaged per size group (jobs of known size).
    Sums are ``math.fsum`` (correctly rounded, so the live join's exact partial sums equal them)."""
    acc: dict[str, list[float]] = {name: [] for name, _, _ in groups.groups}
    per_node: dict[str, list[float]] = {name: [] for name, _, _ in groups.groups}
    for j in jobs:
        if j.size:
            g = groups.group(j.size)
            acc[g].append(j.drain_s)
            per_node[g].append(j.drain_s / j.size)
    rows = []
    for name, lo, hi in groups.groups:
        v = acc[name]
        if v:
            rows.append(
                SizeGroupRow(
                    name,
                    len(v),
                    math.fsum(v),
                    math.fsum(v) / len(v),
                    math.fsum(per_node[name]) / len(v),
                    lo,
                    hi,
                    groups.scale,
                )
            )
    return rows
