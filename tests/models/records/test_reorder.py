"""The reorder buffer: same output however the stream is cut into batches, equal to a
record-at-a-time reference, records within the window put back in time order, later ones left
late (so the accounting counts them out of order), jobs kept with their records."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from models.records.nodestatus import Codebook, NodeStatus, NodeStatusBatch
from models.records.reorder import ReorderBuffer


def reference(ts: list[int], window: int) -> list[int]:
    """Record at a time: hold each record; whenever the latest time seen is `window` past a
    held record, release it; equal release moments in time order, then arrival order."""
    held: list[tuple[int, int]] = []  # (ts, arrival)
    out: list[int] = []
    latest: int | None = None
    for i, t in enumerate(ts):
        latest = t if latest is None else max(latest, t)
        held.append((t, i))
        due = sorted(h for h in held if h[0] + window <= latest)
        held = [h for h in held if h[0] + window > latest]
        out += [a for _, a in due]
    return out + [a for _, a in sorted(held)]


def _batch(ts: list[int]) -> NodeStatusBatch:
    book = Codebook()
    recs = [NodeStatus(t, f"n{i % 3}", "Running", (), (f"j{i}",)) for i, t in enumerate(ts)]
    return NodeStatusBatch.from_records(recs, book)


def _run(ts: list[int], window: int, cuts: list[int]) -> NodeStatusBatch:
    b = _batch(ts)
    buf = ReorderBuffer(window)
    parts = []
    bounds = sorted({0, len(ts), *[c % (len(ts) + 1) for c in cuts]})
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        parts.append(buf.push(b.take(np.arange(lo, hi, dtype=np.int64))))
    parts.append(buf.flush())
    out = NodeStatusBatch.empty()
    for p in parts:
        out = NodeStatusBatch.concat(out, p)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 60), min_size=1, max_size=40),
    st.integers(1, 15),
    st.lists(st.integers(0, 40), max_size=5),
)
def test_equals_the_record_at_a_time_reference_however_cut(
    ts: list[int], window: int, cuts: list[int]
) -> None:
    out = _run(ts, window, cuts)
    expect = reference(ts, window)
    # the job of record i is j<i>: it identifies the record through the reordering
    assert out.ts_ms.tolist() == [ts[a] for a in expect]
    assert out.run_row.tolist() == list(range(len(ts)))
    book_jobs = [int(j) for j in out.run_job]
    assert book_jobs == expect  # job codes were interned in arrival order: code == arrival


def test_mild_disorder_is_put_back_in_order_and_counted() -> None:
    ts = [0, 0, 30, 28, 30, 60, 59, 90]
    buf = ReorderBuffer(5)
    out = NodeStatusBatch.concat(buf.push(_batch(ts)), buf.flush())
    assert out.ts_ms.tolist() == sorted(ts)
    assert buf.reordered == 2


def test_a_record_later_than_the_window_stays_late() -> None:
    ts = [100, 110, 120, 50, 130]
    buf = ReorderBuffer(5)
    out = NodeStatusBatch.concat(buf.push(_batch(ts)), buf.flush())
    assert out.ts_ms.tolist() == [100, 110, 50, 120, 130]  # 50 comes out when it arrives
    assert buf.reordered == 0


def test_window_zero_passes_batches_through() -> None:
    b = _batch([5, 1, 3])
    assert ReorderBuffer(0).push(b) is b


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 3)), max_size=30),
    st.integers(0, 35),
    st.integers(0, 35),
)
def test_a_slice_is_the_take_of_its_rows(recs: list[tuple[int, int]], a: int, b: int) -> None:
    """NodeStatusBatch.slice (the in-order path's release) equals take() of the same rows,
    jobs included (0-3 running jobs a record)."""
    book = Codebook()
    batch = NodeStatusBatch.from_records(
        [
            NodeStatus(t, f"n{i % 4}", "Running", (), tuple(f"j{i}.{k}" for k in range(nj)))
            for i, (t, nj) in enumerate(recs)
        ],
        book,
    )
    lo, hi = sorted((min(a, len(recs)), min(b, len(recs))))
    got, want = batch.slice(lo, hi), batch.take(np.arange(lo, hi, dtype=np.int64))
    for name in ("ts_ms", "node", "state", "rsv", "has_job", "run_row", "run_job"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
