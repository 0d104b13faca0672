"""Device experiments for the native wgpu path, batched so one GPU run answers many questions.

    python bench/native_lab.py --size 4096 --reps 10          # on the GPU machine
    python bench/native_lab.py --size 256 --reps 1 --allow-software --quick   # here: checks

Prints: (1) matmul kernel variants (the shipped ones from kernels/wgsl and generated ones from
pylib/gpulab/codegen/matmul.py) at size^3: ms, TFLOP/s, bits equal to matmul.wgsl, error over |A| @ |B|;
(2) every matmul kernel on the MLP step's products (us per dispatch, 200 in one pass);
(3) the MLP plan's dispatches one by one (us each), an empty-kernel chain of the same length,
and the whole step at 8 steps per submission.
"""

from __future__ import annotations

import argparse
import math
import os
import struct
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root
from gpulab.codegen.matmul import generate
from gpulab.native.bench_matmul import wait_for_queue
from gpulab.native.wgpu_executor import kernel_source, open_executor

EMPTY = """@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x == 0u) { out[0] = out[0] + 1.0f; }
}"""


def _buffer(device: Any, data: np.ndarray | None, nbytes: int) -> Any:
    import wgpu

    usage = wgpu.BufferUsage
    buf = device.create_buffer(
        size=max(16, nbytes), usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
    )
    if data is not None:
        device.queue.write_buffer(buf, 0, np.ascontiguousarray(data, np.float32))
    return buf


def _read(device: Any, buf: Any, count: int) -> np.ndarray:
    return np.frombuffer(device.queue.read_buffer(buf), np.float32, count).copy()


def _uniform(device: Any, words: list[int]) -> Any:
    import wgpu

    buf = device.create_buffer(size=64, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
    device.queue.write_buffer(buf, 0, struct.pack("<16I", *(words + [0] * (16 - len(words)))))
    return buf


class Matmul:
    """One kernel bound to a, b, out of one shape, dispatchable many times in one pass."""

    def __init__(
        self, device: Any, code: str, tile_m: int, tile_n: int, bufs: tuple, m: int, n: int, k: int
    ) -> None:
        t0 = time.perf_counter()
        module = device.create_shader_module(code=code)
        self.pipeline = device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"}
        )
        self.compile_s = time.perf_counter() - t0
        tm, tn = math.ceil(m / tile_m), math.ceil(n / tile_n)
        self.groups = tm * tn
        uni = _uniform(device, [m, n, k, tm, tn, 1, 1, 0, 0, 0, 0, 0])
        entries = [{"binding": 0, "resource": {"buffer": uni}}]
        a, b, out = bufs  # the epilogue's c (binding 3, unread without one): a again
        entries += [
            {"binding": i + 1, "resource": {"buffer": buf}} for i, buf in enumerate((a, b, a, out))
        ]
        self.group = device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0), entries=entries
        )

    def encode(self, compute: Any) -> None:
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.group)
        compute.dispatch_workgroups(min(self.groups, 65535), math.ceil(self.groups / 65535), 1)


def _time_pass(device: Any, encoders: list[Any], reps: int) -> float:
    """Seconds per rep: `reps` rounds of every encoder's dispatch, one pass, one submission."""

    def submit(n: int) -> None:
        enc = device.create_command_encoder()
        compute = enc.begin_compute_pass()
        for _ in range(n):
            for e in encoders:
                e.encode(compute)
        compute.end()
        device.queue.submit([enc.finish()])

    submit(1)
    wait_for_queue(device)
    t0 = time.perf_counter()
    submit(reps)
    wait_for_queue(device)
    return (time.perf_counter() - t0) / reps


def variants(quick: bool) -> list[tuple[str, str, int, int]]:
    """(name, WGSL, tile_m, tile_n)."""
    out = [
        ("matmul 64 (shipped)", kernel_source("matmul"), 64, 64),
        ("matmul_rb_v4 (shipped)", kernel_source("matmul_rb_v4"), 128, 128),
        ("matmul_rb (shipped)", kernel_source("matmul_rb"), 128, 128),
    ]
    gens = [(128, 128, 8, 8)]
    for bm, bn, bk, group in gens:
        out.append((f"gen {bm}x{bn} bk{bk} g{group}", generate(bm, bn, bk, group), bm, bn))
    return out


