"""A restored accountant goes on exactly as the one that was never stopped."""

from __future__ import annotations

import numpy as np
import pytest

from models.drain.accountant import DrainAccountant
from models.drain.snapshot import SnapshotError, dumps, loads
from models.formats.moab import parse_moab_chunk
from models.records.nodestatus import Codebook
from tests.golden.make_golden import INPUTS


def _chunks() -> list[bytes]:
    import gzip

    lines = gzip.decompress((INPUTS / "moab.log.gz").read_bytes()).splitlines(keepends=True)
    k = len(lines) // 3
    return [b"".join(lines[:k]), b"".join(lines[k : 2 * k]), b"".join(lines[2 * k :])]


def _result(acc: DrainAccountant) -> tuple:
    return (
        [tuple(vars(w).values()) if hasattr(w, "__dict__") else repr(w) for w in acc.daily()],
        [repr(w) for w in acc.hourly()],
        acc.node_state_ms().tolist(),
        acc.job_drain_ms[: len(acc.book.jobs)].tolist(),
        acc.nodes_charged().tolist(),
        acc.nodes_running().tolist(),
        repr(acc.counts),
        acc.book.nodes.names,
        acc.book.jobs.all_names(),
    )


@pytest.mark.parametrize("unit", ["hour", "minute"])
def test_restore_between_batches_gives_the_uninterrupted_result(unit: str) -> None:
    chunks = _chunks()
    book = Codebook()
    whole = DrainAccountant(book, tz="America/Chicago", unit=unit)
    for c in chunks:
        whole.add(parse_moab_chunk(c, book).batch)

    book2 = Codebook()
    acc = DrainAccountant(book2, tz="America/Chicago", unit=unit)
    acc.add(parse_moab_chunk(chunks[0], book2).batch)
    for c in chunks[1:]:
        acc, extra = loads(dumps(acc, {"offset": 7}))
        assert extra == {"offset": 7}
        acc.add(parse_moab_chunk(c, acc.book).batch)
    assert _result(acc) == _result(whole)


def test_damaged_or_foreign_bytes_are_refused() -> None:
    acc = DrainAccountant(Codebook())
    data = dumps(acc)
    with pytest.raises(SnapshotError):
        loads(data[: len(data) // 2])
    with pytest.raises(SnapshotError):
        loads(b"not a snapshot")
    assert np.array_equal(loads(data)[0].last_ts, acc.last_ts)
