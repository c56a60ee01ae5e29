"""Small good inputs of every replay format, and the same inputs with bad records mixed in.

Written by the tests themselves, so no row needs ../shared/data. The golden inputs
(tests/golden/inputs) serve Moab, job events and samples; sacct, SWF, jobcomp and LLview inputs
are generated here in the layouts the parsers document.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta

from tests.golden.make_golden import INPUTS


def _lines(name: str) -> list[bytes]:
    return gzip.decompress((INPUTS / name).read_bytes()).splitlines(keepends=True)


MOAB_LINES = _lines("moab.log.gz")[: 40 * 120]  # 40 nodes, 120 iterations (4 hours)
JOB_LINES = _lines("jobs.jsonl.gz")
SAMPLE_LINES = [x for x in _lines("samples.jsonl.gz") if b'"yesterday"' not in x]  # its bad one
MOAB = b"".join(MOAB_LINES)
JOBS = b"".join(JOB_LINES)
SAMPLES = b"".join(SAMPLE_LINES)


def _t(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S")


def sacct_fields(i: int) -> list[str]:
    """Job ``i`` as the 26 ``sacct --parsable2`` fields of the XDMoD layout."""
    sub = datetime(2016, 12, 22, 7, 0, 0) + timedelta(minutes=37 * i)
    start = sub + timedelta(minutes=3 + i % 5)
    run = timedelta(minutes=5 + (i * 13) % 240)
    end = start + run
    nodes = 1 + i % 4
    cpus = nodes * 8
    first = 1 + (i * 3) % 12
    nodelist = f"c[{first:02d}-{first + nodes - 1:02d}]" if nodes > 1 else f"c{first:02d}"
    el = int(run.total_seconds())
    return [
        str(1000 + i),
        str(1000 + i),
        "phillips",
        "batch",
        "normal",
        f"acct{i % 3}",
        f"grp{i % 2}",
        "100",
        f"user{i % 5}",
        str(2000 + i % 5),
        _t(sub),
        _t(sub),
        _t(start),
        _t(end),
        f"{el // 3600:02d}:{el % 3600 // 60:02d}:{el % 60:02d}",
        "0:0",
        "COMPLETED" if i % 7 else "FAILED",
        str(nodes),
        str(cpus),
        str(cpus),
        "4000Mn",
        f"cpu={cpus},node={nodes}",
        f"billing={cpus},cpu={cpus},node={nodes}",
        "1-00:00:00",
        nodelist,
        f"job{i % 4}",
    ]


SACCT_LINES = ["|".join(sacct_fields(i)) for i in range(40)]
SACCT = ("\n".join(SACCT_LINES) + "\n").encode()

SWF_HEADER = "; Version: 2.2\n; UnixStartTime: 1000000000\n; MaxNodes: 64\n; MaxProcs: 256\n"
SWF_LINES = [
    f"{i + 1} {600 * i} {30 + i % 50} {300 + (i * 97) % 7200} {4 * (1 + i % 8)} -1 -1 "
    f"{4 * (1 + i % 8)} 7200 -1 1 {i % 6} {i % 3} {i % 4} 1 -1 -1 -1"
    for i in range(60)
]
SWF = (SWF_HEADER + "\n".join(SWF_LINES) + "\n").encode()


def jobcomp_record(i: int) -> dict[str, object]:
    """Job ``i`` as Slurm's jobcomp/kafka publishes it."""
    sub = datetime(2025, 3, 4, 8, 0, 0) + timedelta(minutes=29 * i)
    start = sub + timedelta(minutes=2)
    end = start + timedelta(minutes=10 + (i * 17) % 300)
    nodes = 1 + i % 3
    return {
        "jobid": 5000 + i,
        "username": f"u{i % 4}",
        "user_id": 1000 + i % 4,
        "groupname": "physics",
        "group_id": 500,
        "@start": _t(start),
        "@end": _t(end),
        "elapsed": int((end - start).total_seconds()),
        "partition": "batch",
        "nodes": f"c[{1 + i % 5:03d}-{nodes + i % 5:03d}]",
        "total_cpus": 32 * nodes,
        "total_nodes": nodes,
        "derived_ec": "0:0",
        "exit_code": "0:0",
        "state": "COMPLETED",
        "@submit": _t(sub),
        "@eligible": _t(sub),
        "cluster": "alpha",
        "qos": "normal",
        "time_limit": 7200,
        "job_name": f"app{i % 3}",
        "account": "phys01",
    }


JOBCOMP_LINES = [json.dumps(jobcomp_record(i)) for i in range(40)]
JOBCOMP = ("\n".join(JOBCOMP_LINES) + "\n").encode()


def llview_dir(job: str = "77", bad_rows: bool = False, pcore: bool = True) -> dict[str, bytes]:
    """An LLview job directory of two nodes (LoadMem, PCOREusage, FSusage), keyed by the name
    under ``lv/``; ``bad_rows`` puts unparsable rows between the good ones."""
    lm = [
        "jobid ts nodeid load used_mem usage used_cores used_cores_phys used_cores_logic "
        "currentwatts avewatts"
    ]
    pc = ["ts nodeid coreid usage1_avg usage2_avg"]
    fs = ["jobid ts nodeid MbwR MbrR ocR"]
    for k in range(60):
        ts = 1709302348 + 60 * k
        for n, node in enumerate(("n1", "n2")):
            lm.append(
                f"{job} {ts} {node} {2 + n + k % 3:.2f} {10 + k % 7:.2f} {4 + k % 5:.2f} "
                "4 4 0 600.00 580.00"
            )
            fs.append(f"{job} {ts} {node} {(k * 7 + n) % 120:.6f} {k % 5:.6f} {k % 9:.6e}")
            if bad_rows and k % 20 == 5:
                lm.append(f"{job} {ts} {node} oops 1.0 1.0 4 4 0 600.00 580.00")
                fs.append(f"{job} {ts} {node} 1.0")
        if k % 10 == 0:
            pc += [
                f"{ts} {node} {c} {50 + c:.4f} {40 + c:.4f}"
                for node in ("n1", "n2")
                for c in range(4)
            ]
    files = {
        f"lv/LoadMem_{job}_node.dat": lm,
        f"lv/FSusage_{job}_all_node.dat": fs,
        **({f"lv/PCOREusage_{job}_node.dat": pc} if pcore else {}),
    }
    return {k: ("\n".join(v) + "\n").encode() for k, v in files.items()}


def crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def every_line_twice(data: bytes) -> bytes:
    return b"".join(line + line for line in data.splitlines(keepends=True))


def mixed(good: bytes, bad: list[bytes], every: int = 7) -> bytes:
    """``good`` with the ``bad`` lines spread between its lines (one after every ``every``th)."""
    out, pending = [], list(bad)
    for i, line in enumerate(good.splitlines(keepends=True)):
        out.append(line)
        if pending and i % every == every - 1:
            out.append(pending.pop(0))
    return b"".join(out + pending)


HOSTS_PAST_THE_CAP = ",".join(f"r{i}[0-65535]" for i in range(5))  # 327,680 > 262,144 hosts
BINARY = bytes(range(256)) * 20 + b"\n\x00\xff\xfe\n" * 10
