"""MiniLM sentences/s in the page, on every page backend (headless Chromium, this machine).

    PYTHONPATH=pylib .venv/bin/python bench/minilm_page.py --backends wasm,webgpu,webgl2,cpu

Starts `gpulab serve`'s server, opens the notebook (software adapters allowed: WebGPU is
SwiftShader here, WebGL2 ANGLE on SwiftShader), loads the checkpoint once (`minilm.load_async`),
then per backend (the backend menu) and batch: one prepared session of `--length` tokens per
sentence (random ids, mask all ones: the same method as bench/minilm_bench.py), one warm-up run,
the median of `--runs` runs. A batch larger than the page's token budget (model.token_budget,
256 padded tokens: the runtime's 256 MiB device quota) runs as `encode` runs it, in several
submissions of that many rows. A backend that refuses the graph is reported with its error.
"""

from __future__ import annotations

import argparse
import json
import re
import time

from gpulab.conformance.browser import launch
from playwright.sync_api import sync_playwright

LOAD = "from gpulab.models import minilm\nmodel = await minilm.load_async()\nprint('loaded')\n"
MEASURE = """import json, random, time
random.seed(1)
rates = {{}}
model.close()
for batch in {batches}:
    rows = min(batch, max(1, model.token_budget // {length}))  # as encode splits a batch
    ids = [random.randrange(1000, 30522) for _ in range(rows * {length})]
    g, feeds, emb = model._graph(rows, {length})
    try:
        s = await g.prepare_async(feeds=feeds, emb=emb)
        f = {{"ids": ids, "mask": [1.0] * (rows * {length})}}
        await s.run_async(f)
        ts = []
        for _ in range({runs}):
            t = time.perf_counter()
            for _ in range(-(-batch // rows)):
                await s.run_async(f)
            ts.append(time.perf_counter() - t)
        s.dispose()
        rates[batch] = batch / sorted(ts)[len(ts) // 2]
    except Exception as err:
        rates[batch] = f"{{type(err).__name__}}: {{err}}"[:160]
print("RATES " + json.dumps(rates))
"""
DONE = re.compile(r"^\[\d+\]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="wasm,webgpu,webgl2,cpu")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    ns = parser.parse_args()
    from gpulab.server import start

    srv = start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.server_address[1]}/?backend=wasm&software=1"
    rows = []
    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page()
        page.set_default_timeout(600_000)
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]", timeout=180_000)
        _run(page, 1, LOAD)
        batches = [int(b) for b in ns.batches.split(",")]
        for n, backend in enumerate(ns.backends.split(","), start=2):
            page.get_by_label("Backend", exact=True).select_option(backend)
            page.wait_for_function(
                "(b) => document.body.innerText.includes('Backend in use: ' + b)", arg=backend
            )
            page.get_by_role("button", name="+ Add cell").click()
            code = MEASURE.format(batches=batches, length=ns.length, runs=ns.runs)
            text = _run(page, n, code)
            line = next((x for x in text.splitlines() if x.startswith("RATES ")), "RATES {}")
            for batch, rate in json.loads(line[6:]).items():
                rows.append((backend, batch, rate))
        browser.close()
    srv.shutdown()
    print(
        f"\nMiniLM-L6 in the page (headless Chromium), {ns.length} tokens per sentence, "
        f"median of {ns.runs}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
    )
    print("| page backend | batch | sentences/s |\n| --- | ---: | ---: |")
    for backend, batch, rate in rows:
        shown = f"{rate:.2f}" if isinstance(rate, float) else rate
        print(f"| {backend} | {batch} | {shown} |")


def _run(page, n: int, code: str) -> str:
    cell = page.get_by_role("region", name=f"Cell {n}", exact=True)
    cell.get_by_role("textbox").fill(code)
    cell.get_by_role("button", name="Run", exact=True).click()
    cell.locator(".prompt").filter(has_text=DONE).wait_for(timeout=600_000)
    out = page.get_by_role("region", name=f"Output of cell {n}", exact=True)
    return out.inner_text()


if __name__ == "__main__":
    main()