def bench_variants(device: Any, size: int, reps: int, quick: bool) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    bufs = (
        _buffer(device, a, a.nbytes),
        _buffer(device, b, b.nbytes),
        _buffer(device, None, a.nbytes),
    )
    rows = np.unique(np.linspace(0, size - 1, 8).astype(int))
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a[rows]).astype(np.float64) @ np.abs(b).astype(np.float64)
    base = None
    print(f"\n== {size}^3 float32 matmul variants, {reps} products per submission ==")
    print("| kernel | ms | TFLOP/s | bits == matmul.wgsl | max err / scale | compile s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, code, tm, tn in variants(quick):
        try:
            mm = Matmul(device, code, tm, tn, bufs, size, size, size)
            sec = _time_pass(device, [mm], reps)
            got = _read(device, bufs[2], size * size).reshape(size, size)
        except Exception as err:  # noqa: BLE001 -- a variant that fails to compile must not end the run
            print(f"| {name} | failed: {type(err).__name__}: {str(err)[:300]} | | | |")
            continue
        if name.startswith("matmul 64"):
            base = got
        same = (
            "?"
            if base is None
            else str(bool(np.array_equal(got.view(np.uint32), base.view(np.uint32))))
        )
        err = float(np.max(np.abs(got[rows] - ref) / scale))
        print(
            f"| {name} | {sec * 1e3:.3f} | {2 * size**3 / sec / 1e12:.2f} | {same} | "
            f"{err:.2e} | {mm.compile_s:.2f} |",
            flush=True,
        )


MLP_SHAPES = [
    ("x@W1", 64, 256, 784),
    ("a@W2", 64, 10, 256),
    ("a^T@dlogits", 256, 10, 64),
    ("dlogits@W2^T", 64, 256, 10),
    ("x^T@dh", 784, 256, 64),
]


def bench_small(device: Any, reps: int) -> None:
    kernels = [
        ("matmul_rb_v4", kernel_source("matmul_rb_v4"), 128, 128, True),
        ("matmul_rb", kernel_source("matmul_rb"), 128, 128, False),
        ("matmul", kernel_source("matmul"), 64, 64, False),
        ("matmul_v4", kernel_source("matmul_v4"), 64, 64, True),
        ("matmul_small", kernel_source("matmul_small"), 16, 16, False),
    ]
    print(f"\n== MLP products: us per dispatch ({reps} dispatches in one pass) ==")
    print("| product | M N K | " + " | ".join(k[0] for k in kernels) + " |")
    print("|" + " --- |" * (2 + len(kernels)))
    rng = np.random.default_rng(1)
    for label, m, n, k in MLP_SHAPES:
        a = rng.standard_normal(m * k).astype(np.float32)
        b = rng.standard_normal(k * n).astype(np.float32)
        bufs = (
            _buffer(device, a, a.nbytes),
            _buffer(device, b, b.nbytes),
            _buffer(device, None, 4 * m * n),
        )
        cells, first = [], None
        for name, code, tm, tn, vec4 in kernels:
            if vec4 and (k % 4 or n % 4):
                cells.append("n/a")
                continue
            mm = Matmul(device, code, tm, tn, bufs, m, n, k)
            us = _time_pass(device, [mm], reps) * 1e6
            got = _read(device, bufs[2], m * n)
            first = got if first is None else first
            same = np.array_equal(got.view(np.uint32), first.view(np.uint32))
            cells.append(f"{us:.1f}" + ("" if same else " (bits differ!)"))
        print(f"| {label} | {m} {n} {k} | " + " | ".join(cells) + " |", flush=True)


class _Recorded:
    def __init__(self, pipeline: Any, group: Any, dispatch: list[int]) -> None:
        self.pipeline, self.group, self.dispatch = pipeline, group, dispatch

    def encode(self, compute: Any) -> None:
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.group)
        compute.dispatch_workgroups(*self.dispatch)


