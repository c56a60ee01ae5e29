"""A small Chrome DevTools Protocol client for the UI tests: headless Chromium started with
``--remote-debugging-port=0`` (the port read from the profile's ``DevToolsActivePort``), one page
target driven over its websocket (aiohttp, already installed with faust-streaming), commands
sent one at a time and the events in between collected: console errors and uncaught exceptions.
Synchronous: a private event loop runs each call to completion."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = "/usr/bin/chromium"
# the flags tests/streams/report/browser.py uses, and the remote debugging port
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


def chromium_path() -> str | None:
    """Debian's chromium, or None when it is not installed."""
    return shutil.which("chromium") or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)


class CDPError(RuntimeError):
    """A command answered with an error, or a page-side JavaScript exception."""


@dataclass(frozen=True, slots=True)
class ConsoleError:
    """One console error or uncaught exception of the page."""

    kind: str  # "console" (console.error), "exception" (uncaught), "log" (Log.entryAdded error)
    text: str
    url: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}" + (f" ({self.url})" if self.url else "")


class Page:
    """One page target: commands, events, evaluation, screenshots."""

    def __init__(self, ws_url: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.target_id = ""
        self.loop = asyncio.new_event_loop()
        self.events: list[dict[str, Any]] = []
        self.errors: list[ConsoleError] = []
        self._id = 0

        async def connect() -> tuple[aiohttp.ClientSession, aiohttp.ClientWebSocketResponse]:
            session = aiohttp.ClientSession()
            ws = await session.ws_connect(ws_url, max_msg_size=0, autoping=True)
            return session, ws

        self.session, self.ws = self.loop.run_until_complete(connect())
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    # --- the wire -------------------------------------------------------------------------

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None after ``timeout`` seconds without one."""
        try:
            msg = self.loop.run_until_complete(self.ws.receive(timeout=timeout))
        except TimeoutError:
            return None
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise CDPError(f"the DevTools websocket closed: {msg.type} {msg.data!r}")
        doc: dict[str, Any] = json.loads(msg.data)
        if "method" in doc:
            self._event(doc)
        return doc

    def _event(self, doc: dict[str, Any]) -> None:
        self.events.append(doc)
        method, p = doc["method"], doc.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") == "error":
            text = " ".join(
                str(a.get("value", a.get("description", a.get("type")))) for a in p.get("args", [])
            )
            frames = (p.get("stackTrace") or {}).get("callFrames") or [{}]
            self.errors.append(ConsoleError("console", text, frames[0].get("url", "")))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            exc = d.get("exception") or {}
            text = exc.get("description") or d.get("text", "")
            props = (exc.get("preview") or {}).get("properties") or []
            if props:  # an object thrown, not an Error: say what it holds
                text += " {" + ", ".join(f"{x.get('name')}: {x.get('value')}" for x in props) + "}"
            self.errors.append(ConsoleError("exception", text, d.get("url", "")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append(ConsoleError("log", e.get("text", ""), e.get("url", "")))

    def send(self, method: str, timeout: float | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._id += 1
        ident = self._id
        payload = {"id": ident, "method": method, "params": params}
        self.loop.run_until_complete(self.ws.send_str(json.dumps(payload)))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"{method}: no answer within {timeout or self.timeout} s")
            doc = self._receive(left)
            if doc is not None and doc.get("id") == ident:
                if "error" in doc:
                    raise CDPError(f"{method}: {doc['error']}")
                return dict(doc.get("result", {}))

    def pump(self, seconds: float) -> None:
        """Collect the events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._receive(left)

    # --- what the tests use ---------------------------------------------------------------

    def set_headers(self, headers: dict[str, str]) -> None:
        """Extra HTTP headers on every request of the page (Network.setExtraHTTPHeaders)."""
        self.send("Network.setExtraHTTPHeaders", headers=headers)

    def basic_auth(self, user: str, password: str) -> None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.set_headers({"Authorization": f"Basic {token}"})

    def set_viewport(self, width: int, height: int) -> None:
        """The window size the page lays out in (Emulation.setDeviceMetricsOverride)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def navigate(self, url: str, timeout: float = 60.0) -> None:
        """Open ``url`` and wait for its load event."""
        mark = len(self.events)
        result = self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise CDPError(f"navigate {url}: {result['errorText']}")
        deadline = time.monotonic() + timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self.events[mark:]):
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"navigate {url}: no load event within {timeout} s")
            self._receive(left)

    def evaluate(self, expression: str, timeout: float | None = None) -> Any:
        """The JSON value of ``expression`` (promises awaited); page exceptions raise."""
        r = self.send(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError((d.get("exception") or {}).get("description") or d.get("text"))
        return r.get("result", {}).get("value")

    def wait_until(
        self,
        expression: str,
        timeout: float = 30.0,
        stable: float = 0.0,
        interval: float = 0.25,
        describe: Callable[[], Any] | None = None,
    ) -> Any:
        """Poll ``expression`` until it is truthy (and, with ``stable``, has kept the same value
        for that many seconds); return its value. Raise CDPError at ``timeout`` with the last
        value (or ``describe()``)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        since = time.monotonic()
        while True:
            value = self.evaluate(expression)
            now = time.monotonic()
            if value != last:
                last, since = value, now
            if value and now - since >= stable:
                return value
            if now > deadline:
                why = describe() if describe is not None else last
                raise CDPError(f"not true within {timeout} s: {expression[:200]} -> {why!r}")
            self.pump(interval)

    def screenshot(self, path: Path, width: int, height: int) -> Path:
        """A PNG of the viewport at ``width`` x ``height`` CSS pixels."""
        self.set_viewport(width, height)
        self.pump(0.3)
        r = self.send(
            "Page.captureScreenshot",
            timeout=60.0,
            format="png",
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            captureBeyondViewport=False,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(r["data"]))
        return path

    def close(self) -> None:
        async def shut() -> None:
            await self.ws.close()
            await self.session.close()

        try:
            self.loop.run_until_complete(shut())
        finally:
            self.loop.close()


class Browser:
    """Headless Chromium with its own profile directory; killed as a process group on close."""

    def __init__(self, profile: Path, binary: str | None = None, timeout: float = 30.0) -> None:
        exe = binary or chromium_path()
        if exe is None:
            raise FileNotFoundError("chromium is not installed")
        profile.mkdir(parents=True, exist_ok=True)
        port_file = profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)
        self.profile = profile
        self.log = open(profile.parent / f"{profile.name}.chromium.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: close() ends the renderers too
        )
        deadline = time.monotonic() + timeout
        while True:
            lines = port_file.read_text().split() if port_file.exists() else []
            if len(lines) >= 2:
                self.port = int(lines[0])
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"chromium did not start: see {self.log.name}")
            time.sleep(0.1)
        self.pages: list[Page] = []

    def new_page(self) -> Page:
        """A new page target (about:blank) with Page/Runtime/Log/Network events on."""
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT"
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            target = json.loads(r.read())
        page = Page(target["webSocketDebuggerUrl"])
        page.target_id = target["id"]
        self.pages.append(page)
        return page

    def close_page(self, page: Page) -> None:
        """Close one page target (its timers and connections stop with it)."""
        page.close()
        self.pages.remove(page)
        url = f"http://127.0.0.1:{self.port}/json/close/{page.target_id}"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=10):
            pass

    def close(self) -> None:
        """Close the pages, then end the browser's process group (TERM, then KILL)."""
        for page in self.pages:
            try:
                page.close()
            except (OSError, RuntimeError, aiohttp.ClientError):  # the browser goes anyway
                pass
        self.pages = []
        # the whole group, even when the main process is gone: its renderers and zygotes too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.log.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
