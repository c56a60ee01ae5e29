"""Jobs added to a modelled workload so that a simulation shows every kind of finding the
analytics look for, each with a user of its own so it is easy to tell apart:

* a perpetually sliding job (seed 000 §V-B): ``user097`` asks for the whole machine
  ``sliding_lead_h`` hours before the end while ``user096``'s two-node job runs past the end, so
  the big job holds its reservation (drain) and is never seen running;
* a failure to launch (seed 000 §V-C): ``user098`` asks for 90 % of the machine, is drained for
  while the machine empties, then runs 8 s;
* an overrun (seed 001): ``user099`` runs the same job (same requested walltime, which stands in
  for the job name) every 4 hours for 30 minutes, then once for 100 minutes;
* a short-job flood (seed 002): ``user095`` submits ``flood_jobs`` one-node jobs of 2-20 s
  within 6 minutes.

Times are fractions of the written span, so the findings land inside it for any ``days`` >= 2.
Pure: the configuration's times and seed only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.sim.scheduler import Workload


@dataclass(slots=True, frozen=True)
class Findings:
    """Where the findings are put; fractions are of the span ``[start, end)``."""

    ftl_at: float = 0.45
    flood_at: float = 0.62
    flood_jobs: int = 240
    overrun_first: float = 0.05
    overrun_runs: int = 9
    sliding_lead_h: float = 9.0


FLOOD_USER = "user095"
BLOCKER_USER = "user096"
SLIDING_USER = "user097"
FTL_USER = "user098"
OVERRUN_USER = "user099"


def findings_workload(
    nodes: int, start: float, end: float, seed: int, first_id: int, f: Findings = Findings()
) -> Workload:
    """The added jobs (ids from ``first_id`` on), as a workload to append to the model's."""
    rng = np.random.default_rng([seed, 0xF1D5])
    span = end - start
    sub: list[float] = []
    size: list[int] = []
    run: list[float] = []
    req: list[float] = []
    user: list[str] = []

    def job(t: float, n: int, runtime: float, walltime: float, who: str) -> None:
        sub.append(round(t, 3))
        size.append(n)
        run.append(runtime)
        req.append(walltime)
        user.append(who)

    # failure to launch: waits for 90 % of the machine, runs 8 s
    job(start + f.ftl_at * span, max(1, int(0.9 * nodes)), 8.0, 4 * 3600.0, FTL_USER)
    # overrun: 30 min runs (a little spread), then one of 100 min, 3 h requested each time
    for k in range(f.overrun_runs):
        rt = 6000.0 if k == f.overrun_runs - 1 else float(1800 + rng.integers(-30, 31))
        job(
            start + f.overrun_first * span + k * 4 * 3600.0,
            min(8, nodes),
            rt,
            10800.0,
            OVERRUN_USER,
        )
    # short-job flood: one-node jobs of 2-20 s within 6 minutes
    t0 = start + f.flood_at * span
    for k in range(f.flood_jobs):
        job(t0 + k * 360.0 / f.flood_jobs, 1, float(rng.integers(2, 21)), 300.0, FLOOD_USER)
    # sliding: a two-node job runs past the end; the whole machine is asked for behind it
    lead = f.sliding_lead_h * 3600.0
    job(
        end - lead - 3 * 3600.0, min(2, nodes), span + 2 * 86400.0, span + 3 * 86400.0, BLOCKER_USER
    )
    job(end - lead, nodes, 3600.0, 7200.0, SLIDING_USER)
    n = len(sub)
    return Workload(
        job_id=[str(first_id + i) for i in range(n)],
        submit=np.asarray(sub, np.float64),
        nodes=np.asarray(size, np.int64),
        runtime=np.asarray(run, np.float64),
        req_walltime=np.asarray(req, np.float64),
        user=user,
    )


def concat(a: Workload, b: Workload) -> Workload:
    """``a``'s jobs then ``b``'s (users: 'unknown' where a workload has none)."""
    ua = a.user or ["unknown"] * len(a)
    ub = b.user or ["unknown"] * len(b)
    return Workload(
        job_id=[*a.job_id, *b.job_id],
        submit=np.concatenate([a.submit, b.submit]),
        nodes=np.concatenate([a.nodes, b.nodes]),
        runtime=np.concatenate([a.runtime, b.runtime]),
        req_walltime=np.concatenate([a.req_walltime, b.req_walltime]),
        user=[*ua, *ub],
    )
