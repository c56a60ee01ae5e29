"""The job stages' durable state (snapshot -> models.state document -> restore): a stage
restored from its state between two releases of the live path goes on exactly as the stage
it was saved from: the same rows in the same order, the same values read between releases,
the same finish and summary. A malformed state is refused, never restored half-way."""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.formats.jobsource import iter_job_events, sort_events
from models.jobs.capability import DayCalendar
from models.jobs.shortjobs import ShortJobPenalty
from models.records.jobevent import JobEvent
from models.state import StateFormatError, pack, unpack
from streams.sources.jobevents import day_batches
from streams.stages.jobs import live_job_stages
from streams.stages.shortjobs import ShortJobsStage
from streams.stages.usage import UsageStage
from tests.golden.make_golden import INPUTS
from tests.reference_jobs import build_events

# around the end of daylight saving time in Chicago (2023-11-05): a 25-hour day
BASE = 1_699_000_000.0
MALFORMED = (StateFormatError, KeyError, TypeError, ValueError)
Ticks = list[tuple[float | None, dict[str, dict[str, float]]]]


def _stages(tz: str, ticks: Ticks | None = None) -> dict[str, Any]:
    """These stages as the live worker builds them (live_job_stages), one with ``on_tick``
    recording the tables it is called with (``--adjust-out``), and one in ticks mode."""

    def on_tick(m: ShortJobPenalty) -> None:
        assert ticks is not None
        ticks.append((m.last_tick_ts, m.tables()))

    live = live_job_stages(tz, "cluster", None, True, 60.0)
    return {
        **{name: live[name] for name in ("usage", "shortjobs", "turnover", "fairshare")},
        "shortjobs_on_tick": ShortJobsStage(ShortJobPenalty(), on_tick),
        "shortjobs_ticks": ShortJobsStage(ShortJobPenalty(history="ticks", interval=3600)),
    }


NAMES = list(_stages("UTC"))


def _release(
    stages: dict[str, Any], cal: DayCalendar, events: list[JobEvent], flush: bool, trace: list[Any]
) -> None:
    """One release of the merger as the live worker takes it (streams/live/jobs.py
    ``JobsCombine._released``, ``flush_rows``): day batches through every stage, the
    short-job tick read, and at a flush the usage days changed."""
    for batch in day_batches(cal, events):
        for name, s in stages.items():
            for table, rows in s.step(batch):
                trace.append((name, getattr(table, "file", table), rows))
    for name, s in stages.items():
        if isinstance(s, ShortJobsStage) and events:
            trace.append((name, "last_tick_ts", s.m.last_tick_ts))
        if isinstance(s, UsageStage) and flush:
            trace.append((name, "changed", list(s.changed())))


def _finish(stages: dict[str, Any], trace: list[Any]) -> None:
    for name, s in stages.items():
        trace.append((name, "finish", list(s.finish())))
        trace.append((name, "summary", s.summary()))


