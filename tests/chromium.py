"""A real headless Chromium, driven over the DevTools protocol on a pipe (standard library only).

Used by the browser test of ``report.html``: open a page, collect every console error, CSP
violation and failed load, evaluate an expression, take a full-page screenshot.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")


def find_chromium() -> str | None:
    """The Chromium executable: $ARRAYBENCH_CHROMIUM, or Debian's ``chromium`` on the PATH."""
    explicit = os.environ.get("ARRAYBENCH_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(Exception):
    pass


class Chromium:
    """``with Chromium(exe) as b: page = b.open(path)``."""

    def __init__(self, exe: str, timeout: float = 60.0) -> None:
        self.exe = exe
        self.timeout = timeout
        self._next_id = 0
        self._buffer = b""
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> "Chromium":
        self._profile = tempfile.TemporaryDirectory(prefix="arraybench-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:
            # The protocol pipe: the browser reads commands on fd 3 and writes replies on fd 4.
            # Copy first: a pipe end may itself be fd 3 or 4, and dup2 onto itself would leave it
            # close-on-exec.
            r, w = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [self.exe, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire, close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        if self.proc.stderr:
            self.proc.stderr.close()
        self._profile.cleanup()

    # -- protocol --------------------------------------------------------------------------------
    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send a command and wait for its reply; events that arrive meanwhile are kept."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> dict:
        """Wait for an event of a session (or return it if it already came)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for ev in self.events:
                if ev.get("method") == method and ev.get("sessionId") == session:
                    return ev
            self.events.append(self._read(deadline))

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
                raise BrowserError(f"Chromium closed the protocol pipe: {err}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    # -- pages -----------------------------------------------------------------------------------
    def open(self, path: Path, width: int = 1280, height: int = 900) -> "Page":
        """Load a local file in a fresh tab and wait for its load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return Page(self, session)


class Page:
    """A loaded tab."""

    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session

    def evaluate(self, expression: str) -> Any:
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in result:
            raise BrowserError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions, CSP violations and failed loads, as text."""
        out = []
        for ev in self.browser.events:
            if ev.get("sessionId") != self.session:
                continue
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                   for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append("log: " + params["entry"].get("text", ""))
            elif method == "Network.loadingFailed":
                out.append("load failed: " + params.get("errorText", ""))
        return out

    def requests(self) -> list[str]:
        """URLs the page asked the network layer for (the page itself included)."""
        return [ev["params"]["request"]["url"] for ev in self.browser.events
                if ev.get("sessionId") == self.session and ev.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page, not only the viewport."""
        metrics = self.browser.send("Page.getLayoutMetrics", session=self.session)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.browser.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        }, session=self.session)
        Path(path).write_bytes(base64.b64decode(shot["data"]))
        return Path(path)
