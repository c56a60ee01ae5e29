"""The six dashboards as on-call sees them: Grafana 10.0's real web UI (the frontend built by
``make grafana-ui``) in headless Chromium, driven over the DevTools protocol
(tests/integration/cdp.py), on a simulated week with one finding of each kind loaded through the
live pipeline into the real InfluxDB (test_grafana_dashboards._load_week). Each dashboard opens in
kiosk mode, logged in by a basic-auth header; once every panel has finished loading: no panel
shows an error, none shows "No data" where its query (``/api/ds/query``) returns values, every
stat and bar-gauge value is the query's answer reduced as the panel says, and the page logged no
console error. A screenshot per dashboard (and of the alert list) goes to the test's directory,
and to ``$RENDER_DASHBOARDS_UI_TO`` when set (``docs/dashboards/`` is made that way)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import time
import urllib.parse
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streams.grafana.render import frames
from tests.conftest import influx_database, load_stack_control
from tests.integration.cdp import Browser, CDPError, Page, chromium_path
from tests.integration.grafana_server import Grafana, grafana_server
from tests.integration.test_grafana_dashboards import DASHBOARDS, START, _load_week, run_panel
from tests.integration.test_live_drain import Live

pytestmark = pytest.mark.integration
BOARDS = {p.stem: json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))}
WIDTH = 1600
GRID_ROW_PX = 38  # Grafana's grid: 30 px a row and 8 px between rows
OUT_ENV = "RENDER_DASHBOARDS_UI_TO"
# The alert rules the issue wants on the alert list page (titles in rules.yaml)
ALERT_TITLES = ("Sliding job", "DFS hot zone")
# Grafana's Prometheus-style rule states as its rule list names them
STATE_WORDS = {"inactive": "Normal", "pending": "Pending", "firing": "Firing"}
# Console errors that do not come from the dashboards (each with its reason): none so far.
IGNORED_CONSOLE: list[tuple[re.Pattern[str], str]] = []

# Per panel (PanelChrome: data-testid "data-testid Panel header <title>"): its title; loading
# (the "Panel loading bar" is there while a query runs); the error indicator ("Panel status",
# the red triangle a failed query or a panel that crashed shows); the content's text ("No data"
# when the panel has nothing to draw); tables' column headers and first row (role columnheader,
# row, cell); bar gauges' bars (the value's data-testid, the name beside it); legend items.
SNAPSHOT_JS = r"""
(() => {
  const prefix = 'data-testid Panel header ';
  const panels = [];
  for (const el of document.querySelectorAll(`[data-testid^="${prefix}"]`)) {
    const content = el.lastElementChild;
    const text = content ? content.innerText.trim() : '';
    const table = content ? content.querySelector('[role="table"]') : null;
    let header = [], first = [], rows = 0;
    if (table) {
      header = [...table.querySelectorAll('[role="columnheader"]')].map(c => c.innerText.trim());
      const body = [...table.querySelectorAll('[role="row"]')]
        .filter(r => r.getAttribute('aria-label') !== 'table header');
      rows = body.length;
      if (body.length) first = [...body[0].querySelectorAll('[role="cell"]')]
        .map(c => c.innerText.trim());
    }
    const bars = [...el.querySelectorAll('[data-testid="data-testid Bar gauge value"]')]
      .map(v => {
        const box = v.parentElement;
        const value = v.innerText.trim();
        const all = box ? box.innerText.trim() : value;
        return [all.endsWith(value) ? all.slice(0, all.length - value.length).trim() : '', value];
      });
    const legend = [...el.querySelectorAll('[aria-label^="VizLegend series "]')]
      .map(x => x.innerText.trim());
    panels.push({
      title: el.getAttribute('data-testid').slice(prefix.length),
      loading: !!el.querySelector('[aria-label="Panel loading bar"]'),
      error: !!el.querySelector('[aria-label="Panel status"]'),
      noData: text === 'No data',
      text: text.slice(0, 400),
      header, first, rows, bars, legend,
      canvas: el.querySelectorAll('canvas').length,
    });
  }
  const grid = document.querySelector('.react-grid-layout');
  return {
    panels,
    bottom: grid ? Math.ceil(grid.getBoundingClientRect().bottom) : 0,
    dashboardLoading: !!document.querySelector('[aria-label="Loading indicator"]'),
  };
})()
"""


def _ui_problem() -> str | None:
    """Why the UI cannot be tested here, or None."""
    if chromium_path() is None:
        return "chromium is not installed (`make browser`)"
    control = load_stack_control()
    cfg = control.Config.from_env()
    if control.grafana_homepath(cfg) != control.grafana_ui_dir(cfg):
        return "Grafana's web UI is not built for this module (`make grafana-ui`)"
    return None


@dataclass(slots=True)
class UI:
    g: Grafana
    browser: Browser
    live: Live
    ranges: dict[str, tuple[int, int]]
    user: str
    password: str
    tmp: Path
    out: Path | None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.g.port}{path}"

    @contextmanager
    def page(self) -> Iterator[Page]:
        """A new browser page logged in as the admin (basic-auth header), closed afterwards."""
        page = self.browser.new_page()
        try:
            page.basic_auth(self.user, self.password)
            yield page
        finally:
            self.browser.close_page(page)

    def save(self, png: Path) -> None:
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(png, self.out / png.name)


@pytest.fixture(scope="module")
def ui(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UI]:
    """The week with its findings in a database of the module's own, a Grafana server (the
    built UI as its homepath) and a browser; ranges as test_grafana_dashboards opens them."""
    why = _ui_problem()
    if why is not None:
        pytest.skip(why)
    stack = request.getfixturevalue("stack")
    tmp = tmp_path_factory.mktemp("grafana_ui")
    with influx_database(stack, "grafana_ui") as influx:
        live = Live(stack, influx, tmp)
        try:
            yield from _ui(stack, influx.database, live, tmp)
        finally:
            live.stop()


def _ui(stack: Any, database: str, live: Live, tmp: Path) -> Iterator[UI]:
    _load_week(live, findings=True)
    start = int(START.timestamp() * 1000)
    week = (start - 86_400_000, start + 8 * 86_400_000)
    with grafana_server(stack, database, tmp) as g, Browser(tmp / "chromium") as browser:
        g.wait_dashboards({b["uid"] for b in BOARDS.values()})
        out = os.environ.get(OUT_ENV)
        yield UI(
            g=g,
            browser=browser,
            live=live,
            ranges={name: week for name in BOARDS},
            user=stack.control.GRAFANA_ADMIN,
            password=g.password,
            tmp=tmp,
            out=Path(out) if out else None,
        )


def _range(ui: UI, name: str) -> tuple[int, int]:
    if name == "pipeline":  # the worker's own points: the last hour of wall clock
        now = int(time.time() * 1000)
        return now - 3_600_000, now
    return ui.ranges[name]


# --- displayed values --------------------------------------------------------------------------

# suffix -> factor to the unit's base, as Grafana's value formats print them
_SUFFIXES: dict[str, dict[str, float]] = {
    "percentunit": {"%": 0.01},
    "percent": {"%": 1.0},
    "h": {"hour": 1.0, "day": 24.0, "week": 168.0, "year": 8760.0},
    "s": {
        "ns": 1e-9,
        "µs": 1e-6,
        "ms": 1e-3,
        "s": 1.0,
        "min": 60.0,
        "hour": 3600.0,
        "day": 86400.0,
        "week": 604800.0,
        "year": 3.15569e7,
    },
    "short": {"": 1.0, "K": 1e3, "Mil": 1e6, "Bil": 1e9, "Tri": 1e12},
}
_NUMBER = re.compile(r"^(-?[\d,]*\.?\d+(?:e[-+]?\d+)?)\s*(\S*)$", re.IGNORECASE)


def displayed(text: str, unit: str) -> tuple[float, float]:
    """A displayed value in the unit's base and half its last digit (the display's precision):
    "63.2%" in percentunit is (0.632, 0.0005)."""
    m = _NUMBER.match(text.strip())
    assert m is not None, f"not a number: {text!r}"
    number, suffix = m.groups()
    if unit.startswith("suffix:"):  # a custom unit: the number, then the suffix as written
        table = {unit.removeprefix("suffix:").strip(): 1.0}
    else:
        table = _SUFFIXES.get(unit, {"": 1.0})
    assert suffix in table, f"{text!r}: unknown suffix {suffix!r} for unit {unit}"
    factor = table[suffix]
    digits = number.split(".")[1] if "." in number else ""
    decimals = len(digits.lower().split("e")[0])
    return float(number.replace(",", "")) * factor, 0.5 * 10.0**-decimals * factor


def reduce(values: list[Any], calc: str) -> float | None:
    """A series reduced as Grafana's reducer ``calc`` does (the calcs the dashboards use)."""
    nums = [float(v) for v in values if v is not None]
    if calc in ("lastNotNull", "last"):
        return nums[-1] if nums else None
    if calc in ("firstNotNull", "first"):
        return nums[0] if nums else None
    if not nums:
        return None
    return {
        "max": max,
        "min": min,
        "sum": sum,
        "mean": lambda xs: sum(xs) / len(xs),
        "count": len,
    }[calc](nums)


