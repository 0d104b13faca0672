"""Where the webgl2 backend's MLP step time goes, in headless Chromium (SwiftShader here).

    .venv/bin/python bench/browser/profile.py [--steps 10] [--json out.json]

Serves bench/browser/profile.html with the benchmark's fixture (gpulab.models.mlp.init(0),
the graph `gpulab bench --browser` runs) and prints: the step's wall time, the GL calls per
step (count and JS ms; ANGLE waits for the renderer inside readPixels), the phases, and the
ms of every pass alone (the backend's webgl2Profile hook: one sync per pass).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "pylib"))
sys.path.insert(0, str(ROOT))

from gpulab.benchmarks.browser import FIXTURE_PATH, fixture, payload_route


def profile(steps: int, timeout_s: float = 300) -> dict[str, Any]:
    """Run the profile page once in a fresh Chromium and return its result."""
    from gpulab.conformance.browser import launch
    from gpulab.static_server import start_server
    from playwright.sync_api import sync_playwright

    payload = json.dumps(fixture(0)).encode()
    srv = start_server(
        ROOT, host="127.0.0.1", port=0, routes=[payload_route(FIXTURE_PATH, payload)]
    )
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    try:
        with sync_playwright() as p:
            browser = launch(p)
            try:
                page = browser.new_page()
                page.set_default_timeout(timeout_s * 1000)
                url = f"http://127.0.0.1:{srv.server_address[1]}/bench/browser/profile.html"
                page.goto(f"{url}?steps={steps}")
                page.wait_for_function("window.profileResult !== undefined")
                result: dict[str, Any] = page.evaluate("window.profileResult")
            finally:
                browser.close()
    finally:
        srv.shutdown()
    return result


def report(r: dict[str, Any]) -> str:
    """The result as text: wall time, GL calls, phases, passes."""
    if "fatal" in r:
        return f"failed: {r['fatal']}"
    lines = [
        f"step wall ms: median {r['wallMedian']:.2f}, min {r['wallMin']:.2f} ({r['steps']} steps)",
        "",
        "GL calls per step: calls, JS ms",
    ]
    lines += [f"  {c['name']:28s} {c['calls']:7.1f} {c['ms']:8.3f}" for c in r["calls"][:25]]
    lines += ["", "phases (JS ms per step):"]
    phases = sorted(r["phases"].items(), key=lambda kv: -kv[1])
    lines += [f"  {name:20s} {ms:8.3f}" for name, ms in phases]
    lines += ["", f"passes alone (min of 5, synced each; sum {r['passSum']:.2f} ms):"]
    lines += [f"  {p['ms']:7.2f}  {p['key']}  ({p['n']} texels)" for p in r["passes"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    r = profile(args.steps)
    print(report(r))
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    return 1 if "fatal" in r else 0


if __name__ == "__main__":
    raise SystemExit(main())
