"""The Firefox lanes of `gpulab conformance` (firefox-wasm, firefox-cpu, firefox-webgl2,
firefox-webgpu): the system's Firefox (ESR) runs the selected cases through the same runtime and
run_cases.mjs as the Chromium lanes, and reports to a server of this module.

Why no automation protocol: Playwright's `firefox` type needs its own patched build (Juggler);
pointed at /usr/bin/firefox-esr it fails at once (Firefox does not know `-juggler-pipe` and exits
0), and Playwright's WebDriver BiDi channel (`channel="moz-firefox"`) starts Firefox ESR but fails
at the first page (`emulation.setMediaFeaturesOverride: unknown command`). So, as seed 004 did, a
lane opens firefox.html in a plain Firefox with a fresh profile; the page GETs its cases from
`/api/lane-cases?batch=N` and POSTs every answer to `/api/lane-report`, and the lane ends when
the page says "done". Firefox runs on a virtual X display (Xvfb) of its own where there is one:
headless Firefox opens no WebGL context here. e2e/firefox_lane.py (the checkout's Firefox lane
with the playground's examples) drives Firefox through the helpers of this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from .executors import (
    BATCH,
    LaneRun,
    _case_payload,
    _run_js_batches,
    executor,
    suite_routes,
    unavailable,
)
from .layout import SUITE_DIR, JsRuntime, default_runtime

PAGE_PATH = "/pylib/gpulab/conformance/firefox.html"
REPORT_PATH = "/api/lane-report"
CASES_PATH = "/api/lane-cases"
MAX_REPORT = 512 * 1024 * 1024  # one batch of results may be ~100 MB (the q4_k / q6_k cases on cpu)

# A quiet profile: no first-run pages, telemetry, updates or service calls (there is no network
# but the registries; these only save Firefox the time of failing to reach them).
PREFS = {
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "toolkit.telemetry.enabled": False,
    "app.update.enabled": False,
    "app.normandy.enabled": False,
    "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.dns.disablePrefetch": True,
    "network.prefetch-next": False,
    "services.settings.server": "http://127.0.0.1:9/",
    "browser.region.network.url": "",
    "dom.disable_open_during_load": False,
    # WebGL2: Firefox has only Mesa's llvmpipe here, which its blocklist refuses ("getContext
    # returned null"); force it on, and the runtime labels the lane software.
    "webgl.force-enabled": True,
}


def firefox_binary(explicit: str | None = None) -> str:
    """The Firefox to drive: the one named, else GPULAB_FIREFOX, else firefox-esr or firefox on
    PATH; fails saying what to install."""
    found = (
        explicit
        or os.environ.get("GPULAB_FIREFOX")
        or shutil.which("firefox-esr")
        or shutil.which("firefox")
    )
    if not found or not os.path.exists(found):
        where = f"{explicit} (--firefox) does not exist" if explicit else "firefox-esr not found"
        raise FileNotFoundError(
            f"{where}: name one with --firefox PATH or GPULAB_FIREFOX, or "
            "`apt-get install firefox-esr xvfb` (scripts/setup.sh does this)"
        )
    return found


def firefox_version(binary: str) -> str:
    out = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    return out.stdout.strip() or out.stderr.strip()


class Reports:
    """What the page POSTed, in order; `wait_done` blocks until it said "done" (or "error").

    Only the lane's own page may report: the Host header must name this server
    (`allowed_hosts`, set once the server has its port: DNS rebinding is refused) and an
    Origin, which browsers send with every POST, must be this server's (another site's page
    cannot forge a report). A body that is not a JSON object with a string `kind` is 400."""

    def __init__(self) -> None:
        self.items: list[dict] = []
        self.cond = threading.Condition()
        self.allowed_hosts: set[str] = set()

    def serve_on(self, port: int) -> None:
        """Accept reports sent to the loopback server on `port` (after it started)."""
        self.allowed_hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        if handler.command != "POST" or handler.path != REPORT_PATH:
            return False
        refusal = self._refusal(handler)
        if refusal:
            _answer(handler, 403, refusal)
            return True
        text = handler.headers.get("Content-Length") or "0"
        length = int(text) if text.isascii() and text.isdecimal() else -1
        if not 0 < length <= MAX_REPORT:
            _answer(
                handler,
                413 if length > MAX_REPORT else 411 if length == 0 else 400,
                f"Content-Length {text!r}: a report is 1 to {MAX_REPORT} bytes",
            )
            return True
        body = _report(handler.rfile.read(length))
        if isinstance(body, str):
            _answer(handler, 400, body)
            return True
        with self.cond:
            self.items.append(body)
            self.cond.notify_all()
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    def _refusal(self, handler: SimpleHTTPRequestHandler) -> str | None:
        host = (handler.headers.get("Host") or "").lower()
        if host not in self.allowed_hosts:
            return f"Host {host!r} is not this lane's server"
        origin = handler.headers.get("Origin")
        if origin is not None and origin.lower() != f"http://{host}":
            return f"a report from Origin {origin!r} refused: only the lane's page reports"
        return None

    def wait_done(self, timeout_s: float, alive: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while not any(r["kind"] in ("done", "error") for r in self.items):
                left = deadline - time.monotonic()
                if left <= 0 or not alive():
                    return False
                self.cond.wait(min(left, 1.0))
        return True

    def of(self, kind: str) -> list[dict]:
        return [r for r in self.items if r["kind"] == kind]


def _report(raw: bytes) -> dict | str:
    """The report, or why it is not one."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return f"a report is JSON: {type(exc).__name__}: {exc}"[:300]
    if not isinstance(body, dict) or not isinstance(body.get("kind"), str):
        return "a report is a JSON object with a string 'kind'"
    return body


