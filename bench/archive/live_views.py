"""Frames per second and frame-to-page latency of the playground's live views.

    .venv/bin/python bench/archive/live_views.py [--seconds 6] [--sizes 48,256] [--backends webgpu,...]

For each backend and board size, opens the playground (gpulab serve's server) in headless
Chromium (pylib/gpulab/conformance/browser.py's flags; WebGPU is SwiftShader and WebGL2 ANGLE on SwiftShader here:
software adapters, labelled), runs a Game of Life live view at fps=60 for `--seconds`, and reads
the page's frame log (web/animate.mjs): frames per second shown, and per frame the worker's step
and present times and the latency from the step's start in the worker to the page's
requestAnimationFrame that acknowledges the frame (the frame is on the canvas by then; the
compositor's own delay after that is not measured). Prints a markdown table.

`--native`: the native path instead (wgpu-py, lavapipe here): per frame one session step and an
offscreen render of the board by present.wgsl with the image read back (e2e/native_present.py),
timed in Python (no display, so no pacing: as fast as it goes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "pylib"))
sys.path.insert(0, str(ROOT))

PROGRAM = """import random
import display
from gpulab import Graph
random.seed(1)
N = {n}
g = Graph()
board = g.tensor([[1.0 if random.random() < 0.3 else 0.0 for _ in range(N)] for _ in range(N)])
s = await g.prepare_async(carry={{board: "board"}}, board=board.life())
view = display.animate(s, "board", fps=60, palette=True, scale=max(1, 480 // N))
"""


def measure(page, backend: str, n: int, seconds: float) -> dict:
    from playwright.sync_api import expect

    page.locator("section.cell").first.get_by_role("textbox").fill(PROGRAM.format(n=n))
    page.locator("section.cell").first.get_by_role("button", name="Run", exact=True).click()
    fig = page.locator("figure.live-view").first
    expect(fig).not_to_have_attribute("data-frames", "0", timeout=120_000)
    page.wait_for_timeout(1000)  # warm-up: pipelines, first frames
    anim = int(fig.get_attribute("data-anim-id"))
    start = page.evaluate("(id) => globalThis.gpulabAnimations.log(id).seqs.length", anim)
    page.wait_for_timeout(seconds * 1000)
    log = page.evaluate("(id) => globalThis.gpulabAnimations.log(id)", anim)
    page.get_by_role("button", name="Stop").click()
    expect(fig).to_have_attribute("data-state", "ended")
    shown = log["shownAt"][start:]
    keep = {k: log[k][start:] for k in ("latencyMs", "stepMs", "presentMs")}
    fps = (len(shown) - 1) * 1000 / (shown[-1] - shown[0]) if len(shown) > 1 else 0.0

    def p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "backend": backend,
        "n": n,
        "frames": len(shown),
        "fps": fps,
        "step": statistics.median(keep["stepMs"]),
        "present": statistics.median(keep["presentMs"]),
        "lat50": statistics.median(keep["latencyMs"]),
        "lat95": p(keep["latencyMs"], 0.95),
        "maxUnacked": log["maxUnacked"],
    }


def native_rows(sizes: list[int], seconds: float) -> list[dict]:
    """Frames per second and per-frame times of the native offscreen path."""
    import random
    import time

    from gpulab import host

    from e2e.native_present import _pipeline, render

    rows = []
    for n in sizes:
        random.seed(1)
        data = [1.0 if random.random() < 0.3 else 0.0 for _ in range(n * n)]
        graph = {
            "version": 2,
            "nodes": [
                {"id": 0, "op": "input", "shape": [n, n], "data": data},
                {"id": 1, "op": "life", "a": 0},
            ],
            "outputs": [{"name": "board", "id": 1}],
        }
        s = host.prepare(graph, carry={0: "board"}, backend="wgpu", allow_software=True)
        pipeline = _pipeline(s._program._ex.device)
        steps, renders = [], []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            s.run_steps(1)
            t1 = time.perf_counter()
            render(s, "board", palette=True, pipeline=pipeline)
            steps.append(1000 * (t1 - t0))
            renders.append(1000 * (time.perf_counter() - t1))
        adapter = s._stats.get("adapter", {}) if isinstance(s._stats, dict) else {}
        s.dispose()
        rows.append(
            {
                "n": n,
                "frames": len(steps),
                "fps": len(steps) / seconds,
                "step": statistics.median(steps),
                "render": statistics.median(renders),
                "adapter": adapter,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--sizes", default="48,256")
    parser.add_argument("--backends", default="webgpu,webgl2,wasm,cpu")
    parser.add_argument("--native", action="store_true", help="the native wgpu path instead")
    args = parser.parse_args()
    if args.native:
        rows = native_rows([int(x) for x in args.sizes.split(",")], args.seconds)
        print("| path | board | frames | fps | step ms (median) | render + read-back ms (median) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| native wgpu ({r['adapter'].get('description', r['adapter'])}) | "
                f"{r['n']}×{r['n']} | {r['frames']} | {r['fps']:.1f} | {r['step']:.2f} | "
                f"{r['render']:.2f} |"
            )
        return 0
    from gpulab.conformance.browser import launch
    from gpulab.server import start
    from playwright.sync_api import expect, sync_playwright

    srv = start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    rows = []
    with sync_playwright() as pw:
        browser = launch(pw)
        for backend in args.backends.split(","):
            ctx = browser.new_context(viewport={"width": 1100, "height": 900})
            page = ctx.new_page()
            page.set_default_timeout(120_000)
            page.goto(f"{url}/?backend={backend}&software=1")
            expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=120_000)
            status = page.get_by_role("status", name="Backend in use").inner_text()
            software = "software" in status
            for n in (int(s) for s in args.sizes.split(",")):
                row = measure(page, backend, n, args.seconds)
                row["software"] = software
                rows.append(row)
                print(row, file=sys.stderr)
            ctx.close()
        version = browser.version
        browser.close()
    srv.shutdown()
    print(f"Chromium {version}, fps=60 requested, {args.seconds:g} s per row after 1 s warm-up\n")
    print(
        "| backend | board | frames | fps | step ms (median) | present ms (median) | "
        "latency ms (median / p95) | max unacked |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        label = f"{r['backend']}{' (software)' if r['software'] else ''}"
        print(
            f"| {label} | {r['n']}×{r['n']} | {r['frames']} | {r['fps']:.1f} | {r['step']:.2f} | "
            f"{r['present']:.2f} | {r['lat50']:.1f} / {r['lat95']:.1f} | {r['maxUnacked']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