def api_series(result: dict[str, Any]) -> dict[str, list[Any]]:
    """Every series of a panel's ``/api/ds/query`` answer, in time order, by display name."""
    out = {}
    for r in result.values():
        for f in frames(r):
            times, *cols = f["data"]["values"]
            for field, col in zip(f["schema"]["fields"][1:], cols, strict=True):
                cfg = field.get("config") or {}
                name = cfg.get("displayNameFromDS") or f["schema"].get("name") or field["name"]
                out[name] = [v for _, v in sorted(zip(times, col, strict=True))]
    return out


# --- the page ----------------------------------------------------------------------------------


def snapshot(page: Page) -> dict[str, Any]:
    return dict(page.evaluate(SNAPSHOT_JS))


def wait_loaded(page: Page, expected: int, timeout: float = 90.0) -> dict[str, Any]:
    """The panels once all ``expected`` are on the page, none is loading, and nothing has
    changed for a second."""
    ready = (
        f"(() => {{ const s = {SNAPSHOT_JS.strip()};"
        f" return s.panels.length === {expected} && !s.dashboardLoading"
        " && s.panels.every(p => !p.loading) ? JSON.stringify(s) : null; })()"
    )
    text = page.wait_until(ready, timeout=timeout, stable=1.0, describe=lambda: snapshot(page))
    return dict(json.loads(text))


