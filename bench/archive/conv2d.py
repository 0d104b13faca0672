"""conv2d two ways on each lane (the choice "direct or im2col + matmul", measured):
the protocol op `conv2d` (every lane's kernel is direct: one output per invocation / loop
iteration walking its own window) against the im2col composite of gpulab.functional
(conv2d_im2col: kH*kW strided slices, concat, then the lane's tiled matmul), same graph
otherwise, same data.

    python bench/archive/conv2d.py                         # cpu-python, wgpu (software ok), node cpu + wasm
    python bench/archive/conv2d.py --lanes wgpu,torch --shapes large --reps 20   # bench/archive/conv2d_h200.sh

Lane `torch` times torch.nn.functional.conv2d alone (CUDA if there is one, else the CPU) in
the direct column, for reference.

Timing: native lanes run a prepared program `reps` steps in one call (outputs read back at the
end, so the queue is drained); node lanes time `runtime.execute` (min of `reps`), validation
and planning included (under 1 ms for these graphs). Prints a markdown table: ms per conv,
both ways, and im2col / direct.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from gpulab import Graph
from gpulab import functional as F
from gpulab.errors import GpuLabError
from gpulab.protocol import validate

ROOT = Path(__file__).resolve().parents[2]
# name: (x shape, w shape, padding, groups)
SHAPES: dict[str, dict[str, tuple]] = {
    "small": {
        "digits 1x1x8x8 * 8x1x3x3": ((1, 1, 8, 8), (8, 1, 3, 3), 1, 1),
        "1x16x32x32 * 32x16x3x3": ((1, 16, 32, 32), (32, 16, 3, 3), 1, 1),
        "4x32x32x32 * 64x32x3x3": ((4, 32, 32, 32), (64, 32, 3, 3), 1, 1),
        "depthwise 1x64x56x56 g64": ((1, 64, 56, 56), (64, 1, 3, 3), 1, 64),
        "pointwise 1x64x56x56 * 128x64x1x1": ((1, 64, 56, 56), (128, 64, 1, 1), 0, 1),
    },
    "large": {
        "16x64x56x56 * 64x64x3x3": ((16, 64, 56, 56), (64, 64, 3, 3), 1, 1),
        "32x128x28x28 * 128x128x3x3": ((32, 128, 28, 28), (128, 128, 3, 3), 1, 1),
        "32x256x14x14 * 256x256x3x3": ((32, 256, 14, 14), (256, 256, 3, 3), 1, 1),
        "depthwise 8x128x56x56 g128": ((8, 128, 56, 56), (128, 1, 3, 3), 1, 128),
        "pointwise 32x128x56x56 * 128x128x1x1": ((32, 128, 56, 56), (128, 128, 1, 1), 0, 1),
    },
}
NODE = """
import { createRuntime } from './backends-js/src/runtime.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const { graphs, backend, reps } = JSON.parse(text);
const rt = await createRuntime({ backend });
const out = [];
for (const g of graphs) {
  let best = Infinity;
  for (let r = 0; r < reps; r++) {
    const t = performance.now();
    await rt.execute(g);
    best = Math.min(best, performance.now() - t);
  }
  out.push(best);
}
rt.dispose();
process.stdout.write(JSON.stringify(out));
"""


def graphs(
    x_shape: tuple, w_shape: tuple, padding: int, groups: int, plain: bool = False
) -> tuple[dict, dict]:
    """(direct, im2col) protocol graphs of one conv, the same data (plain: JSON lists, for
    node; else buffers)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    out = []
    for way in ("direct", "im2col"):
        g = Graph()
        tx, tw = g.tensor(x), g.tensor(w)
        if way == "direct":
            y = tx.conv2d(tw, padding=padding, groups=groups)
        else:
            xp = tx.pad([[0, 0], [0, 0], [padding] * 2, [padding] * 2]) if padding else tx
            hw = (
                x_shape[2] + 2 * padding - w_shape[2] + 1,
                x_shape[3] + 2 * padding - w_shape[3] + 1,
            )
            y = F.conv2d_im2col(xp, tw, (1, 1), (1, 1), hw, groups)
        out.append(g._graph_dict({"y": y}, plain=plain))
    return out[0], out[1]


def native_ms(lane: str, graph: dict, reps: int, allow_software: bool) -> float:
    checked = validate(graph)
    if lane == "wgpu":
        from gpulab.native.wgpu_executor import open_executor

        ex: Any = open_executor(allow_software)
    else:
        from gpulab.cpu.evaluator import CpuExecutor

        ex = CpuExecutor()
    out = checked.outputs[0].id
    program = ex.prepare(checked)
    try:
        program.run([{}], [out])  # warm-up: pipelines, uploads
        start = time.perf_counter()
        program.run([{}] * reps, [out])
        return (time.perf_counter() - start) / reps * 1e3
    finally:
        program.dispose()


def _measured(measure: Any) -> float | str:
    """A measurement, or the refusal's code (a buffer past the device's binding size)."""
    try:
        return measure()
    except GpuLabError as err:
        return f"refused: {err.code}"


def torch_ms(spec: tuple, reps: int) -> float:
    """torch.nn.functional.conv2d on CUDA where there is one (cuDNN, TF32 off), else the CPU:
    the field's number for the same conv."""
    import torch

    x_shape, w_shape, padding, groups = spec
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.allow_tf32 = False
    x = torch.randn(x_shape, device=device)
    w = torch.randn(w_shape, device=device)
    torch.nn.functional.conv2d(x, w, padding=padding, groups=groups)  # warm-up, algorithm pick
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        torch.nn.functional.conv2d(x, w, padding=padding, groups=groups)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / reps * 1e3


def node_ms(backend: str, pairs: list[dict], reps: int) -> list[float]:
    text = json.dumps({"graphs": pairs, "backend": backend, "reps": reps})
    done = subprocess.run(
        ["node", "--input-type=module", "-e", NODE],
        input=text,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", default="cpu-python,wgpu,node-cpu,node-wasm")
    parser.add_argument("--shapes", choices=sorted(SHAPES), default="small")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    print("| lane | conv | direct ms | im2col + matmul ms | im2col / direct |")
    print("| --- | --- | --- | --- | --- |")
    for lane in args.lanes.split(","):
        if lane == "torch":
            for name, spec in SHAPES[args.shapes].items():
                print(f"| torch | {name} | {torch_ms(spec, args.reps):.3f} | - | - |", flush=True)
            continue
        plain = lane.startswith("node-")
        cases = {name: graphs(*spec, plain=plain) for name, spec in SHAPES[args.shapes].items()}
        if not plain:  # one row per conv as it is measured; a refusal (LIMIT) is a row too
            for name, (d, i) in cases.items():
                ms = [
                    _measured(lambda g=g, ln=lane: native_ms(ln, g, args.reps, True))
                    for g in (d, i)
                ]
                ratio = f"{ms[1] / ms[0]:.2f}" if all(isinstance(m, float) for m in ms) else "-"
                cells = [f"{m:.3f}" if isinstance(m, float) else m for m in ms]
                print(f"| {lane} | {name} | {cells[0]} | {cells[1]} | {ratio} |", flush=True)
            continue
        flat = [g for pair in cases.values() for g in pair]
        times = node_ms(lane.removeprefix("node-"), flat, args.reps)
        for i, name in enumerate(cases):
            direct, im2col = times[2 * i], times[2 * i + 1]
            print(
                f"| {lane} | {name} | {direct:.3f} | {im2col:.3f} | {im2col / direct:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
