"""Values that parse but are absurd, and a job's identity (issue 31, classes 4 and 5), through the
real command.

Class 4: a job event's ``reserved_start`` of 1e300 or -1e15, a ``req_walltime`` of 1e20 or 1e308
on a job another submit waits for, an SWF header's ``MaxNodes: -5`` and an input whose name is
not UTF-8 ended the run with exit 1 ("internal error") and wrote nothing. Now each value beyond
its physical range (models/records/plausible.py) is a reject with its reason, the header value
is ignored with a reject, and the name is shown with backslash escapes.

Class 5: a ``sacct -M all`` dump holds the same ids on two clusters, whose jobs were mixed
(``end_before_start`` rejects, exit 0); ids written in another form (``123``, ``"123"``,
``123.0``, ``" 123"``) were other jobs in some formats; a ``|`` in a sacct job name lost the
record. Now a job is (cluster, id) where the source names clusters, ids are normalised alike in
every format (models/records/jobid.py), and the job name keeps its ``|``.

Each row runs ``replay`` in a subprocess and asserts the exit code, that no traceback is shown,
the reject reasons and counts in ``summary_jobs.json`` and, where a clean input is given, that
the run's tables equal those of the clean input byte for byte: the good records around the bad
ones are accounted exactly as without them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.badinput import inputs as IN
from tests.paths import REPO

ODD_NAME = os.fsdecode(b"jobs-\xff.jsonl")  # not UTF-8: argv gives it with a lone surrogate
ODD_SHOWN = "jobs-\\xff.jsonl"


@dataclass
class Row:
    name: str
    fmt: str
    files: dict[str, bytes]  # written under the row's directory
    inputs: list[str]  # the run's inputs (names under the row's directory)
    rejected: dict[str, int]  # the summary's rejected_by_reason, exactly
    clean: list[str] | None = None  # a clean input's names: the same tables, byte for byte
    options: list[str] = field(default_factory=list)  # given to both runs
    summary: dict[str, Any] = field(default_factory=dict)  # dotted summary keys -> values
    same: Callable[[bytes], bytes] | None = None  # the run's tables as the clean run's
    check: Callable[[Path, dict[str, Any]], None] | None = None  # more, on the output dir

    def param(self) -> Any:
        return pytest.param(self, id=self.name)


def jobs_with(extra: list[bytes], drop: tuple[int, ...] = ()) -> bytes:
    return b"".join(x for i, x in enumerate(IN.JOB_LINES) if i not in drop) + b"".join(extra)


def event(**d: Any) -> bytes:
    return json.dumps(d).encode() + b"\n"


def with_reserved(line: int, rs: float) -> bytes:
    """Golden job-event line ``line`` (a submit) with a reservation at ``rs``."""
    d = json.loads(IN.JOB_LINES[line])
    assert d["type"] == "submit"
    return event(**d, reserved_start=rs)


def reserved_row(rs: float, line: int) -> Row:
    bad = [x if i != line else with_reserved(line, rs) for i, x in enumerate(IN.JOB_LINES)]
    return Row(
        f"reserved_start {rs:g} on a submit",
        "jobevents",
        {"x/j.jsonl": b"".join(bad), "j.jsonl": jobs_with([], drop=(line,))},
        ["x/j.jsonl"],
        {"implausible_reserved_start": 1},
        clean=["j.jsonl"],
    )


def walltime_row(wall: float) -> Row:
    """Job w1 holds the whole section (40 nodes) with an absurd requested wall time while w2
    is submitted and waits for its nodes: the forecast walked to w1's release at 1e20 s."""
    w1 = dict(job="w1", user="user001", nodes=40, req_walltime=wall)
    held = [
        event(type="submit", ts=1425700000.0, **w1),
        event(type="start", ts=1425700001.0, node_list=[str(n) for n in range(1, 41)], **w1),
        event(type="end", ts=1425710001.0, state="COMPLETED", **w1),
    ]
    waits = event(
        type="submit", ts=1425700100.0, job="w2", user="user002", nodes=8, req_walltime=600.0
    )
    return Row(
        f"req_walltime {wall:g} on a job another waits for",
        "jobevents",
        {"x/j.jsonl": jobs_with([*held, waits]), "j.jsonl": jobs_with([waits])},
        ["x/j.jsonl"],
        {"bad_req_walltime": 3},
        clean=["j.jsonl"],
    )


