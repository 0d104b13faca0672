"""The seed's compiled training step: the 784-256-10 MLP (ReLU), batch 64, cross-entropy, Adam,
through gpulab.torch's torch.compile(step, training=True), against eager PyTorch.

Rows (median ms per training step over --runs, after one warm-up call each):
- compiled call: `step(x, y)`, the step recorded and run as one graph, parameters and Adam state
  uploaded and read back every call;
- prepared.step: `prep.step(None, x, y)` on `step.prepare(x, y)` (state resident; the batch
  fed and the loss read back each step);
- prepared.steps(8): `prep.steps(None, [(x, y)] * 8)`, per step (one submission of 8 steps);
- PyTorch eager (natively): zero_grad, forward, backward, step, loss.item() on --torch-device.

    PYTHONPATH=pylib:. .venv/bin/python bench/torch_step.py --backend cpu-python --runs 5
    PYTHONPATH=pylib:. .venv/bin/python bench/torch_step.py --page --backends wasm,webgpu,webgl2,cpu
    bash bench/torch_step_h200.sh <commit>     # the H200: wgpu (Vulkan) vs eager CUDA

--page runs the same program in the notebook (headless Chromium, `gpulab serve`'s server,
software adapters allowed: WebGPU is SwiftShader here, WebGL2 ANGLE on SwiftShader), one
backend after another through the backend menu, with `await` in place of `.result()`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time

# The gpulab.torch program, run natively (WAIT = ".result()" form) and in the page ("await").
PROGRAM = """import json, statistics, time
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear({n_in}, {hidden}), torch.nn.ReLU(),
                            torch.nn.Linear({hidden}, {n_out}))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn({batch}, {n_in}), torch.randint(0, {n_out}, ({batch},))

def train_step(x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss

step = torch.compile(train_step, training=True)

{async_}def median_ms(fn, runs, per=1):
    {wait_warm}  # one warm-up call (the first prepares the session, compiles pipelines)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        {wait_timed}
        times.append((time.perf_counter() - t) * 1e3 / per)
    return statistics.median(times)

rows = {{}}
rows["compiled call"] = {await_}median_ms(lambda: step(x, y), {runs})
prep = step.prepare(x, y)
rows["prepared.step"] = {await_}median_ms(lambda: prep.step(None, x, y), {runs})
rows["prepared.steps(8), per step"] = {await_}median_ms(
    lambda: prep.steps(None, [(x, y)] * 8), {runs}, 8)
{wait_sync}
prep.dispose()
print("ROWS " + json.dumps(rows))
"""
SIZES = {"n_in": 784, "hidden": 256, "n_out": 10, "batch": 64}
SMALL = {"n_in": 64, "hidden": 32, "n_out": 10, "batch": 16}


def program(sizes: dict[str, int], runs: int, page: bool) -> str:
    if page:
        wait = {
            "wait_warm": "await fn()",
            "wait_timed": "await fn()",
            "wait_sync": "await prep.sync()",
            "async_": "async ",
            "await_": "await ",
        }
    else:
        wait = {
            "wait_warm": "fn().result()",
            "wait_timed": "fn().result()",
            "wait_sync": "prep.sync().result()",
            "async_": "",
            "await_": "",
        }
    return PROGRAM.format(runs=runs, **sizes, **wait)


def native_rows(backend: str, sizes: dict[str, int], runs: int) -> dict[str, float]:
    from gpulab import torch

    torch.set_backend(backend)
    scope: dict[str, object] = {"torch": torch}
    # the page's program text, run here (one source for both measurements)
    text = _capture_stdout(lambda: exec(program(sizes, runs, page=False), scope))  # noqa: S102
    return json.loads(text.split("ROWS ", 1)[1])


def _capture_stdout(fn: object) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()  # type: ignore[operator]
    return buf.getvalue()


def torch_eager_ms(device: str, sizes: dict[str, int], runs: int) -> float:
    """Eager PyTorch: zero_grad, forward, backward, Adam step, loss.item() (a sync)."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(sizes["n_in"], sizes["hidden"]),
        torch.nn.ReLU(),
        torch.nn.Linear(sizes["hidden"], sizes["n_out"]),
    ).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(sizes["batch"], sizes["n_in"], device=device)
    y = torch.randint(0, sizes["n_out"], (sizes["batch"],), device=device)

    def step() -> None:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()

    for _ in range(3):
        step()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        step()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def page_rows(backends: list[str], sizes: dict[str, int], runs: int) -> dict[str, object]:
    from gpulab.conformance.browser import launch
    from gpulab.server import start
    from playwright.sync_api import sync_playwright

    srv = start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.server_address[1]}/?backend=wasm&software=1"
    out: dict[str, object] = {}
    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page()
        page.set_default_timeout(600_000)
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]", timeout=180_000)
        _run(page, 1, "import torch\nprint('ok')")
        for n, backend in enumerate(backends, start=2):
            page.get_by_label("Backend", exact=True).select_option(backend)
            page.wait_for_function(
                "(b) => document.body.innerText.includes('Backend in use: ' + b)", arg=backend
            )
            page.get_by_role("button", name="+ Add cell").click()
            text = _run(page, n, program(sizes, runs, page=True))
            line = next((x for x in text.splitlines() if x.startswith("ROWS ")), None)
            out[backend] = json.loads(line[5:]) if line else text[-300:]
        browser.close()
    srv.shutdown()
    return out


