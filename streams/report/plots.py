"""Plots of the report as inline SVG (matplotlib, Agg, no display): each function takes plain
arrays and returns one ``<svg>`` element that scales to the page width, text kept as text."""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# one palette for the whole report (colour-blind safe, Okabe-Ito)
BLUE, ORANGE, GREEN, RED, PURPLE, GREY = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#7f7f7f",
)
CYCLE = [BLUE, ORANGE, GREEN, RED, PURPLE, "#56B4E9", "#F0E442", GREY]
MAX_POINTS = 4000  # points of one kind in a scatter plot (a random sample beyond)
MAX_LINE = 3000  # points of a line (the highest and lowest of each bin beyond: see thin)
WIDTH = 9.0  # inches at 72 pt: the SVG's viewBox; the page scales it
_ids = itertools.count()
_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.prop_cycle": cycler(color=CYCLE),
    "legend.frameon": False,
    "figure.dpi": 72.0,
}


matplotlib.style.use(_STYLE)  # the report is this process's only plotting


def _figure(height: float = 3.0, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(WIDTH, height), layout="constrained")
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element: ids unique in the page, no fixed size."""
    buf = io.StringIO()
    with plt.rc_context({"svg.hashsalt": f"dw{next(_ids)}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # the root keeps its viewBox; width/height in pt would fix its size on the page
    head, rest = text.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head, count=2)
    return f'{head} role="img" preserveAspectRatio="xMidYMid meet">{rest}'


def _x(times: Sequence[datetime]) -> np.ndarray:
    """Times as matplotlib date numbers (days since its epoch)."""
    return np.asarray(mdates.date2num(list(times)), np.float64)


def thin(x: np.ndarray, *ys: np.ndarray, limit: int = 0) -> tuple[np.ndarray, ...]:
    """At most about ``limit`` (default MAX_LINE) points of a line: per bin of consecutive
    points the highest and the lowest of the first series are kept (peaks survive: a hot
    minute, a drain spike), the other series at the same points."""
    limit = limit or MAX_LINE
    n = len(x)
    if n <= limit:
        return (x, *ys)
    k = math.ceil(n / (limit // 2))
    rows = math.ceil(n / k)
    y0 = np.full(rows * k, np.nan)
    y0[:n] = np.nan_to_num(ys[0], nan=0.0)
    grid = y0.reshape(rows, k)
    filled = np.where(np.isnan(grid), -np.inf, grid)
    hi = np.argmax(filled, axis=1)
    lo = np.argmin(np.where(np.isnan(grid), np.inf, grid), axis=1)
    base = np.arange(rows) * k
    keep = np.unique(np.concatenate([base + hi, base + lo]))
    keep = keep[keep < n]
    return (x[keep], *(y[keep] for y in ys))


def _time_axis(ax: Axes) -> None:
    loc = mdates.AutoDateLocator(minticks=4, maxticks=10)
    ax.xaxis.set_major_locator(loc)
    fmt = mdates.ConciseDateFormatter(loc)
    # the offset under the axis names the zone: every time of the report is UTC
    fmt.offset_formats = [
        "UTC",
        "%Y UTC",
        "%Y-%b UTC",
        "%Y-%b-%d UTC",
        "%Y-%b-%d UTC",
        "%Y-%b-%d %H:%M UTC",
    ]
    ax.xaxis.set_major_formatter(fmt)


def drain_pct(
    hours: Sequence[datetime],
    static: np.ndarray,
    dynamic: np.ndarray,
    short: np.ndarray,
) -> str:
    """Hourly drain % on both bases; hours whose basis is short are marked."""
    fig, (ax,) = _figure(3.0)
    x = _x(hours)
    if short.any():
        ax.scatter(x[short], static[short], color=RED, s=14, zorder=3, label="short basis (< 95 %)")
    x, static, dynamic = thin(x, static, dynamic)
    ax.plot(x, static, color=BLUE, lw=1.2, label="static basis (configured nodes)")
    ax.plot(x, dynamic, color=ORANGE, lw=1.0, ls="--", label="dynamic basis (non-Down)")
    ax.set_ylabel("drain % of node-time")
    ax.set_ylim(bottom=0)
    _time_axis(ax)
    ax.legend(loc="upper left", ncols=3)
    return to_svg(fig)


def _days(ax: Axes, days: Sequence[str]) -> np.ndarray:
    """Calendar days (``YYYY-MM-DD``) as bar centres on a date axis: each day named below its
    bar for up to two weeks, else the axis's own date ticks (a year of days stays readable)."""
    x = np.asarray(mdates.date2num([date.fromisoformat(d) for d in days]), np.float64) + 0.5
    if len(days) <= 14:
        ax.set_xticks(x, list(days))
    else:
        loc = mdates.AutoDateLocator(minticks=4, maxticks=10)
        ax.xaxis.set_major_locator(loc)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))
    return x


