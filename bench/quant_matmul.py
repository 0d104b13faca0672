"""x @ w.T with a q4_k (or --kind q6_k) weight on the wgpu executor (matmul_q: the blocks decoded inside the
kernel) next to PyTorch fp32 x @ W.T with the dequantized weight on CUDA (cuBLAS, TF32 off),
in the same process (docs/benchmarks.md "Quantized matmul").

    python bench/quant_matmul.py                          # 4096x4096 and 11008x4096, batch 1, 16
    python bench/quant_matmul.py --shapes 256x512 --batches 1 --allow-software --no-torch

The weight is random q4_k blocks (f16 d and dmin of a trained layer's size, random 6-bit scales
and 4-bit quants): the time does not depend on the values, and ggml's reference quantizer
(gpulab.quant.quantize_q4_k, numpy) takes about 18 s per 16.7M values here. Timing: `reps` products in
one submission (a prepared program run with `reps` steps), then the queue drained; torch:
CUDA events around `reps` products after a warm-up. Effective weight bandwidth = the weight's
bytes (144 per 256 values for q4_k, 4 per value for fp32) / time per product.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
from gpulab import quant
from gpulab.native import planner
from gpulab.native.bench_matmul import wait_for_queue
from gpulab.native.plan_cache import PlanCache
from gpulab.native.wgpu_executor import open_executor
from gpulab.protocol import validate


def random_q4k(n: int, k: int, seed: int = 0) -> bytes:
    """Random q4_k blocks with finite, layer-sized f16 scales (d ~ 1e-3, dmin ~ 5e-4)."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(n * k // 256, 144), dtype=np.uint8)
    d = rng.uniform(5e-4, 2e-3, blocks.shape[0]).astype("<f2").view(np.uint8).reshape(-1, 2)
    dmin = rng.uniform(2e-4, 1e-3, blocks.shape[0]).astype("<f2").view(np.uint8).reshape(-1, 2)
    blocks[:, 0:2], blocks[:, 2:4] = d, dmin
    return blocks.tobytes()