def status_message(page: Page, title: str) -> str:
    """The tooltip of a panel's error indicator (hovered), for the failure message."""
    sel = json.dumps(
        f'[data-testid="data-testid Panel header {title}"] [aria-label="Panel status"]'
    )
    box = page.evaluate(
        f"(() => {{ const b = document.querySelector({sel}); if (!b) return null;"
        " const r = b.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
    )
    if not box:
        return ""
    page.send("Input.dispatchMouseEvent", type="mouseMoved", x=box[0], y=box[1])
    try:
        return str(
            page.wait_until(
                "(() => { const t = document.querySelector("
                "'[role=\"tooltip\"], [data-popper-interactive]');"
                " return t ? t.innerText : null; })()",
                timeout=3,
            )
        )
    except CDPError:
        return "(no tooltip)"


def failed_requests(page: Page) -> list[str]:
    """The page's requests that failed or answered an HTTP error: method, status, URL, body."""
    sent: dict[str, str] = {}
    out = []
    for e in page.events:
        p = e.get("params", {})
        if e["method"] == "Network.requestWillBeSent":
            r = p["request"]
            sent[p["requestId"]] = f"{r['method']} {r['url']} {r.get('postData', '')[:300]}"
        elif e["method"] == "Network.responseReceived" and p["response"]["status"] >= 400:
            r = p["response"]
            out.append(f"{r['status']} {sent.get(p['requestId'], r['url'])}")
        elif e["method"] == "Network.loadingFailed" and not p.get("canceled"):
            out.append(f"{p.get('errorText')} {sent.get(p['requestId'], '')}")
    return out


def sent_queries(page: Page) -> list[str]:
    """The InfluxQL the page sent: through Grafana's backend (``/api/ds/query``, each query's
    ``query``) or its datasource proxy (form field q)."""
    out = []
    for e in page.events:
        if e["method"] == "Network.requestWillBeSent":
            r = e["params"]["request"]
            body = r.get("postData")
            if not body:
                continue
            if "/api/ds/query" in r["url"]:
                with contextlib.suppress(ValueError, AttributeError):
                    out += [q.get("query", "") for q in json.loads(body).get("queries", [])]
            elif "/api/datasources/proxy/" in r["url"]:
                out += urllib.parse.parse_qs(body).get("q", [])
    return out


