"""The Firefox lane (issue 12): the system's Firefox ESR runs the conformance corpus on wasm, cpu
and webgl2 (and records that WebGPU is not offered on Linux) and the playground's first example,
and reports to a test server; the conformance runner judges the results. Firefox runs on a
virtual X display (Xvfb) of its own: headless Firefox opens no WebGL context here.

Why no automation protocol: Playwright's `firefox` type needs its own patched build (Juggler);
pointed at /usr/bin/firefox-esr it fails at once (Firefox does not know `-juggler-pipe` and exits
0), and Playwright's WebDriver BiDi channel (`channel="moz-firefox"`) starts Firefox ESR 153 but
fails at the first page (`emulation.setMediaFeaturesOverride: unknown command`). So, as seed 004
did, the lane opens e2e/firefox/lane.html in a plain headless Firefox with a fresh profile; the
page POSTs every answer to `/api/lane-report` on the server this module starts (the playground's
files, the JS runtime, the kernels, e2e/), and the lane ends when the page says "done".

    python -m e2e.firefox_lane            # run it, print the summary (docs/playground.md)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from e2e.conformance.executors import _js_lane
from e2e.conformance.lanes import load_lanes
from e2e.conformance.runner import Report, check_results, load_cases

ROOT = Path(__file__).resolve().parents[1]
PAGE = "/e2e/firefox/lane.html"
CORPUS_BACKENDS = ("wasm", "cpu", "webgl2", "webgpu")
# the first example on each backend, then Life (the canvas) and the MLP (a uPlot plot) on wasm
EXAMPLE_BACKENDS = ("wasm", "cpu", "webgl2", "life:wasm", "mlp:wasm")
MAX_REPORT = 512 * 1024 * 1024  # one batch of results may be ~100 MB (the issue-14 cases on cpu)

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
    # WebGL2: headless Firefox has only Mesa's llvmpipe here, which its blocklist refuses
    # ("getContext returned null"); force it on, and the runtime labels the lane software.
    "webgl.force-enabled": True,
}


def firefox_binary() -> str:
    """The system Firefox (GPULAB_FIREFOX overrides); fails naming scripts/setup.sh."""
    found = (
        os.environ.get("GPULAB_FIREFOX") or shutil.which("firefox-esr") or shutil.which("firefox")
    )
    if not found:
        raise FileNotFoundError(
            "firefox-esr not found: run scripts/setup.sh (apt-get install firefox-esr)"
        )
    return found


def firefox_version(binary: str) -> str:
    out = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    return out.stdout.strip() or out.stderr.strip()


class Reports:
    """What the page POSTed, in order; `wait_done` blocks until it said "done" (or "error")."""

    def __init__(self) -> None:
        self.items: list[dict] = []
        self.cond = threading.Condition()

    def __call__(self, handler: SimpleHTTPRequestHandler) -> bool:
        if handler.command != "POST" or handler.path != "/api/lane-report":
            return False
        length = int(handler.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_REPORT:
            handler.send_error(413 if length else 411)
            return True
        body = json.loads(handler.rfile.read(length))
        with self.cond:
            self.items.append(body)
            self.cond.notify_all()
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    def wait_done(self, timeout_s: float, alive: callable) -> bool:  # type: ignore[valid-type]
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


def start_lane_server(reports: Reports) -> ThreadingHTTPServer:
    """The playground's site (web/ with the generated Pyodide index) plus e2e/ and the report
    endpoint, on a free loopback port."""
    from gpulab.server import Mount, prepare_site
    from gpulab.static_server import start_server

    routes = [
        reports,
        prepare_site(ROOT),
        Mount("/backends-js/", ROOT / "backends-js"),
        Mount("/kernels/", ROOT / "kernels"),
        Mount("/e2e/", ROOT / "e2e"),
    ]
    return start_server(ROOT / "web", host="127.0.0.1", port=0, routes=routes)


def _profile(path: Path, extra: dict | None = None) -> None:
    prefs = {**PREFS, **(extra or {})}
    lines = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in prefs.items()]
    (path / "user.js").write_text("\n".join(lines) + "\n")


@dataclass
class LaneResult:
    version: str
    facts: dict
    reports: dict[str, Report]  # backend -> the runner's judgement
    refusals: dict[str, str]  # backend -> why its lane did not open (WebGPU on Linux)
    examples: list[dict]
    seconds: dict[str, float]
    wall_s: float
    error: str | None = None
    raw: list[dict] = field(default_factory=list)  # every report as the page sent it


def judge(cases: list[dict], reports: Reports) -> tuple[dict[str, Report], dict[str, str]]:
    """Each backend's batches joined into one run, judged with lanes.json's entries of that lane."""
    lanes = load_lanes()
    judged, refusals = {}, {}
    for backend in dict.fromkeys(r["backend"] for r in reports.of("conformance")):
        batches = [r for r in reports.of("conformance") if r["backend"] == backend]
        first = batches[0]["answer"]
        if not first.get("lane", {}).get("available"):
            refusals[backend] = first.get("lane", {}).get("reason", "no reason given")
            continue
        results = [res for b in batches for res in b["answer"].get("results", [])]
        name = f"firefox-{backend}"
        run = _js_lane(name, {"lane": first["lane"], "results": results})
        ran = [c for c in cases if c["name"] in run.results]
        judged[backend] = check_results(ran, run, {name: lanes.get(backend, {})})
    return judged, refusals


def run_lane(
    timeout_s: float = 900,
    backends: tuple[str, ...] = CORPUS_BACKENDS,
    example: tuple[str, ...] = EXAMPLE_BACKENDS,
    limit: int = 0,
    prefs: dict | None = None,
    cases_url: str | None = None,
) -> LaneResult:
    """Start the server and Firefox, wait for the page's "done", judge what it reported."""
    binary = firefox_binary()
    version = firefox_version(binary)
    reports = Reports()
    srv = start_lane_server(reports)
    url = (
        f"http://127.0.0.1:{srv.server_address[1]}{PAGE}?backends={','.join(backends)}"
        f"&example={','.join(example)}&limit={limit}" + (f"&cases={cases_url}" if cases_url else "")
    )
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpulab-firefox-") as tmp:
        profile = Path(tmp)
        _profile(profile, prefs)
        env = {**os.environ, "HOME": tmp, "XDG_RUNTIME_DIR": tmp}
        xvfb, display = _start_xvfb()
        if display:
            env["DISPLAY"] = display
        else:  # no Xvfb: headless, where WebGL2 does not open (the webgl2 lane then fails)
            env["MOZ_HEADLESS"] = "1"
        proc = subprocess.Popen(
            [
                binary,
                *([] if display else ["--headless"]),
                "--no-remote",
                "--profile",
                str(profile),
                url,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            finished = reports.wait_done(timeout_s, lambda: proc.poll() is None)
        finally:
            _stop(proc)
            if xvfb is not None:
                _stop(xvfb)
            srv.shutdown()
    wall = time.monotonic() - t0
    stderr = (proc.stderr.read() if proc.stderr else "")[-3000:]
    error = None
    if not finished:
        error = (
            f"Firefox exited with {proc.returncode}"
            if proc.returncode not in (None, 0, -15)
            else f"no 'done' report within {timeout_s:.0f} s"
        ) + f"; stderr: {stderr[-800:]}"
    error = error or next((r["error"] for r in reports.of("error")), None)
    judged, refusals = judge(load_cases(), reports) if not cases_url else ({}, {})
    hello = reports.of("hello")
    return LaneResult(
        version=version,
        facts=hello[0] if hello else {},
        reports=judged,
        refusals=refusals,
        examples=reports.of("example"),
        seconds={r["backend"]: r["seconds"] for r in reports.of("corpus-time")},
        wall_s=wall,
        error=error,
        raw=reports.items,
    )


def _start_xvfb() -> tuple[subprocess.Popen | None, str | None]:
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
        _stop(proc)
        return None, None
    return proc, f":{number}"


def _stop(proc: subprocess.Popen) -> None:
    """End the Firefox we started (its own process group: the content processes too)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def summary(result: LaneResult) -> str:
    head = (
        f"{result.version} ({result.facts.get('userAgent', '?')}), "
        f"cross-origin isolated {result.facts.get('crossOriginIsolated')}, "
        f"JSPI {result.facts.get('jspi')}, wall {result.wall_s:.0f} s"
    )
    lines = [head]
    for backend, report in result.reports.items():
        passed = sum(1 for c in report.results if c.passed)
        lines.append(
            f"  {backend}: {passed}/{len(report.results)} cases pass "
            f"({result.seconds.get(backend, 0):.1f} s, adapter {report.lane.adapter}, "
            f"software {report.lane.software})"
        )
    for backend, reason in result.refusals.items():
        lines.append(f"  {backend}: refused: {reason}")
    for ex in result.examples:
        cells = ex.get("cells") or []
        lines.append(
            f"  {ex.get('example', 'first')} example on {ex['backend']}: "
            f"{ex.get('error') or ', '.join(str(c.get('status')) for c in cells)}"
            f" (page ready in {ex.get('readyS', 0):.1f} s)"
        )
    if result.error:
        lines.append(f"  ERROR: {result.error}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    out = run_lane(limit=int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(summary(out))
    sys.exit(1 if out.error else 0)
