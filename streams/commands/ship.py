"""`drainwatch ship`: collectors that run on the nodes and ship what they measure.

``ship samples``: the per-node /proc + cgroup sampler (seed 003 §3.1) writing JSON-lines node
samples (see models.formats.sampletrace) to a file or stdout.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from models.formats.procfs import RESOLVERS

if TYPE_CHECKING:
    from streams.sources.sampler import JsonLinesSink, Sampler


def _ship_samples(args: argparse.Namespace) -> int:
    from streams.sources.sampler import JsonLinesSink, Sampler, resolver_by_name

    sampler = Sampler(resolver_by_name(args.resolver), node=args.node, job_class=args.job_class)
    if args.out == "-":
        sink = JsonLinesSink(sys.stdout.buffer)
        n = _run(sampler, sink, args)
    else:
        with open(args.out, "ab") as f:
            sink = JsonLinesSink(f)
            n = _run(sampler, sink, args)
    stats = ", ".join(f"{k}={v}" for k, v in sorted(sampler.stats.items()))
    print(f"ship samples: {n} sweeps, {sink.lines} samples ({stats})", file=sys.stderr)
    return 0


def _run(sampler: Sampler, sink: JsonLinesSink, args: argparse.Namespace) -> int:
    try:
        return sampler.run(sink, period=args.period, count=args.count)
    except KeyboardInterrupt:
        return sampler.stats["sweeps"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ship", help="run a node collector and ship what it measures")
    ssub = p.add_subparsers(dest="what", required=True)
    s = ssub.add_parser(
        "samples",
        help="sample /proc for every job process on this node (seed 003 monitor)",
        description="Every PERIOD seconds read /proc/<pid>/{status,io,stat} and the network "
        "counters of every process that belongs to a job (job id from its cgroup path) and "
        "write one JSON line per process.",
    )
    s.add_argument("--period", type=float, default=60.0, help="seconds between sweeps (60)")
    s.add_argument("--out", default="-", help="output file (appended) or - for stdout")
    s.add_argument("--count", type=int, default=None, help="stop after N sweeps (default: run)")
    s.add_argument(
        "--resolver",
        choices=sorted(RESOLVERS),
        default="all",
        help="job id from: slurm (job_<id> in any cgroup path), cpuset (OAR "
        "/oar/<user>_<id> or job_<id> in the cpuset hierarchy), all (slurm then "
        "cpuset), cgroup (the cgroup v2 path itself, for machines without a batch "
        "system)",
    )
    s.add_argument("--node", default=None, help="node name (default: host name)")
    s.add_argument("--job-class", default="", help="class written with every sample")
    s.set_defaults(func=_ship_samples)
