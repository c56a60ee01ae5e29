"""The error policy: a user error is one line on stderr and exit status 2, never a traceback.

Exit codes of every command:

====  ==========================================================================================
0     success
1     the run failed for a reason outside the user's control (an I/O error such as a full disk);
      the previous outputs are left as they were
2     user error: a bad option or setting, an input that is missing, unreadable or not a file,
      an output that cannot be written; nothing was written
3     the input was read but is not usable: no record, or more than ``--max-reject-share`` of the
      records rejected; the outputs (summary, ``--rejects``) are written so the cause can be seen
75    a service it needs is away (sysexits EX_TEMPFAIL): Kafka or InfluxDB unreachable for
      ``connect_timeout``; a supervisor restarts it (``worker``, ``ship``)
130   interrupted (SIGINT); the previous outputs are left as they were
141   the reader of standard output went away (closed pipe); ends quietly
====  ==========================================================================================

Commands raise :class:`UserError`; :func:`streams.cli.main` prints ``drainwatch <command>:
<message>`` (``--debug`` shows the traceback instead). Bad *records* are not errors: they are
rejected with a reason, counted in the run's summary and written to the reject sink
(``--rejects``; the dead-letter topic when live), and never stop the run or lose the good records
around them.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

EXIT_FAILED = 1  # I/O error outside the user's control
EXIT_USAGE = 2  # user error: bad option, missing input, unwritable output
EXIT_UNUSABLE = 3  # input read, but nothing usable or too much of it rejected
EXIT_TEMPFAIL = 75  # Kafka or InfluxDB away: a restart cures it
EXIT_INTERRUPTED = 130  # SIGINT: outputs of the interrupted run are not written
EXIT_PIPE = 141  # stdout closed by its reader


class UserError(Exception):
    """A mistake the user can fix; its message is printed as one line."""


class UnusableInput(Exception):
    """The input was read but is not usable (exit 3); the run's outputs were written."""


def check_inputs(paths: list[str], directories: bool = False) -> list[str]:
    """Every input must exist and be a readable regular file (or a directory where accepted),
    and be given once (a glob and a name, or a link, can name one file twice)."""
    seen: dict[tuple[int, int], str] = {}
    for p in paths:
        if not p:
            raise UserError("an input path is empty")
        path = Path(p)
        if not path.exists():
            raise UserError(f"no such file: {p}")
        if path.is_dir():
            if not directories:
                raise UserError(f"{p} is a directory: give the log files in it")
        elif not path.is_file():
            raise UserError(f"not a regular file: {p}")
        else:
            try:
                with open(path, "rb"):
                    pass
            except OSError as e:
                raise UserError(f"cannot read {p}: {e.strerror}") from None
        st = path.stat()
        first = seen.get((st.st_dev, st.st_ino))
        if first is not None:
            same = "given twice" if first == p else f"the same file as {first}"
            raise UserError(f"{p} is {same}: give each input once")
        seen[(st.st_dev, st.st_ino)] = p
    return paths


def _nearest_existing(path: Path) -> Path:
    return path if path.exists() else next(p for p in path.parents if p.exists())


def _check_writable(option: str, value: str, parent: Path) -> None:
    """``parent`` is a directory this process can create files in: tried, not only asked
    (``os.access`` says yes to root on a read-only file system or in /proc)."""
    if not parent.is_dir():
        raise UserError(f"{option} {value}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{option} {value}: {parent} is not writable")
    try:
        probe = tempfile.mkdtemp(prefix=".drainwatch-probe-", dir=parent)
    except OSError as e:
        raise UserError(f"{option} {value}: {parent} is not writable ({e.strerror})") from None
    os.rmdir(probe)


def check_output_dir(out: str) -> None:
    """``out`` is (or can be created as) a directory this process can write into."""
    if not out:
        raise UserError("--out is empty: give an output directory")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UserError(f"--out {out} is a file, not a directory")
    _check_writable("--out", out, _nearest_existing(path))


def check_output_file(option: str, value: str, inputs: Sequence[str] = ()) -> None:
    """A file output (e.g. ``--rejects``) can be created or replaced: it is no directory, no
    device or FIFO (which the atomic rename would replace) and none of ``inputs``."""
    if not value:
        raise UserError(f"{option} is empty: give a file name")
    path = Path(value)
    if path.is_dir():
        raise UserError(f"{option} {value} is a directory")
    if path.exists():
        if not path.is_file():
            raise UserError(f"{option} {value} is not a regular file")
        for i in inputs:
            if Path(i).exists() and path.samefile(i):
                raise UserError(f"{option} {value} is one of the inputs: it would be replaced")
    _check_writable(option, value, _nearest_existing(path.parent))


def check_tz(tz: str) -> str:
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(
            f"--tz {tz!r} is not an IANA time zone (e.g. UTC, America/Chicago)"
        ) from None
    return tz


# argparse option types: a bad value is reported by the parser as one line, exit 2


# Without an explicit upper bound: no count (nodes, runs, MB) means more than a 32-bit integer and
# no time, size or rate more than 1e12 (s -> ms stays far inside int64; JSON takes it)
MAX_INT = 2**31 - 1
MAX_FLOAT = 1e12


def option_type(
    kind: Callable[[str], Any], lo: float, lo_ok: bool, hi: float | None = None
) -> Callable[[str], Any]:
    """An argparse type: ``kind`` (int or float) above ``lo`` (or at it, ``lo_ok``), at most
    ``hi`` (default :data:`MAX_INT` / :data:`MAX_FLOAT`), finite."""
    top = hi if hi is not None else (MAX_INT if kind is int else MAX_FLOAT)

    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if kind is int else 'a number'}"
            ) from None
        if not math.isfinite(v) or (v < lo if lo_ok else v <= lo) or v > top:
            bound = f">= {lo:g}" if lo_ok else f"> {lo:g}"
            most = f"{top:g}" if kind is float else f"{top}"
            raise argparse.ArgumentTypeError(
                f"{text!r} is out of range (must be {bound} and <= {most})"
            )
        return v

    parse.__name__ = kind.__name__
    return parse


positive_int = option_type(int, 0, False)
non_negative_int = option_type(int, 0, True)
positive_float = option_type(float, 0.0, False)
non_negative_float = option_type(float, 0.0, True)
fraction = option_type(float, 0.0, False, 1.0)  # (0, 1]


def instant_ms_arg(text: str) -> int:
    """An ISO 8601 date or time (UTC when it has no offset) -> epoch milliseconds."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date or time (e.g. 2015-03-08 or 2015-03-08T06:00Z)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return round(dt.timestamp() * 1000)


class ConfigError(ValueError):
    """A setting is unknown or has a bad value; ``key`` names it (env var or TOML key).
    Raised by :mod:`streams.config`; defined here so the CLI can catch it without loading the
    settings module for commands that do not read settings."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


def error_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one line: its type and the first line of its message, at most
    ``limit`` characters (a dead letter's and a log line's reason)."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return (text.splitlines() or [""])[0][:limit]


class Poison(Exception):
    """A stage raised while it stepped ``suspects`` (records of the message being applied; one
    of them, at least, makes it raise). ``stage`` names it, ``cause`` is its error. The live
    runner rolls the family back and isolates the record (streams/live/runner.py)."""

    def __init__(self, stage: str, suspects: Sequence[Any], cause: BaseException) -> None:
        super().__init__(f"{stage}: {error_line(cause)}")
        self.stage, self.suspects, self.cause = stage, list(suspects), cause