def _answer(handler: SimpleHTTPRequestHandler, status: int, message: str) -> None:
    data = json.dumps({"error": message}).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class CaseBatches:
    """GET /api/lane-cases?batch=N: the Nth batch of the lane's cases as JSON; 204 past the end."""

    def __init__(self, cases: list[dict], batch: int = BATCH) -> None:
        payload = _case_payload(cases)
        self.batches = [payload[i : i + batch] for i in range(0, len(payload), batch)]

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        url = urlparse(handler.path)
        if handler.command != "GET" or url.path != CASES_PATH:
            return False
        n = int(parse_qs(url.query).get("batch", ["0"])[0])
        if not 0 <= n < len(self.batches):
            handler.send_response(204)
            handler.end_headers()
            return True
        body = json.dumps(self.batches[n]).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        return True


def write_profile(path: Path, extra: dict | None = None) -> None:
    prefs = {**PREFS, **(extra or {})}
    lines = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in prefs.items()]
    (path / "user.js").write_text("\n".join(lines) + "\n")


def start_xvfb() -> tuple[subprocess.Popen | None, str | None]:
    """A virtual X display for Firefox (Xvfb picks a free number, -displayfd tells it).

    Why not --headless: headless Firefox opens no WebGL context here ("tryNativeGL ()
    Exhausted GL driver options"); on an X display it uses Mesa's llvmpipe through GLX."""
    binary = shutil.which("Xvfb")
    if not binary:
        return None, None
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [binary, "-displayfd", str(write_end), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        number = pipe.readline().strip()  # written once the display accepts clients
    if not number.isdigit():
        stop(proc)
        return None, None
    return proc, f":{number}"


def stop(proc: subprocess.Popen) -> None:
    """End a process we started (its own process group: Firefox's content processes too)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextlib.contextmanager
def firefox_at(binary: str, url: str, prefs: dict | None = None) -> Iterator[subprocess.Popen]:
    """Firefox with a fresh profile on `url` (on Xvfb where there is one), stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="gpulab-firefox-") as tmp:
        write_profile(Path(tmp), prefs)
        env = {**os.environ, "HOME": tmp, "XDG_RUNTIME_DIR": tmp}
        xvfb, display = start_xvfb()
        if display:
            env["DISPLAY"] = display
        else:  # no Xvfb: headless, where WebGL2 does not open (that lane then says so)
            env["MOZ_HEADLESS"] = "1"
        args = [binary, *([] if display else ["--headless"]), "--no-remote", "--profile", tmp, url]
        proc = subprocess.Popen(
            args,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            yield proc
        finally:
            stop(proc)
            if xvfb is not None:
                stop(xvfb)


def _lane_url(port: int, backend: str, allow_software: bool, without: list, broken: list) -> str:
    query = f"backend={backend}&software={int(allow_software)}"
    query += f"&without={','.join(without)}&break={','.join(broken)}"
    return f"http://127.0.0.1:{port}{PAGE_PATH}?{query}"


def _collect(name: str, cases: list[dict], reports: Reports, batches: CaseBatches) -> LaneRun:
    """The page's answers, batch by batch, through the batch rule every JS lane uses
    (executors._run_js_batches: a batch that crashed or went unanswered fails its cases)."""
    answers = {r["batch"]: r["answer"] for r in reports.of("batch")}
    order = iter(range(len(batches.batches)))
    why_not = next((r["error"] for r in reports.of("error")), "the page gave no answer")

    def answer(_batch: list[dict]) -> dict:
        n = next(order)
        if n not in answers:
            raise RuntimeError(f"batch {n}: {why_not}")
        return answers[n]

    return _run_js_batches(name, cases, answer)


def run_firefox(
    name: str,
    backend: str,
    cases: list[dict],
    allow_software: bool = False,
    timeout_s: float = 900,
    without_kernels: list[str] | None = None,
    runtime: JsRuntime | None = None,
    firefox_path: str | None = None,
    break_ops: list[str] | None = None,
    prefs: dict | None = None,
    **_: object,
) -> LaneRun:
    """One Firefox lane: serve the runtime, the suite and the cases; wait for "done"."""
    from gpulab.static_server import start_server

    try:
        binary = firefox_binary(firefox_path)
        runtime = runtime or default_runtime()
        runtime.check()
    except (OSError, RuntimeError) as exc:
        return unavailable(name, str(exc))
    reports, batches = Reports(), CaseBatches(cases)
    routes = [reports, batches, *suite_routes(runtime)]
    srv = start_server(SUITE_DIR, host="127.0.0.1", port=0, routes=routes)
    reports.serve_on(srv.server_address[1])
    url = _lane_url(
        srv.server_address[1],
        backend,
        allow_software,
        list(without_kernels or []),
        list(break_ops or []),
    )
    try:
        with firefox_at(binary, url, prefs) as proc:
            finished = reports.wait_done(timeout_s, lambda: proc.poll() is None)
            code = proc.poll()
    finally:
        srv.shutdown()
    run = _collect(name, cases, reports, batches)
    machine = next((r["machine"] for r in reports.of("machine")), {})
    run.info.extra["machine"] = {
        "browser": "firefox",
        "version": firefox_version(binary),
        **machine,
    }
    if not finished:
        why = f"Firefox exited with {code}" if code not in (None, 0) else "no 'done' report"
        run.info.extra["problem"] = f"{why} within {timeout_s:.0f} s"
    return run


def _firefox_executor(backend: str) -> None:
    lane = f"firefox-{backend}"

    def run(cases: list[dict], **opts: object) -> LaneRun:
        return run_firefox(lane, backend, cases, **opts)  # type: ignore[arg-type]

    run.__name__ = f"run_firefox_{backend}"
    executor(lane, lane=backend)(run)


for _backend in ("webgpu", "webgl2", "wasm", "cpu"):
    _firefox_executor(_backend)
