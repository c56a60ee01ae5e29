"""One output policy for every replay engine: the declared columns, one way to write times and
numbers, LF line ends, a header even when empty, one summary per engine with the same keys,
atomic commit, no stale file, and user errors as one line with exit status 2."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streams.cli import main
from streams.tables import all_tables
from tests.golden.make_golden import CASES, DATA, INPUTS, argv
from tests.paths import REPO

TABLES: dict[str, list] = {}
for _, _t in all_tables():
    TABLES.setdefault(_t.file, []).append(_t)
PATTERNS = {
    "instant": re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)?$"),
    "instant_ms": re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)?$"),
    "day": re.compile(r"^\d{4}-\d\d-\d\d$"),
    "int": re.compile(r"^(-?\d+)?$"),
    "number": re.compile(r"^(-?(\d+(\.\d*[1-9])?|\d\.\d*[1-9]?e[+-]\d+|\de[+-]\d+))?$"),
    "seconds_ms": re.compile(r"^(-?\d+(\.\d{0,2}[1-9])?)?$"),
    "text": re.compile(r"^.*$", re.S),
}
COMMON_KEYS = {
    "engine",
    "format",
    "tz",
    "inputs",
    "first",
    "last",
    "lines",
    "ignored",
    "records",
    "rejected",
    "rejected_by_reason",
    "duplicates",
    "out_of_order",
    "late",
    "settings",
    "outputs",
    "timings_s",
}
ENGINE_OF = {
    "moab": "drain",
    "moab_nojobs": "drain",
    "jobevents": "jobs",
    "sacct": "jobs",
    "swf": "jobs",
    "samples": "samples",
    "llview": "samples",
}


def check_table(path: Path) -> int:
    """The file matches its declaration and the policy; returns its data rows."""
    raw = path.read_bytes()
    header = raw.split(b"\n", 1)[0].decode()
    variants = [t for t in TABLES[path.name] if t.delimiter.join(t.names) == header]
    assert len(variants) == 1, f"{path.name}: header {header!r} is no declared table"
    t = variants[0]
    assert b"\r" not in raw, f"{path.name}: CR line ends"
    assert raw.endswith(b"\n"), f"{path.name}: last line not ended"
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8")), delimiter=t.delimiter))
    assert rows[0] == list(t.names), f"{path.name}: header {rows[0]}"
    for r in rows[1:]:
        assert len(r) == len(t.columns), f"{path.name}: {r}"
        for c, v in zip(t.columns, r, strict=True):
            assert PATTERNS[c.kind].match(v), f"{path.name}.{c.name} ({c.kind}): {v!r}"
    return len(rows) - 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_output_follows_the_policy(case: str, tmp_path: Path) -> None:
    _, needs_data = CASES[case]
    if needs_data and not DATA.is_dir():
        pytest.skip(f"needs {DATA}")
    out = tmp_path / "out"
    assert main(argv(case, out)) == 0
    engine = ENGINE_OF[case]
    summary = orjson.loads((out / f"summary_{engine}.json").read_bytes())
    assert COMMON_KEYS <= set(summary), COMMON_KEYS - set(summary)
    assert summary["engine"] == engine
    written = sorted(p.name for p in out.iterdir())
    assert not [n for n in written if n.startswith(".")], f"staging left behind: {written}"
    for name in written:
        if name in TABLES:
            assert check_table(out / name) == summary["outputs"][name]
    declared = {n for n, rows in summary["outputs"].items() if n in TABLES}
    assert declared <= set(written)
    for i in summary["inputs"]:
        assert set(i) == {
            "path",
            "bytes",
            "lines",
            "ignored",
            "records",
            "rejected",
            "rejected_lines",
            "first",
            "last",
        }
    assert summary["records"] == sum(i["records"] for i in summary["inputs"])
    assert summary["rejected"] == sum(summary["rejected_by_reason"].values())


def test_empty_outputs_keep_their_header(tmp_path: Path) -> None:
    log = tmp_path / "one.log"
    log.write_text(
        "2015-01-01T00:00:00.000-0600 1 INFO  Node '1' status: state='Idle' rsvlist='none' "
        "joblist='none'\n"
    )
    out = tmp_path / "out"
    assert main(["replay", "--format", "moab", str(log), "--out", str(out), "--no-progress"]) == 0
    assert (out / "drain_jobs.csv").read_text() == (
        "job,drain_node_seconds,nodes_charged,first_charged,last_charged\n"
    )
    assert (out / "drain_daily.csv").read_text().startswith("day,accounted_node_seconds,")


def test_engines_sharing_a_directory_keep_their_own_summaries(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for case in ("moab", "samples", "jobevents"):
        assert main(argv(case, out)) == 0
    names = {p.name for p in out.iterdir()}
    assert {"summary_drain.json", "summary_samples.json", "summary_jobs.json"} <= names
    assert "drain_daily.csv" in names and "dfs_minutely.csv" in names


def test_a_rerun_removes_the_files_the_earlier_run_wrote_and_this_one_does_not(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    assert main(argv("moab", out)) == 0  # with --jobs: failure_to_launch.csv
    assert (out / "failure_to_launch.csv").exists()
    assert main(argv("moab_nojobs", out)) == 0
    assert not (out / "failure_to_launch.csv").exists()
    header = (out / "drain_jobs.csv").read_text().splitlines()[0]
    assert header == "job,drain_node_seconds,nodes_charged,first_charged,last_charged"


def test_a_failed_run_leaves_the_previous_outputs(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out"
    assert main(argv("moab", out)) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    from streams.stages import drain
    from streams.tables.drain import DRAIN_DAILY

    def boom(self):  # a fault half-way through writing the reports
        yield DRAIN_DAILY, [("2015-03-07", 1, 1, 0, 0, 0, 1.0, 1.0, 1.0, "ok")]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(drain.DrainStage, "finish", boom)
    assert main(argv("moab", out)) == 1  # an I/O failure: exit 1, one line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize(
    "fmt", ["moab", "sacct", "swf", "jobevents", "jobcomp", "samples", "llview"]
)
def test_a_missing_input_is_one_line_and_exit_2(fmt: str, tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "replay",
            "--format",
            fmt,
            str(tmp_path / "absent.log"),
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"drainwatch replay: no such file: {tmp_path / 'absent.log'}"
    ]
    assert not (tmp_path / "out").exists()


def test_user_errors_of_other_commands_are_one_line_too(tmp_path: Path) -> None:
    cases = [
        ["simulate", "--model", "lublin", "--nodes", "0", "--days", "1", "--out", str(tmp_path)],
        [
            "simulate",
            "--swf",
            str(tmp_path / "absent.swf"),
            "--nodes",
            "4",
            "--days",
            "1",
            "--out",
            str(tmp_path),
        ],
        [
            "replay",
            "--format",
            "moab",
            str(INPUTS / "moab.log.gz"),
            "--chunk-mb",
            "0",
            "--out",
            str(tmp_path / "o"),
        ],
        [
            "replay",
            "--format",
            "samples",
            str(INPUTS / "samples.jsonl.gz"),
            "--hot-zone-bw",
            "98",
            "--out",
            str(tmp_path / "o"),
        ],
    ]
    for argv_ in cases:
        r = subprocess.run(
            [sys.executable, "-m", "streams.cli", *argv_],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        assert r.returncode == 2, (argv_, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"drainwatch {argv_[0]}: "), r.stderr
        assert "Traceback" not in r.stderr


def test_docs_outputs_md_lists_every_table_as_declared() -> None:
    from streams.tables import BEGIN, END, outputs_markdown

    text = (REPO / "docs" / "outputs.md").read_text()
    generated = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert generated == outputs_markdown().strip(), (
        "docs/outputs.md is out of date: regenerate its tables with `python -m streams.tables`"
    )


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 1 MiB tmpfs (needs the right to mount: root here and in CI)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill ({r.stderr.strip() or r.returncode})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_a_full_disk_leaves_the_previous_outputs(small_disk: Path) -> None:
    out = small_disk / "out"
    assert main(argv("moab", out)) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with open(small_disk / "filler", "wb", buffering=0) as f:  # fill it to the last block
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    assert main(argv("moab", out)) == 1  # ENOSPC: one line, exit 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