def _round_trip(stages: dict[str, Any], build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Fresh stages restored from a document of ``stages``' state."""
    doc = pack("jobs", 1, {name: s.snapshot() for name, s in stages.items()})
    _, tree = unpack(doc, "jobs", {1})
    fresh = build()
    for name, s in fresh.items():
        s.restore(tree[name])
    return fresh


def _check(
    events: list[JobEvent],
    tz: str,
    names: list[str],
    cuts: list[int],
    save: int,
    flushes: list[bool],
) -> None:
    """``events`` released in runs ending at ``cuts`` (a flush after run i when
    ``flushes[i]``, the flags cycled), the state saved after run ``save`` and restored into
    fresh stages that take the rest: the same trace as without."""
    cal = DayCalendar(tz)
    bounds = [0, *sorted(cuts), len(events)]  # a cut twice: a flush with nothing released
    runs = [events[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    save = min(save, len(runs))
    flags = [flushes[i % len(flushes)] if flushes else False for i in range(len(runs))]

    def build(ticks: Ticks) -> dict[str, Any]:
        return {n: s for n, s in _stages(tz, ticks).items() if n in names}

    want: list[Any] = []
    want_ticks: Ticks = []
    ref = build(want_ticks)
    for run, flush in zip(runs, flags, strict=True):
        _release(ref, cal, run, flush, want)
    _finish(ref, want)

    orig: list[Any] = []
    orig_ticks: Ticks = []
    saved_from = build(orig_ticks)
    for run, flush in zip(runs[:save], flags[:save], strict=True):
        _release(saved_from, cal, run, flush, orig)
    got, got_ticks = list(orig), list(orig_ticks)
    live = _round_trip(saved_from, lambda: build(got_ticks))
    for run, flush in zip(runs[save:], flags[save:], strict=True):
        _release(live, cal, run, flush, got)
    _finish(live, got)
    assert got == want
    assert repr(got) == repr(want)  # the same types too (1 is not 1.0 in a CSV)
    assert got_ticks == want_ticks

    # the stages saved from go on unchanged by the snapshot
    for run, flush in zip(runs[save:], flags[save:], strict=True):
        _release(saved_from, cal, run, flush, orig)
    _finish(saved_from, orig)
    assert repr(orig) == repr(want) and orig_ticks == want_ticks


# ---- generated events ----------------------------------------------------------------------


def _specs() -> Any:
    """Jobs on a 5-minute grid over three days (so ends and starts meet at one instant), with
    few users, groups, names and nodes (so holders, slots and days are shared)."""
    minutes = st.integers(0, 3 * 288).map(lambda k: 300.0 * k)
    spec = st.tuples(
        minutes,  # start offset
        st.one_of(st.integers(0, 4).map(lambda k: 60.0 * k), minutes),  # duration
        st.sampled_from(["alice", "bob", "carol"]),
        st.sampled_from(["g1", "g2"]),
        st.sampled_from(["a", "b", None]),
        st.integers(1, 8),  # nodes
        st.one_of(st.none(), st.integers(1, 64)),  # cores
        st.one_of(
            st.just(()), st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True).map(tuple)
        ),
        st.one_of(st.none(), st.booleans()),
        st.sampled_from(["COMPLETED", "FAILED", "NODE_FAIL", None]),
        st.one_of(st.none(), st.integers(60, 3 * 86400).map(float)),
    )
    return st.lists(spec, min_size=1, max_size=40)


@st.composite
def _events(draw: Any) -> list[JobEvent]:
    """Jobs (submit, start, end), jobs cancelled while queued (submit, end) and ends of jobs
    never seen to start, in the replay's order."""
    evs = build_events(draw(_specs()), base=BASE)
    for i, (t, d, user) in enumerate(
        draw(
            st.lists(
                st.tuples(
                    st.integers(0, 3 * 86400),
                    st.integers(0, 600),
                    st.sampled_from(["alice", "dave", None]),
                ),
                max_size=6,
            )
        )
    ):
        job = f"c{i}"
        evs.append(JobEvent("submit", BASE + t, job, user=user, group="g1", nodes=2))
        evs.append(JobEvent("end", BASE + t + d, job, user=user, group="g1", state="CANCELLED"))
    return sort_events(evs)


@st.composite
def _cases(draw: Any) -> tuple[list[JobEvent], list[int], int, list[bool]]:
    events = draw(_events())
    n = len(events)
    # cuts anywhere, and where a day of either zone begins (a restored stage's first batch
    # then closes a day)
    day = [DayCalendar(tz).span for tz in ("UTC", "America/Chicago")]
    days = [
        i for i in range(1, n) if any(f(events[i].ts)[0] != f(events[i - 1].ts)[0] for f in day)
    ]
    cut = st.integers(0, n) | st.sampled_from(days) if days else st.integers(0, n)
    cuts = draw(st.lists(cut, max_size=6))
    save = draw(st.integers(0, len(cuts) + 1))
    return events, cuts, save, draw(st.lists(st.booleans(), min_size=1, max_size=4))


@pytest.mark.parametrize("names", [[n] for n in NAMES] + [NAMES], ids=[*NAMES, "all"])
@settings(max_examples=40, deadline=None)
@given(case=_cases(), tz=st.sampled_from(["UTC", "America/Chicago"]))
def test_a_restored_stage_goes_on_as_the_stage_saved(
    names: list[str], case: tuple[list[JobEvent], list[int], int, list[bool]], tz: str
) -> None:
    events, cuts, save, flushes = case
    _check(events, tz, names, cuts, save, flushes)


# ---- a fixed case: the golden job events ------------------------------------------------------


def _golden() -> list[JobEvent]:
    lines = gzip.decompress((INPUTS / "jobs.jsonl.gz").read_bytes()).splitlines()
    return sort_events(iter_job_events("jobevents", lines))


@pytest.mark.parametrize("save", [1, 4, 7])
def test_the_golden_events_saved_and_restored_mid_stream(save: int) -> None:
    events = _golden()
    assert len(events) > 500
    cuts = list(range(0, len(events), 97))
    _check(events, "America/Chicago", NAMES, cuts, save, [False, True, True])


def _mixed() -> list[JobEvent]:
    """A fixed mix over three days: short and long jobs of users and groups, on nodes and on
    the machine pool, cancelled jobs, and jobs still running at the end."""
    rng = random.Random(5)
    specs = [
        (
            300.0 * rng.randrange(3 * 288),
            rng.choice([0.0, 30.0, 120.0, 599.0, 3600.0, 90000.0]),
            rng.choice(["alice", "bob", "carol", "dave"]),
            rng.choice(["g1", "g2", "g3"]),
            rng.choice(["a", "b", None]),
            rng.randint(1, 8),
            rng.choice([None, 4, 16, 64]),
            tuple(rng.sample(range(12), rng.randint(0, 3))),
            rng.choice([None, True, False]),
            rng.choice(["COMPLETED", "FAILED", "NODE_FAIL", None]),
            rng.choice([None, 600.0, 7200.0]),
        )
        for _ in range(400)
    ]
    evs = build_events(specs, base=BASE)
    evs += [
        JobEvent("submit", BASE + 1000.0 * i, f"c{i}", user="erin", group="g1", nodes=2)
        for i in range(30)
    ]
    evs += [JobEvent("end", BASE + 1000.0 * i + 50, f"c{i}", user="erin") for i in range(20)]
    evs += [JobEvent("start", BASE + 86400.0 + i, f"r{i}", user="frank", nodes=1) for i in range(5)]
    return sort_events(evs)


def test_the_mixed_events_saved_and_restored_mid_stream() -> None:
    events = _mixed()
    cuts = list(range(101, len(events), 101))
    for save in (2, 5, 8):
        # released and flushed, released, saved; restored, flushed with nothing released
        again = [*cuts, cuts[save - 1]]
        _check(events, "America/Chicago", NAMES, again, save, [True, False, True])


def test_a_state_holds_plain_values_and_arrays_only() -> None:
    """Every stage's tree is made of what models.state writes as data, and its document is
    read back as the same tree."""
    events = _golden()
    stages = _stages("America/Chicago", [])
    _release(stages, DayCalendar("America/Chicago"), events[: len(events) // 2], True, [])

    def plain(v: Any) -> None:
        if isinstance(v, dict):
            assert all(type(k) is str for k in v)
            for x in v.values():
                plain(x)
        elif isinstance(v, list):
            for x in v:
                plain(x)
        elif isinstance(v, np.ndarray):
            assert v.dtype.kind in "biuf"
        else:
            assert v is None or type(v) in (bool, int, float, str), type(v)

    for name, s in stages.items():
        tree = s.snapshot()
        plain(tree)
        _, back = unpack(pack("jobs", 1, tree), "jobs", {1})
        assert repr(_lists(back)) == repr(_lists(tree)), name


def _lists(v: Any) -> Any:
    """A tree with arrays as (dtype, values) and tuples as lists, to compare."""
    if isinstance(v, dict):
        return {k: _lists(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_lists(x) for x in v]
    if isinstance(v, np.ndarray):
        return (str(v.dtype), v.tolist())
    return v


# ---- malformed states ----------------------------------------------------------------------


def _leaves(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(tree, dict):
        return [x for k, v in tree.items() for x in _leaves(v, (*path, k))]
    if isinstance(tree, list) and tree:
        return [x for i, v in enumerate(tree) for x in _leaves(v, (*path, i))]
    return [(path, tree)]


def _set(tree: Any, path: tuple[Any, ...], value: Any) -> None:
    for k in path[:-1]:
        tree = tree[k]
    tree[path[-1]] = value


def _wrong(v: Any) -> Any:
    """A value of another type than ``v``."""
    if isinstance(v, np.ndarray):
        return np.array(["x"] * max(len(v), 1))
    if isinstance(v, str):
        return 1.5
    return "x"  # numbers, bools, None, an empty list


def _saved_states() -> dict[str, bytes]:
    """A document of each stage's state, after part of the mixed events (the stages hold
    running and queued jobs, holders, days, deferred starts)."""
    events = _mixed()
    stages = _stages("America/Chicago", [])
    cut = len(events) // 2
    while events[cut - 1].type != "start" or events[cut].ts == events[cut - 1].ts:
        cut += 1  # a start at the last instant: turnover defers it
    _release(stages, DayCalendar("America/Chicago"), events[:cut], False, [])
    return {name: pack("jobs", 1, s.snapshot()) for name, s in stages.items()}


@pytest.mark.parametrize("name", NAMES)
def test_a_state_with_a_value_of_the_wrong_type_is_refused(name: str) -> None:
    doc = _saved_states()[name]
    _, tree = unpack(doc, "jobs", {1})
    leaves = _leaves(tree)
    assert len(leaves) > 20
    for path, v in leaves:
        _, bad = unpack(doc, "jobs", {1})
        _set(bad, path, _wrong(v))
        with pytest.raises(MALFORMED):
            _stages("America/Chicago", [])[name].restore(bad)
        if isinstance(v, np.ndarray) and len(v):  # a column one item short
            _, bad = unpack(doc, "jobs", {1})
            _set(bad, path, v[:-1])
            with pytest.raises(MALFORMED):
                _stages("America/Chicago", [])[name].restore(bad)
    for key in tree:  # a key missing
        _, bad = unpack(doc, "jobs", {1})
        del bad[key]
        with pytest.raises(MALFORMED):
            _stages("America/Chicago", [])[name].restore(bad)


def test_a_state_with_codes_outside_its_strings_or_an_unknown_kind_is_refused() -> None:
    doc = _saved_states()["shortjobs"]
    _, tree = unpack(doc, "jobs", {1})
    tree["model"]["start"]["job"]["code"][0] = 10**6
    with pytest.raises(StateFormatError):
        _stages("UTC")["shortjobs"].restore(tree)
    _, tree = unpack(doc, "jobs", {1})
    tree["model"]["start"]["job"]["code"][0] = -1  # None where a job id is needed
    with pytest.raises(StateFormatError):
        _stages("UTC")["shortjobs"].restore(tree)
    _, tree = unpack(doc, "jobs", {1})
    drops = tree["model"]["drops"]
    assert len(drops["tick"])
    drops["kind"] = {"text": "os.system", "len": np.array([9]), "code": drops["kind"]["code"] * 0}
    with pytest.raises(StateFormatError):
        _stages("UTC")["shortjobs"].restore(tree)
