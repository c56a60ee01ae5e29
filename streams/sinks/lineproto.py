"""InfluxDB line protocol, written directly (docs/influxdb.md).

Every point drainwatch writes is one line ``measurement,tag=v,... field=v,... <ns>``, built here
as text: tags and fields in key order, a tag with an empty value left out, a field that is None
or a non-finite float left out, integers as ``<n>i``, floats in Python's shortest round-trip
form without a trailing ``.0``, strings quoted with ``"`` and ``\\`` escaped; commas, ``=``,
spaces and line breaks in keys and tag values escaped, so no value can break a batch or inject
a point. These are the rules of influxdb-client's ``Point.to_line_protocol``, which
``tests/streams/sinks/test_lineproto.py`` keeps as the reference and checks this module against
on generated points; the text is built directly, without ``Point`` objects, because the live
paths write millions of points (the README's benchmark table has the figures).
Times are nanoseconds since the epoch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

_ESCAPES = {",": r"\,", " ": r"\ ", "\n": r"\n", "\t": r"\t", "\r": r"\r"}
KEY_TABLE = str.maketrans({**_ESCAPES, "=": r"\="})  # keys and tag values
_MEASUREMENT = str.maketrans(_ESCAPES)
STRING_TABLE = str.maketrans({'"': r"\"", "\\": r"\\"})  # field strings
_KEY_SPECIAL = re.compile(r"[,= \n\t\r]")  # the characters KEY_TABLE escapes
_INF = math.inf


def key(name: str) -> str:
    """A tag or field key, escaped."""
    return name.translate(KEY_TABLE)


def tag_value(v: Any) -> str:
    """A tag value, escaped ('' is left out by the caller)."""
    s = str(v)
    if _KEY_SPECIAL.search(s):  # translate is slow: most values need no escape
        s = s.translate(KEY_TABLE)
    return s + " " if s.endswith("\\") else s


def float_text(v: float) -> str | None:
    """A float field's text; None for NaN and infinities (the field is left out)."""
    if v != v or v == _INF or v == -_INF:
        return None
    s = float.__repr__(v)  # numpy's float64 is a float; its own repr names its type
    return s[:-2] if s.endswith(".0") else s


def string_text(v: Any) -> str:
    s = str(v)
    # STRING_TABLE's escapes by two C-level replaces (backslashes first: the quotes' escapes
    # are not escaped again): a tenth of translate's time on a JSON text
    if "\\" in s:
        s = s.replace("\\", "\\\\")
    if '"' in s:
        s = s.replace('"', '\\"')
    return '"' + s + '"'


def field_text(v: Any) -> str | None:
    """Any field value by its type, as the reference client types it (bool before int)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v}i"
    if isinstance(v, float):
        return float_text(v)
    if isinstance(v, str):
        return string_text(v)
    if hasattr(v, "dtype"):  # a numpy scalar
        return field_text(v.item())
    raise TypeError(f"line protocol: a field of type {type(v).__name__} is not supported")


def measurement_prefix(name: str) -> str:
    return name.translate(_MEASUREMENT)


def join(
    prefix: str, tags: Iterable[tuple[str, str]], fields: list[tuple[str, str]], ns: int
) -> str:
    """One line from the escaped measurement, (escaped key, escaped value) tags in key order
    with no empty value, and (escaped key, text) fields in key order; '' without fields (the
    reference client writes nothing for such a point either)."""
    if not fields:
        return ""
    head = prefix + "".join("," + k + "=" + v for k, v in tags)
    return head + " " + ",".join(k + "=" + v for k, v in fields) + " " + str(int(ns))


def line(measurement: str, tags: Mapping[str, Any], fields: Mapping[str, Any], ns: int) -> str:
    """One point from plain values: tags (None or '' left out) and fields typed by their
    Python type (None and non-finite floats left out), at ``ns`` nanoseconds."""
    tag_items = []
    for k, v in sorted(tags.items()):
        if v is None:
            continue
        tv = tag_value(v)
        if tv:
            tag_items.append((key(k), tv))
    field_items = []
    for k, v in sorted(fields.items()):
        fv = field_text(v)
        if fv is not None:
            field_items.append((key(k), fv))
    return join(measurement_prefix(measurement), tag_items, field_items, ns)
