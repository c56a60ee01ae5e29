"""The `drainwatch` command line: one sub-command per module in streams.commands.

Errors and exit codes follow streams.errors: a user error is one line on stderr and exit 2
(``--debug`` shows the traceback), unusable input exits 3, an I/O failure 1, SIGINT 130, a closed
standard output 141, quietly. Those error lines are the command's answer, not logging.

Every command configures logging once (streams/logs.py) from ``--log-level`` and
``--log-format``, given before the command or after it (``drainwatch worker --log-format json``,
``drainwatch ship moab --log-level debug ...``), else from the settings.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from streams import logs
from streams.config import setup_logging
from streams.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    EXIT_UNUSABLE,
    EXIT_USAGE,
    ConfigError,
    Terminated,
    UnusableInput,
    UserError,
)

# Sub-command modules; each defines register(subparsers) which sets `func` on its parser.
COMMANDS = ("replay", "report", "simulate", "whatif", "worker", "ship", "calibrate")


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``drainwatch replay: --nodes: ...``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def one_line(text: str) -> str:
    """A message as one line: line breaks and bytes that are not UTF-8 (e.g. in a file name)
    shown as escapes, credentials masked (streams.logs.mask)."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return logs.mask(text.replace("\r", "\\r").replace("\n", "\\n"))


def chosen_command(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names, when its global options are well-formed before it."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--config", "--log-level", "--log-format"):
            i += 2
        elif a == "--debug" or a.startswith(("--config=", "--log-level=", "--log-format=")):
            i += 1
        else:
            return a if a in COMMANDS else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; when ``argv`` names a sub-command, only that command's module is loaded
    (the others get a bare parser: their modules take ~30 ms to import, a replay's start-up)."""
    only = chosen_command(argv) if argv is not None else None
    parser = Parser(
        prog="drainwatch",
        description="Scheduler-efficiency analytics for HPC centres (drain time and friends).",
    )
    parser.add_argument("--config", help="TOML settings file (else $DRAINWATCH_CONFIG)")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error instead of one line"
    )
    logs.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        if only is None or name == only:
            importlib.import_module(f"streams.commands.{name}").register(sub)
        else:
            sub.add_parser(name)
    _add_log_arguments(sub)
    return parser


def _add_log_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """``--log-level``/``--log-format`` on every sub-command's parser, at every depth
    (``ship moab``); left out of the namespace when not given, so a global one stands."""
    seen: set[int] = set()
    for p in sub.choices.values():
        if id(p) in seen:  # an alias names the same parser
            continue
        seen.add(id(p))
        logs.add_arguments(p, suppress=True)
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                _add_log_arguments(action)


class OutputFailed(OSError):
    """Standard output could not be written (not a closed pipe: e.g. a full disk, exit 1)."""


class _Guarded:
    """``sys.stdout``/``sys.stderr`` while a command runs. A write or flush that fails (a full
    disk, ``2>/dev/full``) points the descriptor at /dev/null, so that nothing fails again and
    the interpreter's last flush cannot turn the exit status into 120; then standard error
    (``quiet``: messages, progress, logs) goes on as if written, and standard output raises
    :class:`OutputFailed` (a closed pipe stays a BrokenPipeError: exit 141)."""

    def __init__(self, inner: TextIO, quiet: bool) -> None:
        self._inner, self._quiet = inner, quiet

    def write(self, text: str) -> int:
        try:
            return self._inner.write(text)
        except OSError as e:
            self._failed(e)
            return len(text)

    def flush(self) -> None:
        try:
            self._inner.flush()
        except OSError as e:
            self._failed(e)

    def _failed(self, e: OSError) -> None:
        if isinstance(e, BrokenPipeError) and not self._quiet:
            raise e
        _silence(self._inner)
        if not self._quiet:
            raise OutputFailed(e.errno, e.strerror) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _silence(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at /dev/null and drop what it holds."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
        stream.flush()  # what the failed write left in the buffer goes to /dev/null
    except (OSError, ValueError):  # no descriptor (an in-memory stream), or closed
        pass


def _settle(stream: TextIO | None) -> None:
    """Flush ``stream`` now; if it cannot be written, silence it: the interpreter's own flush
    at exit would print "Exception ignored" and exit 120 over the command's status."""
    if stream is None:
        return
    try:
        stream.flush()
    except (OSError, ValueError):
        _silence(stream)


# Commands that write a set of outputs: SIGTERM and SIGHUP stop them as Ctrl-C does. The worker
# and the shippers install their own stop handling.
WRITERS = ("replay", "report", "simulate", "whatif", "calibrate")


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise Terminated(signum)


def _stop_on_signals() -> None:
    """SIGTERM and SIGHUP stop a command as Ctrl-C does (its abort runs, the previous outputs
    stay); only the main thread can set handlers."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _raise_terminated)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status follows streams.errors. Standard output and standard
    error are guarded (:class:`_Guarded`) for its length: a standard error that cannot be
    written never changes the status (a successful run exits 0), a standard output that cannot
    be written is an I/O error (exit 1, one line)."""
    out, err = sys.stdout, sys.stderr
    if out is not None:
        sys.stdout = _Guarded(out, quiet=False)
    if err is not None:
        sys.stderr = _Guarded(err, quiet=True)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err
        _settle(out)
        _settle(err)


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)  # imports the command: a Ctrl-C can come while it does
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("drainwatch: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

    where = f"drainwatch {args.command}"
    setup_logging(args)
    if args.command in WRITERS:
        _stop_on_signals()
    try:
        rc = args.func(args)
        sys.stdout.flush()  # a write error here is the command's, not the interpreter's at exit
    except (UserError, ConfigError) as e:
        if args.debug:
            raise
        print(f"{where}: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except UnusableInput as e:
        print(f"{where}: {one_line(str(e))}", file=sys.stderr)
        return EXIT_UNUSABLE
    except Terminated as e:
        name = signal.Signals(e.signum).name
        print(f"{where}: stopped by {name}; the previous outputs are unchanged", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:
        print(f"{where}: interrupted; the previous outputs are unchanged", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of stdout went away: no message, and no second error when Python flushes
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    except OutputFailed as e:
        if args.debug:
            raise
        print(f"{where}: cannot write standard output: {e.strerror or e}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as e:
        if args.debug:
            raise
        name = f"{e.filename}: " if e.filename else ""
        why = one_line(f"{name}{e.strerror or e}")
        if getattr(e, "restored", True):
            print(f"{where}: {why}; the previous outputs are unchanged", file=sys.stderr)
        else:  # a commit that could not put every old file back (streams/atomic.py)
            detail = one_line(getattr(e, "detail", ""))
            print(f"{where}: {why}; the outputs are a mix of old and new{detail}", file=sys.stderr)
        return EXIT_FAILED
    except MemoryError:
        if args.debug:
            raise
        print(f"{where}: out of memory; the previous outputs are unchanged", file=sys.stderr)
        return EXIT_FAILED
    except Exception as e:  # a bug: still one line, the traceback with --debug
        if args.debug:
            raise
        print(
            f"{where}: internal error ({type(e).__name__}: {one_line(str(e))}); run with "
            "--debug for the traceback",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
