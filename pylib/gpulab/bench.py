"""`gpulab bench`: the 784-256-10 MLP Adam step (batch 64) on every native backend, side by side.

For each backend: ms per `execute` with every output read back, per single-step session `run`
(loss read back), and per step at 8 steps per `run`; medians and minimums over `--runs` runs.
The peer is PyTorch eager (CPU here; `--torch-device cuda` on a GPU machine adds the CUDA graph),
when torch is installed. Loss agreement: the first 10 losses of a fresh session against
PyTorch's first 10. Prints a table and writes JSON (`--json`).
`--sweep`: cost curves over widths, batches and depths (gpulab.benchmarks.sweep); `--browser`:
the same step in the page (gpulab.benchmarks.browser).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from gpulab import host
from gpulab.errors import GpuLabError
from gpulab.models.mlp import init, step_graph

LOSS_STEPS = 10


def _timed(fn: Callable[[], Any], runs: int, per: int = 1) -> dict[str, float]:
    fn()  # warm-up: pipelines, buffers, recorded commands
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3 / per)
    return {"median_ms": statistics.median(samples), "min_ms": min(samples), "n": runs}


def bench_backend(backend: str, runs: int, allow_software: bool) -> dict[str, Any]:
    """Time the three modes on one backend; the losses of the first steps for agreement."""
    values = init(0)
    full = step_graph(values)
    outputs = full.outputs()
    host.configure(gpu=host.gpu_enabled(), allow_software=allow_software)
    first = full.graph.run(backend=backend, **outputs)
    row: dict[str, Any] = {
        "backend": first["backend"],
        "software": first["stats"].get("software"),
        "adapter": first["stats"].get("adapter"),
    }
    row["execute"] = _timed(lambda: full.graph.run(backend=backend, **outputs), runs)
    fed = step_graph(values, feed_batch=True)
    batch = {fed.x: values["x"], fed.y: values["y"]}

    def session() -> Any:
        return fed.graph.prepare(
            feeds=[fed.x, fed.y], carry=fed.carry(), backend=backend, loss=fed.loss
        )

    s = session()
    losses = [s.run(batch)["outputs"]["loss"]["data"][0] for _ in range(LOSS_STEPS)]
    row["losses"] = losses
    row["run_1"] = _timed(lambda: s.run(batch), runs)
    row["run_8"] = _timed(lambda: s.run_steps([batch] * 8), runs, per=8)
    s.dispose()
    return row


def torch_peer(device: str, runs: int) -> list[dict[str, Any]]:
    """PyTorch eager (and on CUDA the graph replay) with the same weights and batch."""
    try:
        from gpulab.benchmarks import torch_peer as tp
    except ImportError as err:
        return [{"backend": "torch", "error": f"PyTorch not installed ({err}): pip install torch"}]
    rows = [tp.mlp_step_bench(device, runs)]
    rows[0]["losses"] = tp.mlp_losses(device, LOSS_STEPS)
    if device == "cuda":
        rows.append(tp.mlp_step_bench(device, runs, graph=True))
    label = tp.device_label(device)
    for r in rows:
        r["adapter"] = {"description": label}
    return rows


def _backends(requested: str | None) -> list[str]:
    if requested:
        return [b.strip() for b in requested.split(",") if b.strip()]
    return ["cpu-python", "wgpu"] if host.gpu_enabled() else ["cpu-python"]


def _fmt(cell: dict[str, float] | None) -> str:
    return "—" if not cell else f"{cell['median_ms']:.3f} / {cell['min_ms']:.3f}"


def table(rows: list[dict[str, Any]], ref_losses: list[float] | None) -> str:
    """Markdown table: one row per backend, ms as median / min."""
    head = (
        "| backend | adapter | execute ms | run (1 step) ms | run (8 steps) ms/step | "
        f"max abs loss diff vs torch ({LOSS_STEPS} steps) |"
    )
    lines = [head, "|" + " --- |" * 6]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['backend']} | not run: {r['error'][:300]} | | | | |")
            continue
        adapter = r.get("adapter") or {}
        label = adapter.get("description") or adapter.get("device") or "CPU"
        if r.get("software"):
            label += " (software)"
        diff = "—"
        if ref_losses and r.get("losses") and r["backend"] != "torch":
            diff = f"{max(abs(a - b) for a, b in zip(r['losses'], ref_losses, strict=False)):.2e}"
        run1 = r.get("run_1") or (
            {"median_ms": r["median_ms"], "min_ms": r["min_ms"]} if "median_ms" in r else None
        )
        lines.append(
            f"| {r.get('mode', r['backend'])} | {label} | {_fmt(r.get('execute'))} | "
            f"{_fmt(run1)} | {_fmt(r.get('run_8'))} | {diff} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--browser" in argv:  # the page benchmark has its own flags (gpulab.benchmarks.browser)
        from gpulab.benchmarks import browser

        return browser.main([a for a in argv if a != "--browser"])
    if "--sweep" in argv:  # cost curves over widths and batches (gpulab.benchmarks.sweep)
        from gpulab.benchmarks import sweep

        return sweep.main([a for a in argv if a != "--sweep"])
    ap = argparse.ArgumentParser(prog="gpulab bench", description=__doc__.splitlines()[0])
    ap.add_argument("--backends", help="comma list of cpu-python,wgpu (default: what can run)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument(
        "--allow-software",
        action="store_true",
        help="let wgpu use a software adapter (lavapipe); labelled in the table",
    )
    ap.add_argument("--torch-device", default="cpu", help="cpu, cuda, or none")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument(
        "--browser",
        action="store_true",
        help="the same step in headless Chromium: every gpu-lab and TF.js backend "
        "(gpulab bench --browser --help)",
    )
    ap.add_argument(
        "--sweep",
        action="store_true",
        help="cost curves: the step at hidden 256-4096 x batch 64-4096, 2 and 4 layers, "
        "against PyTorch eager and CUDA graph; JSON + PNG (gpulab bench --sweep --help)",
    )
    args = ap.parse_args(argv)
    allow_software = args.allow_software or host.software_allowed()
    rows: list[dict[str, Any]] = []
    for backend in _backends(args.backends):
        try:
            rows.append(bench_backend(backend, args.runs, allow_software))
        except GpuLabError as err:
            # a backend that cannot run here is a row with its reason; only one asked for by
            # name makes the run fail
            rows.append(
                {
                    "backend": backend,
                    "error": f"{err.code}: {err.message}",
                    "required": bool(args.backends) or err.code != "UNAVAILABLE",
                }
            )
    peers = [] if args.torch_device == "none" else torch_peer(args.torch_device, args.runs)
    for p in peers:
        p.setdefault("backend", "torch")
    ref = next((p.get("losses") for p in peers if p.get("losses")), None)
    result = {
        "benchmark": "784-256-10 MLP, Adam, batch 64, one training step",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
        "python": sys.version.split()[0],
        "rows": rows + peers,
    }
    print(table(rows + peers, ref))
    print(f"\n{result['machine']}, {result['date']}; ms as median / min over {args.runs} runs")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if any(r.get("required") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
