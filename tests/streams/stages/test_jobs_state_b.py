"""The run-time, capability and node-release stages saved mid-stream as data (``snapshot`` ->
models.state ``pack`` -> ``unpack`` -> ``restore`` into a stage built anew as the live worker
builds it) go on exactly as the stage that was never saved: every row in order, what the live
path reads between batches, the final rows and the summary. A tree of the wrong types is
refused, never restored into a half-right stage."""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.jobsource import sort_events
from models.jobs.capability import DayCalendar
from models.jobs.runtime import RuntimePredictor
from models.records.jobevent import JobEvent
from models.state import StateFormatError, pack, unpack
from streams.config import AccountingSettings, Settings
from streams.live.jobs import live_stages
from streams.sources.jobevents import day_batches
from streams.stages.runtime import RuntimeStage
from tests.reference_jobs import build_events, job_specs

NAMES = ("runtime", "capability", "release")
REFUSED = (StateFormatError, KeyError, TypeError, ValueError)


def _stages(tz: str, section: int) -> dict[str, Any]:
    """The stages as the live worker builds them (streams.live.jobs.live_stages)."""
    s = Settings(accounting=AccountingSettings(tz=tz, nodes=section))
    built = live_stages(s)
    return {k: built[k] for k in NAMES}


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[list[JobEvent]], list[bool], int]:
    """Job events of several days (jobs overlapping and queued, few users and names so that
    histories build and runs overrun their estimates, sizes up to more than the section,
    requests exceeded), some jobs cancelled before they start, some with a reservation on
    their submit or start; cut into the merger's releases, each with whether a flush follows
    it, and where the state is saved (after that many releases). A seeded generator makes
    the jobs (hypothesis varies the seed and the sizes: its own lists of tuples came out small
    and alike, and saved mostly before the first release or after the last)."""
    rnd = random.Random(draw(st.integers(0, 2**32), label="seed"))
    n = draw(st.integers(5, 80), label="jobs")
    gap = draw(st.sampled_from([300, 2000, 6000]), label="mean gap")
    events: list[JobEvent] = []
    t = 1_700_000_000.0
    for i in range(n):
        t += rnd.expovariate(1 / gap)
        run = rnd.choice([rnd.uniform(0, 1200), rnd.uniform(0, 40_000), 1800.0])
        req = rnd.choice([None, 3600.0, float(rnd.randint(60, 30_000))])
        common: dict[str, Any] = {
            "job": f"j{i}",
            "user": rnd.choice(["alice", "bob", "carol"]),
            "name": rnd.choice(["a", "b", None]),
            "nodes": rnd.randint(1, 8),
            "req_walltime": req,
            "backfill": rnd.choice([None, True, False]),
        }
        how = rnd.choice(["start", "submit", "cancelled", None, None, None])
        rsv = t + rnd.randint(-600, 7200)
        wait = rnd.choice([0.0, rnd.uniform(0, 600), rnd.uniform(0, 20_000)])
        sub_rsv = rsv if how == "submit" else None
        events.append(JobEvent("submit", t - wait, reserved_start=sub_rsv, **common))
        if how != "cancelled":
            start_rsv = rsv if how == "start" else None
            events.append(JobEvent("start", t, reserved_start=start_rsv, **common))
        events.append(JobEvent("end", t + run, **common))
    events = sort_events(events)
    # releases of up to 30 events; or cut at UTC day edges too (the state saved between a
    # day's last release and the next day's first: the edge is passed after the restore)
    edges = rnd.random() < 0.5
    parts: list[list[JobEvent]] = [[]]
    for e in events:
        last = parts[-1]
        if (
            len(last) >= rnd.randint(1, 30)
            or edges
            and last
            and e.ts // 86400 > last[-1].ts // 86400
        ):
            parts.append([])
        parts[-1].append(e)
    if not parts[0]:
        parts = []
    flushes = [rnd.random() < 0.5 for _ in parts]
    new_day = [
        i for i in range(1, len(parts)) if parts[i][0].ts // 86400 > parts[i - 1][-1].ts // 86400
    ]
    if new_day and rnd.random() < 0.5:
        return parts, flushes, rnd.choice(new_day)
    return parts, flushes, rnd.randint(0, len(parts))


class Live:
    """The stages fed as the live worker feeds them: each release of the merger cut at the
    zone's day edges, then the run-time model's running jobs read; at a flush, the
    provisional forecast rows."""

    def __init__(self, stages: dict[str, Any], tz: str) -> None:
        self.stages = stages
        self.cal = DayCalendar(tz)
        self.seen: list[Any] = []

    def release(self, released: list[JobEvent], flush: bool) -> None:
        for batch in day_batches(self.cal, released):
            for name, stage in self.stages.items():
                for table, rows in stage.step(batch):
                    self.seen.append((name, getattr(table, "file", table), list(rows)))
        if released:
            now = released[-1].ts
            self.seen.append(("running", self.stages["runtime"].m.running(now)))
            self.seen.append(("overruns", self.stages["runtime"].m.overruns(now)))
        if flush:
            self.seen.append(("provisional", self.stages["release"].provisional_rows()))

    def finish(self) -> list[Any]:
        out: list[Any] = list(self.seen)
        for name, stage in self.stages.items():
            for table, rows in stage.finish():
                out.append((name, getattr(table, "file", table), list(rows)))
            out.append((name, "summary", stage.summary()))
        return out


def _flat(w: tuple[list[list[JobEvent]], list[bool], int]) -> list[JobEvent]:
    return [e for part in w[0] for e in part]


def _saved(stage: Any, kind: str) -> Any:
    """The stage's state as the worker writes it and reads it back."""
    data = pack(kind, 1, stage.snapshot())
    return unpack(data, kind, {1})[1]


