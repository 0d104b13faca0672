"""Time an N x N x N float32 matmul on the wgpu executor: the kernel the planner picks, ms per
product and TFLOP/s, and the worst error against float64 on sampled rows.

    python -m gpulab.native.bench_matmul --size 4096 --reps 20
    python -m gpulab.native.bench_matmul --size 512 --allow-software      # lavapipe: slow
    python -m gpulab.native.bench_matmul --size 4096 --kernel matmul      # force a kernel
    python -m gpulab.native.bench_matmul --shape 4097,4096,4095           # [M, K] @ [K, N]

The products of one timing run are encoded into one submission (a prepared program run with
`reps` steps), then the queue is drained, so the figure is device time plus one submit.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from ..errors import GpuLabError
from ..protocol import validate
from . import planner
from .wgpu_executor import open_executor


def matmul_graph(
    n: int, seed: int = 0, shape: tuple[int, int, int] | None = None
) -> dict[str, Any]:
    """[m, k] @ [k, n] of standard normal float32 (shape (m, k, n); default n x n x n)."""
    import numpy as np

    m, k, n = shape or (n, n, n)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return {
        "version": 1,
        "nodes": [
            {"id": 0, "op": "input", "shape": [m, k], "data": a.reshape(-1)},
            {"id": 1, "op": "input", "shape": [k, n], "data": b.reshape(-1)},
            {"id": 2, "op": "matmul", "a": 0, "b": 1},
        ],
        "outputs": [{"name": "c", "id": 2}],
    }


@contextlib.contextmanager
def forcing_matmul_kernel(kernel: str | None) -> Iterator[None]:
    """Plan every matmul with `kernel` instead of the planner's choice by shape (where K or N is
    not a multiple of 4 and `kernel` reads that side as vec4s: its tile's kernel for the
    alignment, reading as vec4 no side that `kernel` reads as scalars): for benchmarks and for
    tests that compare the kernels on the same data. None changes nothing."""
    if kernel is None:
        yield
        return
    if kernel not in planner.MATMUL_TILES:
        raise GpuLabError(
            "VALIDATION", f"unknown matmul kernel {kernel!r}; known: {sorted(planner.MATMUL_TILES)}"
        )
    tile, a4, b4 = planner.MATMUL_TILES[kernel]
    by_alignment = dict(planner.MATMUL_KERNELS).get(tile)  # None: matmul_small (any shape)
    chosen = planner.matmul_kernel

    def forced(m: int, n: int, k: int, batch: int, min_groups: int = 0) -> tuple[int, str]:
        if by_alignment is None:
            return tile, kernel
        return tile, by_alignment[(a4 and k % 4 == 0, b4 and n % 4 == 0)]

    planner.matmul_kernel = forced
    try:
        yield
    finally:
        planner.matmul_kernel = chosen


def wait_for_queue(device: Any) -> None:
    """Block until everything submitted so far has run: map a buffer that a copy submitted after
    it writes (wgpu-py 0.32's on_submitted_work_done_sync fails with a cffi type error)."""
    import wgpu

    src = device.create_buffer(size=16, usage=wgpu.BufferUsage.COPY_SRC)
    dst = device.create_buffer(size=16, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    encoder = device.create_command_encoder()
    encoder.copy_buffer_to_buffer(src, 0, dst, 0, 16)
    device.queue.submit([encoder.finish()])
    dst.map_sync(wgpu.MapMode.READ)
    dst.unmap()
    src.destroy()
    dst.destroy()


def bench(
    n: int,
    reps: int,
    allow_software: bool | None,
    storage: int | None = None,
    kernel: str | None = None,
    shape: tuple[int, int, int] | None = None,
    rounds: int = 3,
) -> dict[str, Any]:
    """Run the benchmark; the measurements as a dict (see main for the printout). `shape`
    (m, k, n) replaces the n x n x n product. `rounds` timed submissions of `reps` products
    each follow an untimed one (a GPU coming out of idle runs its first tens of ms at lower
    clocks); ms is their median."""
    import numpy as np

    limits = {"maxComputeWorkgroupStorageSize": storage} if storage else None
    # all products in one submission (the executor would submit each step on hardware)
    executor = open_executor(allow_software, limits=limits, hooks={"steps_per_submit": 0})
    m, k, n = shape or (n, n, n)
    graph = matmul_graph(n, shape=(m, k, n))
    with forcing_matmul_kernel(kernel):
        program = executor.prepare(validate(graph))
    try:
        out = program.run([{}], [2])[2]  # warm-up: pipelines compiled, buffers touched
        times = []
        for _ in range(rounds + 1):  # the first round only warms the GPU up
            start = time.perf_counter()
            program.run([{}] * reps, [])
            wait_for_queue(executor.device)
            times.append((time.perf_counter() - start) / reps)
        seconds = sorted(times[1:])[len(times[1:]) // 2]
    finally:
        program.dispose()
        kernel = program.plan["steps"][0]["kernel"]
        executor.dispose()
    a = np.asarray(graph["nodes"][0]["data"], np.float64).reshape(m, k)
    b = np.asarray(graph["nodes"][1]["data"], np.float64).reshape(k, n)
    rows = np.unique(np.linspace(0, m - 1, 8).astype(int))
    ref = a[rows] @ b
    scale = np.abs(a[rows]) @ np.abs(b)
    worst = float(np.max(np.abs(out[rows] - ref) / scale))
    return {
        "n": n,
        "shape": (m, k, n),
        "reps": reps,
        "kernel": kernel,
        "adapter": executor.info,
        "ms": seconds * 1e3,
        "rounds_ms": [t * 1e3 for t in times[1:]],
        "tflops": 2 * m * k * n / seconds / 1e12,
        "max_err_over_scale": worst,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulab.native.bench_matmul")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument(
        "--shape",
        default=None,
        metavar="M,K,N",
        help="an [M, K] @ [K, N] product instead of size^3",
    )
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument(
        "--rounds", type=int, default=3, help="timed rounds of --reps products (median)"
    )
    parser.add_argument("--allow-software", action="store_true", default=None)
    parser.add_argument(
        "--storage",
        type=int,
        default=None,
        help="cap maxComputeWorkgroupStorageSize (every matmul kernel fits "
        "16384, so this no longer changes the kernel: see --kernel)",
    )
    parser.add_argument(
        "--kernel",
        choices=sorted(planner.MATMUL_TILES),
        default=None,
        help="run this matmul kernel instead of the planner's choice",
    )
    args = parser.parse_args(argv)
    shape = tuple(int(v) for v in args.shape.split(",")) if args.shape else None
    if shape is not None and len(shape) != 3:
        parser.error("--shape takes M,K,N")
    r = bench(
        args.size, args.reps, args.allow_software, args.storage, args.kernel, shape, args.rounds
    )  # type: ignore[arg-type]
    m, k, n = r["shape"]
    what = f"{n}^3" if m == k == n else f"{m}x{k}x{n}"
    info = r["adapter"]
    soft = " (software adapter)" if info.get("software") else ""
    print(
        f"{what} float32 matmul on {info.get('description')}{soft} "
        f"[{info.get('backend_type')}], kernel {r['kernel']}: {r['ms']:.3f} ms, "
        f"{r['tflops'] * 1e3:.1f} GFLOP/s ({r['reps']} products in one submission, median of "
        f"{len(r['rounds_ms'])} rounds after a warm-up one: "
        + " ".join(f"{t:.3f}" for t in r["rounds_ms"])
        + " ms); "
        f"max |err| / (|A| @ |B|) = {r['max_err_over_scale']:.2e}"
    )
    # the matmul class allows 8 ulp(ref) + 4 eps32 * scale: at most 12 eps32 = 1.43e-6 of scale
    return 0 if r["max_err_over_scale"] <= 1.43e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