def bench_mlp(executor: Any, reps: int) -> None:
    from gpulab.models.mlp import init, step_graph
    from gpulab.protocol import validate

    values = init(0)
    fed = step_graph(values, feed_batch=True)
    checked = validate(fed.graph.to_dict(**fed.outputs()))
    program = executor.prepare(checked)
    device = executor.device
    steps = [_Recorded(*r) for r in program._recorded[0]]
    print(
        f"\n== MLP step plan: {len(steps)} dispatches; us per dispatch alone ({reps} in a pass) =="
    )
    print("| # | node op | kernel | dispatch | us |")
    print("| --- | --- | --- | --- | --- |")
    total = 0.0
    for i, (rec, st) in enumerate(zip(steps, program.plan["steps"])):
        us = _time_pass(device, [rec], reps) * 1e6
        total += us
        op = checked.by_id[st["node"]].op
        print(f"| {i} | {op} | {st['kernel']} | {st['dispatch']} | {us:.1f} |")
    print(f"sum of dispatches alone: {total:.1f} us")
    chain = _time_pass(device, steps, reps) * 1e6
    print(f"the step's dispatches in one pass: {chain:.1f} us per step")
    buf = _buffer(device, np.zeros(4, np.float32), 16)
    module = device.create_shader_module(code=EMPTY)
    pipe = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    group = device.create_bind_group(
        layout=pipe.get_bind_group_layout(0), entries=[{"binding": 0, "resource": {"buffer": buf}}]
    )
    empty = [_Recorded(pipe, group, [1, 1, 1]) for _ in steps]
    print(
        f"empty-kernel chain of {len(steps)} dispatches (each writes one word): "
        f"{_time_pass(device, empty, reps) * 1e6:.1f} us per chain"
    )
    program.dispose()
    _bench_session(executor, fed, values)


def _bench_session(executor: Any, fed: Any, values: dict) -> None:
    """The prepared session as gpulab.bench runs it: 8 steps per run, and its parts."""
    from gpulab.protocol import validate

    graph = fed.graph
    outputs = fed.outputs()
    checked = validate(graph.to_dict(**outputs))
    ids = {t: t.id for t in outputs.values()}
    carry = {k.id: v.id for k, v in fed.carry().items()}
    program = executor.prepare(
        checked, feeds=[fed.x.id, fed.y.id], carry=carry, keep=list(ids.values())
    )
    batch = {fed.x.id: values["x"], fed.y.id: values["y"]}
    device = executor.device
    for steps in (1, 8, 32):
        program.run([batch] * steps, [fed.loss.id])
        samples = []
        for _ in range(20):
            t0 = time.perf_counter()
            program.run([batch] * steps, [fed.loss.id])
            samples.append((time.perf_counter() - t0) / steps * 1e6)
        print(
            f"session run of {steps} steps (loss read back): median "
            f"{sorted(samples)[10]:.1f} us/step, min {min(samples):.1f}"
        )
    enc = device.create_command_encoder()
    for _ in range(32):
        for src, dst, size in program._carry_copies:
            enc.copy_buffer_to_buffer(src, 0, dst, 0, size)
    device.queue.submit([enc.finish()])
    wait_for_queue(device)
    t0 = time.perf_counter()
    enc = device.create_command_encoder()
    for _ in range(32):
        for src, dst, size in program._carry_copies:
            enc.copy_buffer_to_buffer(src, 0, dst, 0, size)
    device.queue.submit([enc.finish()])
    wait_for_queue(device)
    print(
        f"carry copies alone ({len(program._carry_copies)} per step): "
        f"{(time.perf_counter() - t0) / 32 * 1e6:.1f} us/step"
    )
    t0 = time.perf_counter()
    enc = device.create_command_encoder()
    for _ in range(32):
        compute = enc.begin_compute_pass()
        for pipeline, group, (x, y, z) in program._recorded[0]:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(x, y, z)
        compute.end()
    encode_s = time.perf_counter() - t0
    device.queue.submit([enc.finish()])
    wait_for_queue(device)
    print(
        f"dispatches only, a pass per step: {(time.perf_counter() - t0) / 32 * 1e6:.1f} us/step"
        f" (Python encoding {encode_s / 32 * 1e6:.1f} us/step)"
    )
    program.dispose()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--allow-software", action="store_true", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip", default="", help="comma list of variants,small,mlp")
    args = ap.parse_args()
    executor = open_executor(args.allow_software)
    print(executor.info, executor.limits)
    skip = set(args.skip.split(","))
    if "variants" not in skip:
        bench_variants(executor.device, args.size, args.reps, args.quick)
    if "small" not in skip:
        bench_small(executor.device, 200 if not args.quick else 2)
    if "mlp" not in skip:
        bench_mlp(executor, 200 if not args.quick else 2)
    executor.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