def _run(page: object, n: int, code: str) -> str:
    cell = page.get_by_role("region", name=f"Cell {n}", exact=True)  # type: ignore[attr-defined]
    cell.get_by_role("textbox").fill(code)
    cell.get_by_role("button", name="Run", exact=True).click()
    cell.locator(".prompt").filter(has_text=re.compile(r"^\[\d+\]")).wait_for(timeout=600_000)
    out = page.get_by_role("region", name=f"Output of cell {n}", exact=True)  # type: ignore[attr-defined]
    return out.inner_text()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="wgpu", help="native gpulab backend (wgpu, cpu-python)")
    ap.add_argument("--torch-device", default="cpu", help="PyTorch eager's device (cpu, cuda)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--small", action="store_true", help="a 64-32-10 MLP, batch 16 (smoke)")
    ap.add_argument("--page", action="store_true", help="in the page, on --backends")
    ap.add_argument("--backends", default="wasm,webgpu,webgl2,cpu")
    ns = ap.parse_args()
    sizes = SMALL if ns.small else SIZES
    shape = f"{sizes['n_in']}-{sizes['hidden']}-{sizes['n_out']} MLP, batch {sizes['batch']}, Adam"
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if ns.page:
        results = page_rows(ns.backends.split(","), sizes, ns.runs)
        print(
            f"\ntorch.compile step in the page (headless Chromium): {shape}; median of "
            f"{ns.runs}; {stamp}\n"
        )
        print(
            "| page backend | compiled call (ms) | prepared.step (ms) | per step at 8 per "
            "steps (ms) |\n| --- | ---: | ---: | ---: |"
        )
        for backend, rows in results.items():
            if isinstance(rows, dict):
                print(f"| {backend} | " + " | ".join(f"{v:.1f}" for v in rows.values()) + " |")
            else:
                print(f"| {backend} | failed: {rows!r} | | |")
        return
    rows = native_rows(ns.backend, sizes, ns.runs)
    eager = torch_eager_ms(ns.torch_device, sizes, ns.runs)
    print(f"\ntorch.compile step natively: {shape}; median of {ns.runs}; {stamp}\n")
    print("| runner | ms per step |\n| --- | ---: |")
    for name, ms in rows.items():
        print(f"| gpulab.torch {name}, {ns.backend} | {ms:.2f} |")
    print(f"| PyTorch eager step, {ns.torch_device} | {eager:.2f} |")


if __name__ == "__main__":
    main()
