"""The live worker: one flow (streams/live/runner.py) run for each family (drain, jobs,
samples), one checkpoint protocol (streams/live/checkpoint.py), one context
(streams/live/context.py). docs/state.md has the design."""

from __future__ import annotations

from typing import Any

from streams.config import Settings
from streams.live.context import WorkerContext


def attach(
    app: Any,
    settings: Settings,
    sink: Any | None,
    job_partitions: int | None = None,
    sample_partitions: int | None = None,
) -> WorkerContext:
    """Every family the settings switch on, the worker's health and /metrics, on ``app``.
    ``*_partitions``: of job-events and node-samples (their mergers wait for each)."""
    from streams.live.drain import DrainCombine, DrainForward
    from streams.live.health import attach_health
    from streams.live.runner import attach as attach_family

    ctx = WorkerContext(app, settings, sink)
    health = attach_health(ctx)
    families: list[tuple[Any, Any]] = [(DrainForward(ctx), DrainCombine(ctx))]
    if settings.worker.live_jobs == "on":
        from streams.live.jobs import JobsCombine, JobsForward

        families.append((JobsForward(ctx), JobsCombine(ctx, job_partitions)))
    if settings.worker.live_samples == "on":
        from streams.live.samples import SamplesCombine, SamplesForward

        families.append((SamplesForward(ctx), SamplesCombine(ctx, sample_partitions)))
    for fwd, comb in families:
        forwarder, combiner = attach_family(ctx, fwd, comb)
        health.forwarders.append(forwarder)
        health.combiners.append(combiner)
    health.drain = health.forwarders[0]
    return ctx
