"""torch.compile(model, backend="gpulab") against eager PyTorch and torch.compile's default
(inductor): the 784-256-10 MLP training step (Adam, batch 64) and a MiniLM-sized encoder block
(d 384, 12 heads, ff 1536, 8 x 128 tokens with a padding mask), forward and training step.
Prints one markdown table (median ms per step over --runs after warm-up).

    python bench/torch_backend.py --device cuda --backend wgpu          # on the H200
    python bench/torch_backend.py --device cpu --backend cpu-python --small --runs 3   # here

Rows: eager and inductor run on --device; gpulab runs its graphs on --backend (inputs copied
from --device and results back each call, as the backend does for any caller's device);
`gpulab compile_step` is the fused forward+backward+Adam graph (one session run per step,
and per 8 steps with steps(8)).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "pylib")]

import gpulab.torch_backend as tb
import torch
import torch.nn.functional as TF
from torch import nn


class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, int, int]) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(sizes[0], sizes[1]), nn.Linear(sizes[1], sizes[2])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.relu(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = (split(t) for t in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        att = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.out(att))
        return self.ln2(x + self.ff2(TF.gelu(self.ff1(x))))


def timed(fn: Callable[[], object], runs: int, sync: Callable[[], None]) -> float:
    """Median ms of `fn` after two warm-up calls (compiles and prepares happen there)."""
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def train_step(model: nn.Module, opt: torch.optim.Optimizer, loss_fn: Callable, *batch) -> Callable:
    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(*batch[:-1]), batch[-1]).backward()
        opt.step()

    return step


def compiled(model: nn.Module, how: str, backend: str) -> nn.Module:
    if how == "eager":
        return model
    if how == "inductor":
        return torch.compile(model)
    return torch.compile(model, backend="gpulab", options={"backend": backend})


def mlp_rows(args: argparse.Namespace, sync: Callable[[], None]) -> list[tuple[str, str, float]]:
    sizes = (784, 256, 10) if not args.small else (64, 32, 10)
    dev = torch.device(args.device)
    x = torch.randn(64, sizes[0], device=dev)
    y = torch.randint(0, sizes[2], (64,), device=dev)
    loss_fn = nn.CrossEntropyLoss()
    rows = []
    for how in args.paths:
        torch.manual_seed(0)
        model = MLP(sizes).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        step = train_step(compiled(model, how, args.backend), opt, loss_fn, x, y)
        rows.append(("MLP step (Adam)", label(how, args), timed(step, args.runs, sync)))
    torch.manual_seed(0)
    model = MLP(sizes).to(dev)
    fused = tb.compile_step(
        model, torch.optim.Adam(model.parameters(), lr=1e-3), loss_fn, backend=args.backend
    )
    rows.append(
        (
            "MLP step (Adam)",
            f"gpulab compile_step ({args.backend}), 1 step/run",
            timed(lambda: fused(x, y), args.runs, sync),
        )
    )
    per8 = timed(lambda: fused.steps(8, x, y), max(args.runs // 4, 2), sync) / 8
    rows.append(("MLP step (Adam)", f"gpulab compile_step ({args.backend}), 8 steps/run", per8))
    return rows


def encoder_rows(
    args: argparse.Namespace, sync: Callable[[], None]
) -> list[tuple[str, str, float]]:
    d, heads, ff, b, s = (384, 12, 1536, 8, 128) if not args.small else (64, 4, 128, 2, 16)
    dev = torch.device(args.device)
    x = torch.randn(b, s, d, device=dev)
    mask = torch.ones(b, s, dtype=torch.bool, device=dev)
    mask[:, s * 3 // 4 :] = False  # a padded tail
    target = torch.randn(b, s, d, device=dev)
    rows = []
    outputs: dict[str, torch.Tensor] = {}
    for how in args.paths:
        torch.manual_seed(0)
        model = EncoderBlock(d, heads, ff).to(dev)
        run = compiled(model, how, args.backend)

        def forward(run: nn.Module = run, how: str = how) -> None:
            with torch.no_grad():
                outputs[how] = run(x, mask)

        ms = timed(forward, args.runs, sync)
        diff = (outputs[how] - outputs.get("eager", outputs[how])).abs().max().item()
        path = f"{label(how, args)}, max abs diff vs eager {diff:.1e}"
        rows.append(("encoder block forward", path, ms))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        step = train_step(run, opt, nn.MSELoss(), x, mask, target)
        rows.append(("encoder block step (SGD)", label(how, args), timed(step, args.runs, sync)))
    return rows


def label(how: str, args: argparse.Namespace) -> str:
    if how == "gpulab":
        return f'torch.compile(backend="gpulab") ({args.backend})'
    return f"{how} ({args.device})" if how == "eager" else f"torch.compile inductor ({args.device})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--backend", default="wgpu", help="gpulab backend: wgpu or cpu-python")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--small", action="store_true", help="small shapes (a smoke run)")
    parser.add_argument(
        "--paths", default="eager,inductor,gpulab", help="comma list of eager, inductor, gpulab"
    )
    parser.add_argument("--models", default="mlp,encoder")
    args = parser.parse_args(argv)
    args.paths = args.paths.split(",")
    cuda = args.device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch._dynamo.config.recompile_limit = 64
    rows = []
    if "mlp" in args.models:
        rows += mlp_rows(args, sync)
    if "encoder" in args.models:
        rows += encoder_rows(args, sync)
    where = {r.backend for r in tb.RECORDS if r.calls}
    eager_ms = {m: ms for m, p, ms in rows if p.startswith("eager")}
    where = where or {"(none)"}
    print(
        f"\ntorch {torch.__version__}, device {args.device}"
        + (f" ({torch.cuda.get_device_name()})" if cuda else "")
        + f", gpulab graphs ran on {sorted(map(str, where))}, median of {args.runs} runs\n"
    )
    print("| workload | path | ms per step | vs eager |")
    print("| --- | --- | ---: | ---: |")
    for model, path, ms in rows:
        ratio = f"{ms / eager_ms[model]:.2f}x" if model in eager_ms else ""
        print(f"| {model} | {path} | {ms:.3f} | {ratio} |")
    eager_fallbacks = [r for r in tb.RECORDS if r.backend is None and r.reason]
    for r in eager_fallbacks:
        print(f"\nnote: {r.label} ran in eager PyTorch: {r.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
