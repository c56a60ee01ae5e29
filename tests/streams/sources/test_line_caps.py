"""Caps on one record's size: a line longer than max_line_bytes is skipped in bounded pieces and
rejected as line_too_long (the good records around it accounted exactly as without it, the line
numbers after it right); a node list longer than max_hosts is rejected as hostlist_too_large."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.records.reject import Reject
from streams.cli import main
from streams.sources.files import KEEP_BYTES, capped_lines, line_chunks
from tests.golden.make_golden import INPUTS
from tests.paths import REPO

# --- the reader, against a line-by-line reference ---------------------------------------------


def _reference(data: bytes, cap: int) -> tuple[list[bytes], list[tuple[int, bytes]]]:
    """Lines (without newline) with each longer than cap emptied; (index, head) of those."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    longs = [(i, ln[:KEEP_BYTES]) for i, ln in enumerate(lines) if len(ln) > cap]
    return [b"" if len(ln) > cap else ln for ln in lines], longs


@settings(max_examples=300, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40) | st.integers(190, 420), max_size=30),
    final_newline=st.booleans(),
    cap=st.integers(1, 12) | st.integers(150, 300),
    chunk=st.integers(1, 50) | st.integers(100, 900),
    first=st.none() | st.integers(1, 60),
    views=st.booleans(),
)
def test_line_chunks_match_a_line_by_line_reference(
    lengths: list[int], final_newline: bool, cap: int, chunk: int, first: int | None, views: bool
) -> None:
    lines = [bytes([97 + i % 26]) * n for i, n in enumerate(lengths)]
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    got: list[bytes] = []
    longs: list[tuple[int, bytes]] = []
    # first: a smaller first block; views: memoryviews of blocks, the file set back (seekable)
    chunks = [(bytes(c), ls) for c, ls in line_chunks(io.BytesIO(data), chunk, cap, first, views)]
    for k, (c, ls) in enumerate(chunks):
        assert len(c) <= chunk + cap + 1
        assert c.endswith(b"\n") or k == len(chunks) - 1  # whole lines only
        longs += [(len(got) + ln.index, ln.head) for ln in ls]
        part = c.split(b"\n")
        if part[-1] == b"":
            part.pop()
        got += part
    want, want_longs = _reference(data, cap)
    assert got == want
    assert longs == want_longs


def test_capped_lines_keep_numbers_and_reject_in_line_order() -> None:
    data = b"a\r\nbad\n" + b"x" * 5000 + b"\r\nbad\n\nlast"
    rejects: list[Reject] = []
    out = []
    for line in capped_lines(io.BytesIO(data), "f", rejects, max_line_bytes=300, chunk_bytes=64):
        if line == b"bad":  # a parser's own reject, made when it reaches the line
            rejects.append(Reject("bad", "f", len(out) + 1, "bad"))
        out.append(line)
    assert out == [b"a", b"bad", b"", b"bad", b"", b"last"]
    assert [(r.reason, r.lineno) for r in rejects] == [
        ("bad", 2),
        ("line_too_long", 3),
        ("bad", 4),
    ]
    assert rejects[1].text == "x" * KEEP_BYTES


# --- replay: a 300 MB line without a newline in the middle of an input ------------------------

LONG = 300 << 20
FORMATS = {  # format -> (input, bad line, its reason, options)
    "moab": (
        "moab.log.gz",
        b"2015-03-08T00:00:00.000-0600 1 INFO  Node 'x' status: nonsense\n",
        "malformed_node_status",
        ["--tz", "America/Chicago"],
    ),
    "jobevents": (
        "jobs.jsonl.gz",
        b"{oops\n",
        "bad_json",
        ["--tz", "America/Chicago", "--nodes", "40", "--resource", "r"],
    ),
    "samples": ("samples.jsonl.gz", b"{oops\n", "bad_json", ["--mem-per-core", "6"]),
}


def _write(path: Path, lines: list[bytes], k: int, bad: bytes, long: int | None) -> None:
    """lines[:k], the long line (if any), lines[k:k+3], a bad line, the rest. The long line is
    written sparse: a start, then a hole of zero bytes (what a crashed writer leaves), and a
    newline."""
    with open(path, "wb") as f:
        f.writelines(lines[:k])
        if long is not None:
            f.write(b'{"ts": 1425794400, "node": "')
            f.seek(long, io.SEEK_CUR)
            f.write(b'"}\n')
        f.writelines([*lines[k : k + 3], bad, *lines[k + 3 :]])


def _argv(fmt: str, src: Path, out: Path, rejects: Path) -> list[str]:
    return [
        "replay",
        "--format",
        fmt,
        str(src),
        "--out",
        str(out),
        "--no-progress",
        "--rejects",
        str(rejects),
        *FORMATS[fmt][3],
    ]


