"""`gpulab bench --browser`: the MLP Adam step in headless Chromium, every backend in one page.

The page (bench/browser/index.html) runs the 784-256-10 MLP training step (Adam, batch 64, one
graph from gpulab.models.mlp) on every gpu-lab backend (cpu, wasm, webgl2, webgpu) and the same
step on TensorFlow.js's backends (cpu, wasm, webgl, webgpu), all from the weights and batch of
`init(0)`. This module builds that graph as a fixture, serves it with the repo root, drives the
page with Playwright and prints a markdown table; the losses of the first steps are compared
with the gpu-lab cpu backend's and, when torch is installed, with PyTorch CPU's.

Works from a source checkout only (the page imports backends-js/ and node_modules/).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
PAGE = "/bench/browser/index.html"
FIXTURE_PATH = "/bench/browser/fixture.json"
LOSS_STEPS = 5
GPULAB_BACKENDS = ("cpu", "wasm", "webgl2", "webgpu")
TFJS_BACKENDS = ("cpu", "wasm", "webgl", "webgpu")
MODES = ("execute", "run1", "run8")


def _f32_base64(values: Any) -> str:
    import numpy as np

    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def fixture(seed: int = 0) -> dict[str, Any]:
    """The step graph (x and y fed) with float32 data as base64, its feeds, carry and batch.

    Every node's `data` list becomes `data_f32` (base64 of little-endian float32), so the page
    gets the exact float32 values `init(seed)` made, in a quarter of the JSON text.
    """
    from gpulab.models.mlp import init, step_graph

    values = init(seed)
    step = step_graph(values, feed_batch=True)
    outputs = step.outputs()
    graph = step.graph.to_dict(**outputs)
    for node in graph["nodes"]:
        if "data" in node:
            node["data_f32"] = _f32_base64(node.pop("data"))
    name_of = {id(t): name for name, t in outputs.items()}
    return {
        "seed": seed,
        "graph": graph,
        "feeds": {"x": step.x.id, "y": step.y.id},
        "batch": {"x": _f32_base64(values["x"]), "y": _f32_base64(values["y"])},
        "carry": {str(i.id): name_of[id(o)] for i, o in step.carry().items()},
        "params": {k: t.id for k, t in step.params.items()},
        "sizes": {
            "batch": values["x"].shape[0],
            "inputs": values["x"].shape[1],
            "hidden": values["w1"].shape[1],
            "classes": values["y"].shape[1],
        },
        "adam": _adam_settings(graph),
        "loss": "loss",
    }


def _adam_settings(graph: dict[str, Any]) -> dict[str, float]:
    """lr, betas and eps of the graph's Adam updates (all four are the same), for TF.js."""
    found = {
        (n["lr"], n["beta1"], n["beta2"], n["eps"])
        for n in graph["nodes"]
        if n["op"] == "adam_update"
    }
    if len(found) != 1:
        raise ValueError(f"the step graph should have one Adam setting, found {sorted(found)}")
    lr, beta1, beta2, eps = found.pop()
    return {"lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps}


def payload_route(
    path: str, payload: bytes, content_type: str = "application/json"
) -> Callable[[Any], bool]:
    """A static_server route answering GET `path` (any query) with `payload`."""

    def route(handler: Any) -> bool:
        if handler.command != "GET" or handler.path.split("?")[0] != path:
            return False
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
        return True

    return route


def page_query(
    runs: int,
    gpulab: tuple[str, ...] = GPULAB_BACKENDS,
    tfjs: tuple[str, ...] = TFJS_BACKENDS,
    budget_s: float = 0.0,
    warmup: int = 1,
) -> str:
    """The page's query string: runs per mode, which lanes, warm-up calls, and the time budget
    per mode (software-renderer lanes, and TF.js's 8-step mode)."""
    return (
        f"?runs={runs}&gpulab={','.join(gpulab)}&tfjs={','.join(tfjs)}"
        f"&loss_steps={LOSS_STEPS}&warmup={warmup}&budget_s={budget_s:g}"
    )


def run_page(
    page: Any, base_url: str, query: str, timeout_s: float, path: str = PAGE
) -> dict[str, Any]:
    """Open the page (already served with the fixture route) and return its result."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_default_timeout(timeout_s * 1000)
    page.goto(base_url + path + query)
    page.wait_for_function("window.benchResult !== undefined", timeout=timeout_s * 1000)
    result = page.evaluate("window.benchResult")
    if errors:
        result.setdefault("pageErrors", errors)
    return result


def torch_losses(seed: int, steps: int) -> dict[str, Any]:
    """PyTorch CPU's first losses from the same weights, or why there are none."""
    try:
        from gpulab.benchmarks import torch_peer
    except ImportError as err:
        return {"error": f"PyTorch not installed ({err}): pip install torch"}
    import torch

    return {"version": torch.__version__, "losses": torch_peer.mlp_losses("cpu", steps, seed)}


def _max_diff(a: list[float] | None, b: list[float] | None) -> float | None:
    if not a or not b:
        return None
    return max(abs(x - y) for x, y in zip(a, b, strict=False))


def add_agreement(result: dict[str, Any], torch_ref: dict[str, Any]) -> None:
    """Each row's largest loss difference vs gpu-lab cpu (page) and vs PyTorch CPU."""
    ref = next(
        (
            r.get("losses")
            for r in result["rows"]
            if r["lib"] == "gpu-lab" and r["backend"] == "cpu"
        ),
        None,
    )
    result["torch"] = torch_ref
    for row in result["rows"]:
        row["maxLossDiffVsCpu"] = _max_diff(row.get("losses"), ref)
        row["maxLossDiffVsTorch"] = _max_diff(row.get("losses"), torch_ref.get("losses"))


def machine() -> dict[str, Any]:
    """CPU model, core count, platform: for the record."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "load": _load()}


def _load() -> list[float] | None:
    """1/5/15-minute load averages (the machine may be shared: timings depend on it)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run(
    runs: int = 20,
    seed: int = 0,
    gpulab: tuple[str, ...] = GPULAB_BACKENDS,
    tfjs: tuple[str, ...] = TFJS_BACKENDS,
    budget_s: float = 0.0,
    warmup: int = 1,
    timeout_s: float = 900,
    torch: bool = True,
    browser: Any = None,
) -> dict[str, Any]:
    """Serve the repo with the fixture, run the page in Chromium, return its result + agreement.

    `browser` is a Playwright Browser to reuse (tests); otherwise Chromium is launched here.
    """
    if not (ROOT / "bench" / "browser" / "index.html").is_file():
        raise FileNotFoundError(
            f"bench/browser/index.html not found under {ROOT}: the browser "
            "benchmark runs from a source checkout"
        )
    from gpulab.static_server import start_server

    load_before = _load()
    payload = json.dumps(fixture(seed)).encode()
    srv = start_server(
        ROOT, host="127.0.0.1", port=0, routes=[payload_route(FIXTURE_PATH, payload)]
    )
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    query = page_query(runs, gpulab, tfjs, budget_s, warmup)
    try:
        if browser is not None:
            result = _in_new_page(browser, base, query, timeout_s)
        else:
            from playwright.sync_api import sync_playwright

            from gpulab.conformance.browser import launch

            os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
            with sync_playwright() as p:
                own = launch(p)
                try:
                    result = _in_new_page(own, base, query, timeout_s)
                finally:
                    own.close()
    finally:
        srv.shutdown()
    if "fatal" in result:
        return result
    result["machine"] = {**machine(), "loadBefore": load_before}
    add_agreement(result, torch_losses(seed, LOSS_STEPS) if torch else {"error": "not asked"})
    return result


def _in_new_page(browser: Any, base: str, query: str, timeout_s: float) -> dict[str, Any]:
    context = browser.new_context()
    try:
        return run_page(context.new_page(), base, query, timeout_s)
    finally:
        context.close()


def _cell(stats: dict[str, Any] | None) -> str:
    if not stats:
        return "—"
    return f"{stats['median']:.2f} / {stats['min']:.2f} (n={stats['n']})"


def _diff(value: float | None) -> str:
    return "—" if value is None else f"{value:.1e}"


def table(result: dict[str, Any]) -> str:
    """Markdown table: one row per lane; ms as median / min (n runs)."""
    lines = [
        (
            "| library | backend | adapter | execute ms | run (1 step) ms | run (8 steps) ms/step "
            f"| loss, step 1 | max abs loss diff vs gpu-lab cpu / vs torch ({LOSS_STEPS} steps) |"
        ),
        "|" + " --- |" * 8,
    ]
    for r in result["rows"]:
        lib = "gpu-lab" if r["lib"] == "gpu-lab" else "TF.js"
        if r.get("error"):
            lines.append(f"| {lib} | {r['backend']} | not run: {_one_line(r['error'])} | | | | | |")
            continue
        adapter = r.get("adapter") or "?"
        if r.get("software"):
            adapter += " (software)"
        loss = f"{r['losses'][0]:.6f}" if r.get("losses") else "—"
        diffs = f"{_diff(r.get('maxLossDiffVsCpu'))} / {_diff(r.get('maxLossDiffVsTorch'))}"
        lines.append(
            f"| {lib} | {r['backend']} | {adapter} | {_cell(r.get('execute'))} | "
            f"{_cell(r.get('run1'))} | {_cell(r.get('run8'))} | {loss} | {diffs} |"
        )
    return "\n".join(lines)


def _one_line(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split()).replace("|", "/")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def summary(result: dict[str, Any]) -> str:
    """The lines under the table: machine, browser, date, torch, per-lane notes."""
    m = result["machine"]
    torch_ref = result.get("torch", {})
    torch_line = (
        f"PyTorch {torch_ref['version']} CPU losses {torch_ref['losses']}"
        if torch_ref.get("losses")
        else f"PyTorch: {torch_ref.get('error')}"
    )
    lines = [
        (
            f"machine: {m['cpu']}, {m['cores']} cores, {m['platform']}; load average "
            f"{m['loadBefore']} before, {m['load']} after"
        ),
        f"browser: {result['userAgent']}; crossOriginIsolated={result['crossOriginIsolated']}",
        (
            f"date: {result['date']}; runs per mode: {result['runs']} after {result['warmup']} "
            f"warm-up; time budget per mode {result['budgetS'] or 'none'} s (at least 5 runs, 3 of 8 "
            "steps; software-renderer lanes and TF.js's 8-step mode only)"
        ),
        torch_line,
    ]
    for r in result["rows"]:
        if r.get("losses"):
            lines.append(f"{r['lib']} {r['backend']}: losses {r['losses']}")
    return "\n".join(lines)


def failures(result: dict[str, Any], tolerance: float = 1e-4) -> list[str]:
    """Why this run is not clean: page errors, lanes not run, losses that disagree."""
    out = [f"page error: {e}" for e in result.get("pageErrors", [])]
    for r in result["rows"]:
        name = f"{r['lib']} {r['backend']}"
        if r.get("error"):
            out.append(f"{name}: {_one_line(r['error'])}")
            continue
        for key in ("maxLossDiffVsCpu", "maxLossDiffVsTorch"):
            if r.get(key) is not None and r[key] > tolerance:
                out.append(f"{name}: {key} = {r[key]:.2e} > {tolerance:g}")
    return out


def _names(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gpulab bench --browser", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="timed runs per mode (default 20)")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=8.0,
        help="stop a mode after this many seconds once 5 runs (3 of 8 steps) are in, on "
        "software-renderer lanes and TF.js's 8-step mode only (0: never; default 8)",
    )
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls before each mode")
    ap.add_argument("--gpulab", default=",".join(GPULAB_BACKENDS), help="gpu-lab backends")
    ap.add_argument("--tfjs", default=",".join(TFJS_BACKENDS), help="TF.js backends ('' none)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch loss reference")
    ap.add_argument("--timeout", type=float, default=900, help="seconds for the whole page")
    ap.add_argument("--json", type=Path, help="write the JSON result here")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    result = run(
        runs=args.runs,
        gpulab=_names(args.gpulab),
        tfjs=_names(args.tfjs),
        budget_s=args.budget_s,
        warmup=args.warmup,
        timeout_s=args.timeout,
        torch=not args.no_torch,
    )
    if "fatal" in result:
        print(f"the benchmark page failed: {result['fatal']}", file=sys.stderr)
        return 1
    result["wallS"] = round(time.monotonic() - t0, 1)
    print(table(result))
    print()
    print(summary(result))
    print(f"wall time: {result['wallS']} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    problems = failures(result)
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
