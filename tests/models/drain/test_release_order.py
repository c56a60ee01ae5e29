"""The running jobs in release order (models.drain.release.RunningReleases): the order of
forecast_release at every ``now``, kept as jobs start and end, at a cost that grows with the
releases a walk takes, not with the jobs still running."""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from models.drain.release import RunningReleases
from tests.reference_jobs import release_order_ref

_JOBS = [f"j{k}" for k in range(8)]
_OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"),
            st.sampled_from(_JOBS),
            st.integers(-2, 6),  # nodes: 0 and below release nothing
            st.one_of(st.none(), st.integers(0, 60).map(float)),  # end
        ),
        st.tuples(st.just("drop"), st.sampled_from(_JOBS)),
        st.tuples(st.just("walk"), st.integers(0, 60).map(float), st.integers(0, 10)),
    ),
    max_size=80,
)


class _Rebuilding(RunningReleases):
    """Rebuilds its heaps at every chance (the real one only above 1,024 entries)."""

    rebuild_over = 0


@settings(max_examples=400, deadline=None)
@given(_OPS, st.booleans())
def test_releases_equal_sorting_every_running_job(ops: list[Any], rebuild: bool) -> None:
    """After any starts, restarts and ends, the releases at any ``now`` (forward, back, equal
    to an end) are the reference's sorted list; a walk that stops after k takes k entries and
    leaves the order as it was; heaps rebuilt or not."""
    order, held = (_Rebuilding() if rebuild else RunningReleases()), {}
    for op in ops:
        if op[0] == "put":
            _, job, nodes, end = op
            order.put(job, nodes, end, f"n{job}")
            held[job] = (nodes, end, f"n{job}")
        elif op[0] == "drop":
            order.drop(op[1])
            held.pop(op[1], None)
        else:
            _, now, k = op
            want = release_order_ref(held, now)
            walked = order.walked
            assert list(itertools.islice(order.releases(now), k)) == want[:k]
            assert order.walked - walked == min(k, len(want))
            assert list(order.releases(now)) == want
        assert len(order) == sum(v[1] is not None and v[0] > 0 for v in held.values())


def test_jobs_that_never_end_cost_a_log_each_not_a_pass_per_walk() -> None:
    """Generated worst case: 20,000 jobs start, half never end and stay past their end, and
    after every start a walk takes up to 4 releases. Counted, not timed: the walks take
    exactly the releases asked for (a sort of the jobs past their end would look at up to
    10,000 each time); the heap pushes and pops (O(log n) each) are a few per start, end,
    crossing and release taken; each stale entry is popped at most once; the rebuilds go over
    at most twice the entries that went stale; time moves forward, nothing moves back."""
    rnd = random.Random(7)
    order = RunningReleases()
    n = 20_000
    taken = puts = drops = 0
    for i in range(n):
        now = 10.0 * i
        order.put(f"{i}", rnd.randint(1, 4), now + 3600.0, None)
        puts += 1
        if i % 2 and i > 10:
            order.drop(f"{i - 9}")  # the odd jobs end within their walltime
            drops += 1
        k = rnd.randint(0, 4)
        taken += len(list(itertools.islice(order.releases(now), k)))
    past = sum(1 for _ in itertools.takewhile(lambda r: r[0] == now, order.releases(now)))
    assert past > n // 2 - 400  # the jobs that never ended, nearly all past their end
    assert order.walked == taken + past + 1  # takewhile looks at the first one ahead too
    assert order.stale <= drops
    crossings = puts  # each job crosses from "ahead" to "past its end" at most once
    assert order.heap_ops <= puts + 2 * crossings + 2 * order.walked + order.stale
    assert order.rebuilt <= 2 * drops
    assert order.rewinds == 0
