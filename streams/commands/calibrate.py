"""`drainwatch calibrate dfs PATH`: the hot-zone threshold of a file system, measured the way
seed 003 §5.2 did it (Emeras et al.: IOR on Gofree's NFS, 98 +- 5 MB/s -> hot zone above 93).

``--writers`` threads each create a file of ``--size`` MB in a scratch directory under PATH,
write it (incompressible data) and fsync it; the aggregate speed of one repeat is all the bytes
over the time from the start to the last fsync. ``--repeats`` repeats give the mean and the
standard deviation (population, as IOR reports it), and the threshold is mean - sigma. The
files are removed after each repeat and the scratch directory at the end (also on an error or
Ctrl-C). MB = 10**6 bytes, like IOR and node-sample traces.

Run it on a node like the compute nodes, on the file system the jobs write to, when it is
quiet: one client measures what one node can push, which can be below the servers' limit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from streams.errors import UserError, option_type

MB = 10**6
_CHUNK = 4 * MB  # bytes per write() call at most
MAX_WRITERS = 1024
MAX_REPEATS = 1000
MAX_SIZE_MB = 10**6  # 1 TB per writer


@dataclass(frozen=True, slots=True)
class Calibration:
    """Aggregate MB/s of each repeat, their mean, sigma (population) and mean - sigma."""

    rates: list[float]
    mean: float
    std: float
    threshold: float


def calibrate(
    path: Path,
    writers: int,
    size_bytes: int,
    repeats: int,
    report: Callable[[int, float, float], None] | None = None,
) -> Calibration:
    """Run the test in a scratch directory under ``path`` (removed at the end, whatever
    happens). ``report(repeat, mb_s, seconds)`` is called after each repeat when given."""
    work = Path(tempfile.mkdtemp(prefix=".drainwatch-calibrate-", dir=path))
    stop = threading.Event()
    try:
        data = os.urandom(min(size_bytes, _CHUNK)) if size_bytes else b""
        rates = []
        for r in range(repeats):
            seconds = _one_repeat(work, r, writers, size_bytes, data, stop)
            rate = writers * size_bytes / MB / seconds
            rates.append(rate)
            if report is not None:
                report(r + 1, rate, seconds)
    finally:
        stop.set()
        shutil.rmtree(work, ignore_errors=True)
    mean = statistics.fmean(rates)
    std = statistics.pstdev(rates, mean)
    from models.samples.dfs import hot_zone_threshold

    return Calibration(rates, mean, std, hot_zone_threshold(mean, std))


def _one_repeat(
    work: Path, repeat: int, writers: int, size: int, data: bytes, stop: threading.Event
) -> float:
    start = threading.Barrier(writers + 1)
    errors: list[BaseException] = []
    names = [work / f"w{i}.r{repeat}" for i in range(writers)]

    def write(name: Path) -> None:
        try:
            start.wait()
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                left = size
                view = memoryview(data)
                while left > 0 and not stop.is_set():
                    left -= os.write(fd, view[: min(left, len(view))])
                os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=write, args=(n,), daemon=True) for n in names]
    for t in threads:
        t.start()
    try:
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - t0
    except BaseException:
        stop.set()
        for t in threads:
            t.join()
        raise
    for n in names:
        n.unlink(missing_ok=True)
    if errors:
        raise errors[0]
    return max(seconds, 1e-9)


def _mount_point(path: Path) -> Path:
    p = path.resolve()
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return p


def _fmt(x: float) -> str:
    """A rate for the option line: 0.1 MB/s resolution, 3 significant digits when smaller."""
    return f"{x:.1f}" if x >= 10 else f"{x:.3g}"


def _check_dir(path: str) -> Path:
    if not path:
        raise UserError("the directory is empty: give a directory on the file system to test")
    p = Path(path)
    if not p.exists():
        raise UserError(f"no such directory: {path}")
    if not p.is_dir():
        raise UserError(f"{path} is not a directory")
    if not os.access(p, os.W_OK | os.X_OK):
        raise UserError(f"{path} is not writable")
    try:  # tried, not only asked: os.access says yes to root on a read-only file system
        os.rmdir(tempfile.mkdtemp(prefix=".drainwatch-probe-", dir=p))
    except OSError as e:
        raise UserError(f"{path} is not writable ({e.strerror})") from None
    return p


def run_dfs(args: argparse.Namespace) -> int:
    path = _check_dir(args.path)
    size = round(args.size * MB)
    if size < 1:
        raise UserError(f"--size {args.size:g}: less than one byte per writer")
    need = args.writers * size
    try:
        st = os.statvfs(path)
        free = st.f_bavail * st.f_frsize
    except OSError:
        free = None
    if free is not None and need > free:
        raise UserError(
            f"{args.path}: the test needs {need / MB:g} MB, {free / MB:.0f} MB free "
            "(use fewer --writers or a smaller --size)"
        )
    name = args.name or (_mount_point(path).name or "/")
    out = sys.stdout
    print(
        f"calibrate dfs {args.path} (file system mounted on {_mount_point(path)}): "
        f"{args.writers} writers x {args.size:g} MB, fsync each file, {args.repeats} repeats",
        file=out,
    )

    def report(r: int, rate: float, seconds: float) -> None:
        print(f"  repeat {r}: {rate:.1f} MB/s ({need / MB:g} MB in {seconds:.3f} s)", file=out)
        out.flush()

    c = calibrate(path, args.writers, size, args.repeats, report)
    print(
        f"mean {c.mean:.1f} MB/s, sigma {c.std:.1f} MB/s (population, as IOR reports it)", file=out
    )
    if c.threshold <= 0:
        raise UserError(
            f"mean - sigma = {c.threshold:.3g} MB/s is not above 0: the repeats vary "
            "too much; use a larger --size or more --repeats"
        )
    print(f"hot-zone threshold (seed 003: mean - sigma): {c.threshold:.1f} MB/s", file=out)
    print(f"replay option: --hot-zone-fs {name}={_fmt(c.threshold)}MB/s", file=out)
    print(
        f"  (name the file system as your data does, --name; alone: --hot-zone-bw "
        f"{_fmt(c.mean)}MB/s,{_fmt(c.std)}MB/s)",
        file=out,
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure a threshold from the system itself (dfs: the hot zone of a file system)",
        description="Measurements that turn a seed's example value into this system's.",
    )
    targets = p.add_subparsers(dest="target", required=True, metavar="{dfs}")
    d = targets.add_parser(
        "dfs",
        help="parallel write-bandwidth test of PATH's file system -> hot-zone threshold",
        description="Seed 003's method: several writers write and fsync a file each, repeated; "
        "the aggregate MB/s of the repeats gives mean and sigma, and the hot-zone threshold is "
        "mean - sigma. Prints the --hot-zone-fs option for `drainwatch replay`. Its files are "
        "removed at the end.",
    )
    d.add_argument("path", metavar="PATH", help="a writable directory on the file system")
    d.add_argument(
        "--writers",
        type=option_type(int, 1, True, MAX_WRITERS),
        default=4,
        metavar="N",
        help="parallel writers (4)",
    )
    d.add_argument(
        "--size",
        type=option_type(float, 0.0, False, MAX_SIZE_MB),
        default=64.0,
        metavar="MB",
        help="MB (10**6 bytes) per writer and repeat (64)",
    )
    d.add_argument(
        "--repeats",
        type=option_type(int, 2, True, MAX_REPEATS),
        default=5,
        metavar="R",
        help="repeats, at least 2 for sigma (5)",
    )
    d.add_argument(
        "--name",
        default=None,
        metavar="FS",
        help="the file system's name in your data, for the printed option "
        "(default: the last part of its mount point)",
    )
    d.set_defaults(func=run_dfs)
