"""Headless Chromium (Debian's ``chromium``, installed by ``make browser``) as a person's browser
for the report tests: the page loaded from a file, its DOM after load, its console messages,
a screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]
# Chromium logs every console message (log, warning, error, uncaught exception) at INFO as
# `[pid:tid:date:INFO:CONSOLE:line] "message", source: url (line)`
_CONSOLE = re.compile(r":CONSOLE[^\]]*\] (.*)$", re.MULTILINE)


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip(
            "Debian chromium is not installed (`make browser` installs it; `make test` "
            "does so before the tests)"
        )
    return path


@dataclass(slots=True)
class Loaded:
    dom: str
    console: list[str]


def run(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def load(page: Path, profile: Path) -> Loaded:
    """The DOM once the page has loaded, and the console messages it caused."""
    p = run(page, profile, "--dump-dom")
    return Loaded(p.stdout, _CONSOLE.findall(p.stderr))


def screenshot(page: Path, profile: Path, png: Path, width: int, height: int) -> Path:
    run(
        page, profile, "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={png}"
    )
    return png