def as_sent(panel: dict[str, Any], sent: list[str]) -> list[str]:
    """The queries the browser sent for ``panel``: those starting as its targets do (up to the
    first template variable or macro)."""
    heads = [t["query"].split("$")[0] for t in panel["targets"]]
    return [q for q in sent if any(q.startswith(h) or f";{h}" in q for h in heads)][:2]


def console_errors(page: Page) -> list[str]:
    out = []
    for e in page.errors:
        if not any(p.search(str(e)) for p, _ in IGNORED_CONSOLE):
            out.append(str(e))
    return out


def panel_height(board: dict[str, Any]) -> int:
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in board["panels"])
    return max(1000, rows * GRID_ROW_PX + 80)


def test_the_week_has_every_finding(ui: UI) -> None:
    """What on-call should see in the pictures: the worker raised a sliding job, a failure to
    launch, a short-job flood, an overrun and a hot zone."""
    influx = ui.live.influx
    kinds = {r["kind"] for r in influx.influxql('SELECT "firing", "kind" FROM "alerts"')}
    want = {"sliding_job", "failure_to_launch", "shortjob_flood", "overrun", "hot_zone"}
    assert want <= kinds, sorted(kinds)
    assert influx.influxql('SELECT count("minutes") FROM "hot_zone"')


def open_dashboard(ui: UI, page: Page, name: str, start: int, end: int) -> dict[str, Any]:
    """Open a dashboard in kiosk mode, tall enough for every panel (Grafana loads a panel when
    it scrolls into view); its panels once loaded, and its screenshot saved."""
    board = BOARDS[name]
    height = panel_height(board)
    page.set_viewport(WIDTH, height)
    page.navigate(ui.url(f"/d/{board['uid']}?orgId=1&kiosk&from={start}&to={end}"))
    snap = wait_loaded(page, len(board["panels"]))
    if snap["bottom"] > height:  # the grid is taller than its rows said: show all of it
        height = snap["bottom"] + 16
        page.set_viewport(WIDTH, height)
        snap = wait_loaded(page, len(board["panels"]))
    png = page.screenshot(ui.tmp / "png" / f"{name}.png", WIDTH, height)
    ui.save(png)
    (ui.tmp / "png" / f"{name}.json").write_text(json.dumps(snap, indent=1))
    return snap


def check_panel(ui: UI, panel: dict[str, Any], got: dict[str, Any], start: int, end: int) -> str:
    """What is wrong with one loaded panel against its query's answer, or ""."""
    result = run_panel(ui.g, panel, start, end)
    if got["noData"]:
        return (
            "shows No data; its query returns values" if any(map(frames, result.values())) else ""
        )
    calcs = (panel.get("options", {}).get("reduceOptions") or {}).get("calcs") or []
    if panel["type"] not in ("stat", "bargauge") or not calcs:
        return ""
    unit = panel["fieldConfig"]["defaults"].get("unit", "")
    series = api_series(result)
    if panel["type"] == "stat":
        if len(series) != 1:
            return f"a stat of {len(series)} series: {sorted(series)}"
        bars = {"": got["text"]}
        series = {"": next(iter(series.values()))}
    else:
        bars = dict(got["bars"])
        if len(bars) == len(series) == 1:  # a lone bar goes without its name
            bars = {next(iter(series)): next(iter(bars.values()))}
        if sorted(bars) != sorted(series):
            return f"bars {sorted(bars)}, series {sorted(series)}"
    wrong = []
    for bar, text in bars.items():
        want = reduce(series[bar], calcs[0])
        value, tol = displayed(text, unit)
        if want is None or not math.isclose(value, want, abs_tol=tol * 1.0001):
            wrong.append(f"{bar} shows {text!r}, the query's {calcs[0]} is {want}".strip())
    return "; ".join(wrong)


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_dashboard_as_on_call_sees_it(ui: UI, name: str) -> None:
    board = BOARDS[name]
    start, end = _range(ui, name)
    for attempt in range(3):
        with ui.page() as page:
            snap = open_dashboard(ui, page, name, start, end)
            shown = {p["title"]: p for p in snap["panels"]}
            errors = {t: status_message(page, t) for t, p in shown.items() if p["error"]}
            console = console_errors(page)
            failed = failed_requests(page)
            sent = sent_queries(page)
        # Now and then one large answer reaches the browser empty (HTTP 200, no body: Grafana
        # 10.0-pre's data proxy in front of InfluxDB 1.8; never seen through /api/ds/query):
        # the panel says so; and now and then Grafana's own bundle leaves a rejected promise of
        # an object uncaught while the page loads (seen once in CI, on the drain dashboard).
        # Either alone is warned about and the dashboard opened again, twice at most; anything
        # else, or either a third time, fails.
        empty = {t: m for t, m in errors.items() if "Unexpected end of JSON input" in m}
        bundle = [c for c in console if c.startswith("exception:") and "/public/build/" in c]
        clean = not errors and not console
        if clean or empty != errors or bundle != console or attempt == 2:
            break
        warnings.warn(
            f"{name}: opened again after empty answers {sorted(empty)} and uncaught "
            f"exceptions of Grafana's bundle {bundle}",
            stacklevel=1,
        )
    assert sorted(shown) == sorted(p["title"] for p in board["panels"])
    assert not errors, f"{name}: panels showing an error: {errors}; failed requests: {failed}"
    problems = {
        p["title"]: f"{why}; the browser sent: {as_sent(p, sent)}"
        for p in board["panels"]
        if (why := check_panel(ui, p, shown[p["title"]], start, end))
    }
    assert not problems, f"{name}: {problems}"
    assert not console, f"{name}: console errors: {console}"


