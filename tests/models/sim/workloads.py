"""Hand-written workloads for the simulator's tests: one row per job."""

from __future__ import annotations

import numpy as np

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
