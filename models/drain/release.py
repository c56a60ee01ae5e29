"""Node-release forecast for a reservation (seed 001, Holt, ECMWF; Figure 9, section 17).

A reservation needs ``need`` nodes at time ``at``. ``held`` nodes are already its own (in
operational use or free). The running jobs that still hold nodes, taken in order of expected end
(the order of the seed's ll_jobs display), release them one job after another; the forecast lists
for each job its nodes and the remaining Need after its release (Figure 9's "Free / Need"
columns: 48 -> 32 -> 16 -> 0), the time the reservation is complete and how late that is.
Checkpointable jobs (Figure 9's "Chkpt") may be taken as released at ``now``.

The live forecast stage's running and pending jobs (with their forecasts) go into the worker's
state as columns: :func:`held_snapshot`, :func:`pending_snapshot` and their ``_restore``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from models.statetree import (
    array_in,
    bools_out,
    by_key,
    dict_in,
    floats_in,
    floats_out,
    ints_in,
    ints_out,
    keys_in,
    opt_floats_in,
    opt_floats_out,
    ragged_in,
    ragged_out,
    strs_in,
    strs_out,
)


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


# ---- durable state (the live worker's snapshot) -------------------------------------------------
def forecasts_snapshot(forecasts: Sequence[ReleaseForecast]) -> dict[str, Any]:
    """Forecasts as a state tree of columns (models.state): one value a forecast, and their
    steps one after another (``steps``: how many each has). ``in_the_way`` is not saved: it is
    the jobs of the steps flagged so, in order (as :func:`_walk` makes them)."""
    steps = [s for f in forecasts for s in f.steps]
    return {
        "need": ints_out(f.need for f in forecasts),
        "at": floats_out(f.at for f in forecasts),
        "held": ints_out(f.held for f in forecasts),
        "missing": ints_out(f.missing for f in forecasts),
        "ready_at": opt_floats_out([f.ready_at for f in forecasts]),
        "late_by": opt_floats_out([f.late_by for f in forecasts]),
        "steps": ragged_out([f.steps for f in forecasts]),
        "step_job": strs_out([s.job for s in steps]),
        "step_name": strs_out([s.name for s in steps]),
        "step_nodes": ints_out(s.nodes for s in steps),
        "step_release_at": floats_out(s.release_at for s in steps),
        "step_free_after": ints_out(s.free_after for s in steps),
        "step_need_after": ints_out(s.need_after for s in steps),
        "step_checkpointed": bools_out((s.checkpointed for s in steps), len(steps)),
        "step_in_the_way": bools_out((s.in_the_way for s in steps), len(steps)),
    }


def forecasts_restore(tree: dict[str, Any], n: int) -> list[ReleaseForecast]:
    """The ``n`` forecasts of :func:`forecasts_snapshot`'s tree; a tree of another shape raises
    :class:`~models.state.StateFormatError`."""
    t = dict_in(tree)
    k = len(array_in(t["step_nodes"], "i"))
    steps = [
        ReleaseStep(*s)
        for s in zip(
            keys_in(t["step_job"], k),
            strs_in(t["step_name"], k, none=True),
            ints_in(t["step_nodes"], k),
            floats_in(t["step_release_at"], k),
            ints_in(t["step_free_after"], k),
            ints_in(t["step_need_after"], k),
            array_in(t["step_checkpointed"], "b", k).tolist(),
            array_in(t["step_in_the_way"], "b", k).tolist(),
            strict=True,
        )
    ]
    out = []
    for need, at, held, missing, ready, late, mine in zip(
        ints_in(t["need"], n),
        floats_in(t["at"], n),
        ints_in(t["held"], n),
        ints_in(t["missing"], n),
        opt_floats_in(t["ready_at"], n),
        opt_floats_in(t["late_by"], n),
        ragged_in(t["steps"], steps, n),
        strict=True,
    ):
        way = tuple(s.job for s in mine if s.in_the_way)
        out.append(ReleaseForecast(need, at, held, missing, ready, late, tuple(mine), way))
    return out


# a running job of the live forecast: (nodes, expected end or None, name)
Held = tuple[int, float | None, str | None]
# a pending job of the live forecast: (submit time, its forecast, reservation start or None)
Pending = tuple[float, ReleaseForecast, float | None]


def held_snapshot(running: Mapping[str, Held]) -> dict[str, Any]:
    """Running jobs (job -> nodes, end, name) as a state tree of columns (models.state)."""
    vals = list(running.values())
    return {
        "job": strs_out(list(running)),
        "nodes": ints_out(v[0] for v in vals),
        "end": opt_floats_out([v[1] for v in vals]),
        "name": strs_out([v[2] for v in vals]),
    }


def held_restore(tree: Any) -> dict[str, Held]:
    """The running jobs of :func:`held_snapshot`'s tree, in their order."""
    t = dict_in(tree)
    jobs = keys_in(t["job"])
    n = len(jobs)
    vals = zip(
        ints_in(t["nodes"], n),
        opt_floats_in(t["end"], n),
        strs_in(t["name"], n, none=True),
        strict=True,
    )
    return by_key(jobs, vals, "release state (running jobs)")


def pending_snapshot(pending: Mapping[str, Pending]) -> dict[str, Any]:
    """Pending jobs (job -> submit time, forecast, reservation start) as a state tree of
    columns (models.state)."""
    vals = list(pending.values())
    return {
        "job": strs_out(list(pending)),
        "ts": floats_out(v[0] for v in vals),
        "forecast": forecasts_snapshot([v[1] for v in vals]),
        "reserved_start": opt_floats_out([v[2] for v in vals]),
    }


def pending_restore(tree: Any) -> dict[str, Pending]:
    """The pending jobs of :func:`pending_snapshot`'s tree, in their order."""
    t = dict_in(tree)
    jobs = keys_in(t["job"])
    n = len(jobs)
    vals = zip(
        floats_in(t["ts"], n),
        forecasts_restore(t["forecast"], n),
        opt_floats_in(t["reserved_start"], n),
        strict=True,
    )
    return by_key(jobs, vals, "release state (pending jobs)")
