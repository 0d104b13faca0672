"""Eager gpulab.torch training step against eager PyTorch (CPU): the 784-256-10 MLP, batch 64,
Adam, cross_entropy; per step zero_grad, forward, backward, step and loss.item() (one graph run
for gpulab.torch). Prints a markdown table of the median step after the first.

    PYTHONPATH=pylib .venv/bin/python bench/torch_eager.py [--backend cpu-python wgpu] [--steps 8]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any


def _steps(torch: Any, steps: int) -> list[float]:
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backend", nargs="+", default=["cpu-python", "wgpu"])
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    import gpulab.torch as gt
    import torch

    print("| runner | first step (ms) | median later step (ms) |")
    print("| --- | --- | --- |")
    for backend in args.backend:
        gt.set_backend(backend)
        t = _steps(gt, args.steps)
        print(
            f"| gpulab.torch eager, {backend} | {t[0] * 1e3:.0f} | "
            f"{statistics.median(t[1:]) * 1e3:.0f} |"
        )
    t = _steps(torch, args.steps)
    print(f"| PyTorch eager, CPU | {t[0] * 1e3:.1f} | {statistics.median(t[1:]) * 1e3:.1f} |")


if __name__ == "__main__":
    main()
