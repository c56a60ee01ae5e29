"""The output policy's formatters (streams/format.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.format import day, instant, instant_ms, number, seconds_from_ms


def test_instants_are_utc_z_with_milliseconds() -> None:
    assert instant_ms(1_425_780_000_668) == "2015-03-08T02:00:00.668Z"
    assert instant(1_425_780_000.0) == "2015-03-08T02:00:00.000Z"
    assert instant(0.0016) == "1970-01-01T00:00:00.002Z"  # rounded to the nearest ms
    assert instant_ms(-1) == "1969-12-31T23:59:59.999Z"
    assert instant(None) == "" and instant(float("nan")) == ""


@given(st.integers(min_value=-(10**12), max_value=10**13))
def test_instant_ms_is_exact(ms: int) -> None:
    s = instant_ms(ms)
    dt0 = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)  # the plain way
    assert s == f"{dt0:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"
    dt = datetime.fromisoformat(s)
    assert dt.tzinfo == UTC
    assert round(dt.timestamp() * 1000) == ms


def test_numbers() -> None:
    assert number(3600) == "3600"
    assert number(3600.0) == "3600"
    assert number(np.int64(7)) == "7"
    assert number(np.float64(0.5)) == "0.5"
    assert number(True) == "1" and number(np.bool_(False)) == "0"
    assert number(0.1 * 1140) == "114"  # 113.99999999999997: last-bit noise not written
    assert number(180.5 / (2 * 86_400) * 100) == "0.104456018518519"
    assert number(None) == "" and number(float("nan")) == ""
    assert number(-0.0) == "0"
    with pytest.raises(ValueError):
        number(float("inf"))


@given(st.floats(min_value=-1e300, max_value=1e300, allow_nan=False))
def test_number_reads_back_within_15_digits(x: float) -> None:
    y = float(number(x))
    assert y == pytest.approx(x, rel=5e-15, abs=0.0) or x == y


@given(st.decimals(min_value=-(10**9), max_value=10**9, places=3, allow_nan=False))
def test_seconds_from_ms_is_exact(d: Decimal) -> None:
    ms = int(d * 1000)
    assert Decimal(seconds_from_ms(ms)) == Decimal(ms) / 1000


def test_seconds_from_ms_drops_trailing_zeros() -> None:
    assert seconds_from_ms(144_000_000) == "144000"
    assert seconds_from_ms(143_988_596) == "143988.596"
    assert seconds_from_ms(300_500) == "300.5"
    assert seconds_from_ms(-1_050) == "-1.05"
    assert seconds_from_ms(None) == ""


def test_day() -> None:
    from datetime import date

    assert day(date(2015, 3, 8)) == "2015-03-08" and day("2015-03-08") == "2015-03-08"


def test_text_cells_that_spreadsheets_would_run_are_neutralised() -> None:
    from streams.format import text

    assert text('=HYPERLINK("http://x","y")') == '\'=HYPERLINK("http://x","y")'
    assert text("@SUM(A1)") == "'@SUM(A1)" and text("+1+2") == "'+1+2"
    assert text("-1") == "-1" and text("-2.5") == "-2.5"  # numbers stay numbers
    assert text("node-01") == "node-01" and text(None) == ""