def stacked_bar(days: Sequence[str], parts: dict[str, np.ndarray], ylabel: str) -> str:
    """One stacked bar per day, one colour per part."""
    fig, (ax,) = _figure(2.8)
    x = _days(ax, days)
    bottom = np.zeros(len(days))
    colours = {"Drain": RED, "Idle (unallocated)": "#56B4E9", "Down": GREY}
    for i, (name, values) in enumerate(parts.items()):
        colour = colours.get(name, GREEN if name.startswith("other") else CYCLE[i % 8])
        ax.bar(x, values, 0.8, bottom=bottom, label=name, color=colour)
        bottom += values
    ax.set_ylabel(ylabel)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="x", visible=False)
    return to_svg(fig)


def bars(labels: Sequence[str], values: np.ndarray, ylabel: str, colour: str = BLUE) -> str:
    fig, (ax,) = _figure(2.6)
    ax.bar(labels, values, color=colour)
    ax.set_ylabel(ylabel)
    ax.grid(axis="x", visible=False)
    return to_svg(fig)


def scatter_loglog(
    x: np.ndarray,
    y: np.ndarray,
    xlabel: str,
    ylabel: str,
    highlight: np.ndarray | None = None,
    highlight_label: str = "",
    diagonal: str = "",
) -> str:
    """A log-log scatter; ``highlight`` marks some points in red; ``diagonal`` (its label)
    draws y = x."""
    fig, (ax,) = _figure(3.2)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    hi = np.zeros_like(ok) if highlight is None else highlight.astype(bool)
    for mask in (ok & ~hi, ok & hi):  # at most MAX_POINTS of each kind drawn: a page, not a dump
        idx = np.flatnonzero(mask)
        if len(idx) > MAX_POINTS:
            keep = np.random.default_rng(0).choice(idx, MAX_POINTS, replace=False)
            ok[np.setdiff1d(idx, keep)] = False
    ax.scatter(x[ok & ~hi], y[ok & ~hi], s=12, color=BLUE, alpha=0.6, lw=0)
    if hi.any():
        ax.scatter(x[ok & hi], y[ok & hi], s=28, color=RED, marker="D", label=highlight_label)
        ax.legend(loc="upper left")
    ax.set_xscale("log")
    ax.set_yscale("log")
    if diagonal and ok.any():
        lo = float(min(x[ok].min(), y[ok].min()))
        hi_ = float(max(x[ok].max(), y[ok].max()))
        ax.plot([lo, hi_], [lo, hi_], color=GREY, lw=0.8, ls=":", label=diagonal)
        ax.legend(loc="upper left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return to_svg(fig)


def time_lines(
    series: Mapping[str, tuple[Sequence[datetime], np.ndarray]],
    ylabel: str,
    threshold: float | None = None,
    threshold_label: str = "",
    second: tuple[str, Sequence[datetime], np.ndarray, str] | None = None,
    steps: bool = False,
) -> str:
    """Lines over time, one per series; an optional horizontal threshold; ``second`` is a
    panel below (title, times, values, y label) sharing the time axis."""
    fig = Figure(figsize=(WIDTH, 4.6 if second else 3.0), layout="constrained")
    if second:
        ax, ax2 = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    else:
        ax, ax2 = fig.add_subplot(1, 1, 1), None
    for name, (t, v) in series.items():
        xs, vs = thin(_x(t), np.asarray(v, np.float64))
        if steps:
            ax.step(xs, vs, where="post", lw=1.1, label=name)
        else:
            ax.plot(xs, vs, lw=1.1, label=name)
    if threshold is not None:
        ax.axhline(threshold, color=RED, lw=1.0, ls="--", label=threshold_label)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    if series or threshold is not None:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if ax2 is not None and second is not None:
        title, t2, v2, y2 = second
        x2, v2 = thin(_x(t2), v2)
        ax2.fill_between(x2, v2, step="post", color=PURPLE, alpha=0.5, lw=0)
        ax2.step(x2, v2, where="post", color=PURPLE, lw=0.8, label=title)
        ax2.set_ylabel(y2)
        ax2.set_ylim(bottom=0)
        ax2.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
        _time_axis(ax2)
    else:
        _time_axis(ax)
    return to_svg(fig)


def dfs_load(
    minutes: Sequence[datetime],
    write: np.ndarray,
    read: np.ndarray,
    threshold: float | None,
    unit: str,
    episodes: Sequence[tuple[datetime, datetime]],
) -> str:
    """DFS write (and read) speed per minute, the hot-zone threshold and its episodes shaded."""
    fig, (ax,) = _figure(3.0)
    for start, end in episodes:
        ax.axvspan(
            float(mdates.date2num(start)), float(mdates.date2num(end)), color=RED, alpha=0.15, lw=0
        )
    x, write, read = thin(_x(minutes), write, read)
    ax.plot(x, write, color=BLUE, lw=0.9, label="write")
    ax.plot(x, read, color=GREEN, lw=0.7, alpha=0.8, label="read")
    if threshold is not None:
        ax.axhline(threshold, color=RED, lw=1.0, ls="--", label=f"hot zone {threshold:.4g} {unit}")
    ax.set_ylabel(f"DFS speed, {unit}")
    ax.set_ylim(bottom=0)
    _time_axis(ax)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return to_svg(fig)


def histograms(panels: Sequence[tuple[np.ndarray, str, float | None]]) -> str:
    """Side-by-side histograms: (values, x label, a reference line or None)."""
    fig, axes = _figure(2.6, ncols=len(panels))
    for ax, (values, xlabel, ref) in zip(axes, panels, strict=True):
        v = values[np.isfinite(values)]
        hi = max(1.0, float(v.max()) * 1.02) if len(v) else 1.0  # ratios: 0 to 1 at least
        if len(v):
            ax.hist(v, bins=np.linspace(0.0, hi, 21).tolist(), color=BLUE, alpha=0.85)
        ax.set_xlim(0.0, hi)
        if ref is not None:
            ax.axvline(ref, color=RED, lw=1.0, ls="--")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("jobs")
        ax.grid(axis="x", visible=False)
    return to_svg(fig)


def grouped_bars(
    days: Sequence[str],
    groups: dict[str, np.ndarray],
    ylabel: str,
    goal: float | None = None,
    goal_label: str = "",
) -> str:
    """Bars side by side per day (e.g. CUP40 and the modified CUP), a goal line."""
    fig, (ax,) = _figure(2.8)
    x = _days(ax, days)
    width = 0.8 / max(1, len(groups))
    for i, (name, values) in enumerate(groups.items()):
        ax.bar(
            x + (i - (len(groups) - 1) / 2) * width,
            np.nan_to_num(values),
            width,
            label=name,
            color=CYCLE[i % len(CYCLE)],
        )
    if goal is not None:
        ax.axhline(goal, color=RED, lw=1.0, ls="--", label=goal_label)
    ax.set_ylabel(ylabel)
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return to_svg(fig)