def random_q6k(n: int, k: int, seed: int = 0) -> bytes:
    """Random q6_k blocks with a finite, layer-sized f16 d (~ 1e-3) and random int8 scales."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, size=(n * k // 256, 210), dtype=np.uint8)
    d = rng.uniform(5e-4, 2e-3, blocks.shape[0]).astype("<f2").view(np.uint8).reshape(-1, 2)
    blocks[:, 208:210] = d
    return blocks.tobytes()


def graph(x: np.ndarray, raw: bytes, n: int, kind: str = "q4_k") -> dict[str, Any]:
    m, k = x.shape
    return {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [m, k], "data": x.reshape(-1)},
            {"id": 1, "op": "input", "shape": [n, k], "dtype": kind, "data": raw},
            {"id": 2, "op": "matmul_q", "a": 0, "b": 1},
        ],
        "outputs": [{"name": "y", "id": 2}],
    }


@contextlib.contextmanager
def forcing(variant: str | None) -> Iterator[None]:
    """Plan matmul_q with this kernel instead of the planner's rules: `split:S` the general
    kernel with k-split S (quant.wgsl SPLIT), `vec:QL:UNROLL` matmul_q4k_vec / _q6k_vec (x of
    at most 8 rows, the kernel's limit) with those overrides; None: the planner's choice."""
    split_rule, vec_rule = planner.quant_split, planner.quant_vec
    if variant is not None:
        kind, *values = variant.split(":")
        if kind == "split":
            planner.quant_split = lambda blocks: int(values[0])
            planner.quant_vec = lambda rows, blocks, kind: None
        else:
            ql, unroll = (int(v) for v in values)
            planner.quant_vec = lambda rows, blocks, kind: (
                {"QL": ql, "MR": rows, **({"UNROLL": unroll} if kind == "q4_k" else {})}
                if rows <= 8
                else None
            )
    try:
        yield
    finally:
        planner.quant_split, planner.quant_vec = split_rule, vec_rule


def bench_wgpu(
    executor: Any, x: np.ndarray, raw: bytes, n: int, reps: int, kind: str = "q4_k"
) -> dict[str, Any]:
    """Two figures: `ms`, the product alone (the program's recorded dispatch `reps` times in
    one compute pass, one submission: wgpu's barrier between dispatches included, no Python
    encoding per product), and `step_ms`, a session step (the program run with `reps` steps in
    one submission: each step encoded by the executor in Python, ~tens of us)."""
    program = executor.prepare(validate(graph(x, raw, n, kind)))
    try:
        out = program.run([{}], [2])[2]  # warm-up: pipeline compiled, buffers touched
        step = best_of(3, reps, lambda: program.run([{}] * reps, []), executor.device)
        ((pipeline, group, size),) = program._recorded[0]  # this bench's one dispatch

        def one_pass() -> None:
            encoder = executor.device.create_command_encoder()
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            for _ in range(reps):
                compute.dispatch_workgroups(*size)
            compute.end()
            executor.device.queue.submit([encoder.finish()])

        kernel_s = best_of(3, reps, one_pass, executor.device)
        full = size
        size = (1, 1, 1)  # one workgroup: the floor of a dispatch in such a pass
        floor_s = best_of(3, reps, one_pass, executor.device)
        size = full
        step_info = program.plan["steps"][0]
    finally:
        program.dispose()
    return {
        "ms": kernel_s * 1e3,
        "step_ms": step * 1e3,
        "floor_ms": floor_s * 1e3,
        "out": out,
        "kernel": f"{step_info['entry']} "
        + " ".join(f"{k}={v}" for k, v in sorted(step_info["overrides"].items())),
    }


def best_of(tries: int, reps: int, submit: Any, device: Any) -> float:
    """The best seconds per product over `tries` timed submissions of `reps` products."""
    best = float("inf")
    for _ in range(tries):
        start = time.perf_counter()
        submit()
        wait_for_queue(device)
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def bench_torch(x: np.ndarray, w: np.ndarray, reps: int) -> dict[str, Any]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    xt = torch.from_numpy(x).cuda()
    wt = torch.from_numpy(w).cuda()
    for _ in range(3):
        out = xt @ wt.T
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            out = xt @ wt.T
        stop.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(stop) / reps)
    return {"ms": best, "out": out.cpu().numpy(), "device": torch.cuda.get_device_name()}


def worst_error(x: np.ndarray, w: np.ndarray, got: np.ndarray) -> float:
    """max |got - ref| / (|x| @ |w|.T) over the outputs, ref in float64."""
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    scale = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
    return float(np.max(np.abs(got - ref) / scale))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="4096x4096,11008x4096", help="NxK weights")
    parser.add_argument("--batches", default="1,16", help="rows of x")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--allow-software", action="store_true", default=None)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--kind", default="q4_k", choices=["q4_k", "q6_k"], help="weight dtype")
    parser.add_argument(
        "--variants",
        default="planner",
        help="kernels to time instead of the planner's: split:S (the general kernel, k-split S)"
        " and vec:QL:UNROLL (matmul_q4k_vec), comma-separated; planner: its rules",
    )
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args(argv)
    # all steps in one submission; no plan cache (a forced k-split must be planned again)
    executor = open_executor(
        args.allow_software, hooks={"steps_per_submit": 0, "plan_cache": PlanCache(0, 0)}
    )
    print(
        f"wgpu adapter: {executor.info.get('description')} "
        f"({'software' if executor.info.get('software') else 'hardware'})"
    )
    rows, ok = [], True
    variants = [None] if args.variants == "planner" else args.variants.split(",")
    for shape in args.shapes.split(","):
        n, k = (int(v) for v in shape.split("x"))
        raw = random_q6k(n, k) if args.kind == "q6_k" else random_q4k(n, k)
        w = quant.dequantize(raw, args.kind, (n, k))
        for m, variant in itertools.product((int(v) for v in args.batches.split(",")), variants):
            x = np.random.default_rng(m).standard_normal((m, k)).astype(np.float32)
            with forcing(variant):
                q = bench_wgpu(executor, x, raw, n, args.reps, args.kind)
            row = {
                "n": n,
                "k": k,
                "m": m,
                "dtype": args.kind,
                "kernel": q["kernel"],
                "q4k_ms": q["ms"],
                "q4k_step_ms": q["step_ms"],
                "dispatch_floor_ms": q["floor_ms"],
                "q4k_gbs": len(raw) / q["ms"] / 1e6,
                "q4k_err": worst_error(x, w, q["out"]),
            }
            ok &= row["q4k_err"] <= 1.43e-6  # the matmul class: 12 eps32 of the scale
            if not args.no_torch and variant is None:
                t = bench_torch(x, w, args.reps)
                row.update(
                    torch_ms=t["ms"],
                    torch_gbs=w.nbytes / t["ms"] / 1e6,
                    torch_err=worst_error(x, w, t["out"]),
                    torch_device=t["device"],
                    speedup=t["ms"] / q["ms"],
                )
            rows.append(row)
            print(json.dumps(row))
    executor.dispose()
    print(
        f"\n| weight N x K | batch | {args.kind} wgpu (ms) | {args.kind} GB/s | fp32 cuBLAS (ms) "
        f"| fp32 GB/s | {args.kind} vs fp32 | {args.kind} session step (ms) "
        "| 1-workgroup dispatch (ms) | kernel |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        torch_cols = (
            f"{r['torch_ms']:.4f} | {r['torch_gbs']:.0f} | {r['speedup']:.2f}x"
            if "torch_ms" in r
            else "- | - | -"
        )
        print(
            f"| {r['n']} x {r['k']} | {r['m']} | {r['q4k_ms']:.4f} | {r['q4k_gbs']:.0f} | "
            f"{torch_cols} | {r['q4k_step_ms']:.4f} | {r['dispatch_floor_ms']:.4f} | {r['kernel']} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
