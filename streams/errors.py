"""The error policy: a user error is one line on stderr and exit status 2, never a traceback.

Exit codes of every command:

====  ==========================================================================================
0     success
1     the run failed for a reason outside the user's control (an I/O error such as a full disk,
      also under standard output: ``--print-settings > /dev/full``); the previous outputs are
      left as they were
2     user error: a bad option or setting, an input that is missing, unreadable or not a file,
      an output that cannot be written; nothing was written. Every file read (inputs and the
      members of an input directory, ``--config``, secret files, checkpoints) must be a regular
      file, small ones of bounded size (:func:`open_regular`, :func:`read_small`): a FIFO, a
      device, a symlink loop
      are user errors
3     the input was read but is not usable: no record, or more than ``--max-reject-share`` of the
      records rejected; the outputs (summary, ``--rejects``) are written so the cause can be seen
75    a service it needs is away (sysexits EX_TEMPFAIL): Kafka or InfluxDB unreachable for
      ``connect_timeout``; a supervisor restarts it (``worker``, ``ship``)
129   stopped by SIGHUP, 143 by SIGTERM (:class:`Terminated`): as SIGINT
130   interrupted (SIGINT); the previous outputs are left as they were
141   the reader of standard output went away (closed pipe); ends quietly
====  ==========================================================================================

Commands raise :class:`UserError`; :func:`streams.cli.main` prints ``drainwatch <command>:
<message>`` (``--debug`` shows the traceback instead). Bad *records* are not errors: they are
rejected with a reason, counted in the run's summary and written to the reject sink
(``--rejects``; the dead-letter topic when live), and never stop the run or lose the good records
around them.

Standard error is best effort: a message, progress or log line that cannot be written there
(``2>/dev/full``) is dropped and never changes the exit status; a successful run exits 0.
"""

from __future__ import annotations

import argparse
import errno
import io
import math
import os
import stat
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
    and be given once (a glob and a name, or a link, can name one file twice). A FIFO, a
    device or a socket is refused (it would block or never end), a symlink loop is named as
    one; each file is opened as :func:`open_regular` opens it."""
    seen: dict[tuple[int, int], str] = {}
    for p in paths:
        if not p:
            raise UserError("an input path is empty")
        try:
            st = os.stat(p)
        except OSError as e:
            raise _missing_input(p, e) from None
        if stat.S_ISDIR(st.st_mode):
            if not directories:
                raise UserError(f"{p} is a directory: give the log files in it")
        elif not stat.S_ISREG(st.st_mode):
            raise UserError(f"not a regular file: {p} ({kind_of(st.st_mode)})")
        else:
            try:
                open_regular(p).close()
            except FileRefused as e:
                if e.errno is None:  # swapped for a special file since the stat
                    raise
                raise _missing_input(p, OSError(e.errno, os.strerror(e.errno))) from None
        first = seen.get((st.st_dev, st.st_ino))
        if first is not None:
            same = "given twice" if first == p else f"the same file as {first}"
            raise UserError(f"{p} is {same}: give each input once")
        seen[(st.st_dev, st.st_ino)] = p
    return paths


def _missing_input(p: str, e: OSError) -> OSError | UserError:
    """An input's stat or open error as a user error (an I/O error stays an OSError)."""
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return UserError(f"no such file: {p}")
    if e.errno == errno.ELOOP:
        return UserError(f"symlink loop: {p} (too many levels of symbolic links)")
    if e.errno in (errno.EACCES, errno.EPERM, errno.ENAMETOOLONG, errno.ENXIO, errno.ENODEV):
        return UserError(f"cannot read {p}: {e.strerror}")
    return e


# --- reading a file: only a regular one, a small one only up to its cap ----------------------
#
# Every file drainwatch reads goes through here (settings file, secret files, inputs and the
# members of an input directory, the Moab shipper's checkpoint). A FIFO would block the open or
# the read forever, a device such as /dev/zero never ends, a directory is not a file: each is
# refused as a user error (FileRefused: one line, exit 2) before a byte is read. The path is
# stat'ed first (a device is not even opened), then opened with O_NONBLOCK (a FIFO's open does
# not wait for a writer) and the *opened* descriptor is checked again with fstat (a path swapped
# between the two is still caught). Symbolic links are followed (a mounted secret is often
# one); a loop is named as such. Small files (read_small) are also refused when larger than
# their cap; at most cap + 1 bytes are read, whatever the file claims its size is.

