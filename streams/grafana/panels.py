"""A small builder of Grafana 10.0 dashboard JSON (schemaVersion 38): panels laid out on the
24-column grid, InfluxQL targets on the drainwatch datasource, template variables, links.

Only what the drainwatch dashboards use; every panel is a plain dict, as Grafana stores it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 38  # Grafana 10.0; newer Grafana migrates it forward on load
DATASOURCE = {"type": "influxdb", "uid": "drainwatch-influxdb"}
CLUSTER = '"cluster" =~ /^$cluster$/'  # the cluster variable, in every WHERE clause


def target(query: str, ref: str = "A", fmt: str = "time_series", alias: str = "") -> dict[str, Any]:
    """A raw InfluxQL target; Grafana expands $timeFilter, $__interval and the variables. A
    time series not grouped by a tag is named by its column (``$col``), not
    ``measurement.column``."""
    if not alias and fmt == "time_series" and 'GROUP BY "' not in query:
        alias = "$col"
    t: dict[str, Any] = {
        "refId": ref,
        "datasource": DATASOURCE,
        "query": query,
        "rawQuery": True,
        "resultFormat": fmt,
    }
    if alias:
        t["alias"] = alias
    return t


def query_variable(name: str, label: str, query: str, *, multi: bool = True) -> dict[str, Any]:
    """A variable filled by an InfluxQL query (SHOW TAG VALUES ...), with All = any value."""
    return {
        # Grafana 10 keys a variable's state by its id: an empty id leaves $name unresolved in
        # every query the browser sends (the schema wants one; the name is unique)
        "id": name,
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "query": query,
        "refresh": 2,  # on time-range change
        "includeAll": True,
        "allValue": ".*",
        "multi": multi,
        "sort": 1,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "hide": 0,
        "options": [],
        "regex": "",
        "skipUrlSync": False,
    }


def textbox_variable(name: str, label: str, description: str) -> dict[str, Any]:
    return {
        "id": name,  # as query_variable's
        "name": name,
        "label": label,
        "type": "textbox",
        "datasource": None,
        "description": description,
        "query": "",
        "current": {"selected": False, "text": "", "value": ""},
        "hide": 0,
        "options": [],
        "skipUrlSync": False,
    }


def cluster_variable(measurement: str) -> dict[str, Any]:
    return query_variable(
        "cluster", "cluster", f'SHOW TAG VALUES FROM "{measurement}" WITH KEY = "cluster"'
    )


def job_link(title: str = "job in the jobs dashboard") -> dict[str, Any]:
    """A data link from a job id cell to its rows in the jobs dashboard."""
    return {
        "title": title,
        "url": "/d/drainwatch-jobs/drainwatch-jobs?var-job=${__value.text}&${__url_time_range}",
    }


# Quantities, not durations: Grafana's "h" scales to days and weeks ("47.1 week" of node time),
# so node-, core- and wall-hours carry their name as a suffix and are never rescaled
NODE_HOURS = "suffix: node-h"
CORE_HOURS = "suffix: core-h"
HOURS = "suffix: h"
# Table columns that name things (job ids, users, states): shown as text, never as numbers with
# a unit ("1.00 Mil" for job 1000123, "1.65 week" under a seconds unit)
TEXT_COLUMNS = "^(job|subject|holder_job|name|user|group|partition|state|kind|holder|top_jobs)$"


def right_axis(*names: str) -> list[dict[str, Any]]:
    """Overrides drawing the series ``names`` on a right-hand axis of their own (a count beside
    a much larger quantity)."""
    return [
        {
            "matcher": {"id": "byName", "options": n},
            "properties": [{"id": "custom.axisPlacement", "value": "right"}],
        }
        for n in names
    ]


def thresholds(*steps: tuple[float | None, str]) -> dict[str, Any]:
    return {"mode": "absolute", "steps": [{"value": v, "color": c} for v, c in steps]}


@dataclass
class Panel:
    """One panel: type, title, one-line description (the number's meaning and its seed), targets,
    unit and the type's options; its grid place is set by :class:`Dashboard`."""

    kind: str
    title: str
    description: str
    targets: list[dict[str, Any]]
    unit: str = "short"
    width: int = 12
    height: int = 8
    options: dict[str, Any] = field(default_factory=dict)
    custom: dict[str, Any] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    overrides: list[dict[str, Any]] = field(default_factory=list)
    transformations: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self, pid: int, x: int, y: int) -> dict[str, Any]:
        defaults: dict[str, Any] = {"unit": self.unit, "custom": dict(self.custom)}
        defaults.update(self.defaults)
        p: dict[str, Any] = {
            "id": pid,
            "type": self.kind,
            "title": self.title,
            "description": self.description,
            "datasource": DATASOURCE,
            "gridPos": {"h": self.height, "w": self.width, "x": x, "y": y},
            "targets": [dict(t) for t in self.targets],
            "fieldConfig": {"defaults": defaults, "overrides": list(self.overrides)},
            "options": dict(self.options),
        }
        p["transformations"] = list(self.transformations)
        p["transparent"] = False
        return p


