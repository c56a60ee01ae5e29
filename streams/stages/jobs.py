"""Job stages (seeds 001, 002, 004 and Open XDMoD usage): the factory of every job stage, in
output order, for the replay and the live worker.

Every stage takes the same time-sorted JobEvent batches (never straddling a day edge of the
configured zone: streams.sources.jobevents) and closes its days itself, in event time; one
module per analytic:

* :mod:`~streams.stages.usage` -> ``usage_daily.csv`` (Open XDMoD Jobs-realm rule);
* :mod:`~streams.stages.shortjobs` -> ``shortjobs.csv``, ``fairshare_adjust.tsv`` / ``.json``
  (seed 002);
* :mod:`~streams.stages.turnover` -> ``turnover.csv``, ``turnover_hist.csv`` (seed 002);
* :mod:`~streams.stages.runtime` -> ``runtime_predictions.csv`` (seed 001 §11.2);
* :mod:`~streams.stages.capability` -> ``capability_daily.csv`` (seed 004, CUP40);
* :mod:`~streams.stages.fairshare` -> ``fairshare_usage.csv`` (seed 004, half-life decay);
* :mod:`~streams.stages.release` -> ``release_forecast.csv`` (seed 001, Figure 9).

Their tables are declared in :mod:`streams.tables.jobs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from models.jobs.capability import DEFAULT_FRACTION, CapabilityUse
from models.jobs.fairshare import DEFAULT_HALF_LIFE_S, FairShareUsage
from models.jobs.runtime import DEFAULT_HISTORY, RuntimePredictor
from models.jobs.shortjobs import (
    DEFAULT_INTERVAL_S,
    DEFAULT_LAMBDA,
    DEFAULT_THRESHOLD_S,
    ShortJobPenalty,
)
from models.jobs.turnover import DEFAULT_MAX_GAP_S, DEFAULT_WINDOW_S, SlotTurnover
from models.records.jobevent import JobEvent
from streams.stages.capability import CapabilityStage
from streams.stages.fairshare import FairShareStage
from streams.stages.release import ReleaseForecastStage
from streams.stages.runtime import RuntimeStage
from streams.stages.shortjobs import ShortJobsStage
from streams.stages.turnover import TurnoverStage
from streams.stages.usage import UsageStage


def red_black_sections(
    red_option: str | None, events: Iterable[JobEvent]
) -> tuple[frozenset[str] | None, str | None]:
    """The Red section's partitions from ``--red-partitions`` (comma-separated), or None with
    the reason the Red/Black columns stay empty: the source records no partition, or the
    option is not given (which partitions are Red is site knowledge, never guessed from a
    name)."""
    seen = sorted({e.partition for e in events if e.partition})
    if not seen:
        return None, "the source records no partition (SWF, or no partition field)"
    if red_option is None:
        return None, (
            "no --red-partitions: which partitions form the Red section is not guessed; "
            f"partitions seen: {', '.join(seen)}"
        )
    return frozenset(p.strip() for p in red_option.split(",") if p.strip()), None


def job_stages(
    section_nodes: int | None,
    tz: str = "UTC",
    resource: str = "",
    section_from: str = "option",
    short_threshold: float = DEFAULT_THRESHOLD_S,
    short_min_runtime: float | None = None,
    short_interval: float = DEFAULT_INTERVAL_S,
    short_lambda: float = DEFAULT_LAMBDA,
    turnover_window: float = DEFAULT_WINDOW_S,
    turnover_max_gap: float = DEFAULT_MAX_GAP_S,
    history_runs: int | None = DEFAULT_HISTORY,
    half_life_s: float = DEFAULT_HALF_LIFE_S,
    refund_states: tuple[str, ...] = ("NODE_FAIL",),
    capability_fraction: float = DEFAULT_FRACTION,
    backfill_flags: bool = True,
    on_adjust_tick: Callable[[ShortJobPenalty], None] | None = None,
    red_partitions: Iterable[str] | None = None,
    sections_reason: str | None = None,
    overrun_margin: float | None = None,
    live: bool = False,
) -> list[Any]:
    """Every job stage, in output order, with the seeds' defaults: the replay's and the live
    worker's (:func:`live_job_stages`). ``section_nodes``: the capability section's size
    (None: unknown, and no capability or release-forecast stage). ``backfill_flags``: whether
    the source records backfilled jobs (else no modified CUP). ``on_adjust_tick``: called at
    each 3-minute tick with the short-job model (``--adjust-out``: streams.sinks.adjust).
    ``red_partitions``: the Red section's partitions (None: Red/Black unknown, for the reason
    ``sections_reason``). ``overrun_margin``: the run-time model's margin before a running job
    counts as overrun (None: the model's default). ``live``: the worker's stages: the run-time
    stage keeps no prediction for the summary's scores (its rows leave memory with the sinks),
    and the forecast also writes its rows at the submit (provisional)."""
    runtime = (
        RuntimePredictor(history=history_runs)
        if overrun_margin is None
        else RuntimePredictor(history=history_runs, overrun_margin=overrun_margin)
    )
    stages: list[Any] = [
        UsageStage(tz, resource),
        ShortJobsStage(
            ShortJobPenalty(short_threshold, short_min_runtime, short_interval, short_lambda),
            on_adjust_tick,
        ),
        TurnoverStage(SlotTurnover(turnover_window, turnover_max_gap), tz),
        RuntimeStage(runtime, keep=not live),
    ]
    if section_nodes:
        use = CapabilityUse(section_nodes, capability_fraction, tz, backfill_flags, red_partitions)
        stages.append(CapabilityStage(use, tz, section_from, sections_reason))
    stages.append(FairShareStage(FairShareUsage(half_life_s, refund_states), tz))
    if section_nodes:
        stages.append(ReleaseForecastStage(section_nodes, provisional=live))
    return stages


def live_job_stages(
    tz: str,
    cluster: str,
    section_nodes: int | None,
    backfill_flags: bool,
    overrun_margin: float,
) -> dict[str, Any]:
    """The live worker's job stages by name (:func:`job_stages` with ``live=True``): the
    seeds' defaults, usage under the cluster's name, the overrun margin of its alerts; the
    capability section from its settings (``jobs.section_nodes``, else ``accounting.nodes``;
    None: no capability or forecast), without Red/Black partitions."""
    stages = job_stages(
        section_nodes,
        tz,
        cluster,
        "setting",
        backfill_flags=backfill_flags,
        sections_reason="live: no Red/Black partitions",
        overrun_margin=overrun_margin,
        live=True,
    )
    return {s.name: s for s in stages}
