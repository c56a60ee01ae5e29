"""Bad inputs, options, settings and outputs: one table, one row per case.

Each row runs the real command in a subprocess and asserts the exit code (streams/errors.py),
that stderr is one line naming the problem (an exit 3 may be preceded by the run's report line),
that no traceback is shown, that a user error writes nothing, and that no staging file is left.
Where bad records sit among good ones, a second run of the clean input must give the same
reports byte for byte: the good records are accounted exactly as without the bad ones.

A row whose ``bug`` is set documents a known defect outside the error-policy modules; it is
expected to fail (strict) until the fix named there lands, and then must lose its ``bug``.
The rows run concurrently (a module fixture), one temporary directory each.
"""

from __future__ import annotations

import bz2
import gzip
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
from tests.golden.make_golden import INPUTS
from tests.paths import REPO

MOAB = str(INPUTS / "moab.log.gz")
JOBS = str(INPUTS / "jobs.jsonl.gz")
SAMPLES = str(INPUTS / "samples.jsonl.gz")
GOOD_LINE = (
    "2015-01-01T00:00:00.000-0600 1 INFO  Node '1' status: state='Idle' rsvlist='7' "
    "joblist='none'\n"
)
OUT = ["--out", "{tmp}/o"]


@dataclass
class Case:
    name: str
    argv: list[str]  # {tmp} is replaced by the row's directory (also the command's cwd)
    code: int
    message: str  # must appear in the last stderr line; "" = stderr stays empty
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # written under {tmp} first
    same_as: list[str] | None = None  # a run of the clean input (into {tmp}/clean): same reports
    summary: dict[str, Any] = field(default_factory=dict)  # values of {tmp}/o/summary_*.json
    exists: tuple[str, ...] = ()  # left under {tmp} by the run
    absent: tuple[str, ...] = ()  # never left under {tmp}
    prepare: Callable[[Path], None] | None = None  # e.g. a FIFO, a read-only directory
    root_skip: bool = False  # a permission case: root reads and writes whatever the bits say
    closed_stdout: bool = False  # standard output is a pipe whose reader has gone
    bug: str = ""  # a known defect: the row fails (strict xfail) until it is fixed

    def param(self) -> Any:
        marks = [pytest.mark.xfail(strict=True, reason=self.bug)] if self.bug else []
        return pytest.param(self, id=self.name, marks=marks)


def replay(fmt: str, *rest: str) -> list[str]:
    return ["replay", "--format", fmt, *rest, "--no-progress"]


def sim(*rest: str) -> list[str]:
    return ["simulate", "--model", "lublin", "--nodes", "4", "--days", "0.05", *rest, *OUT]


def toml(text: str) -> dict[str, bytes]:
    return {"c.toml": text.encode()}


def cfg(*argv: str) -> list[str]:
    return ["--config", "{tmp}/c.toml", *argv]


def fifo(name: str) -> Callable[[Path], None]:
    return lambda tmp: os.mkfifo(tmp / name)


def read_only(name: str) -> Callable[[Path], None]:
    return lambda tmp: os.chmod(tmp / name, 0o500)


def unreadable(name: str) -> Callable[[Path], None]:
    return lambda tmp: os.chmod(tmp / name, 0)


def symlink(name: str, target: str) -> Callable[[Path], None]:
    return lambda tmp: os.symlink(tmp / target, tmp / name)


def sacct_line(i: int, **field_values: str) -> bytes:
    f = IN.sacct_fields(i)
    names = ("jobid", "submit", "start", "end", "nnodes", "nodelist")
    where = {"jobid": 0, "submit": 10, "start": 12, "end": 13, "nnodes": 17, "nodelist": 24}
    assert set(field_values) <= set(names)
    for k, v in field_values.items():
        f[where[k]] = v
    return ("|".join(f) + "\n").encode()


def jobcomp_line(i: int, **over: Any) -> bytes:
    r = IN.jobcomp_record(i)
    r.update(over)
    return json.dumps({k: v for k, v in r.items() if v is not None}).encode() + b"\n"


def sample_line(**over: Any) -> bytes:
    r = json.loads(IN.SAMPLE_LINES[0])
    r.update(over)
    return json.dumps(r).encode() + b"\n"


