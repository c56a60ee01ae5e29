"""JobAlerts saved mid-stream as data (``snapshot`` -> models.state ``pack`` -> ``unpack`` ->
``restore`` into alerts built with the worker's settings) go on exactly as the alerts never
saved, fed the job stages' rows as the live worker feeds them (short-job floods firing and
decaying, overruns while running and at the end, capability days). A tree of the wrong types
is refused."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.alerts import FIRING, Alert, AlertBook, JobAlerts
from models.formats.jobsource import sort_events
from models.jobs.capability import CapabilityUse, DayCalendar
from models.jobs.runtime import RuntimePredictor
from models.jobs.shortjobs import ShortJobPenalty
from models.records.jobevent import JobEvent
from models.state import StateFormatError, pack, unpack
from streams.sources.jobevents import day_batches
from streams.stages.capability import CapabilityStage
from streams.stages.runtime import RuntimeStage
from streams.stages.shortjobs import ShortJobsStage
from streams.tables.jobs import CAPABILITY_DAILY, RUNTIME_PREDICTIONS, SHORTJOBS

REFUSED = (StateFormatError, KeyError, TypeError, ValueError)


def _alerts() -> JobAlerts:
    return JobAlerts(None, flood=400.0, cup40_target=0.3, overrun_margin=60.0, tz="UTC")


def _releases(seed: int, n: int) -> list[list[JobEvent]]:
    """Jobs of a few users and names over several days, many short (floods), some large
    (capability), runs longer than their history (overruns); cut into the merger's releases."""
    rnd = random.Random(seed)
    events: list[JobEvent] = []
    t = 1_700_000_000.0
    for i in range(n):
        t += rnd.expovariate(1 / 1500)
        run = rnd.choice([rnd.uniform(0, 30), 1000.0, rnd.uniform(0, 30_000)])
        common: dict[str, Any] = {
            "job": f"j{i}",
            "user": rnd.choice(["alice", "bob"]),
            "group": "g",
            "name": rnd.choice(["a", "b"]),
            "nodes": rnd.choice([1, 2, 8]),
            "cores": 8,
        }
        events += [JobEvent("start", t, **common), JobEvent("end", t + run, **common)]
    events = sort_events(events)
    parts, i = [], 0
    while i < len(events):
        k = rnd.randint(1, 20)
        parts.append(events[i : i + k])
        i += k
    return parts


class Worker:
    """The alerts fed as streams.live.jobs feeds them: each day batch's rows, then the running
    jobs and the closed tick at the release's event time."""

    def __init__(self) -> None:
        self.short = ShortJobsStage(ShortJobPenalty())
        self.runtime = RuntimeStage(RuntimePredictor(overrun_margin=60.0), keep=False)
        self.cap = CapabilityStage(CapabilityUse(10, tz="UTC"), "UTC", "setting")
        self.cal = DayCalendar("UTC")
        self.alerts = _alerts()

    def release(self, released: list[JobEvent]) -> list[Alert]:
        ja, out = self.alerts, []
        for batch in day_batches(self.cal, released):
            ends = {e.job: e.ts for e in batch if e.type == "end"}
            for stage in (self.short, self.runtime, self.cap):
                for table, rows in stage.step(batch):
                    if table is RUNTIME_PREDICTIONS:
                        out += ja.overrun_ended(rows, ends)
                    elif table is SHORTJOBS:
                        out += ja.shortjobs(rows)
                    elif table is CAPABILITY_DAILY:
                        out += ja.capability(rows)
        if released:
            now = released[-1].ts
            out += ja.overrun_started(self.runtime.m.running(now), now)
            out += ja.advance(self.short.m.last_tick_ts)
        return out


def _saved(ja: JobAlerts) -> Any:
    return unpack(pack("alerts", 1, ja.snapshot()), "alerts", {1})[1]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.integers(5, 120), st.floats(0, 1))
def test_restored_alerts_go_on_as_the_ones_never_saved(seed: int, n: int, at: float) -> None:
    parts = _releases(seed, n)
    k = int(at * len(parts))
    ref = Worker()
    want = [ref.release(p) for p in parts]
    w = Worker()
    got = [w.release(p) for p in parts[:k]]
    restored = _alerts()
    restored.restore(_saved(w.alerts))
    assert pack("a", 1, restored.snapshot()) == pack("a", 1, w.alerts.snapshot())
    w.alerts = restored
    got += [w.release(p) for p in parts[k:]]
    assert got == want


