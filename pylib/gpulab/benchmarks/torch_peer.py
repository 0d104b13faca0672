"""PyTorch peer for the benchmarks: the 784-256-10 MLP Adam step and a square float32 matmul.

Runs the same training step as gpulab's benchmark (same weights and batch, from
gpulab.models.mlp's seeded initializer when weights are passed in) in PyTorch eager mode and,
on CUDA, as a CUDA-graph replay. Prints one JSON object. Used by `gpulab bench` (CPU eager as the
peer) and on the GPU machine (eager CUDA + CUDA graph + torch.matmul with TF32 off).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch


def _stats(samples_ms: list[float]) -> dict:
    return {
        "median_ms": statistics.median(samples_ms),
        "min_ms": min(samples_ms),
        "n": len(samples_ms),
    }


def mlp_params(seed: int = 0) -> dict[str, np.ndarray]:
    """The benchmark's weights and batch; identical to gpulab.models.mlp.init (same generator)."""
    try:
        from gpulab.models.mlp import init

        return init(seed)
    except ImportError:  # the GPU machine may run this file alone
        rng = np.random.default_rng(seed)
        f32 = np.float32
        return {
            "w1": (rng.standard_normal((784, 256)) * (1 / 28)).astype(f32),
            "b1": np.zeros(256, f32),
            "w2": (rng.standard_normal((256, 10)) * (1 / 16)).astype(f32),
            "b2": np.zeros(10, f32),
            "x": rng.random((64, 784), dtype=f32),
            "y": np.eye(10, dtype=f32)[rng.integers(0, 10, 64)],
        }


def mlp_step_bench(device: str, runs: int, seed: int = 0, graph: bool = False) -> dict:
    """ms per Adam step with the loss read back every step (eager), or replayed as a CUDA graph."""
    p = mlp_params(seed)
    dev = torch.device(device)
    w1, b1, w2, b2 = (
        torch.tensor(p[k], device=dev, requires_grad=True) for k in ("w1", "b1", "w2", "b2")
    )
    x = torch.tensor(p["x"], device=dev)
    y = torch.tensor(p["y"], device=dev)
    params = [w1, b1, w2, b2]
    opt = torch.optim.Adam(params, lr=1e-3, capturable=graph)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)
        loss.backward()
        opt.step()
        return loss

    first_loss = float(step().item())  # step 1 (also allocates grads and Adam state)
    samples = []
    if not graph:
        for _ in range(runs):
            t0 = time.perf_counter()
            loss = float(step().item())
            samples.append((time.perf_counter() - t0) * 1e3)
        return {
            "mode": f"torch-{device}-eager",
            "first_loss": first_loss,
            "last_loss": loss,
            **_stats(samples),
        }
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_loss = step()
    per = 8
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(per):
            g.replay()
        loss = float(static_loss.item())
        samples.append((time.perf_counter() - t0) * 1e3 / per)
    return {
        "mode": "torch-cuda-graph (8 replays per read-back)",
        "first_loss": first_loss,
        "last_loss": loss,
        **_stats(samples),
    }


def device_label(device: str) -> str:
    """What the peer ran on, for the table."""
    if device == "cuda":
        return f"{torch.cuda.get_device_name(0)} (PyTorch {torch.__version__})"
    return f"CPU, {torch.get_num_threads()} threads (PyTorch {torch.__version__})"


def mlp_losses(device: str, steps: int, seed: int = 0) -> list[float]:
    """The losses of the first `steps` Adam steps from the benchmark's weights."""
    p = mlp_params(seed)
    dev = torch.device(device)
    params = [torch.tensor(p[k], device=dev, requires_grad=True) for k in ("w1", "b1", "w2", "b2")]
    w1, b1, w2, b2 = params
    x, y = torch.tensor(p["x"], device=dev), torch.tensor(p["y"], device=dev)
    opt = torch.optim.Adam(params, lr=1e-3)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    return losses


def matmul_bench(n: int, runs: int) -> dict:
    """torch.matmul float32 with TF32 off, TFLOP/s (median over runs, CUDA events)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    a = torch.rand(n, n, device="cuda")
    b = torch.rand(n, n, device="cuda")
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    samples = []
    for _ in range(runs):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        a @ b
        e1.record()
        torch.cuda.synchronize()
        samples.append(e0.elapsed_time(e1))
    med = statistics.median(samples)
    return {
        "mode": f"torch.matmul fp32 (TF32 off) {n}^3",
        "tflops": 2 * n**3 / (med * 1e-3) / 1e12,
        **_stats(samples),
    }


def _layered(values: dict[str, np.ndarray], dev: torch.device) -> list[torch.Tensor]:
    """w1, b1, ..., wL, bL of gpulab.models.mlp.init's layout, as leaf tensors on `dev`."""
    n = sum(1 for k in values if k.startswith("w") and k[1:].isdigit())
    names = [f"{kind}{i}" for i in range(1, n + 1) for kind in ("w", "b")]
    return [torch.tensor(values[k], device=dev, requires_grad=True) for k in names]


def _layered_loss(params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the relu MLP: relu after every linear layer but the last."""
    a = x
    pairs = list(zip(params[::2], params[1::2], strict=True))
    for w, b in pairs[:-1]:
        a = torch.relu(a @ w + b)
    w, b = pairs[-1]
    return torch.nn.functional.cross_entropy(a @ w + b, y)


def steps_bench(
    values: dict[str, np.ndarray],
    device: str,
    graph: bool,
    per: int,
    runs_for: Callable[[float], int],
) -> dict:
    """ms per Adam step at `per` steps per read-back (the last step's loss), eager or as a CUDA
    graph replayed `per` times; float32 with TF32 off. The first run's loss is step `per`'s
    (fresh weights) for the loss check; the second run's time picks the run count
    (`runs_for(seconds)`)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(device)
    params = _layered(values, dev)
    x, y = torch.tensor(values["x"], device=dev), torch.tensor(values["y"], device=dev)
    opt = torch.optim.Adam(params, lr=1e-3, capturable=graph)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=False)
        loss = _layered_loss(params, x, y)
        loss.backward()
        opt.step()
        return loss

    if graph:
        run, first = _graph_run(step, per)
    else:

        def run() -> float:
            for _ in range(per):
                loss = step()
            return float(loss.item())

        first = run()
    timed = _per_step_timer(run, per, device)
    runs = runs_for(timed() * per / 1e3)
    samples = [timed() for _ in range(runs)]
    return {"loss": first, "loss_step": per, **_stats(samples)}


def _graph_run(
    step: Callable[[], torch.Tensor], per: int
) -> tuple[Callable[[], float], float | None]:
    """A CUDA graph of one step (captured after 3 warm-up steps on a side stream) and a run of
    `per` replays. No fresh-weight loss: the warm-up steps have moved the weights on."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_loss = step()

    def run() -> float:
        for _ in range(per):
            g.replay()
        return float(static_loss.item())

    run()
    return run, None


def _per_step_timer(run: Callable[[], float], per: int, device: str) -> Callable[[], float]:
    def timed() -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        run()
        return (time.perf_counter() - t0) * 1e3 / per

    return timed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--matmul", type=int, default=0, help="also time an NxNxN fp32 matmul (CUDA)")
    args = ap.parse_args()
    out = {
        "torch": torch.__version__,
        "device": args.device,
        "results": [mlp_step_bench(args.device, args.runs)],
    }
    if args.device == "cuda":
        out["gpu"] = torch.cuda.get_device_name(0)
        out["results"].append(mlp_step_bench("cuda", args.runs, graph=True))
        if args.matmul:
            out["results"].append(matmul_bench(args.matmul, 10))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
