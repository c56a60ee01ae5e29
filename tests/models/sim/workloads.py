"""Hand-written workloads for the simulator's tests: one row per job."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from models.sim.scheduler import Workload

Row = tuple[float, int, float, float]


def wl(rows: list[Row], users: list[str] | None = None) -> Workload:
    """rows: (submit, nodes, runtime, req_walltime); job ids 'J0', 'J1', ...; ``users`` one per
    row (none: the workload names no users)."""
    return Workload(
        job_id=[f"J{i}" for i in range(len(rows))],
        submit=np.array([r[0] for r in rows], dtype=float),
        nodes=np.array([r[1] for r in rows], dtype=np.int64),
        runtime=np.array([r[2] for r in rows], dtype=float),
        req_walltime=np.array([r[3] for r in rows], dtype=float),
        user=users or [],
    )


def job_rows(max_jobs: int, submit: int, run: int, req: int, nodes: int) -> st.SearchStrategy:
    return st.lists(
        st.tuples(
            st.integers(0, submit).map(float),
            st.integers(1, nodes),
            st.integers(0, run).map(float),
            st.integers(1, req).map(float),
        ),
        min_size=1,
        max_size=max_jobs,
    )


@st.composite
def workloads(draw, max_jobs=40, max_nodes=16):
    n = draw(st.integers(1, max_nodes))
    rows = draw(job_rows(max_jobs, 2000, 600, 600, n))
    users = draw(st.lists(st.sampled_from("abc"), min_size=len(rows), max_size=len(rows)))
    return n, rows, users
