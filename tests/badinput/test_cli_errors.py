"""Bad inputs, options, settings and outputs: one table, one row per case.

Each row runs the real command in a subprocess and asserts the exit code (streams/errors.py),
that stderr is one line naming the problem, and that no traceback is shown.
"""

from __future__ import annotations

import bz2
import gzip
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.golden.make_golden import INPUTS
from tests.paths import REPO

MOAB = str(INPUTS / "moab.log.gz")
JOBS = str(INPUTS / "jobs.jsonl.gz")
SAMPLES = str(INPUTS / "samples.jsonl.gz")
GOOD_LINE = (
    "2015-01-01T00:00:00.000-0600 1 INFO  Node '1' status: state='Idle' rsvlist='7' "
    "joblist='none'\n"
)


@dataclass
class Case:
    name: str
    argv: list[str]  # {tmp} is replaced by the test's directory
    code: int
    message: str  # must appear in the one stderr line
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # written under {tmp} first


def replay(fmt: str, *rest: str) -> list[str]:
    return ["replay", "--format", fmt, *rest, "--no-progress"]


CASES = [
    # inputs
    Case("missing moab file", replay("moab", "{tmp}/nope.log", "--out", "{tmp}/o"), 2,
         "no such file: {tmp}/nope.log"),
    Case("moab input is a directory", replay("moab", "{tmp}", "--out", "{tmp}/o"), 2,
         "is a directory"),
    Case("missing sacct file", replay("sacct", "{tmp}/nope", "--out", "{tmp}/o"), 2,
         "no such file"),
    Case("missing --jobs file", replay("moab", MOAB, "--jobs", "{tmp}/nope", "--out", "{tmp}/o"),
         2, "no such file: {tmp}/nope"),
    Case("llview dir without LoadMem", replay("llview", "{tmp}/empty", "--out", "{tmp}/o"), 2,
         "no LoadMem", files={"empty/readme.txt": b"x"}),
    Case("unreadable input", replay("moab", "{tmp}/secret.log", "--out", "{tmp}/o"), 2,
         "cannot read", files={"secret.log": GOOD_LINE.encode()}),
    # outputs
    Case("--out is a file", replay("moab", MOAB, "--out", "{tmp}/afile"), 2, "is a file",
         files={"afile": b"x"}),
    Case("--out under a read-only dir", replay("moab", MOAB, "--out", "{tmp}/ro/o"), 2,
         "is not writable", files={"ro/.keep": b""}),
    Case("--rejects is a directory", replay("moab", MOAB, "--rejects", "{tmp}", "--out",
                                            "{tmp}/o"), 2, "is a directory"),
    # options
    Case("--tz unknown", replay("moab", MOAB, "--tz", "Mars/Base", "--out", "{tmp}/o"), 2,
         "'Mars/Base' is not an IANA time zone"),
    Case("--max-gap negative", replay("moab", MOAB, "--max-gap", "-1", "--out", "{tmp}/o"), 2,
         "--max-gap: '-1' is out of range"),
    Case("--max-gap nan", replay("moab", MOAB, "--max-gap", "nan", "--out", "{tmp}/o"), 2,
         "--max-gap: 'nan' is out of range"),
    Case("--nodes negative", replay("moab", MOAB, "--nodes", "-5", "--out", "{tmp}/o"), 2,
         "--nodes: '-5' is out of range"),
    Case("--nodes zero", replay("moab", MOAB, "--nodes", "0", "--out", "{tmp}/o"), 2,
         "--nodes: '0' is out of range"),
    Case("--nodes not a number", replay("moab", MOAB, "--nodes", "many", "--out", "{tmp}/o"), 2,
         "'many' is not an integer"),
    Case("--chunk-mb 0", replay("moab", MOAB, "--chunk-mb", "0", "--out", "{tmp}/o"), 2,
         "--chunk-mb: '0' is out of range"),
    Case("--quality-min above 1", replay("moab", MOAB, "--quality-min", "1.5", "--out",
                                         "{tmp}/o"), 2, "out of range (must be > 0 and <= 1)"),
    Case("--ftl-threshold negative", replay("moab", MOAB, "--ftl-threshold", "-3", "--out",
                                            "{tmp}/o"), 2, "out of range"),
    Case("--mem-per-core negative", replay("samples", SAMPLES, "--mem-per-core", "-1", "--out",
                                           "{tmp}/o"), 2, "--mem-per-core: '-1' is out of range"),
    Case("--hot-zone-gap negative", replay("samples", SAMPLES, "--hot-zone-gap", "-5", "--out",
                                           "{tmp}/o"), 2, "out of range"),
    Case("--hot-zone-bw one number", replay("samples", SAMPLES, "--hot-zone-bw", "98", "--out",
                                            "{tmp}/o"), 2, "expected MEAN,STD"),
    Case("--hot-zone-fs without =", replay("samples", SAMPLES, "--hot-zone-fs", "scratch",
                                           "--out", "{tmp}/o"), 2, "expected FS=MBps"),
    Case("--short-lambda above 1", replay("jobevents", JOBS, "--short-lambda", "2", "--out",
                                          "{tmp}/o"), 2, "out of range"),
    Case("--history-runs 0", replay("jobevents", JOBS, "--history-runs", "0", "--out",
                                    "{tmp}/o"), 2, "out of range"),
    Case("--half-life 0", replay("swf", JOBS, "--half-life", "0", "--out", "{tmp}/o"), 2,
         "out of range"),
    Case("--capability-fraction 0", replay("jobevents", JOBS, "--capability-fraction", "0",
                                           "--out", "{tmp}/o"), 2, "out of range"),
    Case("--max-reject-share 2", replay("moab", MOAB, "--max-reject-share", "2", "--out",
                                        "{tmp}/o"), 2, "out of range"),
    Case("unknown format", replay("pbs", MOAB, "--out", "{tmp}/o"), 2, "invalid choice: 'pbs'"),
    Case("unknown option", replay("moab", MOAB, "--frobnicate", "--out", "{tmp}/o"), 2,
         "unrecognized arguments: --frobnicate"),
    # settings
    Case("bad DRAINWATCH_TZ", replay("moab", MOAB, "--out", "{tmp}/o"), 2, "DRAINWATCH_TZ",
         env={"DRAINWATCH_TZ": "Nowhere/Land"}),
    Case("bad DRAINWATCH_MAX_GAP", replay("moab", MOAB, "--out", "{tmp}/o"), 2,
         "DRAINWATCH_MAX_GAP", env={"DRAINWATCH_MAX_GAP": "soon"}),
    Case("unknown DRAINWATCH_ variable", replay("moab", MOAB, "--out", "{tmp}/o"), 2,
         "DRAINWATCH_MAXGAP", env={"DRAINWATCH_MAXGAP": "600"}),
    Case("missing --config file", ["--config", "{tmp}/none.toml", *replay("moab", MOAB, "--out",
                                                                          "{tmp}/o")], 2,
         "does not exist"),
    Case("--config not TOML", ["--config", "{tmp}/bad.toml", *replay("moab", MOAB, "--out",
                                                                     "{tmp}/o")], 2,
         "not valid TOML", files={"bad.toml": b"[accounting\ntz = "}),
    Case("DRAINWATCH_WEB_PORT 70000", ["worker", "--print-settings"], 2, "above the maximum",
         env={"DRAINWATCH_WEB_PORT": "70000"}),
    # input read but unusable: exit 3, outputs written
    Case("every moab line rejected", replay("moab", "{tmp}/bad.log", "--out", "{tmp}/o"), 3,
         "no usable record", files={"bad.log": b"2015-13-45T00:00:00.000-0600 1 INFO  Node '1' "
                                    b"status: state='Idle' rsvlist='none' joblist='none'\n" * 5}),
    Case("bzip2 content as moab", replay("moab", "{tmp}/x.log", "--out", "{tmp}/o"), 3,
         "no usable record", files={"x.log": bz2.compress(GOOD_LINE.encode() * 50)}),
    Case("empty moab file", replay("moab", "{tmp}/empty.log", "--out", "{tmp}/o"), 3,
         "no usable record", files={"empty.log": b""}),
    Case("mostly rejected job events", replay("jobevents", "{tmp}/j.jsonl", "--out", "{tmp}/o"),
         3, "of the records were rejected or out of time order",
         files={"j.jsonl": b'{"type":"start","ts":1,"job":"1"}\n' + b"{oops\n" * 5}),
    Case("no usable samples", replay("samples", "{tmp}/s.jsonl", "--out", "{tmp}/o"), 3,
         "no usable record", files={"s.jsonl": b"{}\n"}),
    # damaged inputs found while reading: one line, nothing written
    Case("truncated gzip moab", replay("moab", "{tmp}/t.log.gz", "--out", "{tmp}/o"), 2,
         "damaged compressed input", files={"t.log.gz": Path(MOAB).read_bytes()[:50_000]}),
    Case("truncated gzip job events", replay("jobevents", "{tmp}/t.jsonl.gz", "--out",
                                             "{tmp}/o"), 2, "damaged compressed input",
         files={"t.jsonl.gz": Path(JOBS).read_bytes()[:3000]}),
    Case("truncated gzip samples", replay("samples", "{tmp}/t.jsonl.gz", "--out", "{tmp}/o"), 2,
         "damaged compressed input", files={"t.jsonl.gz": Path(SAMPLES).read_bytes()[:3000]}),
    Case("llview LoadMem without header", replay("llview", "{tmp}/j", "--out", "{tmp}/o"), 2,
         "not an LLview series", files={"j/LoadMem_1_node.dat": b"garbage here\n",
                                        "j/PCOREusage_1_node.dat": b"ts nodeid coreid u1 u2\n"}),
    Case("llview bad job report", replay("llview", "{tmp}/j", "--out", "{tmp}/o"), 2,
         "not an LLview job report",
         files={"j/LoadMem_1_node.dat": b"jobid ts nodeid load used_mem usage used_cores\n"
                b"1 1700000000 n1 1.0 2.0 50.0 4\n", "j/jobreport_x_1.json": b"{bad",
                "j/PCOREusage_1_node.dat": b"ts nodeid coreid usage1_avg usage2_avg\n"
                b"1700000000 n1 0 50 50\n"}),
    # simulate
    Case("simulate --nodes 0", ["simulate", "--model", "lublin", "--nodes", "0", "--days", "1",
                                "--out", "{tmp}/o"], 2, "must be positive"),
    Case("simulate --start not a time", ["simulate", "--model", "lublin", "--nodes", "4",
                                         "--days", "1", "--start", "yesterday", "--out",
                                         "{tmp}/o"], 2, "yesterday"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_is_one_line_with_its_exit_code(case: Case, tmp_path: Path) -> None:
    for rel, data in case.files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    if case.name == "unreadable input":
        os.chmod(tmp_path / "secret.log", 0)
    if case.name == "--out under a read-only dir":
        os.chmod(tmp_path / "ro", 0o500)
    if os.geteuid() == 0 and case.name in ("unreadable input", "--out under a read-only dir"):
        pytest.skip("root reads and writes whatever the permissions say")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env.update(case.env)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    r = subprocess.run(
        [sys.executable, "-m", "streams.cli", *argv],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert r.returncode == case.code, r.stderr
    message = case.message.replace("{tmp}", str(tmp_path))
    assert message in lines[-1], r.stderr
    if case.code == 2:
        assert len(lines) == 1, r.stderr
        assert not (tmp_path / "o").exists(), "a user error must write nothing"
    if case.code == 3:
        assert list((tmp_path / "o").glob("summary_*.json")), "exit 3 still writes the summary"


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
        assert main(replay("moab", src, "--tz", "America/Chicago", "--out",
                           str(tmp_path / name))) == 0  # fmt: skip
    for f in ("drain_daily.csv", "drain_hourly.csv", "node_states.csv", "drain_jobs.csv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    r = subprocess.run(
        f"{sys.executable} -m streams.cli ship samples --period 0.05 --count 200 --resolver cgroup"
        " | head -c 1",
        shell=True, cwd=REPO, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
