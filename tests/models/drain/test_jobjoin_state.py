"""The join of drain totals and job events saved mid-stream as data (``snapshot`` ->
models.state ``pack`` -> ``unpack`` -> ``restore`` into a join built as the live worker builds
it, then ``configure``) goes on exactly as the join never saved: the same rows, point times,
alerts (failure to launch, sliding rank) and size-group rows. A tree of the wrong types is
refused."""

from __future__ import annotations

import copy
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.drain.jobjoin import DrainJobJoin
from models.drain.jobs import size_groups
from models.records.jobevent import JobEvent
from models.state import StateFormatError, pack, unpack

H = 3_600_000  # ms in an hour


def _join(groups: str, top_k: int) -> DrainJobJoin:
    """As the worker builds it: the threshold and retention, then the settings."""
    j = DrainJobJoin(ftl_node_hours=10.0, retention_s=6 * 3600.0)
    j.configure(size_groups(groups, 100), top_k, 1.0)
    return j


Step = tuple[str, Any, Any, bool]


def _steps(seed: int, n: int) -> list[Step]:
    """Job events and drain totals, each side in its own order, interleaved at random: jobs
    queued and charged drain (totals growing, first charge moving earlier, the combiner's stamp
    or none), started or not, some failing to launch; the drain stream's watermark lagging.
    Each step says whether a flush (``take``, the size-group rows) follows it."""
    rnd = random.Random(seed)
    events: list[JobEvent] = []
    totals: list[tuple[float, list[Any]]] = []
    t = 0.0
    for i in range(n):
        job, nodes = f"j{i}", rnd.choice([None, 1, 4, 16, 64])
        t += rnd.expovariate(1 / 1800)
        start = t + rnd.uniform(0, 20_000)
        run = rnd.choice([rnd.uniform(0, 40), rnd.uniform(0, 30_000)])
        events.append(JobEvent("submit", t, job, nodes=nodes))
        if rnd.random() < 0.8:
            events.append(JobEvent("start", start, job, nodes=nodes, backfill=rnd.random() < 0.3))
        if rnd.random() < 0.7:
            events.append(JobEvent("end", start + run, job, nodes=nodes))
        if rnd.random() < 0.8:
            first = int(t * 1000) + rnd.randint(0, 600_000)
            d = 0
            stamp = rnd.choice([None, first])
            for _ in range(rnd.randint(1, 3)):
                d += rnd.randint(0, 40 * H)
                last = first + rnd.randint(0, 20_000_000)
                first -= rnd.choice([0, 0, 60_000])
                row = [job, d, rnd.randint(1, 64), first, last, rnd.choice([0, 0, 2])]
                totals.append((last / 1000, row if stamp is None else [*row, stamp]))
    events.sort(key=lambda e: e.ts)
    totals.sort(key=lambda x: x[0])
    steps: list[Step] = []
    while events or totals:
        if events and (not totals or rnd.random() < 0.5):
            k = rnd.randint(1, 6)
            steps.append(("events", events[:k], None, rnd.random() < 0.5))
            del events[:k]
        else:
            k = rnd.randint(1, 4)
            wm = int(totals[k - 1 if k <= len(totals) else -1][0] * 1000) - 3_600_000
            rows = [r for _, r in totals[:k]]
            steps.append(("drain", rows, rnd.choice([None, wm]), rnd.random() < 0.5))
            del totals[:k]
    return steps


def _run(join: DrainJobJoin, steps: list[Step], end: bool = True) -> list[Any]:
    """What the worker writes: at each flush the changed rows, alerts and point times, the
    clock and the changed size groups; at the end, every size group."""
    out: list[Any] = []
    for kind, x, wm, flush in steps:
        if kind == "events":
            join.events(x)
        else:
            join.drain(x, wm)
        if flush:
            out += [join.take(), join.clock()]
            if kind == "drain":  # (the size groups also change between two reads)
                out.append(join.size_group_rows())
    if end:
        out += [join.take(), join.size_group_rows(changed_only=False)]
    return out


def _saved(join: DrainJobJoin) -> Any:
    return unpack(pack("jobjoin", 1, join.snapshot()), "jobjoin", {1})[1]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32),
    st.integers(1, 40),
    st.sampled_from(["absolute", "relative"]),
    st.sampled_from([0, 1, 3]),
    st.floats(0, 1),
)
def test_a_restored_join_goes_on_as_the_one_never_saved(
    seed: int, n: int, groups: str, top_k: int, at: float
) -> None:
    steps = _steps(seed, n)
    k = int(at * len(steps))
    want = _run(_join(groups, top_k), steps)
    a = _join(groups, top_k)
    got = _run(a, steps[:k], end=False)
    b = DrainJobJoin(ftl_node_hours=10.0, retention_s=6 * 3600.0)
    b.restore(_saved(a))
    b.configure(size_groups(groups, 100), top_k, 1.0)
    assert pack("jobjoin", 1, b.snapshot()) == pack("jobjoin", 1, a.snapshot())  # all of it
    got += _run(b, steps[k:])
    assert got == want


def _busy() -> DrainJobJoin:
    """A join holding some of everything: open alerts, jobs changed since the last take."""
    join = _join("absolute", 2)
    _run(join, _steps(3, 30)[:50], end=False)
    assert join.book.open and join.dirty and join.alerted and join._gdirty
    return join


def _leaves(tree: Any, path: tuple[Any, ...] = ()) -> Any:
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(tree, list) and tree:
        for i, v in enumerate(tree):
            yield from _leaves(v, (*path, i))
    else:
        yield path


def _wrong(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.astype(str)
    return 1.5 if isinstance(v, str) else "x"


def test_a_tree_with_a_wrong_type_anywhere_or_a_value_missing_is_refused() -> None:
    tree = _saved(_busy())
    paths = list(_leaves(tree))
    assert len(paths) > 30
    for path in paths:
        bad = copy.deepcopy(tree)
        at = bad
        for p in path[:-1]:
            at = at[p]
        at[path[-1]] = _wrong(at[path[-1]])
        with pytest.raises((StateFormatError, KeyError, TypeError, ValueError)):
            DrainJobJoin().restore(bad)
        if isinstance(at, dict):
            del at[path[-1]]
            with pytest.raises((StateFormatError, KeyError, TypeError, ValueError)):
                DrainJobJoin().restore(bad)


def test_columns_that_do_not_add_up_are_refused() -> None:
    tree = _saved(_busy())
    tree["drains"] = tree["drains"][:-1]  # 6 values a job
    with pytest.raises(StateFormatError):
        DrainJobJoin().restore(tree)
    tree = _saved(_busy())
    jobs = tree["times"]["job"]
    jobs["code"] = jobs["code"] * 0  # one job twice
    with pytest.raises(StateFormatError):
        DrainJobJoin().restore(tree)