def _busy() -> JobAlerts:
    """Alerts with floods and overruns firing."""
    w = Worker()
    for p in _releases(0, 100)[:3]:
        w.release(p)
    kinds = {a.kind for a in w.alerts.book.open.values()}
    assert {"shortjob_flood", "overrun"} <= kinds and w.alerts._flood
    return w.alerts


def test_a_snapshot_is_data_and_keeps_every_field() -> None:
    ja = _busy()
    tree = _saved(ja)
    assert set(tree) == {"book", "flood"}
    restored = _alerts()
    restored.restore(tree)
    assert restored.book.open == ja.book.open and restored._flood == ja._flood
    assert list(restored.book.open) == list(ja.book.open)  # in the order they fired


def _paths(tree: Any, path: tuple[Any, ...] = ()) -> Any:
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _paths(v, (*path, k))
    elif isinstance(tree, list) and tree:
        for i, v in enumerate(tree):
            yield from _paths(v, (*path, i))
    else:
        yield path


def test_a_tree_with_a_wrong_type_anywhere_or_a_value_missing_is_refused() -> None:
    tree = _saved(_busy())
    paths = list(_paths(tree))
    assert len(paths) > 20
    for path in paths:
        bad = copy.deepcopy(tree)
        at = bad
        for p in path[:-1]:
            at = at[p]
        at[path[-1]] = 1.5 if isinstance(at[path[-1]], str) else "x"
        with pytest.raises(REFUSED):
            _alerts().restore(bad)
        if isinstance(at, dict):
            del at[path[-1]]
            with pytest.raises(REFUSED):
                _alerts().restore(bad)


def test_a_book_refuses_alerts_of_another_shape() -> None:
    a = AlertBook()
    a.fire("overrun", "j1", 10.0, 5.0, 4.0, "run", details={"user": "u", "start": 1.5})
    a.fire("overrun", "j2", 11.0, None, 4.0, "run")
    tree = unpack(pack("book", 1, a.snapshot()), "book", {1})[1]
    b = AlertBook()
    b.restore(tree)
    assert b.open == a.open and list(b.open) == list(a.open)
    for key, value in (
        ("details", AlertBook().snapshot()["details"]),  # a column of another length
        ("subject", {**tree["subject"], "code": tree["subject"]["code"] * 0}),  # j1 twice
        ("since", tree["since"].astype(np.int64)),  # times are floats
        ("value", [5.0, None]),  # a column is an array
    ):
        bad = copy.deepcopy(tree)
        bad[key] = value
        with pytest.raises(REFUSED):
            AlertBook().restore(bad)
    for details in ("[1]", "{", '{"a": 1} x'):  # not a JSON object
        bad = copy.deepcopy(a)
        bad.open["overrun:j1"].details = {}
        t = bad.snapshot()
        t["details"]["text"] = t["details"]["text"].replace("{}", details)
        t["details"]["len"][t["details"]["code"][0]] = len(details)
        with pytest.raises(REFUSED):
            AlertBook().restore(t)


def test_a_book_saved_as_json_refuses_alerts_of_another_shape() -> None:
    """The drain path's and the stalled-pipeline watch's books (``to_dict``, JSON)."""
    a = AlertBook()
    a.fire("sliding_job", "j1", 10, 5, 4, "job")  # numbers come back as they were
    tree = orjson.loads(orjson.dumps(a.to_dict()))
    assert AlertBook.from_dict(tree).open == a.open
    for change in (
        {"id": "sliding_job:j2"},  # filed under another id
        {"state": "resolved"},  # an open alert fires
        {"state": "maybe"},
        {"since": True},  # a bool is not a time
        {"details": ["x"]},
        {"extra": 1},
    ):
        bad = copy.deepcopy(tree)
        bad["open"][0].update(change)
        with pytest.raises(REFUSED):
            AlertBook.from_dict(bad)
    twice = copy.deepcopy(tree)
    twice["open"] *= 2
    with pytest.raises(StateFormatError):
        AlertBook.from_dict(twice)
    assert AlertBook.from_dict(tree).open["sliding_job:j1"].state == FIRING
