"""The live drain accountant's retention (models.drain.retention): windows forgotten whole
before a day edge, quiet jobs found, and jobs forgotten and renumbered without changing what
is kept (each rule of the module's docstring pinned)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from models.drain import retention
from models.drain.accountant import DrainAccountant
from models.formats.moab import parse_moab_chunk
from models.records.idbook import IdBook
from models.records.nodestatus import Codebook
from tests.models.drain.test_accountant import line

T0 = datetime(2024, 3, 1, tzinfo=UTC)
DAY_MS = 86_400_000


def _minutes(start_h: float, hours: float, node: str, state: str, rsv: str, job: str) -> list[str]:
    """A record a minute for ``hours`` from T0 + ``start_h``."""
    t = T0 + timedelta(hours=start_h)
    return [
        line(t + timedelta(minutes=m), node, state, rsv, job) for m in range(int(hours * 60) + 1)
    ]


def _feed(acc: DrainAccountant, lines: list[str]) -> None:
    data = "".join(x + "\n" for x in sorted(lines, key=lambda s: s[:23])).encode()
    acc.add(parse_moab_chunk(data, acc.book, "t", 1).batch)


def _workload() -> list[list[str]]:
    """Three batches over three days: job a drains n1 on day 1 then runs there; b drains n2 on
    day 2 (n2 then idle without a reservation); c holds n3's and n4's reservation from day 2 to
    the end and d n1's on day 3 (each its nodes' latest reservation)."""
    n2_free = line(T0 + timedelta(hours=27, minutes=1), "n2", "Idle")
    return [
        _minutes(1, 2, "n1", "Idle", "a", "none") + _minutes(3.05, 1, "n1", "Busy", "none", "a"),
        _minutes(25, 2, "n2", "Idle", "b", "none")
        + [n2_free]
        + _minutes(26, 1, "n3", "Idle", "c", "none")
        + _minutes(26, 1, "n4", "Idle", "c", "none"),
        _minutes(49, 2, "n3", "Idle", "c", "none") + _minutes(49, 1, "n1", "Idle", "d", "none"),
    ]


def _accountant() -> DrainAccountant:
    acc = DrainAccountant(Codebook(jobs=IdBook()), tz="UTC", unit="minute")
    for b in _workload():
        _feed(acc, b)
    return acc


def _jobs(acc: DrainAccountant) -> dict[str, tuple[int, ...]]:
    """Every job's totals by name: drain, first and last charge, last seen running, nodes
    charged and running."""
    charged, running = acc.nodes_charged(), acc.nodes_running()
    names = acc.book.jobs.names_of(range(len(acc.book.jobs)))
    return {
        name: (
            int(acc.job_drain_ms[j]),
            int(acc.job_first_ms[j]),
            int(acc.job_last_ms[j]),
            int(acc.job_run_last_ms[j]),
            int(charged[j]),
            int(running[j]),
        )
        for j, name in enumerate(names)
    }


def test_windows_before_a_day_edge_are_forgotten_whole_and_the_rest_kept() -> None:
    acc, full = _accountant(), _accountant()
    cut = int(T0.timestamp() * 1000) + DAY_MS
    before = sum(1 for w in full.windows() if w.start_ms < cut)
    assert before > 0
    assert retention.evict_windows(acc, cut) == before
    held = (acc._win, acc._win_nodes, acc._hour_nodes, acc._day_nodes)
    assert all(k >= cut for d in held for k in d)  # nothing of them left in memory
    assert acc.windows() == [w for w in full.windows() if w.start_ms >= cut]
    assert acc.hourly() == [w for w in full.hourly() if w.start_ms >= cut]
    assert acc.daily() == [w for w in full.daily() if w.start_ms >= cut]
    assert acc.state_ms("day") == {d: s for d, s in full.state_ms("day").items() if d >= cut}
    assert retention.evict_windows(acc, cut) == 0


def test_quiet_jobs_are_those_neither_charged_nor_running_since() -> None:
    acc = _accountant()
    day2 = int(T0.timestamp() * 1000) + DAY_MS
    quiet = retention.idle_jobs(acc, day2)
    names = acc.book.jobs.names_of(np.flatnonzero(quiet).tolist())
    assert names == ["a"]  # drained and ran on day 1 only; b, c, d were charged later
    assert not retention.idle_jobs(acc, int(T0.timestamp() * 1000)).any()


def test_forgotten_jobs_leave_the_others_as_they_were() -> None:
    acc, full = _accountant(), _accountant()
    names = acc.book.jobs.names_of(range(len(acc.book.jobs)))
    keep = np.array([n in ("a", "d") for n in names])  # b and c not kept
    new = retention.compact_jobs(acc, keep)
    # c is n3's latest reservation: kept whatever ``keep`` says
    assert sorted(acc.book.jobs.names_of(range(len(acc.book.jobs)))) == ["a", "c", "d"]
    kept = [n for n in names if n != "b"]  # renumbered densely in their old order
    assert new.tolist() == [kept.index(n) if n in kept else -1 for n in names]
    want = _jobs(full)
    assert _jobs(acc) == {n: want[n] for n in ("a", "c", "d")}
    assert acc.jobs_charged().size == 3


def test_the_kept_jobs_go_on_as_if_none_was_forgotten_and_a_forgotten_one_starts_anew() -> None:
    acc, full = _accountant(), _accountant()
    names = acc.book.jobs.names_of(range(len(acc.book.jobs)))
    retention.compact_jobs(acc, np.array([n != "b" for n in names]))
    more = _minutes(50.1, 1, "n3", "Idle", "c", "none") + _minutes(
        50.1, 1, "n2", "Idle", "b", "none"
    )
    _feed(acc, more)
    _feed(full, more)
    got, want = _jobs(acc), _jobs(full)
    assert {n: got[n] for n in ("a", "c", "d")} == {n: want[n] for n in ("a", "c", "d")}
    # b is charged again (n2's gap since day 2 is unaccounted): from zero, not from its old drain
    assert got["b"][0] < want["b"][0]
    assert got["b"][1] > want["b"][1]  # its first charge is the new one


def test_the_accountant_delegates_its_retention() -> None:
    acc, other = _accountant(), _accountant()
    cut = int(T0.timestamp() * 1000) + DAY_MS
    assert acc.evict_windows(cut) == retention.evict_windows(other, cut)
    assert (acc.idle_jobs(cut) == retention.idle_jobs(other, cut)).all()
    keep = np.zeros(len(acc.book.jobs), dtype=bool)
    assert (acc.compact_jobs(keep) == retention.compact_jobs(other, keep)).all()
    assert _jobs(acc) == _jobs(other)