def shown_escaped(out: Path, summary: dict[str, Any]) -> None:
    """The name is shown with a backslash escape in the summary and the rejects file."""
    assert summary["inputs"][0]["path"] == str(out.parent / ODD_SHOWN)
    assert f"{out.parent / ODD_SHOWN}\t".encode() in (out.parent / "r.tsv").read_bytes()


# ---- two clusters, one id ----------------------------------------------------------------


def two_clusters(keyed: bool) -> bytes:
    """Job i of cluster phillips and job 39 - i of cluster alpha under one id 1000 + i (other
    times, sizes and nodes), as ``sacct -M all`` prints them; ``keyed``: the same records of
    one cluster, their ids written ``cluster:id`` (what the run must make of them)."""
    out = []
    for i in range(40):
        for cluster, j in (("phillips", i), ("alpha", 39 - i)):
            f = IN.sacct_fields(j)
            f[0] = f[1] = f"{cluster}:{1000 + i}" if keyed else str(1000 + i)
            f[2] = "phillips" if keyed else cluster
            out.append("|".join(f))
    return ("\n".join(out) + "\n").encode()


def two_cluster_jobcomp(keyed: bool) -> bytes:
    out = []
    for i in range(40):
        for cluster, j in (("alpha", i), ("beta", 39 - i)):
            r = IN.jobcomp_record(j)
            r["jobid"] = f"{cluster}:{5000 + i}" if keyed else 5000 + i
            r["cluster"] = "alpha" if keyed else cluster
            out.append(json.dumps(r))
    return ("\n".join(out) + "\n").encode()


def both_clusters(tag: bytes) -> Callable[[Path, dict[str, Any]], None]:
    def check(out: Path, summary: dict[str, Any]) -> None:
        rows = (out / "runtime_predictions.csv").read_bytes().splitlines()[1:]
        assert len(rows) == 80
        assert sum(r.startswith(tag + b":") for r in rows) == 40

    return check


# ---- one id in four forms -----------------------------------------------------------------


def _form(job: str, i: int) -> Any:
    return (int(job), job, float(job), f" {job}\t")[i % 4]


def jobevents_in_four_forms() -> bytes:
    out = []
    for i, line in enumerate(IN.JOB_LINES):
        d = json.loads(line)
        out.append(event(**{**d, "job": _form(d["job"], i)}))
    return b"".join(out)


def jobcomp_in_four_forms() -> bytes:
    recs = [json.loads(x) for x in IN.JOBCOMP_LINES]
    return b"".join(event(**{**r, "jobid": _form(str(r["jobid"]), i)}) for i, r in enumerate(recs))


# ---- a '|' in a sacct job name ------------------------------------------------------------


def sacct_names(pipe: bool, flags: str | None = None) -> bytes:
    out = []
    for i in range(40):
        f = IN.sacct_fields(i)
        if pipe:
            # one name, one form (job0 -> j|o|b|0, job1 -> job|1): the history is per name
            f[-1] = f[-1].replace("job", "j|o|b|" if i % 4 in (0, 3) else "job|")
        out.append("|".join(f if flags is None else [*f, flags]))
    return ("\n".join(out) + "\n").encode()


def unpipe(data: bytes) -> bytes:
    return data.replace(b"j|o|b|", b"job").replace(b"job|", b"job")


def names_kept(out: Path, summary: dict[str, Any]) -> None:
    names = (out / "runtime_predictions.csv").read_bytes()
    assert b",job|1," in names and b",j|o|b|0," in names


