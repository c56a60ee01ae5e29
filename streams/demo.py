"""`make demo`: the main job on an embedded default, no servers, no data files.

Simulates a few days of a few hundred nodes (Lublin-Feitelson 2003 workload, EASY backfill) as a
Moab node-status log plus job events, replays it through the drain accounting, and prints where
the reports are and the headline numbers.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from streams.cli import main as cli

SIM = [
    "simulate",
    "--model",
    "lublin",
    "--nodes",
    "300",
    "--days",
    "3",
    "--period",
    "120",
    "--seed",
    "2",
    "--outages",
    "3",
    "--drained",
    "2",
    "--depth",
    "2",
    "--tz",
    "America/Chicago",
]


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(out: str = ".drainwatch/demo") -> int:
    base = Path(out)
    sim, rep = base / "sim", base / "report"
    t0 = time.perf_counter()
    if cli([*SIM, "--out", str(sim)]) != 0:
        return 1
    rc = cli(
        [
            "replay",
            "--format",
            "moab",
            str(sim / "moab.log"),
            "--jobs",
            str(sim / "jobs.jsonl"),
            "--nodes",
            "300",
            "--tz",
            "America/Chicago",
            "--out",
            str(rep),
        ]
    )
    if rc != 0:
        return rc
    print(f"\nreports in {rep}/ ({time.perf_counter() - t0:.1f} s in all)")
    print("\nday         drain %  (static, 300 nodes)  drain % (non-Down)  data quality")
    for r in _rows(rep / "drain_daily.csv"):
        print(
            f"{r['day']}  {float(r['drain_pct_static']):7.2f}  {'':21}"
            f"{float(r['drain_pct_dynamic'] or 0):7.2f}  {'':11}{r['data_quality']}"
        )
    print("\ntop drain jobs (node-hours of idle nodes held for them)")
    for r in _rows(rep / "drain_jobs.csv")[:5]:
        print(
            f"  job {r['job']:>10}: {float(r['drain_node_seconds']) / 3600:9.1f} node-h on "
            f"{r['nodes_charged']} nodes, size {r.get('size') or '?'}"
        )
    ftl = _rows(rep / "failure_to_launch.csv")
    sl = _rows(rep / "sliding_jobs.csv")
    print(f"\nfailure to launch (drained, then ran < 30 s): {len(ftl)} jobs")
    print(
        f"still queued and sliding: {len(sl)} jobs"
        + (f", worst {sl[0]['job']} at {float(sl[0]['drain_per_node']):.0f} s/node" if sl else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
