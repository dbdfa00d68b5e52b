"""Open a page in headless Chromium over the DevTools protocol and report what happened.

Chromium's --remote-debugging-pipe speaks the protocol on file descriptors 3 (its input)
and 4 (its output), one JSON message per NUL-terminated chunk: no port, no websocket,
nothing but the standard library. We collect every console message, uncaught exception,
log entry and failed or off-machine request, evaluate a script in the page, and take a
full-page screenshot.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageVisit:
    console: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    evaluated: Any = None
    screenshot: bytes = b""

    @property
    def errors(self) -> list[str]:
        return ([f"console.{lvl}: {text}" for lvl, text in self.console if lvl in ("error", "warning", "assert")]
                + self.exceptions + self.log_errors + self.failed_requests)


class _Pipe:
    def __init__(self, proc: subprocess.Popen, to_chrome: int, from_chrome: int):
        self.proc, self.to_chrome, self.from_chrome = proc, to_chrome, from_chrome
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30) -> dict:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        reply = self.wait(lambda m: m.get("id") == self.next_id, timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait(self, match, timeout: float) -> dict:
        """The first message that matches; every event read on the way is kept in self.events."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "method" in msg:
                    self.events.append(msg)
                if match(msg):
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
                self.buf += chunk


def visit(url: str, expression: str, width: int = 1280, height: int = 900, timeout: float = 60) -> PageVisit:
    """Load url, wait for its load event, evaluate expression (its JSON value is returned), screenshot."""
    binary = chromium_binary()
    if binary is None:
        raise FileNotFoundError("chromium")
    in_r, in_w = os.pipe()  # we write, chromium reads on fd 3
    out_r, out_w = os.pipe()  # chromium writes on fd 4, we read

    def give_fds():  # in the child, before exec
        # Via fds >= 10 first: dup2 onto the same number would keep the pipe's close-on-exec flag,
        # and one pipe end may already sit on 3 or 4.
        high_in, high_out = fcntl.fcntl(in_r, fcntl.F_DUPFD, 10), fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
        os.dup2(high_in, 3)
        os.dup2(high_out, 4)

    profile = tempfile.mkdtemp(prefix="capbench-chromium-")
    args = [binary, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}",
            f"--window-size={width},{height}", "about:blank"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=False, preexec_fn=give_fds)
    os.close(in_r)
    os.close(out_w)
    pipe = _Pipe(proc, in_w, out_r)
    try:
        return _drive(pipe, url, expression, width, height, timeout)
    finally:
        try:
            os.write(in_w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(in_w)
        os.close(out_r)
        shutil.rmtree(profile, ignore_errors=True)


def _drive(pipe: _Pipe, url: str, expression: str, width: int, height: int, timeout: float) -> PageVisit:
    target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
    session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        pipe.send(f"{domain}.enable", session=session)
    pipe.send("Emulation.setDeviceMetricsOverride",
              {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
    pipe.events.clear()
    pipe.send("Page.navigate", {"url": url}, session=session)
    pipe.wait(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session, timeout)
    result = pipe.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
    size = pipe.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
    shot = pipe.send("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": min(size["height"], 12000), "scale": 1}}, session=session)

    v = PageVisit(evaluated=result.get("result", {}).get("value"), screenshot=base64.b64decode(shot["data"]))
    if "exceptionDetails" in result:
        v.exceptions.append(f"evaluating the check: {result['exceptionDetails'].get('text')}")
    for e in pipe.events:
        p = e.get("params", {})
        method = e.get("method")
        if method == "Runtime.consoleAPICalled":
            v.console.append((p.get("type", "?"), " ".join(str(a.get("value", a.get("description")))
                                                          for a in p.get("args", []))))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            v.exceptions.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            v.log_errors.append(f"{p['entry'].get('source')}: {p['entry'].get('text')}")
        elif method == "Network.requestWillBeSent":
            v.requests.append(p.get("request", {}).get("url", ""))
        elif method == "Network.loadingFailed":
            v.failed_requests.append(f"request failed: {p.get('errorText')}")
    return v
