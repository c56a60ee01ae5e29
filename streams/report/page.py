"""The report as one self-contained HTML page: inline CSS and SVG, no script, no network."""

from __future__ import annotations

import html
import math
from typing import Any

from streams.report.data import ReplayOutputs
from streams.report.sections import Missing, Section, TableView

_CSS = """
:root { --ink:#1d2733; --muted:#5b6775; --line:#d9dee4; --accent:#0072B2; --warn:#D55E00; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
  sans-serif; color: var(--ink); background: #f5f7f9; }
header { background: #14212e; color: #fff; padding: 20px 32px 16px; }
header h1 { margin: 0 0 4px; font-size: 22px; font-weight: 600; }
header p { margin: 2px 0; color: #c4ced8; }
.banner { background: #fff4e0; border-left: 4px solid var(--warn); padding: 8px 32px;
  color: #6b3a00; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 24px 40px; }
nav { margin: 8px 0 16px; }
nav a { display: inline-block; margin: 2px 10px 2px 0; color: var(--accent);
  text-decoration: none; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr));
  gap: 10px; margin: 8px 0 18px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: .03em; }
.card .v { font-size: 19px; font-weight: 600; margin-top: 2px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px;
  padding: 14px 20px 16px; margin: 0 0 18px; }
section h2 { margin: 0 0 2px; font-size: 18px; }
p.caption { margin: 0 0 10px; color: var(--muted); }
ul.facts { margin: 4px 0 10px; padding-left: 20px; }
figure { margin: 6px 0 10px; }
figure svg { width: 100%; height: auto; display: block; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 4px; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; color: var(--muted); }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left;
  white-space: nowrap; }
th { background: #eef2f5; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { white-space: normal; }
p.more, p.empty { color: var(--muted); margin: 2px 0 0; font-size: 12px; }
.missing { color: var(--muted); }
footer { color: var(--muted); font-size: 12px; text-align: center; margin-top: 24px; }
"""


def cell(v: Any) -> tuple[str, bool]:
    """A value as shown, and whether it is a number (right-aligned). Three significant digits
    below 100, whole numbers with thousands separators above; unknown is an en dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–", True
    if isinstance(v, bool):
        return ("yes" if v else "no"), False
    if isinstance(v, int):
        return f"{v:,}", True
    if isinstance(v, float):
        a = abs(v)
        if a == 0:
            return "0", True
        if a >= 100 or (v.is_integer() and a < 1e15):
            return f"{v:,.0f}", True
        if a >= 1e-4:
            return f"{v:.3g}" if a < 10 else f"{v:.1f}", True
        return f"{v:.2e}", True
    return str(v), False


def _table(t: TableView) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = []
    for row in t.rows:
        tds = []
        for v in row:
            text, num = cell(v)
            cls = "n" if num else ("wrap" if len(text) > 40 else "")
            tds.append(
                f'<td class="{cls}">{html.escape(text)}</td>'
                if cls
                else f"<td>{html.escape(text)}</td>"
            )
        body.append("<tr>" + "".join(tds) + "</tr>")
    cap = f"<caption>{html.escape(t.title)}</caption>" if t.title else ""
    out = f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    if not t.rows:
        out += '<p class="empty">No rows.</p>'
    if t.more:
        out += f'<p class="more">… and {t.more:,} more rows in the CSV file.</p>'
    return out


def _section(s: Section) -> str:
    parts = [
        f'<section id="{s.key}" data-section="{s.key}">',
        f"<h2>{html.escape(s.title)}</h2>",
        f'<p class="caption">{html.escape(s.caption)}</p>',
    ]
    if s.facts:
        parts.append(
            '<ul class="facts">' + "".join(f"<li>{html.escape(f)}</li>" for f in s.facts) + "</ul>"
        )
    parts += [f"<figure>{svg}</figure>" for svg in s.figures]
    parts += [_table(t) for t in s.tables]
    parts.append("</section>")
    return "\n".join(parts)


def render(
    o: ReplayOutputs,
    sections: list[Section | Missing],
    title: str = "drainwatch report",
    note: str | None = None,
    generated: str = "",
) -> str:
    """The whole page."""
    built = [s for s in sections if isinstance(s, Section)]
    missing = [s for s in sections if isinstance(s, Missing)]
    period = o.period()
    sub = []  # plain text lines under the title
    if period:
        sub.append(f"{period[0]} – {period[1]} (UTC); days in {o.tz()}")
    sub.append("from " + ", ".join(f"{d} ({e})" for e, d in o.dirs.items()))
    cards = "".join(
        f'<div class="card"><div class="k">{html.escape(k)}</div>'
        f'<div class="v">{html.escape(v)}</div></div>'
        for s in built
        for k, v in s.headline.items()
    )
    nav = "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in built)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{html.escape(title)}</h1>"
        + "".join(f"<p>{html.escape(p)}</p>" for p in sub)
        + "</header>",
    ]
    if note:
        out.append(f'<div class="banner" id="note">{html.escape(note)}</div>')
    out.append("<main>")
    if cards:
        out.append(f'<div class="cards" id="headline">{cards}</div>')
    out.append(f"<nav>{nav}</nav>")
    out += [_section(s) for s in built]
    if missing:
        items = "".join(
            f"<li><b>{html.escape(m.title)}</b>: needs {html.escape(m.needs)}</li>" for m in missing
        )
        out.append(
            '<section id="not-shown" class="missing"><h2>Not shown</h2>'
            '<p class="caption">These sections need outputs the given directories do '
            f"not hold.</p><ul>{items}</ul></section>"
        )
    out.append(
        f"<footer>drainwatch report{', ' + html.escape(generated) if generated else ''}"
        "</footer></main></body></html>"
    )
    return "\n".join(out) + "\n"