def _tables(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_300_mb_line_is_rejected_in_flat_memory_and_changes_nothing_else(
    tmp_path: Path, fmt: str
) -> None:
    name, bad, reason, _ = FORMATS[fmt]
    lines = gzip.decompress((INPUTS / name).read_bytes()).splitlines(keepends=True)
    k = len(lines) // 2
    clean, dirty = tmp_path / "clean", tmp_path / "dirty"
    _write(clean, lines, k, bad, None)
    _write(dirty, lines, k, bad, LONG)
    assert main(_argv(fmt, clean, tmp_path / "a", tmp_path / "a.tsv")) == 0
    # the replay in a child of a small Python, whose RUSAGE_CHILDREN is that child alone
    child = [
        sys.executable,
        "-m",
        "streams.cli",
        *_argv(fmt, dirty, tmp_path / "b", tmp_path / "b.tsv"),
    ]
    code = (
        "import resource, subprocess, sys;"
        f"r = subprocess.run({child!r});"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    try:
        r = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    finally:
        dirty.unlink()
    rc, rss_kb = map(int, r.stdout.split())
    assert rc == 0, r.stderr
    assert rss_kb < 200 * 1024, f"peak RSS {rss_kb / 1024:.0f} MB"
    assert _tables(tmp_path / "b") == _tables(tmp_path / "a")
    engine = {"moab": "drain", "jobevents": "jobs", "samples": "samples"}[fmt]
    sa = json.loads((tmp_path / "a" / f"summary_{engine}.json").read_text())
    sb = json.loads((tmp_path / "b" / f"summary_{engine}.json").read_text())
    assert sb["records"] == sa["records"] > 0
    assert sb["rejected_by_reason"] == {**sa["rejected_by_reason"], "line_too_long": 1}
    rows = [ln.split("\t")[1:3] for ln in (tmp_path / "b.tsv").read_text().splitlines()]
    assert [str(k + 1), "line_too_long"] in rows
    # the bad line after it keeps its number: one more than in the file without the long line
    clean_rows = [ln.split("\t")[1:3] for ln in (tmp_path / "a.tsv").read_text().splitlines()]
    assert [str(k + 4), reason] in clean_rows and [str(k + 5), reason] in rows
    assert (tmp_path / "b.tsv").read_text().split("\n")[0].count("\t") == 3


# --- the settings ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_max_line_bytes_is_a_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """A 1,000-byte line inside a chunk (not at its end) is rejected under a 300-byte cap."""
    name, bad, _reason, _ = FORMATS[fmt]
    lines = gzip.decompress((INPUTS / name).read_bytes()).splitlines(keepends=True)
    k = len(lines) // 3
    clean, dirty = tmp_path / "clean", tmp_path / "dirty"
    clean.write_bytes(b"".join(lines))
    dirty.write_bytes(b"".join([*lines[:k], b"y" * 1000 + b"\n", *lines[k:]]))
    monkeypatch.setenv("DRAINWATCH_MAX_LINE_BYTES", "300")
    assert main(_argv(fmt, clean, tmp_path / "a", tmp_path / "a.tsv")) == 0
    assert main(_argv(fmt, dirty, tmp_path / "b", tmp_path / "b.tsv")) == 0
    assert _tables(tmp_path / "b") == _tables(tmp_path / "a")
    rows = [ln.split("\t") for ln in (tmp_path / "b.tsv").read_text().splitlines()]
    assert [str(k + 1), "line_too_long", "y" * KEEP_BYTES] in [r[1:] for r in rows]


SACCT = (
    "JobID|User|Account|Partition|Submit|Start|End|NNodes|NCPUS|State|NodeList\n"
    "1|u|a|p|2024-03-01T00:00:00|2024-03-01T00:01:00|2024-03-01T01:00:00|2|2|COMPLETED|n[1-2]\n"
    "2|u|a|p|2024-03-01T00:00:00|2024-03-01T00:01:00|2024-03-01T01:00:00|5|5|COMPLETED|n[1-5]\n"
)


def test_max_hosts_is_a_setting_for_sacct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "s.log"
    src.write_text(SACCT)
    argv = [
        "replay",
        "--format",
        "sacct",
        str(src),
        "--out",
        str(tmp_path / "o"),
        "--no-progress",
        "--rejects",
        str(tmp_path / "r.tsv"),
    ]
    assert main(argv) == 0
    assert not (tmp_path / "r.tsv").read_text()
    monkeypatch.setenv("DRAINWATCH_MAX_HOSTS", "4")
    assert main(argv) == 0
    assert (tmp_path / "r.tsv").read_text().split("\t")[1:3] == ["3", "hostlist_too_large"]
    s = json.loads((tmp_path / "o" / "summary_jobs.json").read_text())
    assert s["rejected_by_reason"] == {"hostlist_too_large": 1}
