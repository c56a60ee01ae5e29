"""Node-release forecast for a reservation (seed 001, Holt, ECMWF; Figure 9, section 17).

A reservation needs ``need`` nodes at time ``at``. ``held`` nodes are already its own (in
operational use or free). The running jobs that still hold nodes, taken in order of expected end
(the order of the seed's ll_jobs display), release them one job after another; the forecast lists
for each job its nodes and the remaining Need after its release (Figure 9's "Free / Need"
columns: 48 -> 32 -> 16 -> 0), the time the reservation is complete and how late that is.
Checkpointable jobs (Figure 9's "Chkpt") may be taken as released at ``now``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class Holder:
    """A running job holding nodes the reservation may need."""

    job: str
    nodes: int
    expected_end: float
    name: str | None = None
    checkpointable: bool = False


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class ReleaseStep:
    job: str
    name: str | None
    nodes: int
    release_at: float
    free_after: int  # nodes the reservation has once this job has ended
    need_after: int  # nodes still missing once this job has ended
    checkpointed: bool
    in_the_way: bool  # releases after the reservation's time


# not frozen, for speed (see models.records.jobevent.JobEvent); never changed once made
@dataclass(slots=True)
class ReleaseForecast:
    need: int
    at: float
    held: int
    missing: int  # need - held at `now` (Figure 9's first Need)
    ready_at: float | None  # when `need` nodes are free (None: the running jobs cannot free them)
    late_by: float | None  # max(0, ready_at - at)
    steps: tuple[ReleaseStep, ...]  # only the jobs whose release is needed
    in_the_way: tuple[str, ...]  # jobs among steps that release after `at`


def forecast_release(
    need: int,
    at: float,
    held: int,
    running: Iterable[Holder],
    now: float | None = None,
    checkpoint: bool = False,
) -> ReleaseForecast:
    """When will ``need`` nodes be free for a reservation due at ``at``?

    ``held``: nodes the reservation already has (in its use or idle). ``checkpoint``: release
    checkpointable jobs at ``now`` (they write a restart file and stop)."""
    if checkpoint and now is None:
        raise ValueError("checkpoint needs now")
    base = now if now is not None else at
    if need <= held:
        return _walk(need, at, held, base, ())
    order: list[tuple[float, str, int, str | None, bool]] = []
    for h in running:
        ck = checkpoint and h.checkpointable
        rel = base if ck else h.expected_end  # ck implies now is not None, so base is now
        if now is not None and rel < now:
            rel = now  # overrunning jobs: expected any moment
        order.append((rel, h.job, h.nodes, h.name, ck))
    order.sort(key=lambda x: (x[0], x[1]))
    return _walk(need, at, held, base, order)


def forecast_in_order(
    need: int,
    at: float,
    held: int,
    releases: Iterable[tuple[float, str, int, str | None, bool]],
    now: float,
) -> ReleaseForecast:
    """:func:`forecast_release` at ``now`` for running jobs given already in its order:
    ``releases`` are (release time, job, nodes, name, checkpointed), the release time a job's
    expected end, or ``now`` for a job past it (or checkpointed), sorted by release time, then
    job. The same forecast without making, sorting and walking a holder per running job: the
    walk stops at the job that completes the reservation (the live stage keeps its running
    jobs in order)."""
    return _walk(need, at, held, now, releases)


def _walk(
    need: int,
    at: float,
    held: int,
    base: float,
    releases: Iterable[tuple[float, str, int, str | None, bool]],
) -> ReleaseForecast:
    """The releases, in order, until ``need`` nodes are free (Figure 9's Free / Need rows);
    ``base``: when the reservation could start if nothing is missing (now, else ``at``)."""
    missing = need - held
    if missing <= 0:
        return ReleaseForecast(need, at, held, 0, base if base <= at else at, 0.0, (), ())
    free = held
    steps: list[ReleaseStep] = []
    in_the_way: list[str] = []
    ready: float | None = None
    for rel, job, nodes, name, ck in releases:
        if nodes <= 0:
            continue
        free += nodes
        left = need - free if need > free else 0
        steps.append(ReleaseStep(job, name, nodes, rel, free, left, ck, rel > at))
        if rel > at:
            in_the_way.append(job)
        if left == 0:
            ready = rel
            break
    late = None if ready is None else max(0.0, ready - at)
    return ReleaseForecast(need, at, held, missing, ready, late, tuple(steps), tuple(in_the_way))
