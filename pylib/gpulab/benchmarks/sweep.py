"""`gpulab bench --sweep`: cost curves of the MLP Adam step.

The training step of gpulab.models.mlp (forward, cross-entropy, backward, Adam; float32) at
hidden width 256, 1024, 4096 x batch 64, 512, 4096, as 784-h-10 (2 layers) and 784-h-h-h-10
(4 layers), on gpulab natively (a prepared session, 8 steps per `run_steps`, the last loss read
back) against PyTorch eager (8 steps, then the last loss read back) and, on CUDA, a CUDA graph of
one step replayed 8 times. ms per step, median and min. Writes JSON (`--json`), a log-log PNG of
ms/step against FLOPs per step (`--png`, matplotlib) and prints a markdown table with the
issue's check (the ratio to PyTorch eager at the largest and the smallest point).

No tensor cores on either side: gpulab's WGSL matmuls are fp32 fma loops, and the PyTorch side
runs with TF32 off (`torch.backends.cuda.matmul.allow_tf32 = False`), so cuBLAS uses fp32 SGEMM.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulab import host
from gpulab.errors import GpuLabError
from gpulab.models.mlp import init, step_graph

WIDTHS = (256, 1024, 4096)
BATCHES = (64, 512, 4096)
LAYERS = (2, 4)
INPUTS, CLASSES = 784, 10
STEPS = 8  # steps per run (per read-back), as `gpulab bench`'s "8 steps" column
# Runs per point: one run's time (after a warm-up run) sets how many fit in BUDGET_S per backend
# (--budget-s), clamped to [MIN_RUNS, MAX_RUNS]: 125 / (ms per step) runs at the default, so a
# point at 25 ms per step or more gets 5 and one at 2.5 ms or less 50. The H200's first sweep
# (0.4 s, 3-25 runs) took 23.5 s for the 18 points; this one stays well under 120 s.
BUDGET_S, MIN_RUNS, MAX_RUNS = 1.0, 5, 50
FLOPS_RULE = (
    "matmul FLOPs counted from the shapes: 2*batch*in*out per linear layer forward, the same "
    "for its weight gradient, and again for its input gradient (every layer but the first); "
    "bias, relu, softmax/cross-entropy and Adam (elementwise, < 1% at the large points) "
    "not counted"
)
NO_TENSOR_CORES = (
    "float32 on both sides, no tensor cores: gpulab's WGSL matmuls are fp32 fma loops; PyTorch "
    "runs with torch.backends.cuda.matmul.allow_tf32 = False (fp32 SGEMM)"
)


@dataclass(frozen=True)
class Point:
    """One configuration of the grid."""

    layers: int
    hidden: int
    batch: int

    @property
    def shape(self) -> str:
        return "-".join(str(w) for w in [INPUTS] + [self.hidden] * (self.layers - 1) + [CLASSES])

    @property
    def flops(self) -> int:
        """Matmul FLOPs of one training step (FLOPS_RULE)."""
        widths = [INPUTS] + [self.hidden] * (self.layers - 1) + [CLASSES]
        total = 0
        for i, (fan_in, fan_out) in enumerate(itertools.pairwise(widths)):
            per = 2 * self.batch * fan_in * fan_out
            total += per * (2 if i == 0 else 3)  # forward + dW (+ dX past the first layer)
        return total


def grid(widths: tuple[int, ...], batches: tuple[int, ...], layers: tuple[int, ...]) -> list[Point]:
    return [Point(n, h, b) for n in layers for h in widths for b in batches]


def runs_for(seconds_per_run: float, budget_s: float = BUDGET_S) -> int:
    """How many timed runs fit the per-backend budget of a point."""
    fit = int(budget_s / max(seconds_per_run, 1e-6))
    return max(MIN_RUNS, min(MAX_RUNS, fit))


def _stats(samples: list[float]) -> dict[str, Any]:
    return {"median_ms": statistics.median(samples), "min_ms": min(samples), "n": len(samples)}


def gpulab_point(
    values: dict[str, Any], backend: str, runs_for: Callable[[float], int] = runs_for
) -> dict[str, Any]:
    """ms/step of a prepared session at STEPS steps per run; the first run's loss (step 8 from
    the fresh weights) for the check against PyTorch."""
    st = step_graph(values)
    session = st.graph.prepare(carry=st.carry(), backend=backend, loss=st.loss)
    try:
        first = session.run_steps(STEPS)
        stats = first["stats"]

        def timed() -> float:
            t0 = time.perf_counter()
            session.run_steps(STEPS)
            return (time.perf_counter() - t0) * 1e3 / STEPS

        runs = runs_for(timed() * STEPS / 1e3)
        samples = [timed() for _ in range(runs)]
    finally:
        session.dispose()
    adapter = stats.get("adapter") or {}
    return {
        "adapter": adapter.get("description") or "CPU (numpy evaluator)",
        "software": bool(stats.get("software")) if backend != "cpu-python" else True,
        "loss": first["outputs"]["loss"]["data"][0],
        "loss_step": STEPS,
        **_stats(samples),
    }


def torch_points(
    values: dict[str, Any], device: str, runs_for: Callable[[float], int] = runs_for
) -> dict[str, dict[str, Any]]:
    """PyTorch eager (and on CUDA the graph replay) at the same point."""
    from gpulab.benchmarks import torch_peer as tp

    label = tp.device_label(device)
    modes = {f"torch-{device}-eager": False}
    if device == "cuda":
        modes["torch-cuda-graph"] = True
    out: dict[str, dict[str, Any]] = {}
    for name, graph in modes.items():
        try:
            out[name] = tp.steps_bench(values, device, graph, STEPS, runs_for)
            out[name].update(adapter=label, software=False)
        except RuntimeError as err:  # e.g. CUDA out of memory: the row says so, the sweep goes on
            out[name] = {"error": f"{type(err).__name__}: {err}"[:400]}
    if device == "cuda":
        tp.torch.cuda.empty_cache()
    return out


def run_point(
    point: Point,
    backends: list[str],
    torch_device: str | None,
    log: Callable[[str], None],
    runs: Callable[[float], int] = runs_for,
) -> dict[str, Any]:
    """Every backend at one point; a backend that fails there is a row with its reason."""
    values = init(0, INPUTS, point.hidden, CLASSES, point.batch, layers=point.layers)
    t0 = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    for backend in backends:
        try:
            results[backend] = gpulab_point(values, backend, runs)
        except GpuLabError as err:
            results[backend] = {"error": f"{err.code}: {err.message}"[:400]}
    if torch_device:
        results.update(torch_points(values, torch_device, runs))
    row = {
        "layers": point.layers,
        "hidden": point.hidden,
        "batch": point.batch,
        "shape": point.shape,
        "flops": point.flops,
        "results": results,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    row["loss_diff"] = _loss_diff(results)
    log(f"{point.shape} batch {point.batch}: {row['seconds']} s")
    return row


def _eager(results: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for k, r in results.items() if k.endswith("-eager") and "error" not in r), None)


def _loss_diff(results: dict[str, dict[str, Any]]) -> float | None:
    """The largest |gpulab loss - PyTorch eager loss| at step STEPS from the same weights."""
    eager = _eager(results)
    ours = [r["loss"] for k, r in results.items() if not k.startswith("torch") and "loss" in r]
    if eager is None or not ours:
        return None
    return max(abs(v - eager["loss"]) for v in ours)


def sweep(
    points: list[Point],
    backends: list[str],
    torch_device: str | None,
    log: Callable[[str], None] = print,
    on_point: Callable[[dict[str, Any]], None] | None = None,
    budget_s: float = BUDGET_S,
) -> dict[str, Any]:
    """Every point in order; `on_point` sees the result so far after each (a partial JSON
    survives a run cut short by the device call's time limit)."""
    t0 = time.perf_counter()
    result = _header(backends, torch_device, budget_s)
    runs = functools.partial(runs_for, budget_s=budget_s)
    for p in points:
        result["points"].append(run_point(p, backends, torch_device, log, runs))
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        if on_point:
            on_point(result)
    return result


def _header(backends: list[str], torch_device: str | None, budget_s: float) -> dict[str, Any]:
    return {
        "benchmark": "MLP training step (Adam, float32) sweep, gpulab bench --sweep",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
        "python": sys.version.split()[0],
        "steps_per_run": STEPS,
        "timing": f"ms per step = one run of {STEPS} steps (last loss read back) / {STEPS}; "
        f"runs per point: one run's time sets how many fit {budget_s} s per backend, "
        f"clamped to [{MIN_RUNS}, {MAX_RUNS}], after a warm-up run",
        "flops_rule": FLOPS_RULE,
        "precision": NO_TENSOR_CORES,
        "backends": backends,
        "torch_device": torch_device,
        "wall_s": 0.0,
        "points": [],
    }


def _labels(result: dict[str, Any]) -> list[str]:
    seen: dict[str, None] = {}
    for row in result["points"]:
        seen.update(dict.fromkeys(row["results"]))
    return list(seen)


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "—"
    if "error" in r:
        return r["error"].split(":")[0]  # the code; the check below names the reason
    return f"{r['median_ms']:.3f} / {r['min_ms']:.3f}"


def _ratio(row: dict[str, Any], backend: str) -> float | None:
    eager, ours = _eager(row["results"]), row["results"].get(backend)
    if eager is None or not ours or "error" in ours:
        return None
    return float(ours["median_ms"] / eager["median_ms"])


def table(result: dict[str, Any]) -> str:
    """Markdown: one row per point, ms/step as median / min per backend, ratio to eager."""
    labels = _labels(result)
    ours = [b for b in result["backends"]]
    head = ["shape", "batch", "GFLOP/step"] + [f"{b} ms" for b in labels]
    head += [f"{b} / eager" for b in ours] + ["loss diff"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in result["points"]:
        cells = [row["shape"], str(row["batch"]), f"{row['flops'] / 1e9:.3g}"]
        cells += [_cell(row["results"].get(b)) for b in labels]
        for b in ours:
            ratio = _ratio(row, b)
            cells.append("—" if ratio is None else f"{ratio:.2f}x")
        diff = row.get("loss_diff")
        cells.append("—" if diff is None else f"{diff:.1e}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def adapters(result: dict[str, Any]) -> list[str]:
    """'backend: adapter (software)' once per backend."""
    found: dict[str, str] = {}
    for row in result["points"]:
        for b, r in row["results"].items():
            if "adapter" in r and b not in found:
                found[b] = r["adapter"] + (" (software)" if r.get("software") else "")
    return [f"{b}: {a}" for b, a in found.items()]


def check(result: dict[str, Any]) -> list[str]:
    """The cost-curve target per depth: <= 1.5x eager at the largest point, ahead at the smallest
    (of the points the backend ran; the ones it refused are named with their reason)."""
    lines = []
    for backend in result["backends"]:
        for layers in sorted({r["layers"] for r in result["points"]}):
            rows = [r for r in result["points"] if r["layers"] == layers]
            ran = sorted((r for r in rows if _ratio(r, backend) is not None), key=_flops)
            for r in rows:
                err = r["results"].get(backend, {}).get("error")
                if err:
                    lines.append(f"- {backend}, {r['shape']} batch {r['batch']}: not run: {err}")
            if not ran:
                lines.append(f"- {backend}, {layers} layers: no point with an eager peer")
                continue
            for what, row, target in (("largest", ran[-1], 1.5), ("smallest", ran[0], 1.0)):
                ratio = _ratio(row, backend) or 0.0
                verdict = "met" if ratio <= target else "missed"
                lines.append(
                    f"- {backend}, {row['shape']} batch {row['batch']} ({what} run): {verdict} "
                    f"({ratio:.2f}x eager, target <= {target}x)"
                )
    return lines


def _flops(row: dict[str, Any]) -> int:
    return int(row["flops"])


def plot(result: dict[str, Any], path: str) -> None:
    """ms/step against FLOPs per step, log-log, one line per backend and depth."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    soft = {b for row in result["points"] for b, r in row["results"].items() if r.get("software")}
    depths = sorted({r["layers"] for r in result["points"]})
    for n, label in enumerate(_labels(result)):
        for layers in depths:
            pts = sorted(
                (r["flops"], r["results"][label]["median_ms"])
                for r in result["points"]
                if r["layers"] == layers and "median_ms" in r["results"].get(label, {})
            )
            if pts:
                xs, ys = zip(*pts, strict=True)
                # a colour per backend, a line style per depth
                style = ("-o", "--s", ":^", "-.v")[depths.index(layers) % 4]
                ax.plot(
                    xs,
                    ys,
                    style,
                    color=f"C{n}",
                    label=f"{label}{' (software)' if label in soft else ''}, {layers} layers",
                    markersize=4,
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("matmul FLOPs per training step")
    ax.set_ylabel(f"ms per step ({STEPS} steps per run, median)")
    ax.set_title(f"MLP Adam step, float32, no tensor cores ({result['date']})", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, format="png")


def _report(result: dict[str, Any], png: str | None) -> None:
    print(table(result))
    print(f"\n{NO_TENSOR_CORES}.\nFLOPs: {FLOPS_RULE}.\n{result['timing']}.")
    print("adapters: " + "; ".join(adapters(result)))
    print(f"{result['machine']}, {result['date']}, sweep wall {result['wall_s']} s")
    target = "The cost-curve target (<= 1.5x eager at the largest point, ahead at the smallest)"
    print(f"\n{target}:\n" + "\n".join(check(result)))
    if png:
        plot(result, png)


def _have_matplotlib() -> bool:
    """Checked before the sweep, not after it: --png needs matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("gpulab bench --sweep: --png needs matplotlib (pip install matplotlib)")
        return False
    return True


def _write_json(result: dict[str, Any], path: str) -> None:
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected a comma list of positive integers: {text!r}")
    return values


def _torch_device(requested: str) -> str | None:
    """cuda when PyTorch sees a GPU (auto), cpu, or None (no torch, or 'none')."""
    if requested == "none":
        return None
    try:
        import torch
    except ImportError:
        print("note: PyTorch is not installed: no torch peers (pip install torch)")
        return None
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpulab bench --sweep: --torch-device cuda but PyTorch sees no CUDA GPU")
    return requested


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gpulab bench --sweep", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=_ints, default=WIDTHS, help="hidden widths (256,1024,4096)")
    ap.add_argument("--batches", type=_ints, default=BATCHES, help="batch sizes (64,512,4096)")
    ap.add_argument("--layers", type=_ints, default=LAYERS, help="linear layers (2,4)")
    ap.add_argument("--backends", default="wgpu", help="comma list of gpulab backends (wgpu)")
    ap.add_argument("--torch-device", default="auto", help="auto (cuda if seen, else cpu), none")
    ap.add_argument("--allow-software", action="store_true", help="let wgpu use lavapipe")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--png", help="write the cost-curve plot here (matplotlib)")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=BUDGET_S,
        help=f"timed seconds per point and backend that set its run count ({BUDGET_S})",
    )
    ap.add_argument("--report", help="run nothing: print the table and plot --png from this JSON")
    args = ap.parse_args(argv)
    if args.png and not _have_matplotlib():
        return 2
    if args.report:
        with open(args.report) as f:
            _report(json.load(f), args.png)
        return 0
    host.configure(
        gpu=host.gpu_enabled(), allow_software=args.allow_software or host.software_allowed()
    )
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    device = _torch_device(args.torch_device)
    if device == "cpu":
        print("note: PyTorch sees no CUDA here: the torch peers are CPU eager, no CUDA graph")
    points = grid(args.sizes, args.batches, args.layers)
    result = sweep(
        points,
        backends,
        device,
        log=lambda s: print(s, file=sys.stderr),
        on_point=(lambda r: _write_json(r, args.json)) if args.json else None,
        budget_s=args.budget_s,
    )
    _report(result, args.png)
    # a point past the protocol's limits (LIMIT, before any device work) is a reported
    # refusal; any other error fails the run
    failed = [
        f"{row['shape']}/{row['batch']} {b}: {r['error']}"
        for row in result["points"]
        for b, r in row["results"].items()
        if "error" in r and not r["error"].startswith("LIMIT")
    ]
    for f in failed:
        print(f"error: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
