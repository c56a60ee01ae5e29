"""Special files wherever a path is read, and messages whatever stdout and stderr are.

Class 3 of issue 31: a FIFO, a device (``/dev/zero``), a directory or a symlink loop given as
``--config``, ``DRAINWATCH_CONFIG``, a secret file (``*_FILE``, TOML ``<key>_file``), ``--jobs``,
an input or a member of an LLview input directory is refused before a byte is read: one line,
exit 2, nothing written. Small files (settings, secrets, checkpoints) are also refused above
their cap (streams.errors.read_small). Class 9: a symlink loop is named as one, a standard
output that cannot be written is one line and exit 1, and a standard error that cannot be
written never changes the exit status.

Each row runs the real command in a subprocess with a timeout, so a hang (a FIFO read without
O_NONBLOCK) fails the row instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from streams.errors import (
    SECRET_FILE_CAP,
    SMALL_FILE_CAP,
    FileRefused,
    UserError,
    check_regular,
    open_regular,
    read_small,
)
from tests.badinput import inputs as IN
from tests.golden.make_golden import INPUTS
from tests.paths import REPO

MOAB = str(INPUTS / "moab.log.gz")
OUT = ["--out", "{tmp}/o"]
TIMEOUT = 60  # seconds: a hang fails the row
LOOP = "is a symlink loop (too many levels of symbolic links)"
ZERO = "is not a regular file (a character device)"
A_FIFO = "is not a regular file (a FIFO)"
MOAB_2400 = IN.MOAB_LINES[500].replace(b"2015-03-07", b"2400-03-07")  # rejected, not fatal


def replay(fmt: str, *rest: str) -> list[str]:
    return ["replay", "--format", fmt, *rest, *OUT, "--no-progress"]


def fifo(name: str) -> Callable[[Path], None]:
    return lambda tmp: os.mkfifo(tmp / name)


def link(name: str, target: str) -> Callable[[Path], None]:
    """``name`` a symbolic link to ``target`` (absolute, or under the row's directory)."""

    def make(tmp: Path) -> None:
        (tmp / name).unlink(missing_ok=True)
        os.symlink(target if target.startswith("/") else tmp / target, tmp / name)

    return make


def loop(name: str) -> Callable[[Path], None]:
    """``name`` a symbolic link in a loop of two (the other outside any input directory)."""

    def make(tmp: Path) -> None:
        other = tmp / f"loop-of-{Path(name).name}"
        (tmp / name).unlink(missing_ok=True)
        os.symlink(other, tmp / name)
        os.symlink(tmp / name, other)

    return make


def member_fifo(name: str) -> Callable[[Path], None]:
    """A member of the LLview directory replaced by a FIFO."""

    def make(tmp: Path) -> None:
        (tmp / name).unlink(missing_ok=True)
        os.mkfifo(tmp / name)

    return make


LLVIEW = IN.llview_dir()
LOADMEM = "lv/LoadMem_77_node.dat"
FSUSAGE = "lv/FSusage_77_all_node.dat"
PCORE = "lv/PCOREusage_77_node.dat"


@dataclass
class Row:
    name: str
    argv: list[str]  # {tmp} is replaced by the row's directory (also the command's cwd)
    code: int
    message: str  # in the one stderr line ("" with stderr on /dev/full: not seen)
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # written under {tmp} first
    prepare: Callable[[Path], None] | None = None
    stdout: str | None = None  # a file for standard output ("/dev/full"); else /dev/null
    stderr: str | None = None  # a file for standard error; else captured and checked
    written: tuple[str, ...] = ()  # files under {tmp} the run must leave (a successful one)

    def param(self) -> Any:
        return pytest.param(self, id=self.name)


ROWS = [
    # --- class 3: the settings file
    Row(
        "/dev/zero as --config",
        ["--config", "/dev/zero", *replay("moab", MOAB)],
        2,
        f"config file /dev/zero: {ZERO}",
    ),
    Row(
        "FIFO as --config",
        ["--config", "{tmp}/c.toml", *replay("moab", MOAB)],
        2,
        f"config file {{tmp}}/c.toml: {A_FIFO}",
        prepare=fifo("c.toml"),
    ),
    Row(
        "/dev/zero as DRAINWATCH_CONFIG",
        replay("moab", MOAB),
        2,
        f"config file /dev/zero: {ZERO}",
        env={"DRAINWATCH_CONFIG": "/dev/zero"},
    ),
    Row(
        "FIFO as DRAINWATCH_CONFIG",
        replay("moab", MOAB),
        2,
        f"config file {{tmp}}/c.toml: {A_FIFO}",
        env={"DRAINWATCH_CONFIG": "{tmp}/c.toml"},
        prepare=fifo("c.toml"),
    ),
    Row(
        "--config linked to /dev/zero",
        ["--config", "{tmp}/c.toml", *replay("moab", MOAB)],
        2,
        f"config file {{tmp}}/c.toml: {ZERO}",
        prepare=link("c.toml", "/dev/zero"),
    ),
    Row(
        "--config larger than 1 MiB",
        ["--config", "{tmp}/c.toml", *replay("moab", MOAB)],
        2,
        "config file {tmp}/c.toml: is larger than 1 MiB",
        files={"c.toml": b"# padding\n" * (SMALL_FILE_CAP // 10 + 1)},
    ),
    # --- class 3: secret files
    Row(
        "/dev/zero as DRAINWATCH_INFLUX_TOKEN_FILE",
        ["worker", "--print-settings"],
        2,
        f"DRAINWATCH_INFLUX_TOKEN_FILE: cannot read secret file /dev/zero: {ZERO}",
        env={"DRAINWATCH_INFLUX_TOKEN_FILE": "/dev/zero"},
    ),
    Row(
        "FIFO as DRAINWATCH_INFLUX_TOKEN_FILE",
        ["worker", "--print-settings"],
        2,
        f"DRAINWATCH_INFLUX_TOKEN_FILE: cannot read secret file {{tmp}}/token: {A_FIFO}",
        env={"DRAINWATCH_INFLUX_TOKEN_FILE": "{tmp}/token"},
        prepare=fifo("token"),
    ),
    Row(
        "DRAINWATCH_KAFKA_SASL_PASSWORD_FILE linked to /dev/zero",
        ["worker", "--print-settings"],
        2,
        f"cannot read secret file {{tmp}}/pw: {ZERO}",
        env={"DRAINWATCH_KAFKA_SASL_PASSWORD_FILE": "{tmp}/pw"},
        prepare=link("pw", "/dev/zero"),
    ),
    Row(
        "token file larger than 64 KiB",
        ["worker", "--print-settings"],
        2,
        "cannot read secret file {tmp}/token: is larger than 64 KiB",
        env={"DRAINWATCH_INFLUX_TOKEN_FILE": "{tmp}/token"},
        files={"token": b"t" * (SECRET_FILE_CAP + 1)},
    ),
    Row(
        "TOML token_file on /dev/zero",
        ["--config", "{tmp}/c.toml", "worker", "--print-settings"],
        2,
        f"cannot read secret file /dev/zero: {ZERO}",
        files={"c.toml": b'[influx]\ntoken_file = "/dev/zero"\n'},
    ),
    Row(
        "TOML token_file a FIFO",
        ["--config", "{tmp}/c.toml", "worker", "--print-settings"],
        2,
        f"cannot read secret file {{tmp}}/token: {A_FIFO}",
        files={"c.toml": b'[influx]\ntoken_file = "token"\n'},
        prepare=fifo("token"),
    ),
    # --- class 3: inputs and the members of an LLview directory
    Row(
        "FIFO LoadMem in an LLview directory",
        replay("llview", "{tmp}/lv"),
        2,
        f"{{tmp}}/{LOADMEM} {A_FIFO}",
        files=LLVIEW,
        prepare=member_fifo(LOADMEM),
    ),
    Row(
        "FSusage linked to /dev/zero in an LLview directory",
        replay("llview", "{tmp}/lv"),
        2,
        f"{{tmp}}/{FSUSAGE} {ZERO}",
        files=LLVIEW,
        prepare=link(FSUSAGE, "/dev/zero"),
    ),
    Row(
        "PCOREusage linked to /dev/zero in an LLview directory",
        replay("llview", "{tmp}/lv"),
        2,
        f"{{tmp}}/{PCORE} {ZERO}",
        files=LLVIEW,
        prepare=link(PCORE, "/dev/zero"),
    ),
    Row(
        "FIFO job report in an LLview directory",
        replay("llview", "{tmp}/lv"),
        2,
        f"{{tmp}}/lv/jobreport_77.json {A_FIFO}",
        files=LLVIEW,
        prepare=fifo("lv/jobreport_77.json"),
    ),
    Row(
        "symlink loop as LoadMem in an LLview directory",
        replay("llview", "{tmp}/lv"),
        2,
        f"{{tmp}}/{LOADMEM} {LOOP}",
        files=LLVIEW,
        prepare=loop(LOADMEM),
    ),
    Row(
        "LLview file linked to /dev/zero given by name",
        replay("llview", "{tmp}/lm"),
        2,
        "not a regular file: {tmp}/lm (a character device)",
        prepare=link("lm", "/dev/zero"),
    ),
    Row(
        "--jobs linked to /dev/zero",
        replay("moab", MOAB, "--jobs", "{tmp}/j.jsonl"),
        2,
        "not a regular file: {tmp}/j.jsonl (a character device)",
        prepare=link("j.jsonl", "/dev/zero"),
    ),
    Row(
        "FIFO as --jobs",
        replay("moab", MOAB, "--jobs", "{tmp}/j.jsonl"),
        2,
        "not a regular file: {tmp}/j.jsonl (a FIFO)",
        prepare=fifo("j.jsonl"),
    ),
    Row(
        "input linked to /dev/zero",
        replay("moab", "{tmp}/m.log"),
        2,
        "not a regular file: {tmp}/m.log (a character device)",
        prepare=link("m.log", "/dev/zero"),
    ),
    # --- class 9: messages
    Row(
        "symlink loop as input",
        replay("moab", "{tmp}/m.log"),
        2,
        "symlink loop: {tmp}/m.log (too many levels of symbolic links)",
        prepare=loop("m.log"),
    ),
    Row(
        "symlink loop as --jobs",
        replay("moab", MOAB, "--jobs", "{tmp}/j.jsonl"),
        2,
        "symlink loop: {tmp}/j.jsonl",
        prepare=loop("j.jsonl"),
    ),
    Row(
        "symlink loop as --config",
        ["--config", "{tmp}/c.toml", *replay("moab", MOAB)],
        2,
        f"config file {{tmp}}/c.toml: {LOOP}",
        prepare=loop("c.toml"),
    ),
    Row(
        "symlink loop as DRAINWATCH_INFLUX_TOKEN_FILE",
        ["worker", "--print-settings"],
        2,
        f"cannot read secret file {{tmp}}/token: {LOOP}",
        env={"DRAINWATCH_INFLUX_TOKEN_FILE": "{tmp}/token"},
        prepare=loop("token"),
    ),
    Row(
        "worker --print-settings > /dev/full",
        ["worker", "--print-settings"],
        1,
        "drainwatch worker: cannot write standard output: No space left on device",
        stdout="/dev/full",
    ),
    Row(
        "successful replay with stderr on /dev/full",
        ["replay", "--format", "moab", "{tmp}/m.log", *OUT],
        0,
        "",
        stderr="/dev/full",
        files={"m.log": IN.mixed(IN.MOAB, [MOAB_2400], every=1000)},
        written=("o/summary_drain.json", "o/drain_daily.csv", "o/node_states.csv"),
    ),
    Row(
        "user error with stderr on /dev/full keeps exit 2",
        replay("moab", "{tmp}/nope"),
        2,
        "",
        stderr="/dev/full",
    ),
]
assert len({r.name for r in ROWS}) == len(ROWS), "row names must be unique"


def _run(row: Row, tmp: Path) -> subprocess.CompletedProcess[str]:
    for rel, data in row.files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    if row.prepare is not None:
        row.prepare(tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRAINWATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env.update({k: v.replace("{tmp}", str(tmp)) for k, v in row.env.items()})
    argv = [a.replace("{tmp}", str(tmp)) for a in row.argv]
    with (
        open(row.stdout or os.devnull, "w") as out,
        open(row.stderr, "w") if row.stderr else open(os.devnull) as err_file,
    ):
        return subprocess.run(
            [sys.executable, "-m", "streams.cli", *argv],
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err_file if row.stderr else subprocess.PIPE,
            text=True,
            check=False,
            timeout=TIMEOUT,
        )


@pytest.mark.parametrize("row", [r.param() for r in ROWS])
def test_special_file_or_stream_is_one_line_with_its_exit_code(row: Row, tmp_path: Path) -> None:
    r = _run(row, tmp_path)
    stderr = r.stderr or ""
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert r.returncode == row.code, stderr
    lines = stderr.strip().splitlines()
    if row.stderr is None:
        assert len(lines) == 1, stderr
        assert row.message.replace("{tmp}", str(tmp_path)) in lines[0], stderr
    if row.code == 2:
        assert not (tmp_path / "o").exists(), "a user error must write nothing"
    for rel in row.written:
        assert (tmp_path / rel).is_file(), rel
    if row.written:
        summary = json.loads((tmp_path / "o" / "summary_drain.json").read_text())
        assert summary["records"] > 0 and summary["rejected"] > 0
        assert not [p.name for p in (tmp_path / "o").iterdir() if p.name.startswith(".")]


# --- the helper itself (streams.errors.open_regular, read_small), each call guarded against a hang


def _within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``'s result or exception; fails the test if it has not returned in ``seconds``
    (a daemon thread: a call blocked on a FIFO does not keep the test process alive)."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the test
            box["error"] = e

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still blocked after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_read_small_refuses_special_files_and_large_ones(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    os.symlink("/dev/zero", tmp_path / "zero")
    loop("loop")(tmp_path)
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 100)
    (tmp_path / "big").write_bytes(b"x" * 101)
    assert _within(10, lambda: read_small(exact, cap=100)) == b"x" * 100
    cases = {
        "pipe": A_FIFO,
        "zero": ZERO,
        "loop": LOOP,
        "big": "is larger than 100 bytes",
        "missing": "does not exist",
        ".": "is a directory",
    }
    for name, reason in cases.items():
        with pytest.raises(FileRefused) as e:
            _within(10, lambda name=name: read_small(tmp_path / name, cap=100))
        assert e.value.reason == reason and isinstance(e.value, UserError), name
        assert str(e.value) == f"{tmp_path / name} {reason}"
    with pytest.raises(FileRefused) as e:
        read_small(tmp_path / "missing")
    assert e.value.errno == 2  # ENOENT: callers such as a checkpoint take it as "none yet"


def test_open_regular_keeps_the_name_and_checks_the_opened_file(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"line\n")
    with _within(10, lambda: open_regular(p)) as f:
        assert f.name == str(p) and f.read() == b"line\n"
    assert check_regular(p).st_size == 5
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(FileRefused, match="a FIFO"):
        _within(10, lambda: check_regular(tmp_path / "pipe"))


def test_moab_checkpoint_fifo_is_a_user_error_and_missing_is_none(tmp_path: Path) -> None:
    from streams.ship.base import Checkpoint

    assert Checkpoint.load(str(tmp_path / "none.json")) is None
    os.mkfifo(tmp_path / "cp.json")
    with pytest.raises(UserError, match=re.escape(f"checkpoint {tmp_path}/cp.json {A_FIFO}")):
        _within(10, lambda: Checkpoint.load(str(tmp_path / "cp.json")))
    os.symlink("/dev/zero", tmp_path / "zero.json")
    with pytest.raises(UserError, match="a character device"):
        _within(10, lambda: Checkpoint.load(str(tmp_path / "zero.json")))
    Checkpoint("m.log", 1, 2, 3, 4).save(str(tmp_path / "ok.json"))
    assert Checkpoint.load(str(tmp_path / "ok.json")) == Checkpoint("m.log", 1, 2, 3, 4)
