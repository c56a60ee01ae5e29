"""The job-event merger's durable state (snapshot -> models.state document -> restore): a
merger restored mid-stream releases what the merger it was saved from releases, event for
event and field for field, and refuses what it refused; a malformed state is refused."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.jobs.merge import JobEventMerger
from models.records.jobevent import INT64_MAX, INT64_MIN, JobEvent
from models.state import StateFormatError, pack, unpack

MALFORMED = (StateFormatError, KeyError, TypeError, ValueError)

_text = st.one_of(st.none(), st.sampled_from(["", "a", "é", "n\x00", "$a", "x,y"]), st.text())
_events = st.builds(
    JobEvent,
    type=st.sampled_from(["submit", "start", "end"]),
    ts=st.integers(0, 400).map(lambda k: 1e9 + 7.5 * k),
    job=st.sampled_from(["1", "2", "10", "x", "é"]) | st.text(min_size=1),
    user=_text,
    group=_text,
    account=_text,
    partition=_text,
    name=_text,
    nodes=st.none() | st.integers(0, INT64_MAX),
    cores=st.none() | st.integers(0, 64),
    req_walltime=st.none() | st.floats(0, 1e9),
    node_list=st.lists(st.text(min_size=1), max_size=3).map(tuple),
    state=_text,
    exit_code=st.none() | st.integers(INT64_MIN, INT64_MAX),
    backfill=st.none() | st.booleans(),
    reserved_start=st.none() | st.floats(0, 2e9),
)


def _round_trip(m: JobEventMerger, lateness: float, parts: int | None) -> JobEventMerger:
    _, tree = unpack(pack("jobs", 1, {"merger": m.snapshot()}), "jobs", {1})
    fresh = JobEventMerger(lateness, parts)
    fresh.restore(tree["merger"])
    return fresh


def _state(m: JobEventMerger) -> tuple[Any, ...]:
    return (m.latest, m.offsets, repr(m.held), m.released_to, m.duplicates, m.late)


@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(_events, max_size=60),
    parts=st.integers(1, 4),
    seed=st.integers(0, 2**32),
    direct=st.booleans(),
)
def test_a_restored_merger_releases_what_the_merger_saved_would(
    events: list[JobEvent], parts: int, seed: int, direct: bool
) -> None:
    """Messages of one or several events per partition, re-sent and late ones among them,
    released after some; the merger saved and restored after a random message (through a
    document, or ``direct``: its tree as it is)."""
    rng = random.Random(seed)
    steps: list[tuple[int, int, list[JobEvent]]] = []
    offsets = [0] * parts
    i = 0
    while i < len(events):
        p, k = rng.randrange(parts), rng.randint(1, 5)
        steps.append((p, offsets[p], events[i : i + k]))
        if rng.random() < 0.2:  # sent again
            steps.append(steps[rng.randrange(len(steps))])
        offsets[p] += 1
        i += k
    save = rng.randint(0, len(steps))

    def run(round_trip: bool) -> tuple[list[str], list[str], tuple[Any, ...]]:
        m = JobEventMerger(30.0, parts)
        out, late = [], []
        for n, (p, off, evs) in enumerate(steps):
            if round_trip and n == save:
                if direct:
                    fresh = JobEventMerger(30.0, parts)
                    fresh.restore(m.snapshot())
                    m = fresh
                else:
                    m = _round_trip(m, 30.0, parts)
            late += map(repr, m.add_many(p, off, list(evs)))
            out += map(repr, m.release())
        out += map(repr, m.flush())
        return out, late, _state(m)

    assert run(True) == run(False)  # repr: the same fields of the same types, in order


def test_a_restored_merger_holds_the_same_events_field_for_field() -> None:
    events = [
        JobEvent(
            "start",
            1e9 + 5,
            "j1",
            "u",
            None,
            "acct",
            "p",
            "name",
            4,
            None,
            3600.0,
            ("n1", "n2"),
            None,
            None,
            True,
            1e9 + 1,
        ),
        JobEvent(
            "end",
            1e9 + 9,
            "j2",
            exit_code=-(2**63),
            backfill=False,
            nodes=0,
            node_list=("n\x00",),
            state="NODE_FAIL 1",
            name="\U0001f600",
        ),
        JobEvent("submit", 1e9 + 9.25, "é", user="", reserved_start=0.0, req_walltime=0.0),
    ]
    m = JobEventMerger(600.0, 2)
    m.add_many(0, 4, events[:2])
    m.add(1, 0, events[2])
    assert m.release() == []  # within the lateness: held
    got = _round_trip(m, 600.0, 2)
    assert repr(got.held) == repr(events) and _state(got) == _state(m)
    assert got.watermark == m.watermark and got.add(0, 4, events[0]) == "duplicate"


def test_the_snapshot_holds_the_events_as_columns() -> None:
    """The held events are arrays and joined strings, whatever their number: packing them
    costs no Python call per event."""
    m = JobEventMerger(600.0, 1)
    m.add_many(0, 0, [JobEvent("end", 1e9 + i, f"j{i}", user=f"u{i % 7}") for i in range(1000)])
    held = m.snapshot()["held"]
    assert isinstance(held["ts"], np.ndarray) and len(held["ts"]) == 1000
    assert isinstance(held["job"]["code"], np.ndarray) and len(held["user"]["len"]) == 7


def test_to_dict_still_round_trips_through_json_and_checks_its_types() -> None:
    m = JobEventMerger(600.0, 2)
    m.add_many(0, 3, [JobEvent("end", 1e9, "a", nodes=2, node_list=("n1",))])
    m.add(1, 1, JobEvent("start", 1e9 + 1, "b"))
    m.release()
    d = orjson.loads(orjson.dumps(m.to_dict()))
    back = JobEventMerger.from_dict(d)
    assert _state(back) == _state(m) and back.lateness_s == 600.0 and back.partitions == 2
    for key, bad in [
        ("released_to", "x"),
        ("duplicates", 1.5),
        ("latest", [[0, "x"]]),
        ("offsets", {"0": 3}),
        ("partitions", "2"),
    ]:
        with pytest.raises(MALFORMED):
            JobEventMerger.from_dict({**d, key: bad})


def _leaves(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(tree, dict):
        return [x for k, v in tree.items() for x in _leaves(v, (*path, k))]
    if isinstance(tree, list) and tree:
        return [x for i, v in enumerate(tree) for x in _leaves(v, (*path, i))]
    return [(path, tree)]


def test_a_state_with_a_value_of_the_wrong_type_is_refused() -> None:
    m = JobEventMerger(600.0, 2)
    m.add_many(
        0,
        0,
        [
            JobEvent(
                "end",
                1e9 + i,
                f"j{i}",
                user="u",
                nodes=i,
                node_list=("a", "b"),
                backfill=i % 2 == 0,
                reserved_start=1e9,
            )
            for i in range(5)
        ],
    )
    m.add(1, 0, JobEvent("start", 1e9 + 700, "k", exit_code=3, req_walltime=60.0))
    m.release()
    assert m.held and m.released_to is not None
    doc = pack("jobs", 1, m.snapshot())
    _, tree = unpack(doc, "jobs", {1})
    for path, v in _leaves(tree):
        if isinstance(v, np.ndarray):
            wrong: list[Any] = [np.array(["x"] * max(len(v), 1))]
            if len(v):
                wrong.append(v[:-1])  # a column one item short
        else:
            wrong = [1.5 if isinstance(v, str) else "x"]
        for w in wrong:
            _, bad = unpack(doc, "jobs", {1})
            t = bad
            for k in path[:-1]:
                t = t[k]
            t[path[-1]] = w
            with pytest.raises(MALFORMED):
                JobEventMerger(600.0, 2).restore(bad)
    _, bad = unpack(doc, "jobs", {1})
    bad["held"]["type"]["text"] = "x" * len(bad["held"]["type"]["text"])  # not event types
    with pytest.raises(StateFormatError):
        JobEventMerger(600.0, 2).restore(bad)
    _, bad = unpack(doc, "jobs", {1})
    bad["held"]["ts"][0] = np.nan
    with pytest.raises(StateFormatError):
        JobEventMerger(600.0, 2).restore(bad)
