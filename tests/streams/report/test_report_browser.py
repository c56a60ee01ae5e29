"""The report as a person sees it: the demo's report opened in headless Chromium loads with no
console message, shows every section with its plot, and renders (a screenshot with the page's
dark header band at the top). A page that does log to the console shows the check can fail."""

from __future__ import annotations

import re
from pathlib import Path

from PIL import Image

from streams.report import sections
from streams.report.data import load as load_outputs
from tests.streams.report import browser


def test_console_messages_are_caught(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body><p>x</p><script>console.error("boom"); '
        "notDefined();</script></body></html>"
    )
    loaded = browser.load(page, tmp_path / "profile")
    assert any('"boom"' in m for m in loaded.console), loaded.console
    assert any("Uncaught ReferenceError" in m for m in loaded.console), loaded.console


def test_report_loads_cleanly_and_shows_every_section(demo_out: Path, tmp_path: Path) -> None:
    page = demo_out / "report.html"
    loaded = browser.load(page, tmp_path / "profile")
    assert loaded.console == []
    dom = loaded.dom
    assert "<title>drainwatch demo report</title>" in dom
    assert "Simulated data" in dom
    for key, title, *_ in sections.SECTIONS:
        m = re.search(rf'<section id="{key}" data-section="{key}">\s*<h2>([^<]*)</h2>', dom)
        assert m and m.group(1) == title, key
        body = dom[m.end() : dom.index("</section>", m.end())]
        assert "<svg" in body or "<table>" in body, key
    assert 'id="not-shown"' not in dom
    built = sections.build(
        load_outputs([str(demo_out / d) for d in ("drain", "jobs", "samples", "whatif")])
    )
    figures = sum(len(s.figures) for s in built if isinstance(s, sections.Section))
    assert dom.count("<svg") == figures >= 10  # all but the job tables have a plot
    png = browser.screenshot(page, tmp_path / "profile", tmp_path / "report.png", 1200, 1600)
    with Image.open(png) as im:
        assert im.size == (1200, 1600)
        rgb = im.convert("RGB")
        r, g, b = rgb.getpixel((5, 5))
        assert r + g + b < 150  # the header band: the stylesheet applied
        colours = rgb.resize((120, 160)).getcolors(maxcolors=1 << 16)
        assert colours is not None and len(colours) > 50  # plots and text, not a blank page
