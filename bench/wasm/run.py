"""Run the wasm benchmark page (bench/wasm/index.html) in headless Chromium; print a table and JSON.

    .venv/bin/python bench/wasm/run.py [--iterations 30] [--json out.json]

Serves the repo root (COOP/COEP, so TF.js may use its threaded build), opens the page, waits
for `window.benchResult`, and prints ms per step (median and min over the samples) for our wasm
and cpu backends (per execute, per single-step session run, per step at 8 steps per run) and
TF.js's wasm backend (one minimize step with the loss read back).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def cpu_model() -> str:
    """The CPU's model name (Linux), for the record."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_page(iterations: int, timeout_s: float) -> dict:
    """Open the page and return its benchResult."""
    from gpulab.conformance.browser import launch
    from gpulab.static_server import start_server
    from playwright.sync_api import sync_playwright

    srv = start_server(ROOT, host="127.0.0.1", port=0)
    try:
        with sync_playwright() as p:
            browser = launch(p)
            try:
                page = browser.new_page()
                page.set_default_timeout(timeout_s * 1000)
                port = srv.server_address[1]
                page.goto(f"http://127.0.0.1:{port}/bench/wasm/index.html?iterations={iterations}")
                page.wait_for_function("window.benchResult !== undefined")
                return page.evaluate("window.benchResult")
            finally:
                browser.close()
    finally:
        srv.shutdown()


def fmt(r: dict | None) -> str:
    return "-" if not r else f"{r['median']:.2f} (min {r['min']:.2f})"


def table(result: dict) -> str:
    """The markdown table of one page run."""
    lines = [
        (
            "| backend | execute, ms | session run (1 step), ms | per step at 8 steps per run, ms "
            "| loss, step 1 | max abs loss diff vs TF.js (5 steps) |"
        ),
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["rows"]:
        diff = r.get("maxLossDiffVsTfjs")
        lines.append(
            f"| {r['name']} | {fmt(r['execute'])} | {fmt(r['run'])} | {fmt(r.get('run8'))} "
            f"| {r['losses'][0]:.6f} "
            f"| {'-' if diff is None else f'{diff:.2e}'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=30, help="timed samples per row (>= 20)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for the whole page")
    ap.add_argument("--json", type=Path, help="also write the JSON result here")
    args = ap.parse_args(argv)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    result = run_page(args.iterations, args.timeout)
    if "fatal" in result:
        print(result["fatal"], file=sys.stderr)
        return 1
    result["machine"] = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "load_average": os.getloadavg(),
    }
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text)
    print(table(result))
    print()
    print(
        f"machine: {result['machine']['cpu']}, {result['machine']['cores']} cores, load average "
        f"{', '.join(f'{x:.1f}' for x in result['machine']['load_average'])}; "
        f"{result['userAgent']}; crossOriginIsolated={result['crossOriginIsolated']}; "
        f"{result['date']}"
    )
    for row in result["rows"]:
        print(f"{row['name']}: adapter {json.dumps(row['adapter'])}; losses {row['losses']}")
    if result["errors"]:
        print(f"errors: {json.dumps(result['errors'], indent=1)}", file=sys.stderr)
    print(text)
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