def timeseries(
    title: str,
    description: str,
    *targets: dict[str, Any],
    unit: str = "short",
    bars: bool = False,
    stacked: bool = False,
    threshold: float | None = None,
    points: bool = False,
    dots: bool = False,
    legend_right: bool = False,
    width: int = 12,
    min0: bool = True,
    overrides: list[dict[str, Any]] | None = None,
) -> Panel:
    """A time series; `threshold` draws a dashed red line at that value (an alert's); `points`
    draws points only, `dots` lines with every point marked (a value per day: side by side
    bars of two series would hide one behind the other)."""
    custom: dict[str, Any] = {
        "drawStyle": "bars" if bars else ("points" if points else "line"),
        "fillOpacity": 60 if bars else 10,
        "lineWidth": 1,
        "showPoints": "always" if points or dots else "auto",
        "pointSize": 5,
        "spanNulls": False,
        "stacking": {"mode": "normal" if stacked else "none", "group": "A"},
        "thresholdsStyle": {"mode": "dashed" if threshold is not None else "off"},
    }
    defaults: dict[str, Any] = {
        "thresholds": thresholds((None, "green"), *([(threshold, "red")] if threshold else []))
    }
    if min0:
        defaults["min"] = 0
    return Panel(
        "timeseries",
        title,
        description,
        list(targets),
        unit,
        width,
        custom=custom,
        defaults=defaults,
        overrides=list(overrides or []),
        options={
            # a series per user: a scrolling list at the right, not rows cut off below
            "legend": {
                "displayMode": "list",
                "placement": "right" if legend_right else "bottom",
                "showLegend": True,
                "calcs": [],
            },
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    )


def table(
    title: str,
    description: str,
    *targets: dict[str, Any],
    unit: str = "short",
    sort: str | None = None,
    link_job: bool = False,
    width: int = 12,
    transformations: list[dict[str, Any]] | None = None,
    units: dict[str, str] | None = None,
    time: str | None = None,
) -> Panel:
    """A table panel; ``units``: a column's own unit where it is not ``unit`` (by name); the
    point time column is shown as ``time`` (what that time is), or left out when None (a query
    grouped over the range, whose time is the range's start). Columns that name things
    (:data:`TEXT_COLUMNS`) are text."""
    overrides: list[dict[str, Any]] = [
        {
            "matcher": {"id": "byRegexp", "options": TEXT_COLUMNS},
            "properties": [{"id": "unit", "value": "string"}],
        }
    ]
    overrides += [
        {"matcher": {"id": "byName", "options": name}, "properties": [{"id": "unit", "value": u}]}
        for name, u in (units or {}).items()
    ]
    organize: dict[str, Any] = (
        {"excludeByName": {"Time": True}} if time is None else {"renameByName": {"Time": time}}
    )
    if link_job:
        overrides.append(
            {
                "matcher": {"id": "byRegexp", "options": "^job$"},
                "properties": [{"id": "links", "value": [job_link()]}],
            }
        )
    options: dict[str, Any] = {
        "showHeader": True,
        "cellHeight": "sm",
        "footer": {"show": False, "reducer": ["sum"], "fields": ""},
    }
    if sort:
        options["sortBy"] = [{"displayName": sort, "desc": True}]
    return Panel(
        "table",
        title,
        description,
        list(targets),
        unit,
        width,
        custom={"align": "auto", "cellOptions": {"type": "auto"}, "inspect": False},
        overrides=overrides,
        options=options,
        transformations=[*(transformations or []), {"id": "organize", "options": organize}],
    )


def stat(
    title: str,
    description: str,
    *targets: dict[str, Any],
    unit: str = "short",
    threshold: float | None = None,
    below_bad: bool = False,
    width: int = 6,
    calc: str = "lastNotNull",
) -> Panel:
    if threshold is None:
        steps: tuple[tuple[float | None, str], ...] = ((None, "blue"),)
    elif below_bad:
        steps = ((None, "red"), (threshold, "green"))
    else:
        steps = ((None, "green"), (threshold, "red"))
    return Panel(
        "stat",
        title,
        description,
        list(targets),
        unit,
        width,
        height=5,
        defaults={"thresholds": thresholds(*steps)},
        options={
            "reduceOptions": {"calcs": [calc], "fields": "", "values": False},
            "colorMode": "value",
            "graphMode": "area",
            "justifyMode": "auto",
            "orientation": "auto",
            "textMode": "auto",
        },
    )


def histogram(
    title: str, description: str, *targets: dict[str, Any], unit: str = "short", width: int = 12
) -> Panel:
    return Panel(
        "histogram",
        title,
        description,
        list(targets),
        unit,
        width,
        custom={"fillOpacity": 80, "lineWidth": 1},
        options={
            "bucketOffset": 0,
            "combine": False,
            "legend": {
                "displayMode": "list",
                "placement": "bottom",
                "showLegend": True,
                "calcs": [],
            },
        },
    )


def bargauge(
    title: str, description: str, *targets: dict[str, Any], unit: str = "short", width: int = 12
) -> Panel:
    return Panel(
        "bargauge",
        title,
        description,
        list(targets),
        unit,
        width,
        # each bar named by its series, also when there is only one
        defaults={"thresholds": thresholds((None, "blue")), "displayName": "${__series.name}"},
        options={
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "horizontal",
            "displayMode": "basic",
            "showUnfilled": True,
            "minVizHeight": 10,
            "minVizWidth": 0,
            "valueMode": "color",
        },
    )


@dataclass
class Dashboard:
    uid: str
    title: str
    description: str
    panels: list[Panel]
    variables: list[dict[str, Any]] = field(default_factory=list)
    time_from: str = "now-7d"
    refresh: str = "1m"

    def to_json(self) -> dict[str, Any]:
        """The dashboard as Grafana stores it: panels flow left to right, top to bottom."""
        out, x, y, row_h = [], 0, 0, 0
        for i, p in enumerate(self.panels, start=1):
            if x + p.width > 24:
                x, y, row_h = 0, y + row_h, 0
            out.append(p.to_json(i, x, y))
            x, row_h = x + p.width, max(row_h, p.height)
        return {
            "uid": self.uid,
            "title": self.title,
            "description": self.description,
            "tags": ["drainwatch"],
            "editable": False,
            "graphTooltip": 1,
            "schemaVersion": SCHEMA_VERSION,
            "version": 1,
            "time": {"from": self.time_from, "to": "now"},
            "timepicker": {
                "hidden": False,
                "collapse": False,
                "enable": True,
                "refresh_intervals": ["30s", "1m", "5m", "15m", "1h"],
                "time_options": ["1h", "6h", "24h", "2d", "7d", "30d"],
            },
            "timezone": "utc",
            "style": "dark",
            "refresh": self.refresh,
            "fiscalYearStartMonth": 0,
            "liveNow": False,
            "weekStart": "",
            "annotations": {"list": []},
            "templating": {"list": list(self.variables)},
            "links": [
                {
                    "title": "drainwatch",
                    "type": "dashboards",
                    "tags": ["drainwatch"],
                    "asDropdown": True,
                    "includeVars": True,
                    "keepTime": True,
                    "icon": "external link",
                    "targetBlank": False,
                    "tooltip": "",
                    "url": "",
                }
            ],
            "panels": out,
        }
