"""What bounds the sweep's large points: GPU timestamps per dispatch of the
MLP step at one sweep point, next to cuBLAS (TF32 off) on the same matmul shapes.

    python bench/sweep_profile.py --point 2x4096x4096 --point 4x1024x4096   # LAYERSxHIDDENxBATCH
    python bench/sweep_profile.py --point 4x32x64 --allow-software --no-torch  # here: lavapipe

The step is prepared as `gpulab bench --sweep` prepares it (gpulab.models.mlp, weights and batch
resident, parameters and Adam state carried), run once, and its recorded dispatches replayed
with a timestamp after each (bench/gpu_timestamps.py's per_dispatch: a dispatch's time includes
the barrier before the next). Per dispatch: the node's op, kernel, workgroups, for a matmul its
M x N x K (from the checked operand shapes; (A^T) / (B^T): the operand is a transpose node,
read in place or permuted by its own dispatch, as the plan says) and TFLOP/s,
and with torch on CUDA `torch.matmul` of the same shapes and transposes in fp32 (CUDA events,
median). Then the step's sum by kind (matmul / the rest). Prints markdown.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/ (gpu_timestamps)
from gpu_timestamps import FEATURES, per_dispatch
from gpulab.errors import GpuLabError
from gpulab.native.wgpu_executor import open_executor


def point_program(executor: Any, layers: int, hidden: int, batch: int) -> tuple[Any, Any]:
    """The sweep point's step prepared on `executor`: (program, checked graph)."""
    from gpulab.models.mlp import init, step_graph
    from gpulab.protocol import validate

    st = step_graph(init(0, hidden=hidden, batch=batch, layers=layers))
    checked = validate(st.graph.to_dict(**st.outputs()))
    carry = {k.id: v.id for k, v in st.carry().items()}
    program = executor.prepare(checked, carry=carry, keep=[st.loss.id])
    return program, checked


def matmul_shape(checked: Any, step: dict[str, Any]) -> tuple[int, int, int, bool, bool] | None:
    """(M, N, K, a transposed, b transposed) of a matmul dispatch, None for other kernels. A
    matmul with a fused epilogue (bias add, the relu-gradient multiply) is planned on the
    epilogue's node: the matmul is then its operand."""
    if not step["kernel"].startswith("matmul"):
        return None
    node = checked.by_id[step["node"]]
    if node.op != "matmul":
        node = next(checked.by_id[r] for r in node.operands if checked.by_id[r].op == "matmul")
    a, b = (checked.by_id[ref] for ref in node.operands)
    m, k = a.shape[-2], a.shape[-1]
    return m, b.shape[-1], k, a.op == "transpose", b.op == "transpose"


def cublas_us(shape: tuple[int, int, int, bool, bool], runs: int) -> float:
    """Median us of torch.matmul fp32 (TF32 off) with the same operand transposes."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    m, n, k, ta, tb = shape
    a = torch.rand(k, m, device="cuda").t() if ta else torch.rand(m, k, device="cuda")
    b = torch.rand(n, k, device="cuda").t() if tb else torch.rand(k, n, device="cuda")
    for _ in range(3):
        a @ b
    samples = []
    for _ in range(runs):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        a @ b
        e1.record()
        torch.cuda.synchronize()
        samples.append(e0.elapsed_time(e1) * 1e3)
    return statistics.median(samples)


def report(program: Any, checked: Any, ns: np.ndarray, torch_runs: int) -> None:
    """One row per dispatch, then the sums by kind."""
    head = ["#", "op", "kernel", "workgroups", "M x N x K", "GPU us", "TFLOP/s"]
    if torch_runs:
        head += ["cuBLAS fp32 us", "cuBLAS TFLOP/s"]
    print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
    sums = {"matmul": 0.0, "other": 0.0}
    ours_mm = theirs_mm = 0.0
    for i, step in enumerate(program.plan["steps"]):
        us = float(np.median(ns[:, i]) / 1e3)
        shape = matmul_shape(checked, step)
        cells = [str(i), checked.by_id[step["node"]].op, step["kernel"]]
        cells.append("x".join(map(str, step["dispatch"])))
        if shape is None:
            sums["other"] += us
            cells += ["", f"{us:.1f}", ""] + ["", ""] * bool(torch_runs)
        else:
            m, n, k, ta, tb = shape
            flop = 2 * m * n * k
            sums["matmul"] += us
            ours_mm += us
            dims = f"{m} x {n} x {k}{' (A^T)' if ta else ''}{' (B^T)' if tb else ''}"
            cells += [dims, f"{us:.1f}", f"{flop / us / 1e6:.1f}"]
            if torch_runs:
                them = cublas_us(shape, torch_runs)
                theirs_mm += them
                cells += [f"{them:.1f}", f"{flop / them / 1e6:.1f}"]
        print("| " + " | ".join(cells) + " |")
    total = sums["matmul"] + sums["other"]
    print(
        f"\nstep sum {total:.1f} us: matmuls {sums['matmul']:.1f} us "
        f"({100 * sums['matmul'] / total:.0f}%), everything else {sums['other']:.1f} us"
    )
    if torch_runs:
        print(f"the same matmuls on cuBLAS fp32 (TF32 off): {theirs_mm:.1f} us")


def parse_point(text: str) -> tuple[int, int, int]:
    try:
        layers, hidden, batch = (int(v) for v in text.lower().split("x"))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"--point LAYERSxHIDDENxBATCH, got {text!r}") from err
    return layers, hidden, batch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--point", type=parse_point, action="append", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--allow-software", action="store_true", default=None)
    ap.add_argument("--no-torch", action="store_true", help="skip the cuBLAS columns")
    args = ap.parse_args(argv)
    executor = open_executor(args.allow_software, features=FEATURES)
    print(f"## Per-dispatch GPU time of sweep points on {executor.info['description']}")
    if executor.info["software"]:
        print("(SOFTWARE adapter: CPU timings)")
    torch_runs = 0 if args.no_torch else args.runs
    for layers, hidden, batch in args.point:
        print(f"\n### {layers} layers, hidden {hidden}, batch {batch}\n")
        try:
            program, checked = point_program(executor, layers, hidden, batch)
        except GpuLabError as err:
            print(f"not run: {err.code}: {err.message}")
            continue
        program.run([{}], [])  # pipelines warm, recorded dispatches made
        recordings = program._recorded
        per_dispatch(executor.device, recordings, 1, 2)  # warm
        ns = per_dispatch(executor.device, recordings, 1, args.runs)
        report(program, checked, ns, torch_runs)
        program.dispose()
    executor.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