SWF_JOB = "1 0 0 60 4 -1 -1 4 120 -1 1 1 1 1 1 -1 -1 -1"
MOAB_2090 = IN.MOAB_LINES[500].replace(b"2015-03-07", b"2090-03-07")
MOAB_2400 = IN.MOAB_LINES[500].replace(b"2015-03-07", b"2400-03-07")
LONG_MOAB = IN.MOAB_LINES[600].replace(b"rsvlist='", b"rsvlist='" + b"7," * (1 << 20))
CASES = [
    # inputs
    Case(
        "missing moab file",
        replay("moab", "{tmp}/nope.log", "--out", "{tmp}/o"),
        2,
        "no such file: {tmp}/nope.log",
    ),
    Case(
        "moab input is a directory",
        replay("moab", "{tmp}", "--out", "{tmp}/o"),
        2,
        "is a directory",
    ),
    Case(
        "missing sacct file", replay("sacct", "{tmp}/nope", "--out", "{tmp}/o"), 2, "no such file"
    ),
    Case(
        "missing --jobs file",
        replay("moab", MOAB, "--jobs", "{tmp}/nope", "--out", "{tmp}/o"),
        2,
        "no such file: {tmp}/nope",
    ),
    Case(
        "llview dir without LoadMem",
        replay("llview", "{tmp}/empty", "--out", "{tmp}/o"),
        2,
        "no LoadMem",
        files={"empty/readme.txt": b"x"},
    ),
    Case(
        "unreadable input",
        replay("moab", "{tmp}/secret.log", "--out", "{tmp}/o"),
        2,
        "cannot read",
        files={"secret.log": GOOD_LINE.encode()},
        prepare=unreadable("secret.log"),
        root_skip=True,
    ),
    # outputs
    Case(
        "--out is a file",
        replay("moab", MOAB, "--out", "{tmp}/afile"),
        2,
        "is a file",
        files={"afile": b"x"},
    ),
    Case(
        "--out under a read-only dir",
        replay("moab", MOAB, "--out", "{tmp}/ro/o"),
        2,
        "is not writable",
        files={"ro/.keep": b""},
        prepare=read_only("ro"),
        root_skip=True,
    ),
    Case(
        "--rejects is a directory",
        replay("moab", MOAB, "--rejects", "{tmp}", "--out", "{tmp}/o"),
        2,
        "is a directory",
    ),
    # options
    Case(
        "--tz unknown",
        replay("moab", MOAB, "--tz", "Mars/Base", "--out", "{tmp}/o"),
        2,
        "'Mars/Base' is not an IANA time zone",
    ),
    Case(
        "--max-gap negative",
        replay("moab", MOAB, "--max-gap", "-1", "--out", "{tmp}/o"),
        2,
        "--max-gap: '-1' is out of range",
    ),
    Case(
        "--max-gap nan",
        replay("moab", MOAB, "--max-gap", "nan", "--out", "{tmp}/o"),
        2,
        "--max-gap: 'nan' is out of range",
    ),
    Case(
        "--nodes negative",
        replay("moab", MOAB, "--nodes", "-5", "--out", "{tmp}/o"),
        2,
        "--nodes: '-5' is out of range",
    ),
    Case(
        "--nodes zero",
        replay("moab", MOAB, "--nodes", "0", "--out", "{tmp}/o"),
        2,
        "--nodes: '0' is out of range",
    ),
    Case(
        "--nodes not a number",
        replay("moab", MOAB, "--nodes", "many", "--out", "{tmp}/o"),
        2,
        "'many' is not an integer",
    ),
    Case(
        "--chunk-mb 0",
        replay("moab", MOAB, "--chunk-mb", "0", "--out", "{tmp}/o"),
        2,
        "--chunk-mb: '0' is out of range",
    ),
    Case(
        "--quality-min above 1",
        replay("moab", MOAB, "--quality-min", "1.5", "--out", "{tmp}/o"),
        2,
        "out of range (must be > 0 and <= 1)",
    ),
    Case(
        "--ftl-threshold negative",
        replay("moab", MOAB, "--ftl-threshold", "-3", "--out", "{tmp}/o"),
        2,
        "out of range",
    ),
    Case(
        "--mem-per-core negative",
        replay("samples", SAMPLES, "--mem-per-core", "-1", "--out", "{tmp}/o"),
        2,
        "--mem-per-core: '-1' is out of range",
    ),
    Case(
        "--hot-zone-gap negative",
        replay("samples", SAMPLES, "--hot-zone-gap", "-5", "--out", "{tmp}/o"),
        2,
        "out of range",
    ),
    Case(
        "--hot-zone-bw one number",
        replay("samples", SAMPLES, "--hot-zone-bw", "98", "--out", "{tmp}/o"),
        2,
        "expected MEAN,STD",
    ),
    Case(
        "--hot-zone-fs without =",
        replay("samples", SAMPLES, "--hot-zone-fs", "scratch", "--out", "{tmp}/o"),
        2,
        "expected FS=RATE",
    ),
    Case(
        "--short-lambda above 1",
        replay("jobevents", JOBS, "--short-lambda", "2", "--out", "{tmp}/o"),
        2,
        "out of range",
    ),
    Case(
        "--history-runs 0",
        replay("jobevents", JOBS, "--history-runs", "0", "--out", "{tmp}/o"),
        2,
        "out of range",
    ),
    Case(
        "--half-life 0",
        replay("swf", JOBS, "--half-life", "0", "--out", "{tmp}/o"),
        2,
        "out of range",
    ),
    Case(
        "--capability-fraction 0",
        replay("jobevents", JOBS, "--capability-fraction", "0", "--out", "{tmp}/o"),
        2,
        "out of range",
    ),
    Case(
        "--max-reject-share 2",
        replay("moab", MOAB, "--max-reject-share", "2", "--out", "{tmp}/o"),
        2,
        "out of range",
    ),
    Case("unknown format", replay("pbs", MOAB, "--out", "{tmp}/o"), 2, "invalid choice: 'pbs'"),
    Case(
        "unknown option",
        replay("moab", MOAB, "--frobnicate", "--out", "{tmp}/o"),
        2,
        "unrecognized arguments: --frobnicate",
    ),
    # settings
    Case(
        "bad DRAINWATCH_TZ",
        replay("moab", MOAB, "--out", "{tmp}/o"),
        2,
        "DRAINWATCH_TZ",
        env={"DRAINWATCH_TZ": "Nowhere/Land"},
    ),
    Case(
        "bad DRAINWATCH_MAX_GAP",
        replay("moab", MOAB, "--out", "{tmp}/o"),
        2,
        "DRAINWATCH_MAX_GAP",
        env={"DRAINWATCH_MAX_GAP": "soon"},
    ),
    Case(
        "unknown DRAINWATCH_ variable",
        replay("moab", MOAB, "--out", "{tmp}/o"),
        2,
        "DRAINWATCH_MAXGAP",
        env={"DRAINWATCH_MAXGAP": "600"},
    ),
    Case(
        "missing --config file",
        ["--config", "{tmp}/none.toml", *replay("moab", MOAB, "--out", "{tmp}/o")],
        2,
        "does not exist",
    ),
    Case(
        "--config not TOML",
        ["--config", "{tmp}/bad.toml", *replay("moab", MOAB, "--out", "{tmp}/o")],
        2,
        "not valid TOML",
        files={"bad.toml": b"[accounting\ntz = "},
    ),
    Case(
        "DRAINWATCH_WEB_PORT 70000",
        ["worker", "--print-settings"],
        2,
        "above the maximum",
        env={"DRAINWATCH_WEB_PORT": "70000"},
    ),
    # input read but unusable: exit 3, outputs written
    Case(
        "every moab line rejected",
        replay("moab", "{tmp}/bad.log", "--out", "{tmp}/o"),
        3,
        "no usable record",
        files={
            "bad.log": b"2015-13-45T00:00:00.000-0600 1 INFO  Node '1' "
            b"status: state='Idle' rsvlist='none' joblist='none'\n" * 5
        },
    ),
    Case(
        "bzip2-compressed moab",
        replay("moab", "{tmp}/x.log", *OUT),
        0,
        "",
        files={"x.log": bz2.compress(IN.MOAB), "clean.log": IN.MOAB},
        same_as=replay("moab", "{tmp}/clean.log", "--out", "{tmp}/clean"),
    ),
    Case(
        "empty moab file",
        replay("moab", "{tmp}/empty.log", "--out", "{tmp}/o"),
        3,
        "no usable record",
        files={"empty.log": b""},
    ),
    Case(
        "mostly rejected job events",
        replay("jobevents", "{tmp}/j.jsonl", "--out", "{tmp}/o"),
        3,
        "of the records were rejected or out of time order",
        files={"j.jsonl": b'{"type":"start","ts":1,"job":"1"}\n' + b"{oops\n" * 5},
    ),
    Case(
        "no usable samples",
        replay("samples", "{tmp}/s.jsonl", "--out", "{tmp}/o"),
        3,
        "no usable record",
        files={"s.jsonl": b"{}\n"},
    ),
    # damaged inputs found while reading: one line, nothing written
    Case(
        "truncated gzip moab",
        replay("moab", "{tmp}/t.log.gz", "--out", "{tmp}/o"),
        2,
        "damaged compressed input",
        files={"t.log.gz": Path(MOAB).read_bytes()[:50_000]},
    ),
    Case(
        "truncated gzip job events",
        replay("jobevents", "{tmp}/t.jsonl.gz", "--out", "{tmp}/o"),
        2,
        "damaged compressed input",
        files={"t.jsonl.gz": Path(JOBS).read_bytes()[:3000]},
    ),
    Case(
        "truncated gzip samples",
        replay("samples", "{tmp}/t.jsonl.gz", "--out", "{tmp}/o"),
        2,
        "damaged compressed input",
        files={"t.jsonl.gz": Path(SAMPLES).read_bytes()[:3000]},
    ),
    Case(
        "llview LoadMem without header",
        replay("llview", "{tmp}/j", "--out", "{tmp}/o"),
        2,
        "not an LLview series",
        files={
            "j/LoadMem_1_node.dat": b"garbage here\n",
            "j/PCOREusage_1_node.dat": b"ts nodeid coreid u1 u2\n",
        },
    ),
    Case(
        "llview bad job report",
        replay("llview", "{tmp}/j", "--out", "{tmp}/o"),
        2,
        "not an LLview job report",
        files={
            "j/LoadMem_1_node.dat": b"jobid ts nodeid load used_mem usage used_cores\n"
            b"1 1700000000 n1 1.0 2.0 50.0 4\n",
            "j/jobreport_x_1.json": b"{bad",
            "j/PCOREusage_1_node.dat": b"ts nodeid coreid usage1_avg usage2_avg\n"
            b"1700000000 n1 0 50 50\n",
        },
    ),
    # simulate
    Case(
        "simulate --nodes 0",
        ["simulate", "--model", "lublin", "--nodes", "0", "--days", "1", "--out", "{tmp}/o"],
        2,
        "--nodes: '0' is out of range",
    ),
    Case(
        "simulate --start not a time",
        [
            "simulate",
            "--model",
            "lublin",
            "--nodes",
            "4",
            "--days",
            "1",
            "--start",
            "yesterday",
            "--out",
            "{tmp}/o",
        ],
        2,
        "yesterday",
    ),
    # ---- every format: empty, binary, the wrong format, UTF-16, CRLF, duplicates -------------
    *(
        Case(
            f"binary garbage as {fmt}",
            replay(fmt, "{tmp}/x.bin", *OUT),
            3,
            "no usable record",
            files={"x.bin": IN.BINARY},
        )
        for fmt in ("sacct", "samples")
    ),
    Case(
        "empty LoadMem in an llview dir",
        replay("llview", "{tmp}/lv", *OUT),
        2,
        "not an LLview series",
        files={**IN.llview_dir(), "lv/LoadMem_77_node.dat": b""},
    ),
    Case(
        "moab log given as sacct",
        replay("sacct", "{tmp}/m.log", *OUT),
        3,
        "no usable record",
        files={"m.log": IN.MOAB},
    ),
    Case(
        "job events given as jobcomp",
        replay("jobcomp", "{tmp}/j.jsonl", *OUT),
        3,
        "no usable record",
        files={"j.jsonl": IN.JOBS},
    ),
    Case(
        "swf trace given as moab",
        replay("moab", "{tmp}/t.swf", *OUT),
        3,
        "no usable record",
        files={"t.swf": IN.SWF},
    ),
    Case(
        "UTF-16 moab log",
        replay("moab", "{tmp}/m.log", *OUT),
        3,
        "no usable record",
        files={"m.log": IN.MOAB.decode().encode("utf-16")},
    ),
    *(
        Case(
            f"CRLF {fmt}",
            replay(fmt, f"{{tmp}}/crlf/{name}", *OUT, *extra),
            0,
            "",
            files={f"crlf/{name}": IN.crlf(data), name: data},
            same_as=replay(fmt, f"{{tmp}}/{name}", "--out", "{tmp}/clean", *extra),
        )
        for fmt, name, data, extra in (
            ("moab", "m.log", IN.MOAB, ()),
            ("sacct", "s.log", IN.SACCT, ()),
            ("samples", "s.jsonl", IN.SAMPLES, ()),
        )
    ),
    Case(
        "every moab line twice",
        replay("moab", "{tmp}/x.log", *OUT),
        0,
        "",
        files={"x.log": IN.every_line_twice(IN.MOAB), "m.log": IN.MOAB},
        same_as=replay("moab", "{tmp}/m.log", "--out", "{tmp}/clean"),
        summary={"duplicates": len(IN.MOAB_LINES), "rejected": 0},
    ),
    Case(
        "every job event twice",
        replay("jobevents", "{tmp}/x/j.jsonl", *OUT),
        0,
        "",
        files={"x/j.jsonl": IN.every_line_twice(IN.JOBS), "j.jsonl": IN.JOBS},
        same_as=replay("jobevents", "{tmp}/j.jsonl", "--out", "{tmp}/clean"),
    ),
    Case(
        "UTF-8 BOM before a moab log",
        replay("moab", "{tmp}/x.log", *OUT),
        0,
        "",
        files={"x.log": b"\xef\xbb\xbf" + IN.MOAB, "m.log": IN.MOAB},
        same_as=replay("moab", "{tmp}/m.log", "--out", "{tmp}/clean"),
    ),
    # ---- bad records among good ones: counted, and the good ones accounted as without them ---
    Case(
        "NUL bytes and binary lines in a moab log",
        replay("moab", "{tmp}/x.log", *OUT),
        0,
        "rejected (blank_line",
        files={
            "x.log": IN.mixed(IN.MOAB, [b"\0" * 50 + b"\n", IN.BINARY], every=500),
            "m.log": IN.MOAB,
        },
        same_as=replay("moab", "{tmp}/m.log", "--out", "{tmp}/clean"),
    ),
    Case(
        "a 2 MiB moab line",
        replay("moab", "{tmp}/x.log", *OUT),
        0,
        "line_too_long 1",
        files={"x.log": IN.mixed(IN.MOAB, [LONG_MOAB], every=1000), "m.log": IN.MOAB},
        same_as=replay("moab", "{tmp}/m.log", "--out", "{tmp}/clean"),
    ),
    Case(
        "moab lines dated 2090 and 2400 in a 2015 log",
        replay("moab", "{tmp}/x.log", *OUT),
        0,
        "rejected (implausible_time 1, time_jump 1)",
        files={"x.log": IN.mixed(IN.MOAB, [MOAB_2090, MOAB_2400], every=1500), "m.log": IN.MOAB},
        same_as=replay("moab", "{tmp}/m.log", "--out", "{tmp}/clean"),
    ),
    Case(
        "bad sacct lines among good ones",
        replay("sacct", "{tmp}/x/s.log", *OUT),
        0,
        "rejected (bad_nodelist 1, bad_time 1, hostlist_too_large 1, wrong_field_count 1)",
        files={
            "x/s.log": IN.mixed(
                IN.SACCT,
                [
                    b"garbage|line\n",
                    sacct_line(90, start="notatime"),
                    sacct_line(91, nodelist="c[9-1]"),
                    sacct_line(92, nodelist=IN.HOSTS_PAST_THE_CAP),
                ],
            ),
            "s.log": IN.SACCT,
        },
        same_as=replay("sacct", "{tmp}/s.log", "--out", "{tmp}/clean"),
    ),
    Case(
        "bad swf lines among good ones",
        replay("swf", "{tmp}/x/t.swf", *OUT),
        0,
        "rejected (bad_number 2, negative_value 1, wrong_field_count 1)",
        files={
            "x/t.swf": IN.mixed(
                IN.SWF,
                [
                    b"1 2 3\n",
                    SWF_JOB.replace(" 60 ", " ten ").encode() + b"\n",
                    SWF_JOB.replace(" 60 ", " nan ").encode() + b"\n",
                    SWF_JOB.replace(" 60 ", " -5 ").encode() + b"\n",
                ],
            ),
            "t.swf": IN.SWF,
        },
        same_as=replay("swf", "{tmp}/t.swf", "--out", "{tmp}/clean"),
    ),
    Case(
        "bad jobcomp records among good ones",
        replay("jobcomp", "{tmp}/x/c.json", *OUT),
        0,
        "rejected (bad_json 1, bad_nodes 1, bad_start 1, missing_jobid 1, not_an_object 1)",
        files={
            "x/c.json": IN.mixed(
                IN.JOBCOMP,
                [
                    b"{oops\n",
                    jobcomp_line(90, nodes=IN.HOSTS_PAST_THE_CAP),
                    jobcomp_line(91, **{"@start": "yesterday"}),
                    jobcomp_line(92, jobid=None),
                    b"[]\n",
                ],
            ),
            "c.json": IN.JOBCOMP,
        },
        same_as=replay("jobcomp", "{tmp}/c.json", "--out", "{tmp}/clean"),
    ),
    Case(
        "bad job events among good ones",
        replay("jobevents", "{tmp}/x/j.jsonl", *OUT),
        0,
        "rejected (bad_cores 1, bad_json 1, bad_nodes 1, bad_ts 1, implausible_time 2, "
        "missing_job 1, not_an_object 2)",
        files={
            "x/j.jsonl": IN.mixed(
                IN.JOBS,
                [
                    b'{"type":"start","ts":NaN,"job":"z1","nodes":2}\n',
                    b'{"type":"start","ts":"soon","job":"z2","nodes":2}\n',
                    b'{"type":"end","ts":1425700000,"job":"z3","nodes":-5}\n',
                    b"[1,2,3]\n",
                    b"null\n",
                    b'{"type":"start","ts":1425700000,"job":"","nodes":2}\n',
                    b'{"type":"start","ts":1425700000,"job":"z7","nodes":2,"cores":-64}\n',
                    b'{"type":"start","ts":-1000000,"job":"z8","nodes":64}\n',
                    b'{"type":"end","ts":253402300799,"job":"z8","nodes":64,"state":"COMPLETED"}\n',
                ],
            ),
            "j.jsonl": IN.JOBS,
        },
        same_as=replay("jobevents", "{tmp}/j.jsonl", "--out", "{tmp}/clean"),
    ),
    Case(
        "bad samples among good ones",
        replay("samples", "{tmp}/x/s.jsonl", *OUT),
        0,
        "rejected (bad_job 1, bad_json 2, bad_node 1, bad_number 1, implausible_time 1, "
        "negative 2)",
        files={
            "x/s.jsonl": IN.mixed(
                IN.SAMPLES,
                [
                    sample_line(ts=float("nan")),
                    sample_line(core=-5),
                    sample_line(vmRss=-1),
                    sample_line(ts="x"),
                    sample_line(job=None),
                    sample_line(node=5),
                    b"{oops\n",
                    sample_line(ts=1e11),
                ],
            ),
            "s.jsonl": IN.SAMPLES,
        },
        same_as=replay("samples", "{tmp}/s.jsonl", "--out", "{tmp}/clean"),
    ),
    Case(
        "bad llview rows among good ones",
        replay("llview", "{tmp}/x/lv", *OUT),
        0,
        "rejected (bad_number 6, wrong_field_count 6)",
        files={**{f"x/{k}": v for k, v in IN.llview_dir(bad_rows=True).items()}, **IN.llview_dir()},
        same_as=replay("llview", "{tmp}/lv", "--out", "{tmp}/clean"),
    ),
    Case(
        "a job with 1e300 nodes",
        replay("jobevents", "{tmp}/x/j.jsonl", *OUT),
        0,
        "rejected (bad_nodes 2)",
        files={
            "x/j.jsonl": IN.mixed(
                IN.JOBS,
                [
                    b'{"type":"start","ts":1425700000,"job":"h1","nodes":1e300,"cores":1e300}\n',
                    b'{"type":"end","ts":1425703600,"job":"h1","nodes":1e300,"cores":1e300,'
                    b'"state":"COMPLETED"}\n',
                ],
            ),
            "j.jsonl": IN.JOBS,
        },
        same_as=replay("jobevents", "{tmp}/j.jsonl", "--out", "{tmp}/clean"),
    ),
    Case(
        "a job that ends before it starts",
        replay("jobevents", "{tmp}/x/j.jsonl", *OUT),
        0,
        "rejected (end_before_start 2)",
        files={
            "x/j.jsonl": IN.mixed(
                IN.JOBS,
                [
                    b'{"type":"start","ts":1425700000,"job":"h2","nodes":4}\n',
                    b'{"type":"end","ts":1425690000,"job":"h2","nodes":4,"state":"COMPLETED"}\n',
                ],
            ),
            "j.jsonl": IN.JOBS,
        },
        same_as=replay("jobevents", "{tmp}/j.jsonl", "--out", "{tmp}/clean"),
    ),
    # ---- inputs that are no regular file, or one file twice -----------------------------------
    Case(
        "FIFO as input",
        replay("moab", "{tmp}/pipe", *OUT),
        2,
        "not a regular file: {tmp}/pipe",
        prepare=fifo("pipe"),
    ),
    Case(
        "/dev/null as input", replay("moab", "/dev/null", *OUT), 2, "not a regular file: /dev/null"
    ),
    Case("an empty input path", replay("moab", "", *OUT), 2, "an input path is empty"),
    Case(
        "a newline in an input name",
        replay("moab", "{tmp}/a\nb.log", *OUT),
        2,
        "no such file: {tmp}/a\\nb.log",
    ),
    Case(
        "the same moab file twice",
        replay("moab", "{tmp}/m.log", "{tmp}/m.log", *OUT),
        2,
        "{tmp}/m.log is given twice",
        files={"m.log": IN.MOAB},
    ),
    Case(
        "one job file under two names",
        replay("jobevents", "{tmp}/j.jsonl", "{tmp}/l.jsonl", *OUT),
        2,
        "the same file as {tmp}/j.jsonl",
        files={"j.jsonl": IN.JOBS},
        prepare=symlink("l.jsonl", "j.jsonl"),
    ),
    Case(
        "llview without PCOREusage or --cores-per-node",
        replay("llview", "{tmp}/lv", *OUT),
        2,
        "give --cores-per-node",
        files=IN.llview_dir(pcore=False),
    ),
    Case(
        "a --jobs file without one usable record",
        replay("moab", "{tmp}/m.log", "--jobs", "{tmp}/x.bin", *OUT),
        3,
        "no usable record",
        files={"m.log": IN.MOAB, "x.bin": IN.BINARY},
    ),
    # ---- replay options: 0, negative, NaN, inf, huge, not a number -----------------------------
    Case(
        "--max-gap 1e308",
        replay("moab", MOAB, "--max-gap", "1e308", *OUT),
        2,
        "--max-gap: '1e308' is out of range (must be > 0 and <= 1e+12)",
    ),
    Case(
        "--nodes 1e20",
        replay("moab", MOAB, "--nodes", "100000000000000000000", *OUT),
        2,
        "--nodes: '100000000000000000000' is out of range (must be > 0 and <= 2147483647)",
    ),
    Case(
        "--chunk-mb 100000",
        replay("moab", MOAB, "--chunk-mb", "100000", *OUT),
        2,
        "--chunk-mb: '100000' is out of range",
    ),
    Case(
        "--reorder-window nan",
        replay("moab", MOAB, "--reorder-window", "nan", *OUT),
        2,
        "--reorder-window: 'nan' is out of range",
    ),
    Case(
        "--reorder-window above the setting's 3600",
        replay("moab", MOAB, "--reorder-window", "86400", *OUT),
        2,
        "--reorder-window: '86400' is out of range",
    ),
    Case(
        "--max-jump inf",
        replay("moab", MOAB, "--max-jump", "inf", *OUT),
        2,
        "--max-jump: 'inf' is out of range",
    ),
    Case(
        "--not-before after --not-after",
        replay("moab", MOAB, "--not-before", "2020-01-01", "--not-after", "2019-01-01", *OUT),
        2,
        "--not-before must be earlier than --not-after",
    ),
    Case("--tz empty", replay("moab", MOAB, "--tz", "", *OUT), 2, "--tz '' is not an IANA"),
    Case(
        "--hot-zone-bw NaN mean",
        replay("samples", SAMPLES, "--hot-zone-bw", "nan,5", *OUT),
        2,
        "--hot-zone-bw 'nan,5'",
    ),
    Case(
        "--hot-zone-bw below zero",
        replay("samples", SAMPLES, "--hot-zone-bw", "5,98", *OUT),
        2,
        "--hot-zone-bw '5,98'",
    ),
    # ---- outputs: --out and --rejects -------------------------------------------------------
    Case("--out empty", replay("moab", MOAB, "--out", ""), 2, "--out is empty"),
    Case(
        "--out under a file",
        replay("moab", MOAB, "--out", "{tmp}/m.log/o"),
        2,
        "{tmp}/m.log is not a directory",
        files={"m.log": IN.MOAB},
    ),
    Case(
        "--out in /proc", replay("moab", MOAB, "--out", "/proc/drainwatch-o"), 2, "is not writable"
    ),
    Case(
        "--rejects is a FIFO",
        replay("moab", MOAB, "--rejects", "{tmp}/pipe", *OUT),
        2,
        "--rejects {tmp}/pipe is not a regular file",
        prepare=fifo("pipe"),
    ),
    Case(
        "--rejects in a missing directory",
        replay("moab", "{tmp}/x.log", "--rejects", "{tmp}/new/dir/r.tsv", *OUT),
        0,
        "rejected (implausible_time 1)",
        exists=("new/dir/r.tsv",),
        files={"x.log": IN.mixed(IN.MOAB, [MOAB_2400], every=1000)},
    ),
    Case(
        "--rejects in a missing directory, run refused",
        replay("llview", "{tmp}/lv", "--rejects", "{tmp}/new/dir/r.tsv", *OUT),
        2,
        "give --cores-per-node",
        files=IN.llview_dir(pcore=False),
        absent=("new",),
    ),
    Case("--rejects empty", replay("moab", MOAB, "--rejects", "", *OUT), 2, "--rejects is empty"),
    Case(
        "--rejects is the input",
        replay("moab", "{tmp}/m.log", "--rejects", "{tmp}/m.log", *OUT),
        2,
        "is one of the inputs",
        files={"m.log": IN.MOAB},
        exists=("m.log",),
    ),
    # ---- settings: TOML file and DRAINWATCH_* ------------------------------------------------
    Case(
        "[bounds] not_before after not_after",
        cfg(*replay("moab", MOAB, *OUT)),
        2,
        "must be earlier than not_after",
        files=toml("[bounds]\nnot_before = 2020-01-01\nnot_after = 2019-01-01\n"),
    ),
    Case(
        "unknown TOML key",
        cfg(*replay("moab", MOAB, *OUT)),
        2,
        "bounds.frobnicate (in {tmp}/c.toml): unknown setting",
        files=toml("[bounds]\nfrobnicate = 1\n"),
    ),
    Case(
        "TOML reorder_window with a unit",
        cfg(*replay("moab", MOAB, *OUT)),
        2,
        "'5s' is not a number",
        files=toml('[bounds]\nreorder_window = "5s"\n'),
    ),
    Case(
        "TOML file not UTF-8",
        cfg(*replay("moab", MOAB, *OUT)),
        2,
        "not valid TOML",
        files={"c.toml": b"\xff\xfe[\x00b\x00o\x00"},
    ),
    Case("--config is a directory", ["--config", "{tmp}", *replay("moab", MOAB, *OUT)], 2, "{tmp}"),
    Case(
        "DRAINWATCH_REORDER_WINDOW=-1",
        replay("moab", MOAB, *OUT),
        2,
        "DRAINWATCH_REORDER_WINDOW: -1.0 is below the minimum 0",
        env={"DRAINWATCH_REORDER_WINDOW": "-1"},
    ),
    Case(
        "DRAINWATCH_NOT_BEFORE=garbage",
        replay("moab", MOAB, *OUT),
        2,
        "DRAINWATCH_NOT_BEFORE: 'garbage' is not an ISO 8601 date or time",
        env={"DRAINWATCH_NOT_BEFORE": "garbage"},
    ),
    Case(
        "DRAINWATCH_NOT_AFTER before every record",
        replay("moab", "{tmp}/m.log", *OUT),
        3,
        "no usable record",
        env={"DRAINWATCH_NOT_AFTER": "1971-01-01"},
        files={"m.log": IN.MOAB[:100_000]},
    ),
    Case(
        "DRAINWATCH_CONFIG missing",
        replay("moab", MOAB, *OUT),
        2,
        "does not exist",
        env={"DRAINWATCH_CONFIG": "{tmp}/none.toml"},
    ),
    Case(
        "DRAINWATCH_MAX_HOSTS=2 rejects larger node lists",
        replay("sacct", "{tmp}/s.log", *OUT),
        0,
        "rejected (hostlist_too_large 20)",
        files={"s.log": IN.SACCT},
        env={"DRAINWATCH_MAX_HOSTS": "2"},
    ),
    Case(
        "DRAINWATCH_MAX_LINE_BYTES=256 rejects a longer line",
        replay("moab", "{tmp}/x.log", *OUT),
        0,
        "rejected (line_too_long 1)",
        env={"DRAINWATCH_MAX_LINE_BYTES": "256"},
        files={
            "x.log": IN.mixed(
                IN.MOAB,
                [IN.MOAB_LINES[7].replace(b"rsvlist='", b"rsvlist='" + b"9," * 200)],
                every=1000,
            ),
            "m.log": IN.MOAB,
        },
        same_as=replay("moab", "{tmp}/m.log", "--out", "{tmp}/clean"),
    ),
    Case(
        "DRAINWATCH_MAX_GAP=0",
        replay("moab", MOAB, *OUT),
        2,
        "DRAINWATCH_MAX_GAP",
        env={"DRAINWATCH_MAX_GAP": "0"},
    ),
    Case(
        "DRAINWATCH_MAX_GAP=1e308",
        replay("moab", MOAB, *OUT),
        2,
        "DRAINWATCH_MAX_GAP",
        env={"DRAINWATCH_MAX_GAP": "1e308"},
    ),
    Case(
        "DRAINWATCH_NODES=1e20",
        replay("moab", MOAB, *OUT),
        2,
        "DRAINWATCH_NODES",
        env={"DRAINWATCH_NODES": "100000000000000000000"},
    ),
    # ---- simulate ----------------------------------------------------------------------------
    Case("simulate --days nan", sim("--days", "nan"), 2, "--days: 'nan' is out of range"),
    Case("simulate --period 1e-9", sim("--period", "1e-9"), 2, "--period: '1e-9' is out of range"),
    Case(
        "simulate --nodes 1e9",
        sim("--nodes", "1000000000"),
        2,
        "--nodes: '1000000000' is out of range",
    ),
    Case("simulate --tz unknown", sim("--tz", "Mars/Base"), 2, "'Mars/Base' is not an IANA"),
    Case(
        "simulate --start in 2500",
        sim("--start", "2500-01-01"),
        2,
        "would not lie within 1970-01-01 to 2100-01-01",
    ),
    Case(
        "simulate --swf binary garbage",
        ["simulate", "--swf", "{tmp}/x.bin", "--nodes", "64", "--days", "1", *OUT],
        3,
        "no job of {tmp}/x.bin",
        files={"x.bin": IN.BINARY},
    ),
    Case(
        "simulate --swf truncated gzip",
        ["simulate", "--swf", "{tmp}/t.swf.gz", "--nodes", "64", "--days", "1", *OUT],
        2,
        "damaged compressed input",
        files={"t.swf.gz": gzip.compress(IN.SWF)[:300]},
    ),
    Case(
        "simulate --swf-skip-days past the trace",
        [
            "simulate",
            "--swf",
            "{tmp}/t.swf",
            "--nodes",
            "64",
            "--days",
            "1",
            "--swf-skip-days",
            "1000",
            *OUT,
        ],
        3,
        "no job of {tmp}/t.swf",
        files={"t.swf": IN.SWF},
    ),
    # ---- other commands, and a closed standard output ----------------------------------------
    Case("no command", [], 2, "the following arguments are required: command"),
    Case(
        "ship samples --resolver unknown",
        ["ship", "samples", "--resolver", "pbs"],
        2,
        "invalid choice: 'pbs'",
    ),
    Case("ship samples --count not a number", ["ship", "samples", "--count", "x"], 2, "'x' is not"),
    Case("ship samples --period 0", ["ship", "samples", "--period", "0"], 2, "out of range"),
    Case("ship samples --period inf", ["ship", "samples", "--period", "inf"], 2, "out of range"),
    Case("ship samples --count -1", ["ship", "samples", "--count", "-1"], 2, "out of range"),
    Case(
        "ship samples --out a directory",
        ["ship", "samples", "--out", "{tmp}", "--count", "1"],
        2,
        "is not a file name",
    ),
    Case(
        "ship samples --out in a missing directory",
        ["ship", "samples", "--out", "{tmp}/no/x.jsonl", "--count", "1"],
        2,
        "does not exist",
    ),
    Case(
        "ship moab --follow with two logs",
        ["ship", "moab", "--follow", "a.log", "b.log"],
        2,
        "--follow takes exactly one log",
    ),
    Case(
        "worker --print-settings into a closed pipe",
        ["worker", "--print-settings"],
        141,
        "",
        closed_stdout=True,
    ),
    Case(
        "simulate into a closed pipe",
        sim(),
        141,
        "",
        closed_stdout=True,
        exists=("o/moab.log", "o/jobs.jsonl"),
    ),
]