# ---- out-of-range values of every format among good ones ----------------------------------


def sacct_line(i: int, **at: str) -> bytes:
    f = IN.sacct_fields(i)
    where = {"timelimit": 23, "nnodes": 17, "elapsed": 14, "exitcode": 15, "uid": 9}
    for k, v in at.items():
        f[where[k]] = v
    return ("|".join(f) + "\n").encode()


def jobcomp_line(i: int, **over: Any) -> bytes:
    return event(**{**IN.jobcomp_record(i), **over})


SWF_JOB = "999 100 30 300 4 -1 -1 4 7200 -1 1 1 1 1 1 -1 -1 -1"

ROWS = [
    # ---- class 4 ----------------------------------------------------------------------------
    reserved_row(1e300, 200),
    reserved_row(-1e15, 201),
    walltime_row(1e20),
    walltime_row(1e308),
    Row(
        "SWF header MaxNodes -5",
        "swf",
        {
            "x/t.swf": IN.SWF.replace(b"MaxNodes: 64", b"MaxNodes: -5"),
            "t.swf": IN.SWF.replace(b"; MaxNodes: 64\n", b""),
        },
        ["x/t.swf"],
        {"bad_max_nodes": 1},
        clean=["t.swf"],
        summary={"capability.section_nodes_from": "largest job"},
    ),
    Row(
        "SWF header MaxProcs and UnixStartTime not numbers",
        "swf",
        {
            "x/t.swf": IN.SWF.replace(b"MaxProcs: 256", b"MaxProcs: lots").replace(
                b"UnixStartTime: 1000000000", b"UnixStartTime: 1e300"
            ),
            "t.swf": IN.SWF.replace(b"; MaxProcs: 256\n", b"").replace(
                b"; UnixStartTime: 1000000000\n", b""
            ),
        },
        ["x/t.swf"],
        {"bad_max_procs": 1, "bad_unix_start_time": 1},
        clean=["t.swf"],
    ),
    Row(
        "non-UTF-8 input name",
        "jobevents",
        {ODD_NAME: IN.mixed(IN.JOBS, [b"{oops\n"], every=100), "j.jsonl": IN.JOBS},
        [ODD_NAME],
        {"bad_json": 1},
        clean=["j.jsonl"],
        options=["--resource", "jobs"],
        check=shown_escaped,
    ),
    Row(
        "non-UTF-8 input name, resource from its stem",
        "jobevents",
        {ODD_NAME: IN.JOBS},
        [ODD_NAME],
        {},
    ),
    Row(
        "out-of-range sacct values among good ones",
        "sacct",
        {
            "x/s.log": IN.mixed(
                IN.SACCT,
                [
                    sacct_line(90, timelimit="3651-00:00:00"),
                    sacct_line(91, nnodes="4294967296"),
                    sacct_line(92, elapsed="99999-00:00:00"),
                    sacct_line(93, exitcode="1000:0"),
                    sacct_line(94, uid="99999999999"),
                ],
            ),
            "s.log": IN.SACCT,
        },
        ["x/s.log"],
        {"bad_timelimit": 1, "bad_nnodes": 1, "bad_elapsed": 1, "bad_exitcode": 1, "bad_uid": 1},
        clean=["s.log"],
    ),
    Row(
        "out-of-range jobcomp values among good ones",
        "jobcomp",
        {
            "x/c.json": IN.mixed(
                IN.JOBCOMP,
                [
                    jobcomp_line(90, time_limit=1e308),
                    jobcomp_line(91, total_nodes=2**40),
                    jobcomp_line(92, total_cpus=1e300),
                    jobcomp_line(93, derived_ec="300:0"),
                    jobcomp_line(94, jobid=1.5),
                ],
            ),
            "c.json": IN.JOBCOMP,
        },
        ["x/c.json"],
        {
            "bad_time_limit": 1,
            "bad_total_nodes": 1,
            "bad_total_cpus": 1,
            "bad_exit_code": 1,
            "bad_jobid": 1,
        },
        clean=["c.json"],
    ),
    Row(
        "out-of-range swf values among good ones",
        "swf",
        {
            "x/t.swf": IN.mixed(
                IN.SWF,
                [
                    (SWF_JOB.replace(" 300 ", " 100000000000 ") + "\n").encode(),
                    (SWF_JOB.replace(" 7200 ", " 999999999999 ") + "\n").encode(),
                    (SWF_JOB.replace(" 4 -1 -1 4 ", " 4 -1 -1 4294967296 ") + "\n").encode(),
                ],
            ),
            "t.swf": IN.SWF,
        },
        ["x/t.swf"],
        {"bad_run": 1, "bad_time_req": 1, "bad_procs_req": 1},
        clean=["t.swf"],
    ),
    Row(
        "out-of-range job-event values among good ones",
        "jobevents",
        {
            "x/j.jsonl": IN.mixed(
                IN.JOBS,
                [
                    event(type="submit", ts=1425700000.0, job="v1", nodes=2**31),
                    event(type="submit", ts=1425700000.0, job="v2", cores=2**40),
                    event(type="end", ts=1425700000.0, job="v3", exit_code=2**40),
                    event(type="submit", ts=1425700000.0, job=True),
                    event(type="submit", ts=1425700000.0, job="v5", req_walltime=-1),
                ],
            ),
            "j.jsonl": IN.JOBS,
        },
        ["x/j.jsonl"],
        {"bad_nodes": 1, "bad_cores": 1, "bad_exit_code": 1, "bad_job": 1, "bad_req_walltime": 1},
        clean=["j.jsonl"],
    ),
    # ---- class 5 ----------------------------------------------------------------------------
    Row(
        "sacct -M all: two clusters, the same ids",
        "sacct",
        {"x/s.log": two_clusters(keyed=False), "s.log": two_clusters(keyed=True)},
        ["x/s.log"],
        {},
        clean=["s.log"],
        summary={"records": 240, "rejected": 0},
        check=both_clusters(b"alpha"),
    ),
    Row(
        "jobcomp of two clusters, the same ids",
        "jobcomp",
        {"x/c.json": two_cluster_jobcomp(keyed=False), "c.json": two_cluster_jobcomp(keyed=True)},
        ["x/c.json"],
        {},
        clean=["c.json"],
        summary={"records": 240, "rejected": 0},
        check=both_clusters(b"beta"),
    ),
    Row(
        "the clusters of two files",
        "sacct",
        {
            "x/p.log": b"".join(
                x for x in two_clusters(False).splitlines(True) if b"|phillips|" in x
            ),
            "x/a.log": b"".join(x for x in two_clusters(False).splitlines(True) if b"|alpha|" in x),
            "s.log": two_clusters(keyed=True),
        },
        ["x/p.log", "x/a.log"],
        {},
        clean=["s.log"],
        options=["--resource", "s"],
        summary={"records": 240},
    ),
    Row(
        "job ids in four forms",
        "jobevents",
        {"x/j.jsonl": jobevents_in_four_forms(), "j.jsonl": IN.JOBS},
        ["x/j.jsonl"],
        {},
        clean=["j.jsonl"],
    ),
    Row(
        "jobcomp ids in four forms",
        "jobcomp",
        {"x/c.json": jobcomp_in_four_forms(), "c.json": IN.JOBCOMP},
        ["x/c.json"],
        {},
        clean=["c.json"],
    ),
    Row(
        "sacct job names holding '|'",
        "sacct",
        {"x/s.log": sacct_names(pipe=True), "s.log": sacct_names(pipe=False)},
        ["x/s.log"],
        {},
        clean=["s.log"],
        same=unpipe,
        check=names_kept,
    ),
    Row(
        "sacct job names holding '|', with Flags",
        "sacct",
        {
            "x/s.log": sacct_names(pipe=True, flags="SchedBackfill"),
            "s.log": sacct_names(pipe=False, flags="SchedBackfill"),
        },
        ["x/s.log"],
        {},
        clean=["s.log"],
        same=unpipe,
        check=names_kept,
    ),
]

