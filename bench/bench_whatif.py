"""Benchmark of ``drainwatch whatif`` on the KTH SP2 trace (28,475 jobs with a size, 100 nodes,
Oct 1996 - Aug 1997): speed, fidelity to the recorded schedule, and the comparison of Tsafrir,
Etsion & Feitelson (IEEE TPDS 2007) between EASY and EASY with system-generated predictions.

    .venv/bin/python bench/bench_whatif.py [--trace FILE] [--skip-command]

1. Speed: each policy with its drain accounted (the observed run the command makes), beside the
   same policy on the fast path (no observation), in one run; then the whole command
   (``drainwatch whatif`` over every policy, both predictors) in a fresh process.
2. Fidelity: ``easy`` with the users' requests against the recorded schedule: mean waits,
   utilisation, Pearson correlation of the per-job waits.
3. Tsafrir et al.: EASY with the users' estimates against EASY planning with the last-two
   average (their predictor, growing corrections), the same with corrections to the request,
   EASY++ (predictions + shortest-job-backfilled-first) and the perfect-estimate bound; mean
   wait and mean bounded slowdown (10 s), and the change against EASY.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.formats.jobsource import iter_job_records, record_events  # noqa: E402
from models.sim.outcomes import (  # noqa: E402
    mean_bounded_slowdown,
    mean_wait,
    schedule_from_records,
    utilisation,
)
from models.sim.policies import (  # noqa: E402
    ToRequest,
    TsafrirLastTwo,
    make_scheduler,
)
from models.sim.whatif import (  # noqa: E402
    PREDICTORS,
    account_drain,
    jobs_from_events,
    policy_runs,
)

REPO = Path(__file__).resolve().parents[1]
KTH = REPO.parent / "shared" / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
NODES = 100


def _jobs(trace: Path):
    with gzip.open(trace, "rt", encoding="utf-8", errors="replace") as f:
        events = list(record_events(iter_job_records("swf", f, str(trace), [], Counter()), []))
    return jobs_from_events(events, NODES)


def speed(jobs) -> list[dict]:
    rows = []
    for policy, est in policy_runs(
        ["easy", "easy-predicted", "easy-perfect", "conservative"], list(PREDICTORS)
    ):
        pred = PREDICTORS.get(est)
        t = time.perf_counter()
        make_scheduler(policy, NODES, jobs.workload, predictor=pred).run_all()
        fast = time.perf_counter() - t
        t = time.perf_counter()
        _, d = account_drain(make_scheduler(policy, NODES, jobs.workload, predictor=pred))
        observed = time.perf_counter() - t
        rows.append(
            {
                "policy": policy,
                "estimate": est,
                "fast_path_s": round(fast, 2),
                "with_drain_s": round(observed, 2),
                "ratio": round(observed / fast, 2),
                "drain_records": d.records,
                "drain_pct_static": round(d.drain_pct or 0.0, 3),
            }
        )
        print(rows[-1], flush=True)
    return rows


def command(trace: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "streams.cli", "whatif", "--format", "swf", str(trace)]
        argv += ["--nodes", str(NODES), "--out", tmp, "--no-progress"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
        t = time.perf_counter()
        subprocess.run(argv, check=True, cwd=REPO, env=env)
        wall = time.perf_counter() - t
        summary = json.loads((Path(tmp) / "summary_whatif.json").read_text())
    return {"wall_s": round(wall, 2), "timings_s": summary["timings_s"]}


def fidelity(jobs) -> dict:
    s = make_scheduler("easy", NODES, jobs.workload)
    sim = schedule_from_records(jobs.workload, s.run_all())
    rec = jobs.recorded
    return {
        "recorded_mean_wait_s": round(mean_wait(rec), 1),
        "easy_mean_wait_s": round(mean_wait(sim), 1),
        "recorded_utilisation_pct": round(utilisation(rec, NODES) * 100, 2),
        "easy_utilisation_pct": round(utilisation(sim, NODES) * 100, 2),
        "r_waits": round(float(np.corrcoef(sim.waits, rec.waits)[0, 1]), 3),
    }


def tsafrir(jobs) -> list[dict]:
    variants = [
        ("EASY (user estimates)", "easy", None, False),
        ("EASY + last-two predictions", "easy-predicted", TsafrirLastTwo(), False),
        (
            "EASY + last-two, corrected to the request",
            "easy-predicted",
            TsafrirLastTwo(correction=ToRequest()),
            False,
        ),
        ("EASY++ (last-two + SJBF)", "easy-predicted", TsafrirLastTwo(), True),
        ("EASY, perfect estimates", "easy-perfect", None, False),
        ("EASY + SJBF, user estimates", "easy", None, True),
    ]
    rows = []
    for name, policy, pred, sjbf in variants:
        s = make_scheduler(policy, NODES, jobs.workload, predictor=pred, shortest_first=sjbf)
        sch = schedule_from_records(jobs.workload, s.run_all())
        rows.append(
            {"variant": name, "mean_wait_s": mean_wait(sch), "bsld": mean_bounded_slowdown(sch)}
        )
    w0, b0 = rows[0]["mean_wait_s"], rows[0]["bsld"]
    for r in rows:
        r["wait_change_pct"] = round((r["mean_wait_s"] / w0 - 1) * 100, 1)
        r["bsld_change_pct"] = round((r["bsld"] / b0 - 1) * 100, 1)
        r["mean_wait_s"] = round(r["mean_wait_s"], 1)
        r["bsld"] = round(r["bsld"], 2)
        print(r, flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", type=Path, default=KTH)
    ap.add_argument("--skip-command", action="store_true")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "whatif.json")
    a = ap.parse_args()
    if not a.trace.exists():
        print(f"bench_whatif: no trace at {a.trace}", file=sys.stderr)
        return 2
    t = time.perf_counter()
    jobs = _jobs(a.trace)
    read = time.perf_counter() - t
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "jobs": len(jobs.workload),
        "read_s": round(read, 2),
        "speed": speed(jobs),
        "fidelity": fidelity(jobs),
        "tsafrir": tsafrir(jobs),
    }
    if not a.skip_command:
        result["command"] = command(a.trace)
        print(result["command"])
    print(json.dumps(result["fidelity"]))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"-> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
