"""Compressed inputs: gzip, bz2, xz and zstd are told by their magic bytes and read to the same
outputs as the plain file; damaged streams are one-line user errors with nothing written;
archives and compressions without a reader are refused by name."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from streams.cli import main
from streams.sources.files import open_binary, raw_position
from tests.golden.make_golden import INPUTS
from tests.paths import REPO


def _zstd(data: bytes) -> bytes:
    # two frames and a skippable frame between them: a reader must go across all of them
    c = zstandard.ZstdCompressor(level=3, write_checksum=True)
    half = len(data) // 2
    skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    return c.compress(data[:half]) + skippable + c.compress(data[half:])


def _gzip_members(data: bytes) -> bytes:
    half = len(data) // 2
    return gzip.compress(data[:half], mtime=0) + gzip.compress(data[half:], mtime=0)


def _bz2_streams(data: bytes) -> bytes:  # what pbzip2 writes
    half = len(data) // 2
    return bz2.compress(data[:half]) + bz2.compress(data[half:])


COMPRESSIONS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": _gzip_members,
    "bz2": _bz2_streams,
    "xz": lambda d: lzma.compress(d, format=lzma.FORMAT_XZ),
    "zstd": _zstd,
}
FORMATS = {  # format -> (input, extra options)
    "moab": ("moab.log.gz", ["--tz", "America/Chicago"]),
    "jobevents": ("jobs.jsonl.gz", ["--tz", "America/Chicago", "--nodes", "40", "--resource", "r"]),
    "samples": ("samples.jsonl.gz", ["--mem-per-core", "6"]),
}


def _plain(fmt: str) -> bytes:
    return gzip.decompress((INPUTS / FORMATS[fmt][0]).read_bytes())


def _replay(fmt: str, path: Path, out: Path, *extra: str) -> int:
    argv = ["replay", "--format", fmt, str(path), "--out", str(out), "--no-progress"]
    return main([*argv, *FORMATS[fmt][1], *extra])


def _tables(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_compression_gives_the_outputs_of_the_plain_file(tmp_path: Path, fmt: str) -> None:
    data = _plain(fmt)
    (tmp_path / "plain").write_bytes(data)
    assert _replay(fmt, tmp_path / "plain", tmp_path / "o-plain") == 0
    want = _tables(tmp_path / "o-plain")
    assert want
    for name, compress in COMPRESSIONS.items():
        src = tmp_path / f"in.{name}"  # the name says nothing: the magic bytes tell
        src.write_bytes(compress(data))
        assert _replay(fmt, src, tmp_path / f"o-{name}") == 0, name
        assert _tables(tmp_path / f"o-{name}") == want, name


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _truncated(blob: bytes) -> bytes:
    return blob[: len(blob) * 2 // 3]


def _corrupt(blob: bytes) -> bytes:
    b = bytearray(blob)
    mid = len(b) // 3
    b[mid : mid + 64] = bytes(64)
    return bytes(b)


@pytest.mark.parametrize("damage", [_truncated, _corrupt], ids=["truncated", "corrupt"])
@pytest.mark.parametrize("name", list(COMPRESSIONS))
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_damaged_stream_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, name: str, damage: Callable
) -> None:
    src = tmp_path / "in"
    src.write_bytes(damage(COMPRESSIONS[name](_plain(fmt))))
    rejects = tmp_path / "rejects.tsv"
    assert _replay(fmt, src, tmp_path / "o", "--rejects", str(rejects)) == 2
    line = _one_line_error(capsys)
    assert line.startswith(f"drainwatch replay: {src}: damaged compressed input"), line
    assert line.endswith("nothing written"), line
    assert not (tmp_path / "o").exists() and not rejects.exists()


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("moab.log", data)
    return buf.getvalue()


def _tar(data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("moab.log")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


REFUSED = {
    "zip": (_zip, "zip archive; extract it first"),
    "tar": (_tar, "tar archive; extract it first"),
    "tar.gz": (lambda d: gzip.compress(_tar(d)), "tar archive; extract it first"),
    "tar.zst": (lambda d: _zstd(_tar(d)), "tar archive; extract it first"),
    "7z": (lambda d: b"7z\xbc\xaf\x27\x1c\x00\x04" + d, "7z archive; extract it first"),
    "lz4": (lambda d: b"\x04\x22\x4d\x18" + d, "lz4-compressed input; decompress it first"),
}


@pytest.mark.parametrize("kind", list(REFUSED))
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_archives_are_refused_by_name_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, kind: str
) -> None:
    make, message = REFUSED[kind]
    src = tmp_path / "in.log"
    src.write_bytes(make(_plain(fmt)[:20_000]))
    assert _replay(fmt, src, tmp_path / "o") == 2
    assert _one_line_error(capsys) == f"drainwatch replay: {src}: {message}"
    assert not (tmp_path / "o").exists()


def test_zstd_without_the_package_is_refused_by_name(tmp_path: Path) -> None:
    src = tmp_path / "in.log"
    src.write_bytes(_zstd(_plain("moab")))
    code = (
        "import sys; sys.modules['zstandard'] = None; from streams.cli import main;"
        f"sys.exit(main(['replay','--format','moab',{str(src)!r},'--out',"
        f"{str(tmp_path / 'o')!r},'--no-progress']))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        f"drainwatch replay: {src}: zstd-compressed input; decompress it first"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["plain", *COMPRESSIONS])
def test_raw_position_counts_bytes_on_disk(tmp_path: Path, name: str) -> None:
    data = _plain("moab")
    src = tmp_path / "in"
    src.write_bytes(data if name == "plain" else COMPRESSIONS[name](data))
    size = src.stat().st_size
    seen = []
    with open_binary(src) as f:
        while f.read(64 << 10):
            seen.append(raw_position(f))
    assert seen == sorted(seen) and 0 < seen[0] <= size
    assert seen[-1] == size
    if name != "plain":
        assert seen[0] < size  # moves while reading, not only at the end


def test_an_archive_given_as_jobs_is_refused_before_the_moab_feed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = tmp_path / "jobs.zip"
    jobs.write_bytes(_zip(_plain("jobevents")))
    moab = tmp_path / "moab.log.xz"
    moab.write_bytes(COMPRESSIONS["xz"](_plain("moab")))
    assert _replay("moab", moab, tmp_path / "o", "--jobs", str(jobs)) == 2
    assert _one_line_error(capsys) == f"drainwatch replay: {jobs}: zip archive; extract it first"
    assert not (tmp_path / "o").exists()