SMALL_FILE_CAP = 1 << 20  # a settings file, a checkpoint: 1 MiB
SECRET_FILE_CAP = 64 << 10  # a token or password file: 64 KiB

# open/stat errors that describe the path the user gave (exit 2); others (EIO, EMFILE,
# ENOMEM, ...) stay OSErrors: outside the user's control (exit 1)
_USER_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.ELOOP,
        errno.EACCES,
        errno.EPERM,
        errno.ENAMETOOLONG,
        errno.EISDIR,
        errno.ENXIO,
        errno.ENODEV,
    }
)
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


class FileRefused(UserError):
    """``path`` cannot be read as a regular file; ``reason`` reads after its name ("does not
    exist", "is not a regular file (a FIFO)", "is larger than 1 MiB", ...); ``errno`` is set
    when an open or stat error was the cause (``errno.ENOENT``: it does not exist)."""

    def __init__(self, path: str, reason: str, err: int | None = None) -> None:
        super().__init__(f"{path} {reason}")
        self.path, self.reason, self.errno = path, reason, err


def kind_of(mode: int) -> str:
    """What a non-regular file is, for a message ("a FIFO", "a character device", ...)."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def why_not(e: OSError) -> str:
    """An open or stat error as the reason after a path's name."""
    if e.errno == errno.ENOENT:
        return "does not exist"
    if e.errno == errno.ENOTDIR:
        return "does not exist (a part of its path is not a directory)"
    if e.errno == errno.ELOOP:
        return "is a symlink loop (too many levels of symbolic links)"
    if e.errno == errno.EISDIR:
        return "is a directory"
    return f"cannot be read: {e.strerror or e}"


def _refuse_mode(path: str, mode: int) -> FileRefused:
    if stat.S_ISDIR(mode):
        return FileRefused(path, "is a directory", errno.EISDIR)
    return FileRefused(path, f"is not a regular file ({kind_of(mode)})")


def _size(cap: int) -> str:
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if cap >= n and cap % n == 0:
            return f"{cap // n} {unit}"
    return f"{cap} bytes"


def check_regular(path: str | os.PathLike[str]) -> os.stat_result:
    """The stat of ``path`` (links followed) if it is a regular file, else :class:`FileRefused`
    (nothing is opened: for checking the inputs of a run before any is read)."""
    name = os.fsdecode(path)
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno not in _USER_ERRNOS:
            raise
        raise FileRefused(name, why_not(e), e.errno) from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse_mode(name, st.st_mode)
    return st


def open_regular(path: str | os.PathLike[str]) -> io.BufferedReader:
    """``path`` opened for buffered binary reading if it is a regular file, else
    :class:`FileRefused`. Checked by ``stat`` before the open (a device is not opened) and by
    ``fstat`` of the opened descriptor (no race); a FIFO's open does not block."""
    name = os.fsdecode(path)
    check_regular(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        if e.errno not in _USER_ERRNOS:
            raise
        raise FileRefused(name, why_not(e), e.errno) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since the stat
            raise _refuse_mode(name, st.st_mode)
        os.set_blocking(fd, True)
        # the descriptor checked, under the path's name (gzip and messages read ``f.name``)
        return open(path, "rb", opener=lambda _path, _flags: fd)  # noqa: SIM115
    except BaseException:
        os.close(fd)
        raise


def read_small(path: str | os.PathLike[str], cap: int = SMALL_FILE_CAP) -> bytes:
    """The bytes of a small regular file (:func:`open_regular`), refused with
    :class:`FileRefused` when larger than ``cap``; at most ``cap + 1`` bytes are read."""
    with open_regular(path) as f:
        too_big = FileRefused(os.fsdecode(path), f"is larger than {_size(cap)}")
        if os.fstat(f.fileno()).st_size > cap:
            raise too_big
        data = f.read(cap + 1)
    if len(data) > cap:
        raise too_big
    return data


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


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command runs and handled like Ctrl-C (its run's abort
    leaves the previous outputs); exit ``128 + signum``. A command with its own stop handling
    (``worker``, ``ship``) installs its handlers over these."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
