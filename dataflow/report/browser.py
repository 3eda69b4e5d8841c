"""Drive a headless Chromium over the DevTools protocol: the report's browser check and screenshot.

Chromium is Debian's ``chromium`` package (``apt-get install -y chromium``); the protocol runs
over a loopback websocket with the ``websocket-client`` package (extra ``report``). The browser
starts with a fresh profile and everything that phones home turned off, and loads only what the
page asks for (a report asks for nothing beyond ``data:`` URIs).

Examples:
    >>> with HeadlessChromium() as browser:  # doctest: +SKIP
    ...     page = browser.open("file:///tmp/out/_dataflow/report.html")
    ...     page.console_errors, len(page.screenshot())
    ([], 183211)
"""
from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from dataflow.errors import DataflowError

__all__ = ["CHROMIUM", "CHROMIUM_FLAGS", "HeadlessChromium", "Page"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--hide-scrollbars",
)
START_SECONDS = 30.0


@dataclass
class Page:
    """One loaded page: what it logged and requested, plus evaluation and screenshots."""

    browser: HeadlessChromium
    url: str
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    def evaluate(self, expression: str) -> Any:
        """Return the value of a JavaScript expression evaluated in the page."""
        result = self.browser.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise DataflowError(f"page {self.url}: evaluating {expression!r} threw {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, width: int = 1200, full_page: bool = True) -> bytes:
        """Return a PNG of the page ``width`` CSS pixels wide (the whole height when ``full_page``)."""
        metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
        self.browser.call("Emulation.setDeviceMetricsOverride", **metrics)  # lay out at this width first
        height = int(self.evaluate("document.documentElement.scrollHeight")) if full_page else 900
        self.browser.call("Emulation.setDeviceMetricsOverride", **{**metrics, "height": height})
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        shot = self.browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=full_page, clip=clip)
        return base64.b64decode(shot["data"])


class HeadlessChromium:
    """A headless Chromium process with one tab, driven over its DevTools websocket.

    Args:
        executable: The Chromium binary.
        timeout: Seconds to wait for the browser to start and for each page load or call.
    """

    def __init__(self, executable: str = CHROMIUM, timeout: float = START_SECONDS):
        self.executable, self.timeout = executable, timeout
        self._ids = itertools.count(1)
        self._events: list[dict[str, Any]] = []
        self._proc: subprocess.Popen | None = None
        self._profile: str | None = None
        self._ws = None

    def __enter__(self) -> HeadlessChromium:
        import websocket

        if not os.path.exists(self.executable):
            raise DataflowError(f"no Chromium at {self.executable} (install it with: apt-get install -y chromium)")
        self._profile = tempfile.mkdtemp(prefix="dataflow-chromium-")
        args = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}", "about:blank"]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port = self._wait_for_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=self.timeout) as resp:
            targets = json.loads(resp.read())
        tab = next(t for t in targets if t.get("type") == "page")
        self._ws = websocket.create_connection(tab["webSocketDebuggerUrl"], timeout=self.timeout, suppress_origin=True)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        return self

    def _wait_for_port(self) -> int:
        marker = os.path.join(self._profile, "DevToolsActivePort")
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode("utf-8", "replace")[-2000:]
                raise DataflowError(f"Chromium exited with code {self._proc.returncode} at start: {err}")
            if os.path.exists(marker):
                lines = open(marker, encoding="utf-8").read().split()
                if lines:
                    return int(lines[0])
            time.sleep(0.1)
        raise DataflowError(f"Chromium did not open its DevTools port within {self.timeout:.0f} s")

    def __exit__(self, *exc) -> None:
        if self._ws is not None:
            self._ws.close()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc.stderr.close()
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events meanwhile are kept)."""
        msg_id = next(self._ids)
        self._ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise DataflowError(f"DevTools {method} failed: {msg['error'].get('message')}")
                return msg.get("result", {})
            if "method" in msg:
                self._events.append(msg)

    def _wait_event(self, method: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e["method"] == method for e in self._events):
            if time.monotonic() > deadline:
                raise DataflowError(f"no {method} within {self.timeout:.0f} s")
            self._events.append(json.loads(self._ws.recv()))

    def open(self, url: str, settle: float = 0.5) -> Page:
        """Load ``url`` and return the page with its console errors and requests so far."""
        self._events.clear()
        self.call("Page.navigate", url=url)
        self._wait_event("Page.loadEventFired")
        time.sleep(settle)
        self.call("Runtime.evaluate", expression="1")  # collects events that arrived while settling
        page = Page(self, url)
        for e in self._events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                page.console_errors.append(p["exceptionDetails"].get("text", "exception"))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                page.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                page.console_errors.append(p["entry"].get("text", ""))
            elif e["method"] == "Network.requestWillBeSent":
                page.requests.append(p["request"]["url"])
            elif e["method"] == "Network.loadingFailed":
                page.failed_requests.append(p.get("errorText", ""))
        return page
