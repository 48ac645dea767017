"""A report opened in headless Chromium over the DevTools protocol: load time, console errors,
JavaScript evaluation and screenshots.

Chromium is driven directly over its DevTools WebSocket (`websockets` is already in the
workspace) rather than through Playwright: Playwright would add a Node driver and its own browser
download, while this needs nothing but the system's `chromium` and a few protocol calls.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from websockets.sync.client import ClientConnection, connect

from weft.errors import PipelineError

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


class BrowserError(PipelineError):
    """Chromium could not be started or did not answer."""


def find_chromium() -> str | None:
    """`WEFT_CHROMIUM`, else the first Chromium/Chrome on PATH; None when there is none."""
    env = os.environ.get("WEFT_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Page:
    """One tab: protocol calls by id, events buffered so console errors are never missed."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"chromium: no answer to {method} in {timeout:.0f}s")
            msg = json.loads(self._ws.recv(timeout=left))
            if msg.get("id") == ident:
                if "error" in msg:
                    raise BrowserError(f"chromium: {method}: {msg['error'].get('message')}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"chromium: no {method} event in {timeout:.0f}s")
            msg: dict[str, Any] = json.loads(self._ws.recv(timeout=left))
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)

    def open(self, url: str, timeout: float = 60.0) -> None:
        """Navigate and wait for the load event."""
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout)

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of a JavaScript expression (promises are awaited)."""
        res = self.call(
            "Runtime.evaluate",
            timeout,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in res:
            detail = res["exceptionDetails"]
            text = detail.get("exception", {}).get("description") or detail.get("text")
            raise BrowserError(f"chromium: {expression[:60]!r} raised {text}")
        return res.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise BrowserError(f"chromium: {expression!r} still false after {timeout:.0f}s")

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        self.call("Runtime.evaluate", expression="0")  # drain events already sent
        out = []
        for ev in self.events:
            p = ev.get("params", {})
            if ev["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
            elif ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in (
                "error",
                "assert",
            ):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", "error"))
        return out

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            )
        data = self.call("Page.captureScreenshot", 60.0, **params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path


class Chromium:
    """A headless Chromium with a throwaway profile; `with Chromium() as page:` gives one tab."""

    def __init__(self, binary: str | None = None, *, width: int = 1400, height: int = 1000) -> None:
        found = binary or find_chromium()
        if not found:
            raise BrowserError(
                "no chromium found: install it (apt-get install -y chromium) or set WEFT_CHROMIUM"
            )
        self.binary = found
        self.width, self.height = width, height
        self._profile: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._ws: ClientConnection | None = None
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Page:
        self._profile = tempfile.TemporaryDirectory(
            prefix="weft-chromium-", ignore_cleanup_errors=True
        )
        self._proc = subprocess.Popen(
            [
                self.binary,
                *FLAGS,
                f"--user-data-dir={self._profile.name}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helper processes are stopped with it (_stop)
        )
        try:
            port = self._port(Path(self._profile.name) / "DevToolsActivePort")
            req = urllib.request.Request(
                f"http://127.0.0.1:{port}/json/new?about:blank", method="PUT"
            )
            with urllib.request.urlopen(req, timeout=30) as resp:
                target = json.loads(resp.read())
            self._ws = self._stack.enter_context(
                connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
            )
        except BaseException:
            self._stop()
            raise
        page = Page(self._ws)
        for domain in ("Page", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        page.call(
            "Emulation.setDeviceMetricsOverride",
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        return page

    def _port(self, marker: Path, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise BrowserError(f"chromium exited at start (code {self._proc.returncode})")
            if marker.exists():
                first = marker.read_text().splitlines()[:1]
                if first and first[0].isdigit():
                    return int(first[0])
            time.sleep(0.05)
        raise BrowserError(f"chromium did not open its DevTools port in {timeout:.0f}s")

    def _stop(self) -> None:
        self._stack.close()
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(10)
            # Chromium's helper processes outlive the browser for a moment and keep writing
            # into the profile (a CI run failed removing it: "Directory not empty: 'Default'").
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
        if self._profile is not None:
            for _ in range(20):
                shutil.rmtree(self._profile.name, ignore_errors=True)
                if not os.path.exists(self._profile.name):
                    break
                time.sleep(0.1)
            self._profile.cleanup()  # ignore_cleanup_errors: a throwaway profile never fails a run

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()


def load_timing(page: Page) -> dict[str, float]:
    """Milliseconds from navigation start to DOMContentLoaded, load, and the viewer's ready mark."""
    nav = page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {dom: n.domContentLoadedEventEnd, load: n.loadEventEnd}; })()"
    )
    ready = page.evaluate("performance.now()")
    return {"dom_ms": float(nav["dom"]), "load_ms": float(nav["load"]), "now_ms": float(ready)}