def open_alert_list(ui: UI, page: Page, name: str = "alerting") -> list[str]:
    """The alert list page with every rule group expanded: the text of each rule's row; its
    screenshot saved as ``name``.png."""
    page.set_viewport(WIDTH, 1000)
    page.navigate(ui.url("/alerting/list?orgId=1"))
    toggles = "document.querySelectorAll('[data-testid=\"group-collapse-toggle\"]')"
    page.wait_until(f"{toggles}.length", timeout=60)
    page.evaluate(
        f"{toggles}.forEach(b => {{ if (b.getAttribute('aria-expanded') !== 'true') b.click(); }})"
    )
    rows_js = (
        "JSON.stringify([...document.querySelectorAll("
        '\'[data-testid="rules-table"] [data-testid="row"]\')]'
        ".map(r => r.innerText.replace(/\\s+/g, ' ').trim()))"
    )
    rows: list[str] = json.loads(page.wait_until(rows_js, timeout=30, stable=1.0))
    # the page scrolls inside its own container: as tall as the tallest scrolling element
    tallest = "Math.max(...[...document.querySelectorAll('*')].map(e => e.scrollHeight))"
    height = max(1000, int(page.evaluate(tallest)) + 16)
    png = page.screenshot(ui.tmp / "png" / f"{name}.png", WIDTH, height)
    ui.save(png)
    (ui.tmp / "png" / f"{name}.json").write_text(json.dumps({"rows": rows}, indent=1))
    return rows


def test_alert_list_shows_the_rules_and_their_state(ui: UI) -> None:
    """The alert list page names the sliding-job and hot-zone rules with the state the
    alerting engine gives them (the week is in 2023: the rules' ranges end now, so they are
    Normal; tests/integration/test_grafana_alerts.py makes each fire on crafted points)."""
    deadline = time.monotonic() + 120  # the rules' first evaluation: within a minute of start
    while True:
        groups = ui.g.get("/api/prometheus/grafana/api/v1/rules")["data"]["groups"]
        rules = {r["name"]: r for g in groups for r in g["rules"]}
        if all(
            t in rules and not rules[t].get("lastEvaluation", "0001").startswith("0001")
            for t in ALERT_TITLES
        ):
            break
        assert time.monotonic() < deadline, rules
        time.sleep(2)
    with ui.page() as page:
        rows = open_alert_list(ui, page)
        console = console_errors(page)
    for title in ALERT_TITLES:
        shown = [r for r in rows if title in r]
        assert shown, (title, rows)
        word = STATE_WORDS[rules[title]["state"]]
        assert word in shown[0], (title, word, shown[0])
    assert not console, f"alert list: console errors: {console}"
