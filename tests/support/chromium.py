"""A headless Chromium driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: commands on fd 3, answers and events on fd
4, each a JSON message ended by a NUL byte) — stdlib only, no port
opened.  ``open_page`` loads a file and keeps what a test asks of a page:
console errors, uncaught exceptions, every request made, values computed
in the page, screenshots."""
from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--remote-debugging-pipe")


def find_chromium() -> str | None:
    """The Chromium (or Chrome) binary on PATH, if any."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _pipe_fds(commands: int, answers: int) -> None:
    """In the browser's process: its command pipe on fd 3, answers on fd 4."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands, answers)]
    os.dup2(high[0], 3)
    os.dup2(high[1], 4)


class Page:
    """One page of a headless browser (``open_page``)."""

    def __init__(self, binary: str, width: int = 1400, height: int = 1000):
        self.profile = tempfile.mkdtemp(prefix="fgl-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4, to_browser_r, from_browser_w),
            preexec_fn=lambda: _pipe_fds(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer, self._next, self.events = b"", 0, []
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    # ---------------------------------------------------------------- protocol

    def _read(self, timeout: float) -> dict:
        end = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            if time.monotonic() > end:
                raise TimeoutError("no answer from the browser")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, timeout: float = 60.0, **params) -> dict:
        """Send one command; its result (events met meanwhile are kept)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            got = self._read(timeout)
            if got.get("id") == self._next:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})
            self.events.append(got)

    def wait_for(self, event: str, timeout: float = 60.0) -> dict:
        """The first event ``event`` (one already met, or the next)."""
        for e in self.events:
            if e.get("method") == event:
                return e
        while True:
            got = self._read(timeout)
            self.events.append(got)
            if got.get("method") == event:
                return got

    # ---------------------------------------------------------------- what tests use

    def load(self, path: Path) -> None:
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")
        self.evaluate("1")   # (events of the load are in by now)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page."""
        got = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return got["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif m == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("text", "exception"))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        """The URL of every request the page made."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, full: bool = True) -> None:
        """A PNG of the page (all of it when ``full``)."""
        params: dict = {"format": "png"}
        if full:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000),
                "scale": 1})
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot",
                                                    **params)["data"]))

    def close(self) -> None:
        try:
            self.session = None
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)
