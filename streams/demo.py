"""`make demo`: the main job on an embedded default, no servers, no data files.

Simulates three days of a 300-node machine (Lublin-Feitelson 2003 workload, EASY backfill) with
jobs added so that every kind of finding occurs (``simulate --findings``: a perpetually sliding
job, a failure to launch, an overrun, a short-job flood) and node samples of the last 36 hours
with a DFS write burst (a hot-zone episode); replays the Moab log (with the job events), the job
events and the samples; runs the job events through ``whatif`` (every scheduling policy on the
same jobs); writes the HTML report and prints its path and the headline numbers.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from streams.cli import main as cli

NODES, DAYS, SEED, TZ = "300", "3", "2", "America/Chicago"
SIM = [
    "simulate",
    "--model",
    "lublin",
    "--nodes",
    NODES,
    "--days",
    DAYS,
    "--period",
    "120",
    "--seed",
    SEED,
    "--outages",
    "3",
    "--drained",
    "2",
    "--depth",
    "2",
    "--tz",
    TZ,
    "--findings",
    "--samples-hours",
    "36",
]
NOTE = (
    f"Simulated data: {DAYS} days of a {NODES}-node machine (Lublin-Feitelson workload, EASY "
    "backfill, seed 2) with one finding of each kind added (users user095-user099) and node "
    "samples of the last 36 hours; produced by `make demo`, not measured on a real system."
)


def main(out: str = ".drainwatch/demo") -> int:
    base = Path(out)
    sim = base / "sim"
    dirs = {
        "drain": base / "drain",
        "jobs": base / "jobs",
        "samples": base / "samples",
        "whatif": base / "whatif",
    }
    t0 = time.perf_counter()
    if cli([*SIM, "--out", str(sim)]) != 0:
        return 1
    common = ["--tz", TZ, "--no-progress"]
    runs = [
        [
            "--format",
            "moab",
            str(sim / "moab.log"),
            "--jobs",
            str(sim / "jobs.jsonl"),
            "--nodes",
            NODES,
        ],
        [
            "--format",
            "jobevents",
            str(sim / "jobs.jsonl"),
            "--nodes",
            NODES,
            "--resource",
            "demo",
        ],
        ["--format", "samples", str(sim / "samples.jsonl"), "--mem-per-core", "6"],
    ]
    for argv, d in zip(runs, dirs.values(), strict=False):
        rc = cli(["replay", *argv, *common, "--out", str(d)])
        if rc != 0:
            return rc
    whatif = ["whatif", "--format", "jobevents", str(sim / "jobs.jsonl"), "--nodes", NODES]
    rc = cli([*whatif, *common, "--out", str(dirs["whatif"])])
    if rc != 0:
        return rc
    from streams.report import write_report

    path = base / "report.html"
    report = write_report(
        [str(d) for d in dirs.values()], path, title="drainwatch demo report", note=NOTE
    )
    print(f"\nreport: {path.resolve()} ({time.perf_counter() - t0:.1f} s in all)")
    print(f"replay outputs in {', '.join(str(d) for d in dirs.values())}\n")
    width = max(len(k) for k in report.headline)
    for k, v in report.headline.items():
        print(f"  {k:<{width}}  {v}")
    if report.missing:
        print(f"\nnot shown (inputs absent): {', '.join(report.missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
