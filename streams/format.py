"""The output policy: one way to write times and numbers in every file drainwatch writes.

* Instants (event times, window starts): ISO 8601 in UTC with ``Z`` and always milliseconds,
  ``2015-03-08T02:00:00.668Z``. Whole seconds keep their ``.000``: one precision per kind.
* Calendar days: ``YYYY-MM-DD`` of the configured zone (``tz`` in the run's summary).
* Numbers: integers as integers; a float with 15 significant digits (``%.15g``: every decimal
  of up to 15 digits survives a double, and the last-bit noise of arithmetic such as
  0.1 x 1140 = 113.99999999999997 is not written), trailing zeros dropped, so an integral value
  has no fraction (``3600``, not ``3600.0``); an unknown value (None, NaN) is the empty field;
  infinities are refused.
* Durations kept as integer milliseconds (drain accounting) are written as exact decimal
  seconds with the trailing zeros dropped (``143988.596``, ``144000``).

* Text: as is, except that a cell starting with ``= + - @`` (a spreadsheet formula) that is not a
  number is written with a leading ``'``.

CSV files are UTF-8, ``,``-separated, LF line ends, header row always present.

:func:`instant_ms` is defined in :mod:`streams.contracts` (the input statistics write their
times with it, and that module imports nothing above it); it is re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from typing import Any

import numpy as np

from streams.contracts import COLUMN_KINDS, Row, Table, instant_ms

__all__ = [
    "FORMATTERS",
    "day",
    "format_rows",
    "instant",
    "instant_ms",
    "number",
    "seconds_from_ms",
    "text",
]


def instant(ts: float | None) -> str:
    """Epoch seconds -> ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (rounded to the millisecond)."""
    if ts is None or (isinstance(ts, float) and math.isnan(ts)):
        return ""
    return instant_ms(round(float(ts) * 1000))


def number(x: Any) -> str:
    """The one number formatter (see the module docstring)."""
    if x is None:
        return ""
    if isinstance(x, bool | np.bool_):
        return "1" if x else "0"
    if isinstance(x, int | np.integer):
        return str(int(x))
    f = float(x)
    if math.isnan(f):
        return ""
    if math.isinf(f):
        raise ValueError(f"infinite value {f} in an output")
    if f.is_integer() and abs(f) < 1e15:
        return str(int(f))
    return format(f, ".15g")


def seconds_from_ms(ms: int | None) -> str:
    """Integer milliseconds -> exact decimal seconds, trailing zeros dropped."""
    if ms is None:
        return ""
    ms = int(ms)
    sign = "-" if ms < 0 else ""
    whole, frac = divmod(abs(ms), 1000)
    return f"{sign}{whole}" if frac == 0 else f"{sign}{whole}.{frac:03d}".rstrip("0")


def day(d: date | str | None) -> str:
    if d is None:
        return ""
    return d if isinstance(d, str) else d.isoformat()


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def text(x: Any) -> str:
    """Text as is, except that a cell a spreadsheet would run as a formula (starting with
    ``= + - @``, tab or CR, and not a number) gets a leading ``'``: a node or user named
    ``=HYPERLINK(...)`` is shown, not executed."""
    if x is None:
        return ""
    s = str(x)
    if s.startswith(_FORMULA_START):
        try:
            float(s)
        except ValueError:
            return "'" + s
    return s


# column kind -> formatter; the kinds are listed in docs/outputs.md
FORMATTERS: dict[str, Callable[[Any], str]] = {
    "text": text,
    "int": number,
    "number": number,
    "seconds_ms": seconds_from_ms,
    "instant": instant,
    "instant_ms": instant_ms,
    "day": day,
}
if FORMATTERS.keys() != COLUMN_KINDS:  # a kind declared in streams.contracts needs its formatter
    raise RuntimeError(f"column kinds without a formatter: {COLUMN_KINDS ^ FORMATTERS.keys()}")


def format_rows(table: Table, rows: Iterable[Row]) -> Iterator[list[str]]:
    """Rows of ``table`` as the text every sink writes: each value through its column's kind."""
    fmts = [FORMATTERS[c.kind] for c in table.columns]
    n = len(fmts)
    for r in rows:
        if len(r) != n:
            raise ValueError(f"{table.file}: row of {len(r)} values for {n} columns")
        yield [f(v) for f, v in zip(fmts, r, strict=True)]
