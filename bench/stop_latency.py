"""How long the playground's Stop takes, and how well the page keeps painting meanwhile.

    .venv/bin/python bench/stop_latency.py [--repeats 5] [--backend wasm]

Opens the playground (gpulab serve's server) in headless Chromium (pylib/gpulab/conformance/
browser.py's flags) and, `--repeats` times each:

- Stop during `time.sleep(30)`: ms from the Stop click's handling in the page to the cell's
  prompt saying the run ended (the worker wakes from its Atomics.wait on the cancel slot);
- Stop during `while True: print(i)`: the same, and the wall ms here from before the click to
  the end (a page too busy to take the click shows there); before Stop, the longest gap between
  the page's animation frames over `--paint-s` seconds of the loop (a frozen page has long gaps).

Prints a markdown table (median and worst of the repeats). The e2e tests
(e2e/test_playground.py) check what Stop does, not how fast: the figures are here.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "pylib"))

DONE = re.compile(r"^\[\d+\]")  # a cell's prompt after a run

SLEEP = "import display, time\ndisplay.text('sleeping')\ntime.sleep(30)\n"
PRINT_LOOP = "i = 0\nwhile True:\n    print(i)\n    i += 1\n"


def arm_stop_timer(page) -> None:
    """Record in the page when Stop is clicked and when cell 1's prompt says the run ended."""
    page.evaluate(
        """() => {
        const prompt = document.querySelector('section.cell .prompt');
        window.__stopAt = null; window.__endAt = null;
        const obs = new MutationObserver(() => {
            if (/^\\[\\d+\\]/.test(prompt.textContent) && window.__endAt === null) {
                window.__endAt = performance.now(); obs.disconnect();
            }
        });
        obs.observe(prompt, {childList: true, characterData: true, subtree: true});
        document.getElementById('stop').addEventListener(
            'click', () => { window.__stopAt = performance.now(); }, {once: true, capture: true});
    }"""
    )


def stop_and_time(page) -> tuple[float, float]:
    """Press Stop; (ms in the page from the click's handling to the run's end, wall ms here
    from before the click to the end)."""
    from playwright.sync_api import expect

    arm_stop_timer(page)
    t0 = time.monotonic()
    page.get_by_role("button", name="Stop").click()
    expect(page.locator("section.cell .prompt").first).to_have_text(DONE, timeout=60_000)
    wall = (time.monotonic() - t0) * 1000
    return page.evaluate("window.__endAt - window.__stopAt"), wall


def longest_frame_gap(page, ms: float) -> float:
    """The longest gap between the page's animation frames over `ms`."""
    return page.evaluate(
        """(ms) => new Promise((resolve) => {
        let last = performance.now(); let worst = 0; const end = last + ms;
        const tick = (t) => { worst = Math.max(worst, t - last); last = t;
                              if (t < end) requestAnimationFrame(tick); else resolve(worst); };
        requestAnimationFrame(tick);
    })""",
        ms,
    )


def run(page, code: str) -> None:
    from playwright.sync_api import expect

    cell = page.locator("section.cell").first
    cell.get_by_role("textbox").fill(code)
    cell.get_by_role("button", name="Run", exact=True).click()
    expect(cell.locator(".prompt")).to_have_text("[running]")


def measure(page, repeats: int, paint_s: float) -> dict[str, list[float]]:
    from playwright.sync_api import expect

    out: dict[str, list[float]] = {"sleep": [], "print": [], "print_wall": [], "gap": []}
    output = page.locator("section.cell .output").first
    for _ in range(repeats):
        run(page, SLEEP)
        expect(output).to_contain_text("sleeping")
        out["sleep"].append(stop_and_time(page)[0])
        run(page, PRINT_LOOP)
        expect(output).to_contain_text("lines dropped", timeout=60_000)
        out["gap"].append(longest_frame_gap(page, paint_s * 1000))
        in_page, wall = stop_and_time(page)
        out["print"].append(in_page)
        out["print_wall"].append(wall)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backend", default="wasm")
    parser.add_argument("--paint-s", type=float, default=2.0)
    args = parser.parse_args()
    from gpulab.conformance.browser import launch
    from gpulab.server import start
    from playwright.sync_api import expect, sync_playwright

    srv = start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{url}/?backend={args.backend}")
        expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=120_000)
        rows = measure(page, args.repeats, args.paint_s)
        version = browser.version
        browser.close()
    srv.shutdown()
    print(f"Chromium {version}, backend {args.backend}, {args.repeats} repeats\n")
    print("| what | median ms | worst ms |")
    print("|---|---|---|")
    labels = {
        "sleep": "Stop during time.sleep (in the page)",
        "print": "Stop during a print loop (in the page)",
        "print_wall": "Stop during a print loop (wall, from before the click)",
        "gap": f"longest frame gap during {args.paint_s:g} s of a print loop",
    }
    for key, label in labels.items():
        values = rows[key]
        print(f"| {label} | {statistics.median(values):.0f} | {max(values):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
