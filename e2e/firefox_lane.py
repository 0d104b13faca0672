"""The Firefox lane: the system's Firefox ESR runs the conformance corpus on wasm, cpu
and webgl2 (and records that WebGPU is not offered on Linux) and the playground's first example,
and reports to a test server; the conformance runner judges the results. Firefox runs on a
virtual X display (Xvfb) of its own: headless Firefox opens no WebGL context here.

Firefox is driven without an automation protocol (pylib/gpulab/conformance/firefox.py says why, and holds
the helpers: profile, Xvfb, the report endpoint): the lane opens e2e/firefox/lane.html in a plain
Firefox with a fresh profile; the page POSTs every answer to `/api/lane-report` on the server
this module starts (the playground's files, the JS runtime, the kernels, e2e/), and the lane ends
when the page says "done". `gpulab conformance --lane firefox-webgl2,...` runs the corpus alone.

    python -m e2e.firefox_lane            # run it, print the summary (docs/playground.md)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path

from gpulab.conformance.executors import _js_lane
from gpulab.conformance.firefox import (
    Reports,
    firefox_at,
    firefox_binary,
    firefox_version,
)
from gpulab.conformance.lanes import load_lanes
from gpulab.conformance.runner import Report, check_results, load_cases

ROOT = Path(__file__).resolve().parents[1]
PAGE = "/e2e/firefox/lane.html"
CORPUS_BACKENDS = ("wasm", "cpu", "webgl2", "webgpu")
# the first example on each backend, then Life (the canvas) and the MLP (a uPlot plot) on wasm
EXAMPLE_BACKENDS = ("wasm", "cpu", "webgl2", "life:wasm", "mlp:wasm")


def start_lane_server(reports: Reports) -> ThreadingHTTPServer:
    """The playground's site (web/ with the generated Pyodide index) plus e2e/, the conformance
    suite's runner and corpus, and the report endpoint, on a free loopback port."""
    from gpulab.server import Mount, prepare_site
    from gpulab.static_server import start_server

    routes = [
        reports,
        prepare_site(ROOT),
        Mount("/backends-js/", ROOT / "backends-js"),
        Mount("/kernels/", ROOT / "kernels"),
        Mount("/e2e/", ROOT / "e2e"),
        Mount("/pylib/gpulab/conformance/", ROOT / "pylib/gpulab/conformance"),
    ]
    srv = start_server(ROOT / "web", host="127.0.0.1", port=0, routes=routes)
    reports.serve_on(srv.server_address[1])  # reports from the lane's own page only
    return srv


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
    try:
        with firefox_at(binary, url, prefs) as proc:
            finished = reports.wait_done(timeout_s, lambda: proc.poll() is None)
    finally:
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
