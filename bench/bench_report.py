"""Benchmark of `make demo` and of `drainwatch report`.

    .venv/bin/python bench/bench_report.py [--repeats 3]

Runs the demo once (simulate with findings and 36 h of node samples, three replays, the report)
and times it, then times building the report alone from the demo's replay outputs and, when
../shared/data is there, from a replay of the KTH SP2 trace (a year of days, 28,476 jobs);
prints wall seconds (best of the repeats) and the page size.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streams import demo  # noqa: E402
from streams.cli import main as cli  # noqa: E402
from streams.report import build_report  # noqa: E402

KTH = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
)


def best_of(repeats: int, dirs: list[str]) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        size = len(build_report(dirs).html.encode())
        times.append(time.perf_counter() - t0)
    return min(times), size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            assert demo.main(str(out)) == 0
        print(f"make demo (simulate, 3 replays, report): {time.perf_counter() - t0:.1f} s")
        dirs = [str(out / d) for d in ("drain", "jobs", "samples")]
        s, size = best_of(args.repeats, dirs)
        print(f"report of the demo's replays: {s:.2f} s, {size / 1e6:.2f} MB")
        if KTH.exists():
            kth = Path(tmp) / "kth"
            cli(["replay", "--format", "swf", str(KTH), "--out", str(kth), "--no-progress"])
            s, size = best_of(args.repeats, [str(kth)])
            print(
                f"report of the KTH SP2 replay (334 days, 28,476 jobs): {s:.2f} s, "
                f"{size / 1e6:.2f} MB"
            )


if __name__ == "__main__":
    main()
