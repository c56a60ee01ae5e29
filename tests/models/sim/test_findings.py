"""The jobs simulate --findings adds: where and how large they are, and that they run through
the EASY scheduler as the findings they stand for (pure; the replay side is asserted on the
demo's outputs in tests/streams/report)."""

from __future__ import annotations

import numpy as np

from models.sim.findings import (
    BLOCKER_USER,
    FLOOD_USER,
    FTL_USER,
    OVERRUN_USER,
    SLIDING_USER,
    Findings,
    concat,
    findings_workload,
)
from models.sim.scheduler import Workload

START, END = 1_000_000.0, 1_000_000.0 + 3 * 86400


def test_the_added_jobs() -> None:
    w = findings_workload(300, START, END, seed=2, first_id=5000)
    users = np.array(w.user)
    assert w.job_id[0] == "5000" and len(set(w.job_id)) == len(w)
    assert ((w.submit >= START) & (w.submit < END)).all()
    flood = users == FLOOD_USER
    assert flood.sum() == Findings().flood_jobs
    assert (w.runtime[flood] < 30).all() and np.ptp(w.submit[flood]) < 360
    ftl = users == FTL_USER
    assert w.nodes[ftl].tolist() == [270] and w.runtime[ftl].tolist() == [8.0]
    over = users == OVERRUN_USER
    runs = w.runtime[over]
    assert len(runs) == 9 and runs[-1] == 6000 and (np.abs(runs[:-1] - 1800) <= 30).all()
    assert (w.req_walltime[over] == 10800).all()  # one requested walltime: one "job name"
    sliding = users == SLIDING_USER
    assert w.nodes[sliding].tolist() == [300]
    blocker = users == BLOCKER_USER
    # the blocker runs past the end, so the whole-machine job cannot start before it
    assert w.submit[blocker][0] < w.submit[sliding][0]
    assert w.submit[blocker][0] + w.runtime[blocker][0] > END


def test_same_seed_same_jobs_and_concat() -> None:
    a = findings_workload(64, START, END, seed=1, first_id=1)
    b = findings_workload(64, START, END, seed=1, first_id=1)
    assert a.runtime.tolist() == b.runtime.tolist()
    base = Workload(["x"], np.array([START]), np.array([4]), np.array([60.0]), np.array([120.0]))
    c = concat(base, a)
    assert c.job_id == ["x", *a.job_id] and c.user[0] == "unknown"
    assert c.nodes.tolist() == [4, *a.nodes.tolist()]