assert len({r.name for r in ROWS}) == len(ROWS), "row names must be unique"


@dataclass
class Ran:
    code: int = 0
    stderr: str = ""
    error: BaseException | None = None


Results = dict[str, tuple[Path, tuple[Ran, Ran | None]]]


def _replay(tmp: Path, fmt: str, inputs: list[str], out: str, more: list[str]) -> Ran:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    argv = [
        "replay",
        "--format",
        fmt,
        *(str(tmp / i) for i in inputs),
        "--out",
        str(tmp / out),
        "--no-progress",
        *more,
    ]
    try:
        r = subprocess.run(
            [sys.executable, "-m", "streams.cli", *argv],
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=180,
            check=False,
        )
    except BaseException as e:  # reported by the row's test
        return Ran(error=e)
    return Ran(r.returncode, r.stderr.decode("utf-8", "backslashreplace"))


def _run(row: Row, tmp: Path) -> tuple[Ran, Ran | None]:
    tmp.mkdir(parents=True)
    for rel, data in row.files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    bad = _replay(tmp, row.fmt, row.inputs, "o", ["--rejects", str(tmp / "r.tsv"), *row.options])
    clean = None
    if row.clean is not None:
        clean = _replay(tmp, row.fmt, row.clean, "clean", row.options)
    return bad, clean


