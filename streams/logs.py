"""Logging for every drainwatch command: one handler on the root logger, one line format.

``setup()`` installs the handler (text or JSON lines on stderr); drainwatch's own loggers
(``get("worker")`` -> ``drainwatch.worker``) and Faust's, mode's and aiokafka's all propagate
to it, so a worker's output is one stream in one format:

    text: ``2026-11-26T18:02:06.123Z INFO worker: message``
    json: ``{"time": "2026-11-26T18:02:06.123Z", "level": "INFO", "component": "worker",
            "message": "message"}`` (plus ``"exc"`` with the traceback of an exception)

Two steps run on every line: repeats of one (logger, level, message template) pass at most
once per ``rate_interval`` seconds (a broker outage must not write ten lines a second for
minutes; the next line that passes says how many were held back), and credentials are masked
by :func:`mask` (``scheme://user:pass@``, ``user:pass@host:port``, ``?token=``, Authorization
values), so no secret reaches a log line. Lines printed outside logging (``--print-settings``,
one-line errors) go through the same :func:`mask`.

User errors of the command line (``drainwatch <command>: <message>``, exit 2) are not logging:
streams/cli.py prints them as before.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
# loggers of the libraries the worker and shippers run on: routed through the same handler
THIRD_PARTY = ("faust", "mode", "aiokafka", "kafka")
PREFIX = "drainwatch."
DEFAULT_RATE_INTERVAL = 10.0

_handler: logging.Handler | None = None
_progress_open = False  # a progress line without its newline is on the terminal

# The one masking rule of every line drainwatch prints or logs (:func:`mask`). A URL's userinfo
# runs from its "scheme://" to the last "@" of the URL (a password may hold "/", "?", "#" or "@"
# unencoded): a path with an "@" is masked too, never a password shown. URL ends: white space,
# quotes, angle brackets, or the next "scheme://".
_URL_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>(?:(?!://)[^\s'\"<>`])*)@"
)
# host-list style user:password@host without a scheme (a Kafka bootstrap, a repr of an address),
# at the start or after a separator; the password runs to the last "@" before the next
# separator
_BARE_USERINFO = re.compile(
    r"(?P<pre>^|[\s,;'\"(\[=])(?P<user>[^\s:@/,;'\"()\[\]=]+):(?!//)[^\s'\"<>`,;]*@(?=[\w\[])"
)
# query parameters that carry a secret: token, password, secret, key, signature, auth... (any
# prefix: access_token, client_secret, X-Amz-Signature), and InfluxDB 1.x's p=
_SECRET_KEY = (
    r"p|key|sig|[\w.\-]*?(?:token|passw(?:or)?d|pwd|secret|api[_\-]?key|signature|"
    r"credentials?|auth(?:orization)?)"
)
_QUERY_SECRET = re.compile(rf"(?P<key>[?&;](?:{_SECRET_KEY})=)[^&#\s'\"<>`]*", re.IGNORECASE)
# an Authorization header in a repr or a debug line: its scheme kept, its credential masked
_AUTH_HEADER = re.compile(
    r"(?P<head>\bAuthorization['\"]?\s*[:=]\s*['\"]?(?:Token|Bearer|Basic)\s+)[^\s'\",}]+",
    re.IGNORECASE,
)


def _masked_userinfo(user: str) -> str:
    # user:password keeps a plain user name; a user alone (token-as-user) or anything that
    # cannot be a user name (a path swallowed by an "@" later in the URL) is masked whole
    plain = user and not any(c in user for c in "/?#@")
    return f"{user}:***@" if plain else "***@"


def _mask_url_userinfo(m: re.Match[str]) -> str:
    user, colon, _ = m["info"].partition(":")
    return m["scheme"] + _masked_userinfo(user if colon else "")


def mask(text: str) -> str:
    """``text`` with every credential masked: a URL's userinfo (``http://user:***@host``,
    ``http://***@host`` for a token-as-user), a host list's ``user:***@host:port``, secret
    query parameters (``?token=***``, ``&password=***``) and Authorization header values.
    The one rule for every line drainwatch prints or logs (settings, retries, errors)."""
    if "@" in text:
        text = _URL_USERINFO.sub(_mask_url_userinfo, text)
        text = _BARE_USERINFO.sub(r"\g<pre>\g<user>:***@", text)
    if "=" in text:
        text = _QUERY_SECRET.sub(r"\g<key>***", text)
    if "authorization" in text.lower():
        text = _AUTH_HEADER.sub(r"\g<head>***", text)
    return text


def component(name: str) -> str:
    """The ``component`` field of a line from logger ``name``: drainwatch's loggers without
    their ``drainwatch.`` prefix, any other logger its top-level name (``faust``, ``aiokafka``)."""
    if name.startswith(PREFIX):
        return name[len(PREFIX) :]
    return name.split(".", 1)[0]


def get(component: str) -> logging.Logger:
    """The logger of a drainwatch component (``get("ship.moab")`` -> ``drainwatch.ship.moab``)."""
    return logging.getLogger(PREFIX + component)


def iso_time(created: float) -> str:
    """``created`` (epoch seconds) as ISO 8601 UTC with milliseconds and ``Z``."""
    ms = int(created * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{ms:03d}Z"


class Formatter(logging.Formatter):
    """drainwatch's line format, ``text`` or ``json``; credentials in URLs are masked and a
    rate-limited line says how many repeats were held back."""

    def __init__(self, fmt: str = "text") -> None:
        if fmt not in FORMATS:
            raise ValueError(f"log format {fmt!r} is not one of {', '.join(FORMATS)}")
        super().__init__()
        self.fmt = fmt

    def message(self, record: logging.LogRecord) -> str:
        try:
            msg = record.getMessage()
        except Exception as e:  # a bad %-format must not lose the line
            msg = f"{record.msg!r} {record.args!r} (unformattable: {e})"
        repeated = getattr(record, "repeated", 0)
        if repeated:
            msg = f"{msg} (repeated {repeated} times)"
        return mask(msg)

    def exception(self, record: logging.LogRecord) -> str:
        parts = []
        if record.exc_info:
            parts.append(self.formatException(record.exc_info))
        elif record.exc_text:
            parts.append(record.exc_text)
        if record.stack_info:
            parts.append(self.formatStack(record.stack_info))
        return mask("\n".join(parts))

    def format(self, record: logging.LogRecord) -> str:
        when = iso_time(record.created)
        comp = component(record.name)
        msg = self.message(record)
        exc = self.exception(record)
        if self.fmt == "json":
            doc: dict[str, Any] = {
                "time": when,
                "level": record.levelname,
                "component": comp,
                "message": msg,
            }
            if exc:
                doc["exc"] = exc
            return json.dumps(doc, ensure_ascii=False, default=str)
        line = f"{when} {record.levelname} {comp}: {msg}"
        return f"{line}\n{exc}" if exc else line


class RateLimit(logging.Filter):
    """Lets one (logger, level, message template) through at most once per ``interval``
    seconds; the next one that passes carries the count of those held back
    (``record.repeated``, shown as "(repeated K times)"). ``clock`` is injectable for tests."""

    MAX_KEYS = 4096  # distinct templates remembered; older quiet ones are forgotten first

    def __init__(
        self, interval: float = DEFAULT_RATE_INTERVAL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval, self.clock = interval, clock
        self._seen: dict[tuple[str, int, str], list[Any]] = {}  # key -> [last passed, held]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.interval <= 0:
            return True
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        with self._lock:
            entry = self._seen.get(key)
            if entry is not None and now - entry[0] < self.interval:
                entry[1] += 1
                return False
            held = entry[1] if entry is not None else 0
            self._seen[key] = [now, 0]
            if len(self._seen) > self.MAX_KEYS:
                self._forget(now)
        record.repeated = held
        return True

    def _forget(self, now: float) -> None:
        stale = [k for k, (t, held) in self._seen.items() if now - t >= self.interval]
        for k in stale or list(self._seen)[: len(self._seen) // 2]:
            del self._seen[k]


class StderrHandler(logging.Handler):
    """Writes each line to ``stream``, or to the ``sys.stderr`` of the moment it is written
    (so a test's captured stderr, or a redirected one, gets it)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self.stream = stream
        self._local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            stream = self.stream or sys.stderr
            if getattr(self._local, "busy", False) or stream is None:
                # a stderr that logs (e.g. Faust's stdout redirection) would come back here
                stream = sys.__stderr__
            if stream is None:
                return
            self._local.busy = True
            try:
                _end_progress(stream)
                stream.write(line + "\n")
                stream.flush()
            finally:
                self._local.busy = False
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


def progress(text: str) -> None:
    """A progress line, rewritten in place, on an interactive stderr with text logs; nothing
    otherwise: progress is a terminal display, not a log line (commands log a summary)."""
    global _progress_open
    stream = sys.stderr
    fmt = getattr(_handler.formatter, "fmt", "text") if _handler is not None else "text"
    if stream is None or fmt != "text" or not getattr(stream, "isatty", lambda: False)():
        return
    stream.write("\r" + text)
    stream.flush()
    _progress_open = True


def progress_end() -> None:
    """End a progress line (its newline), if one is shown."""
    if sys.stderr is not None:
        _end_progress(sys.stderr)


def _end_progress(stream: TextIO) -> None:
    global _progress_open
    if _progress_open:
        _progress_open = False
        stream.write("\n")


def _level(level: str | int) -> int:
    if isinstance(level, int):
        return level
    name = level.strip().lower()
    if name not in LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
    return logging.getLevelName(name.upper())  # type: ignore[no-any-return]


def setup(
    level: str = "info",
    fmt: str = "text",
    stream: TextIO | None = None,
    *,
    rate_interval: float = DEFAULT_RATE_INTERVAL,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Configure logging: drainwatch's handler on the root logger at ``level``, lines in
    ``fmt`` (text or json) on ``stream`` (default: the current ``sys.stderr``). Calling it
    again replaces drainwatch's handler; other handlers (e.g. pytest's) are left alone."""
    global _handler
    levelno = _level(level)
    handler = StderrHandler(stream)
    handler.setFormatter(Formatter(fmt))
    handler.addFilter(RateLimit(rate_interval, clock))
    handler._drainwatch = True  # type: ignore[attr-defined]
    root = logging.getLogger()
    for h in list(root.handlers):
        if h is _handler or getattr(h, "_drainwatch", False):
            root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(levelno)
    _handler = handler
    for name in ("drainwatch", *THIRD_PARTY):
        route(name)


def route(name: str) -> None:
    """Send logger ``name`` (and its children) through the root handler only: its own
    handlers removed, its level inherited, propagation on."""
    lg = logging.getLogger(name)
    for h in list(lg.handlers):
        lg.removeHandler(h)
    lg.setLevel(logging.NOTSET)
    lg.propagate = True


def result(component: str, message: str) -> None:
    """A command's result (a shipper's summary at its end): one line in the log format,
    written whatever the log level."""
    logger = get(component)
    record = logger.makeRecord(logger.name, logging.INFO, "(result)", 0, message, (), None)
    h = handler()
    if h is None:
        print(f"{component}: {message}", file=sys.stderr, flush=True)
    else:
        h.handle(record)


def handler() -> logging.Handler | None:
    """The handler ``setup()`` installed (None before)."""
    return _handler


def faust_worker_kwargs() -> dict[str, Any]:
    """Keyword arguments for ``faust.Worker(app, **faust_worker_kwargs())`` after ``setup()``:
    Faust keeps the logging configured here (no handlers or dictConfig of its own, no
    stdout/stderr redirection into a logger, no banner on stdout)."""
    return {"override_logging": False, "redirect_stdouts": False, "quiet": True}


def faust_worker(app: Any, **kwargs: Any) -> Any:
    """``faust.Worker(app, **faust_worker_kwargs(), **kwargs)`` without its terminal spinner,
    so Faust says "Ready" as a log line; call ``setup()`` first."""
    import faust

    worker = faust.Worker(app, **{**faust_worker_kwargs(), **kwargs})
    worker.spinner = None
    return worker


def add_arguments(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """Add ``--log-level`` and ``--log-format`` (unset: the settings' log_level/log_format).
    ``suppress``: leave the attributes out of the namespace when not given (for
    sub-command parsers, so they do not overwrite a value given before the command)."""
    default: Any = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        default=default,
        help="log level (default: setting log_level, info)",
    )
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        default=default,
        help="log line format: text or json, one object per line (default: setting "
        "log_format, text)",
    )
