"""The error policy: a user error is one line on stderr and exit status 2, never a traceback.

Commands raise :class:`UserError` (bad option, missing or unreadable input, nothing usable in
the input); :func:`streams.cli.main` prints ``drainwatch <command>: <message>`` and returns
:data:`EXIT_USAGE`. Bad *records* are not errors: they are rejected with a reason, counted in the
run's summary and written to the reject sink (``--rejects``; the dead-letter topic when live), and
never stop the run or lose the good records around them.
"""

from __future__ import annotations

from pathlib import Path

EXIT_USAGE = 2  # user error: bad option, missing input, nothing usable
EXIT_INTERRUPTED = 130  # SIGINT: outputs of the interrupted run are not written


class UserError(Exception):
    """A mistake the user can fix; its message is printed as one line."""


def check_inputs(paths: list[str]) -> list[str]:
    """Every input must be a readable regular file (or a directory where one is accepted)."""
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise UserError(f"no such file: {p}")
        if not (path.is_file() or path.is_dir()):
            raise UserError(f"not a regular file: {p}")
        try:
            if path.is_file():
                with open(path, "rb"):
                    pass
        except OSError as e:
            raise UserError(f"cannot read {p}: {e.strerror}") from None
    return paths