@pytest.fixture(scope="module")
def ran(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Results:
    """Every selected row and its clean run, two at a time (each a subprocess)."""
    name = test_an_absurd_value_or_a_shared_id_is_accounted.__name__
    wanted = [
        i.callspec.params["row"]  # type: ignore[attr-defined]
        for i in request.session.items
        if getattr(i, "originalname", "") == name
    ]
    base = tmp_path_factory.mktemp("values")
    with ThreadPoolExecutor(2) as pool:
        futs = {
            r.name: (base / f"{k:02d}", pool.submit(_run, r, base / f"{k:02d}"))
            for k, r in enumerate(wanted)
        }
    return {n: (tmp, f.result()) for n, (tmp, f) in futs.items()}


def _tables(out: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(out.iterdir())
        if p.is_file() and not p.name.startswith("summary")
    }


def _get(summary: dict[str, Any], dotted: str) -> Any:
    v: Any = summary
    for k in dotted.split("."):
        v = v[k]
    return v


@pytest.mark.parametrize("row", [r.param() for r in ROWS])
def test_an_absurd_value_or_a_shared_id_is_accounted(row: Row, ran: Results) -> None:
    tmp, (bad, clean) = ran[row.name]
    if bad.error is not None:
        raise bad.error
    assert "Traceback" not in bad.stderr, bad.stderr
    assert bad.code == 0, bad.stderr
    lines = bad.stderr.strip().splitlines()
    assert len(lines) <= 1, bad.stderr
    if row.rejected:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(row.rejected.items()))
        assert lines and f"rejected ({counts})" in lines[-1], bad.stderr
    out = tmp / "o"
    summary = json.loads((out / "summary_jobs.json").read_bytes())
    assert summary["rejected_by_reason"] == row.rejected
    assert summary["rejected"] == sum(row.rejected.values())
    for key, want in row.summary.items():
        assert _get(summary, key) == want, key
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "staging left"
    if row.check is not None:
        row.check(out, summary)
    if row.clean is not None:
        assert clean is not None and clean.error is None and clean.code == 0, clean
        assert "Traceback" not in clean.stderr
        got, want = _tables(out), _tables(tmp / "clean")
        assert sorted(got) == sorted(want)
        same = row.same or (lambda b: b)
        for name in want:
            assert same(got[name]) == want[name], name