assert len({c.name for c in CASES}) == len(CASES), "row names must be unique"


@dataclass
class Ran:
    tmp: Path
    code: int = 0
    stderr: str = ""
    error: BaseException | None = None  # the harness failed (e.g. a timeout)
    clean: Ran | None = None  # the run of the clean input (same_as), shared by equal ones


def _cli(argv: list[str], tmp: Path, env: dict[str, str], stdout: Any) -> tuple[int, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    full["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    full.update({k: v.replace("{tmp}", str(tmp)) for k, v in env.items()})
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", *(a.replace("{tmp}", str(tmp)) for a in argv)],
        cwd=tmp,
        env=full,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        timeout=120,
    )
    return r.returncode, r.stderr


def _run(case: Case, tmp: Path, argv: list[str]) -> Ran:
    ran = Ran(tmp)
    try:
        tmp.mkdir(parents=True)
        for rel, data in case.files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        if case.prepare is not None:
            case.prepare(tmp)
        if case.closed_stdout:
            read_end, stdout = os.pipe()
            os.close(read_end)  # the reader has gone before the first line
            try:
                ran.code, ran.stderr = _cli(argv, tmp, case.env, stdout)
            finally:
                os.close(stdout)
        else:
            ran.code, ran.stderr = _cli(argv, tmp, case.env, subprocess.DEVNULL)
    except BaseException as e:  # reported by the row's test, not by the fixture
        ran.error = e
    return ran


def _clean_key(case: Case) -> tuple[Any, ...]:
    """Rows whose clean runs are alike share one: same argv, settings and input files."""
    assert case.same_as is not None
    named = [a.removeprefix("{tmp}/") for a in case.same_as if a.startswith("{tmp}/")]
    used = {
        n: d for n, d in case.files.items() if any(n == a or n.startswith(a + "/") for a in named)
    }
    return (tuple(case.same_as), tuple(sorted(case.env.items())), tuple(sorted(used.items())))


@pytest.fixture(scope="module")
def ran(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every selected row, and each distinct clean run, concurrently (each is a subprocess of
    ~0.4 s CPU, mostly imports)."""
    name = test_bad_input_is_one_line_with_its_exit_code.__name__
    wanted = [
        i.callspec.params["case"]
        for i in request.session.items
        if getattr(i, "originalname", "") == name
    ]
    base = tmp_path_factory.mktemp("rows")
    cleans = {_clean_key(c): c for c in wanted if c.same_as is not None}
    with ThreadPoolExecutor(min(4, (os.cpu_count() or 1) + 1)) as pool:
        rows = {
            c.name: pool.submit(_run, c, base / f"{i:03d}", c.argv) for i, c in enumerate(wanted)
        }
        clean = {
            k: pool.submit(_run, c, base / f"clean{i:03d}", c.same_as or [])
            for i, (k, c) in enumerate(cleans.items())
        }
    out = {n: f.result() for n, f in rows.items()}
    for c in wanted:
        if c.same_as is not None:
            out[c.name].clean = clean[_clean_key(c)].result()
    return out


def _reports(out: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith("summary")
    }


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input_is_one_line_with_its_exit_code(case: Case, ran: dict) -> None:
    if case.root_skip and os.geteuid() == 0:
        pytest.skip("root reads and writes whatever the permissions say")
    r: Ran = ran[case.name]
    if r.error is not None:
        raise r.error
    tmp = r.tmp
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert r.code == case.code, r.stderr
    message = case.message.replace("{tmp}", str(tmp))
    if message:
        assert lines and message in lines[-1], r.stderr
    else:
        assert not lines, r.stderr
    # one line; an exit 3 may follow the run's report line
    assert len(lines) <= (2 if case.code == 3 else 1), r.stderr
    out = tmp / "o"
    if case.code == 2:
        assert not out.exists(), "a user error must write nothing"
    if case.code == 3 and case.argv[0] == "replay":
        assert list(out.glob("summary_*.json")), "exit 3 still writes the summary"
    if out.is_dir():
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "staging left"
    for rel in case.exists:
        assert (tmp / rel).exists(), rel
    for rel in case.absent:
        assert not (tmp / rel).exists(), rel
    if case.summary:
        (summary,) = out.glob("summary_*.json")
        s = json.loads(summary.read_text())
        assert {k: s[k] for k in case.summary} == case.summary
    if case.same_as is not None:
        c = r.clean
        assert c is not None and c.error is None and c.code == 0, c
        clean, dirty = _reports(c.tmp / "clean"), _reports(out)
        assert clean.keys() == dirty.keys()
        for name in clean:
            assert dirty[name] == clean[name], f"{name}: the good records are accounted otherwise"


def test_good_records_around_bad_ones_are_accounted_as_without_them(tmp_path: Path) -> None:
    """Bad lines interleaved in a log change nothing but the reject counts."""
    clean = gzip.decompress(Path(MOAB).read_bytes()).splitlines(keepends=True)
    dirty = []
    for i, line in enumerate(clean):
        dirty.append(line)
        if i % 500 == 7:
            dirty += [b"garbage\n", line.replace(b"-0600", b"-9999"), b"\x00\xff\n"]
    (tmp_path / "dirty.log").write_bytes(b"".join(dirty))
    from streams.cli import main

    for name, src in (("a", MOAB), ("b", str(tmp_path / "dirty.log"))):
        assert (
            main(replay("moab", src, "--tz", "America/Chicago", "--out", str(tmp_path / name))) == 0
        )
    for f in ("drain_daily.csv", "drain_hourly.csv", "node_states.csv", "drain_jobs.csv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    r = subprocess.run(
        f"{sys.executable} -m streams.cli ship samples --period 0.05 --count 200 --resolver cgroup"
        " | head -c 1",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