@settings(max_examples=150, deadline=None)
@given(workloads(), st.sampled_from(["UTC", "America/Chicago"]), st.sampled_from([6, 16]))
def test_a_saved_and_restored_stage_goes_on_as_the_one_never_saved(
    w: tuple[list[list[JobEvent]], list[bool], int], tz: str, section: int
) -> None:
    parts, flushes, k = w
    ref = Live(_stages(tz, section), tz)
    for part, flush in zip(parts, flushes, strict=True):
        ref.release(part, flush)
    want = ref.finish()

    live = Live(_stages(tz, section), tz)
    for part, flush in zip(parts[:k], flushes[:k], strict=True):
        live.release(part, flush)
    fresh = _stages(tz, section)
    for name, stage in fresh.items():
        stage.restore(_saved(live.stages[name], name))
        assert pack(name, 1, stage.snapshot()) == pack(name, 1, live.stages[name].snapshot())
    live.stages = fresh
    for part, flush in zip(parts[k:], flushes[k:], strict=True):
        live.release(part, flush)
    assert live.finish() == want


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(job_specs().map(build_events), workloads().map(_flat)),
    st.sampled_from([None, 5, 1]),
    st.data(),
)
def test_the_replay_runtime_stage_with_its_predictions_and_any_history(
    events: list[JobEvent], history: int | None, data: st.DataObject
) -> None:
    """RuntimeStage as the replay builds it (``keep``: the predictions for the scores), with
    every run kept or the last N."""
    k = data.draw(st.integers(0, len(events)))
    cal = DayCalendar("UTC")

    def feed(stage: RuntimeStage, evs: list[JobEvent]) -> list[Any]:
        return [r for b in day_batches(cal, evs) for _t, rows in stage.step(b) for r in rows]

    ref = RuntimeStage(RuntimePredictor(history=history))
    want = feed(ref, events) + [ref.m.running(1e12), ref.summary()]
    a = RuntimeStage(RuntimePredictor(history=history))
    got = feed(a, events[:k])
    b = RuntimeStage(RuntimePredictor(history=history))
    b.restore(_saved(a, "runtime"))
    got += feed(b, events[k:]) + [b.m.running(1e12), b.summary()]
    assert got == want


def test_a_tree_kept_with_another_history_setting_is_refused() -> None:
    events = build_events([(0.0, 100.0, "u", "g", "a", 1, 1, (), None, None, 3600.0)] * 3)
    a = RuntimeStage(RuntimePredictor(history=None))
    for b in day_batches(DayCalendar("UTC"), events):
        a.step(b)
    with pytest.raises(StateFormatError):
        RuntimeStage(RuntimePredictor(history=5)).restore(_saved(a, "runtime"))


# ---- wrong trees --------------------------------------------------------------------------------
def _leaves(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to every value of a tree that is not a dict or a non-empty list."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(tree, list) and tree:
        for i, v in enumerate(tree):
            yield from _leaves(v, (*path, i))
    else:
        yield path


def _wrong(v: Any) -> Any:
    """A value of a type the leaf ``v`` never has."""
    if isinstance(v, np.ndarray):
        return v.astype(str) if v.dtype.kind != "U" else v.astype(np.float64)
    if isinstance(v, str):
        return 1.5
    return "x"


def _with(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(tree)
    at = out
    for p in path[:-1]:
        at = at[p]
    at[path[-1]] = value
    return out


def _busy_stages() -> dict[str, Any]:
    """Stages holding some of everything: running, pending and ended jobs, closed days."""
    specs = []
    for i in range(40):
        name, flag, req = ["a", None][i % 2], [None, True][i % 2], [3600.0, None][i % 3 == 0]
        specs.append(
            (i * 7000.0, 300.0 + i % 3 * 4000, "u", "g", name, 1 + i % 5, 4, (), flag, None, req)
        )
    events = []
    for e in build_events(specs):
        if e.job == "j38" and e.type == "start":
            continue  # cancelled while pending
        events.append(dataclasses.replace(e, reserved_start=e.ts + 60) if e.job == "j39" else e)
    live = Live(_stages("UTC", 6), "UTC")
    live.release(events[: len(events) - 12], False)
    return live.stages


@pytest.mark.parametrize("name", NAMES)
def test_a_tree_with_a_wrong_type_anywhere_is_refused(name: str) -> None:
    stage = _busy_stages()[name]
    tree = _saved(stage, name)
    paths = list(_leaves(tree))
    assert len(paths) > 10
    for path in paths:
        bad = _with(tree, path, _wrong(_get(tree, path)))
        with pytest.raises(REFUSED):
            _stages("UTC", 6)[name].restore(bad)
    for path in paths:  # a value missing
        bad = copy.deepcopy(tree)
        at = bad
        for p in path[:-1]:
            at = at[p]
        if isinstance(at, dict):
            del at[path[-1]]
            with pytest.raises(REFUSED):
                _stages("UTC", 6)[name].restore(bad)


def _get(tree: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        tree = tree[p]
    return tree


def test_columns_of_other_lengths_are_refused() -> None:
    stage = _busy_stages()["release"]
    tree = _saved(stage, "release")
    tree["running"]["nodes"] = tree["running"]["nodes"][:-1]
    with pytest.raises(StateFormatError):
        _stages("UTC", 6)["release"].restore(tree)
    tree = _saved(stage, "release")
    tree["fresh"] = ["no-such-job"]
    with pytest.raises(StateFormatError):
        _stages("UTC", 6)["release"].restore(tree)
    tree = _saved(_busy_stages()["runtime"], "runtime")
    tree["model"]["running"]["hist"] = tree["model"]["running"]["hist"] + 10**6
    with pytest.raises(StateFormatError):
        _stages("UTC", 6)["runtime"].restore(tree)
