"""One factory of the job stages: ``live_job_stages`` (streams/stages/jobs.py, ``job_stages``
with ``live=True``), which the worker calls (streams/live/jobs.py ``live_stages``), builds the
stages the worker built by hand before the one factory (kept here as the reference): the same
names, classes and configuration, every attribute alike."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from models.jobs.capability import DEFAULT_FRACTION, CapabilityUse
from models.jobs.fairshare import DEFAULT_HALF_LIFE_S, FairShareUsage
from models.jobs.runtime import RuntimePredictor
from models.jobs.shortjobs import ShortJobPenalty
from models.jobs.turnover import SlotTurnover
from streams.config import AccountingSettings, AlertsSettings, JobsSettings, Settings
from streams.live.jobs import live_stages
from streams.stages.capability import CapabilityStage
from streams.stages.fairshare import FairShareStage
from streams.stages.jobs import job_stages, live_job_stages
from streams.stages.release import ReleaseForecastStage
from streams.stages.runtime import RuntimeStage
from streams.stages.shortjobs import ShortJobsStage
from streams.stages.turnover import TurnoverStage
from streams.stages.usage import UsageStage


def by_hand(settings: Settings) -> dict[str, Any]:
    """The worker's job stages as it built them before the one factory."""
    tz = settings.accounting.tz
    stages: dict[str, Any] = {
        "usage": UsageStage(tz, settings.accounting.cluster),
        "shortjobs": ShortJobsStage(ShortJobPenalty()),
        "turnover": TurnoverStage(SlotTurnover(), tz),
        "runtime": RuntimeStage(
            RuntimePredictor(overrun_margin=settings.alerts.overrun_margin), keep=False
        ),
        "fairshare": FairShareStage(FairShareUsage(DEFAULT_HALF_LIFE_S, ("NODE_FAIL",)), tz),
    }
    section = settings.jobs.section_nodes or settings.accounting.nodes
    if section:
        use = CapabilityUse(section, DEFAULT_FRACTION, tz, settings.jobs.backfill_flags == "yes")
        stages["capability"] = CapabilityStage(use, tz, "setting", "live: no Red/Black partitions")
        stages["release"] = ReleaseForecastStage(section, provisional=True)
    return stages


def shape(x: Any, depth: int = 0) -> Any:
    """``x`` as plain values to compare: an object as its class and attributes, recursively."""
    assert depth < 12, "too deep: a cycle?"
    if x is None or isinstance(x, bool | int | float | str | bytes | ZoneInfo):
        return x
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.tolist())
    if isinstance(x, list | tuple):
        return (type(x).__name__, [shape(v, depth + 1) for v in x])
    if isinstance(x, set | frozenset):
        return (type(x).__name__, sorted(map(repr, x)))
    if isinstance(x, dict):
        return ("dict", [(repr(k), shape(v, depth + 1)) for k, v in x.items()])
    if callable(x) and not hasattr(x, "__dict__") and not hasattr(x, "__slots__"):
        return ("callable", getattr(x, "__qualname__", repr(x)))
    names: list[str] = []
    for cls in type(x).__mro__:
        names += [n for n in getattr(cls, "__slots__", ()) if n not in names]
    names += [n for n in getattr(x, "__dict__", {}) if n not in names]
    return (
        type(x).__qualname__,
        {n: shape(getattr(x, n), depth + 1) for n in sorted(names) if hasattr(x, n)},
    )


def factory_stages(s: Settings) -> dict[str, Any]:
    """The call that replaces ``live_stages(settings)`` in the worker."""
    return live_job_stages(
        s.accounting.tz,
        s.accounting.cluster,
        s.jobs.section_nodes or s.accounting.nodes,
        s.jobs.backfill_flags == "yes",
        s.alerts.overrun_margin,
    )


SETTINGS = [
    Settings(),  # no section size: no capability, no release forecast
    Settings(accounting=AccountingSettings(tz="Europe/Berlin", cluster="c1", nodes=40)),
    Settings(
        accounting=AccountingSettings(tz="America/Chicago", cluster="c2", nodes=40),
        jobs=JobsSettings(section_nodes=32, backfill_flags="yes"),
        alerts=AlertsSettings(overrun_margin=300.0),
    ),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "nodes", "section"])
def test_the_factory_builds_what_live_stages_built(settings: Settings) -> None:
    want = by_hand(settings)
    got = factory_stages(settings)
    assert sorted(live_stages(settings)) == sorted(got)
    assert sorted(got) == sorted(want)
    for name in want:
        assert type(got[name]) is type(want[name]), name
        assert shape(got[name]) == shape(want[name]), name


def test_the_replays_stages_are_unchanged_by_the_live_options() -> None:
    a = job_stages(40, "UTC", "r", "option")
    b = job_stages(40, "UTC", "r", "option", overrun_margin=None, live=False)
    assert [s.name for s in a] == [
        "usage",
        "shortjobs",
        "turnover",
        "runtime",
        "capability",
        "fairshare",
        "release",
    ]
    assert [shape(s) for s in a] == [shape(s) for s in b]
    runtime, release = a[3], a[6]
    assert runtime.keep and not release.provisional
    live = {s.name: s for s in job_stages(40, "UTC", "r", "option", live=True)}
    assert not live["runtime"].keep and live["release"].provisional
    assert [s.name for s in job_stages(None, live=True)] == [
        "usage",
        "shortjobs",
        "turnover",
        "runtime",
        "fairshare",
    ]
