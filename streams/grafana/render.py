"""Dashboards as PNG images (matplotlib, Agg): each panel drawn from the data frames Grafana's
``/api/ds/query`` returned for its queries, laid out on the dashboard's 24-column grid, so
people without Grafana see what it shows (docs/dashboards/)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Result = dict[str, Any]  # one refId's answer: {"frames": [...], "status": ...}


def frame_name(frame: dict[str, Any]) -> str:
    field = frame["schema"]["fields"][-1]
    return str((field.get("config") or {}).get("displayNameFromDS") or frame["schema"]["name"])


def frames(result: Result) -> list[dict[str, Any]]:
    """The frames of one answer that hold values."""
    return [f for f in result.get("frames", []) if f["data"]["values"] and f["data"]["values"][0]]


def table_rows(result: Result) -> list[dict[str, Any]]:
    """Rows as a table panel shows them. Grafana 10.0's backend answers InfluxQL with one
    (time, value) frame per column and series, named measurement.column, tags as labels; the
    rows of one series' column frames line up (per-job points may share a millisecond)."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for f in frames(result):
        times, *cols = f["data"]["values"]
        for fl, vals in zip(f["schema"]["fields"][1:], cols, strict=True):
            labels = fl.get("labels") or {}
            column = frame_name(f).split(" {")[0].split(".", 1)[-1]
            for i, (t, v) in enumerate(zip(times, vals, strict=True)):
                key = (i, *sorted(labels.items()))
                rows.setdefault(key, {"time": t, **labels})[column] = v
    return list(rows.values())


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)[:24]


def _when(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%MZ")


def _threshold(panel: dict[str, Any]) -> float | None:
    steps = panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
    values = [s["value"] for s in steps if s.get("value") is not None]
    return float(values[0]) if values else None


def _draw(ax: Any, panel: dict[str, Any], results: dict[str, Result]) -> None:
    from matplotlib.dates import DateFormatter

    kind, unit = panel["type"], panel["fieldConfig"]["defaults"].get("unit", "")
    all_frames = [f for r in results.values() for f in frames(r)]
    ax.set_title(panel["title"], fontsize=9, loc="left")
    if not all_frames:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    if kind == "timeseries":
        custom = panel["fieldConfig"]["defaults"]["custom"]
        style = custom.get("drawStyle")
        for f in all_frames:
            t = [datetime.fromtimestamp(ms / 1000, UTC) for ms in f["data"]["values"][0]]
            y = [float("nan") if v is None else v for v in f["data"]["values"][-1]]
            if style == "points":
                ax.plot(t, y, ".", markersize=3, label=frame_name(f))
            elif len(t) < 3:  # a line of one point is invisible
                ax.plot(t, y, "o-", markersize=4, linewidth=1, label=frame_name(f))
            else:
                ax.plot(
                    t,
                    y,
                    drawstyle="steps-post" if style == "bars" else "default",
                    linewidth=1,
                    label=frame_name(f),
                )
        limit = _threshold(panel)
        if limit is not None:
            ax.axhline(limit, color="red", linestyle="--", linewidth=1, label=f"alert {limit:g}")
        ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6, loc="upper left", ncol=2)
        ax.xaxis.set_major_formatter(DateFormatter("%m-%d %H:%M"))
        for label in ax.get_xticklabels():
            label.set_rotation(20)
            label.set_horizontalalignment("right")
    elif kind == "histogram":
        values = [v for f in all_frames for v in f["data"]["values"][-1] if v is not None]
        ax.hist(values, bins=20)
        ax.set_xlabel(unit, fontsize=8)
        ax.tick_params(labelsize=7)
    elif kind == "stat":
        last = [v for v in all_frames[0]["data"]["values"][-1] if v is not None][-1:]
        ax.text(
            0.5,
            0.5,
            _fmt(last[0]) if last else "–",
            ha="center",
            va="center",
            fontsize=22,
            transform=ax.transAxes,
        )
        ax.set_axis_off()
    elif kind == "bargauge":
        names = [
            ", ".join(f"{v}" for v in (f["schema"]["fields"][-1].get("labels") or {}).values())
            or frame_name(f)
            for f in all_frames
        ]
        last = [[v for v in f["data"]["values"][-1] if v is not None][-1] for f in all_frames]
        ax.barh(names, last)
        ax.set_xlabel(unit, fontsize=8)
        ax.tick_params(labelsize=7)
    else:  # table
        rows = [r for res in results.values() for r in table_rows(res)]
        sort = panel["options"].get("sortBy")
        if sort:
            key = sort[0]["displayName"]
            rows.sort(key=lambda r: -(r.get(key) or 0))
        cols = list(dict.fromkeys(c for r in rows for c in r))[:7]
        ax.set_axis_off()
        cells = [[_when(r[c]) if c == "time" else _fmt(r.get(c)) for c in cols] for r in rows[:8]]
        tab = ax.table(cellText=cells, colLabels=cols, loc="upper center", cellLoc="left")
        tab.auto_set_font_size(False)
        tab.set_fontsize(7)


def render(board: dict[str, Any], results: dict[str, dict[str, Result]], path: Path) -> Path:
    """One PNG of a dashboard: `results` maps each panel title to its answers by refId."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.gridspec import GridSpec

    bottom = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in board["panels"])
    height = 0.42 * bottom + 0.8
    fig = plt.figure(figsize=(16, height), dpi=80)
    grid = GridSpec(
        bottom, 24, figure=fig, hspace=3.5, wspace=4, top=1 - 0.6 / height, bottom=0.3 / height
    )
    for p in board["panels"]:
        g = p["gridPos"]
        ax = fig.add_subplot(grid[g["y"] : g["y"] + g["h"] - 1, g["x"] : g["x"] + g["w"]])
        _draw(ax, p, results.get(p["title"], {}))
    fig.suptitle(board["title"], x=0.01, y=0.995, ha="left", fontsize=12)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path
