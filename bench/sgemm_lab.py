"""SGEMM variants of pylib/gpulab/codegen/matmul.py on the SGEMM shapes, in one GPU run: every
variant the shape allows (a4 needs K % 4 == 0, b4 needs N % 4 == 0) timed in interleaved rounds, its
bits checked against the shipped matmul.wgsl on the same data.

    python3 bench/sgemm_lab.py --reps 20 --rounds 2 [--json out.json]      # the GPU machine
    python bench/sgemm_lab.py --small --allow-software                     # here: bits only

Prints one markdown table per shape (ms per product: the best round, TFLOP/s, bits).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/ (native_lab)
from gpulab.codegen.matmul import generate
from gpulab.native.planner import MATMUL_TILES
from gpulab.native.wgpu_executor import kernel_source, open_executor
from native_lab import MLP_SHAPES, _buffer, _read, _time_pass, _uniform

if os.environ.get("SGEMM_LAB_GEN"):  # a generator file not (yet) in the tree: its variants
    import importlib.util

    _spec = importlib.util.spec_from_file_location("lab_matmul", os.environ["SGEMM_LAB_GEN"])
    assert _spec and _spec.loader
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    generate = _mod.generate

SHAPES = [
    (4096, 4096, 4096),
    (4000, 4000, 4000),
    (4097, 4096, 4095),
    (8192, 1024, 8192),
    (4096, 4095, 4096),
]
SMALL = [(130, 132, 136), (129, 68, 67), (131, 67, 68), (200, 33, 260)]

R = {"bm": 128, "bn": 128, "bk": 8}


def variants() -> list[tuple[str, dict[str, Any] | str]]:
    """(name, generate() kwargs, or a shipped kernel's name)."""
    out: list[tuple[str, dict[str, Any] | str]] = [
        ("shipped matmul_rb_v4", "matmul_rb_v4"),
        ("shipped matmul_rb_a4", "matmul_rb_a4"),
        ("shipped matmul_rb_b4", "matmul_rb_b4"),
        ("shipped matmul_rb", "matmul_rb"),
    ]
    k = {"walk": "k"}
    for a4, b4 in ((True, True), (True, False), (False, True), (False, False)):
        tag = f"a{4 if a4 else 1}b{4 if b4 else 1}"
        io = {**R, "a4": a4, "b4": b4, **(k if a4 or b4 else {})}
        out.append((f"{tag} named inline", {**io, "named": True, "inline": True}))
        if a4 != b4 or not a4:
            out.append((f"{tag} named", {**io, "named": True}))
        if a4 and b4:
            out.append(
                (
                    f"{tag} named inline warp8x4",
                    {**io, "named": True, "inline": True, "warp": "8x4"},
                )
            )
            out.append((f"{tag} named g8", {**io, "named": True, "group": 8}))
            out.append(
                (
                    f"{tag} named inline 64x128 t8x16",
                    {**io, "named": True, "inline": True, "bm": 64, "tyn": 8},
                )
            )
    return out


def fits(spec: dict[str, Any] | str, m: int, k: int, n: int) -> bool:
    if isinstance(spec, str):
        _, a4, b4 = MATMUL_TILES[spec]
        return (not a4 or k % 4 == 0) and (not b4 or n % 4 == 0)
    return (not spec["a4"] or k % 4 == 0) and (not spec["b4"] or n % 4 == 0)


def tile(spec: dict[str, Any] | str) -> tuple[int, int]:
    if isinstance(spec, str):
        return (64, 64) if spec == "matmul" else (128, 128)
    return spec["bm"], spec["bn"]


def direct(rows: int, unroll: int) -> str:
    """A small-product candidate: no workgroup memory, no barrier; a workgroup of 64 threads
    covers `rows` rows x 64 columns, each thread `rows` outputs of one column (independent fma
    chains, b read once for all of them), k unrolled by `unroll` with every load issued before
    the fma."""
    lines = [
        f"""struct Params {{
  m: u32, n: u32, k: u32, tiles_m: u32,
  tiles_n: u32, batch: u32, b1: u32, a_s0: u32,
  a_s1: u32, b_s0: u32, b_s1: u32, flags: u32,
}}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
fn a_at(r: u32, k: u32) -> f32 {{ return select(0.0f, a[r * p.k + k], r < p.m && k < p.k); }}
fn b_at(k: u32, c: u32) -> f32 {{ return select(0.0f, b[k * p.n + c], k < p.k && c < p.n); }}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
  let w = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (w >= p.tiles_m * p.tiles_n) {{ return; }}
  let r0 = (w / p.tiles_n) * {rows}u;
  let c = (w % p.tiles_n) * 64u + lid;
"""
    ]
    lines += [f"  var acc{i} = 0.0f;\n" for i in range(rows)]
    lines.append(f"  var k = 0u;\n  loop {{\n    if (k + {unroll}u > p.k) {{ break; }}\n")
    for u in range(unroll):
        lines.append(f"    let b{u} = b_at(k + {u}u, c);\n")
        lines += [f"    let a{i}_{u} = a_at(r0 + {i}u, k + {u}u);\n" for i in range(rows)]
    for u in range(unroll):
        lines += [f"    acc{i} = fma(a{i}_{u}, b{u}, acc{i});\n" for i in range(rows)]
    lines.append(f"    k += {unroll}u;\n  }}\n  loop {{\n    if (k >= p.k) {{ break; }}\n")
    lines.append("    let bk = b_at(k, c);\n")
    lines += [f"    acc{i} = fma(a_at(r0 + {i}u, k), bk, acc{i});\n" for i in range(rows)]
    lines.append("    k += 1u;\n  }\n")
    for i in range(rows):
        lines.append(
            f"  if (r0 + {i}u < p.m && c < p.n) {{ out[(r0 + {i}u) * p.n + c] = acc{i}; }}\n"
        )
    lines.append("}\n")
    return "".join(lines)


def bench_small(device: Any, reps: int) -> None:
    kernels: list[tuple[str, str, tuple[int, int], bool]] = [
        ("matmul_small", kernel_source("matmul_small"), (16, 16), False),
        ("matmul_v4", kernel_source("matmul_v4"), (64, 64), True),
        ("direct r1 u8", direct(1, 8), (1, 64), False),
        ("direct r1 u16", direct(1, 16), (1, 64), False),
        ("direct r4 u8", direct(4, 8), (4, 64), False),
        ("direct r4 u16", direct(4, 16), (4, 64), False),
        ("direct r8 u8", direct(8, 8), (8, 64), False),
    ]
    pipes = {nm: Pipe(device, code) for nm, code, _, _ in kernels}
    print(f"\n== MLP products: us per dispatch ({reps} dispatches in one pass, flags 0) ==")
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
        for name, _, tl, vec4 in kernels:
            if vec4 and (k % 4 or n % 4):
                cells.append("n/a")
                continue
            device.queue.write_buffer(bufs[2], 0, np.full(m * n, np.nan, np.float32))
            bound = Bound(device, pipes[name], tl, bufs, m, k, n)
            us = _time_pass(device, [bound], reps) * 1e6
            got = _read(device, bufs[2], m * n)
            first = got if first is None else first
            same = np.array_equal(got.view(np.uint32), first.view(np.uint32))
            cells.append(f"{us:.1f}" + ("" if same else " (bits differ!)"))
        print(f"| {label} | {m} {n} {k} | " + " | ".join(cells) + " |", flush=True)


class Pipe:
    def __init__(self, device: Any, code: str) -> None:
        t0 = time.perf_counter()
        module = device.create_shader_module(code=code)
        self.pipeline = device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": "main"}
        )
        self.compile_s = time.perf_counter() - t0
        self.epilogue = "@binding(4)" in code


class Bound:
    def __init__(
        self, device: Any, pipe: Pipe, tm_tn: tuple[int, int], bufs: tuple, m: int, k: int, n: int
    ) -> None:
        self.pipeline = pipe.pipeline
        tm, tn = math.ceil(m / tm_tn[0]), math.ceil(n / tm_tn[1])
        self.groups = tm * tn
        uni = _uniform(device, [m, n, k, tm, tn, 1, 1, 0, 0, 0, 0, 0])
        entries = [{"binding": 0, "resource": {"buffer": uni}}]
        if pipe.epilogue:  # binding 3: the epilogue's c (a, as unfused plans bind it), out at 4
            bufs = (bufs[0], bufs[1], bufs[0], bufs[2])
        entries += [{"binding": i + 1, "resource": {"buffer": b}} for i, b in enumerate(bufs)]
        self.group = device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0), entries=entries
        )

    def encode(self, compute: Any) -> None:
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.group)
        compute.dispatch_workgroups(min(self.groups, 65535), math.ceil(self.groups / 65535), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--small", action="store_true", help="small ragged shapes: bits only")
    ap.add_argument("--allow-software", action="store_true", default=None)
    ap.add_argument("--only", default="", help="comma list of variant name substrings")
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-small", action="store_true", help="skip the MLP products")
    args = ap.parse_args()
    ex = open_executor(args.allow_software)
    device = ex.device
    print(ex.info)
    chosen = [
        v for v in variants() if not args.only or any(s in v[0] for s in args.only.split(","))
    ]
    pipes: dict[str, Pipe | str] = {}
    for name, spec in chosen:
        code = kernel_source(spec) if isinstance(spec, str) else generate(**spec)
        try:
            pipes[name] = Pipe(device, code)
        except Exception as err:  # noqa: BLE001 -- one variant failing must not end the run
            pipes[name] = f"{type(err).__name__}: {str(err)[:200]}"
    base_pipe = Pipe(device, kernel_source("matmul"))
    results: list[dict[str, Any]] = []
    failures = 0
    for m, k, n in SMALL if args.small else SHAPES:
        rng = np.random.default_rng(m + k + n)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        bufs = (
            _buffer(device, a, a.nbytes),
            _buffer(device, b, b.nbytes),
            _buffer(device, None, 4 * m * n),
        )
        _time_pass(device, [Bound(device, base_pipe, (64, 64), bufs, m, k, n)], 1)
        base = _read(device, bufs[2], m * n)
        rows = np.unique(np.linspace(0, m - 1, 8).astype(int))
        ref = a[rows].astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a[rows]).astype(np.float64) @ np.abs(b).astype(np.float64)
        err = float(np.max(np.abs(base.reshape(m, n)[rows] - ref) / scale))
        todo = [(nm, sp) for nm, sp in chosen if fits(sp, m, k, n)]
        times: dict[str, list[float]] = {nm: [] for nm, _ in todo}
        same: dict[str, bool] = {}
        for _ in range(args.rounds):
            for nm, sp in todo:
                pipe = pipes[nm]
                if isinstance(pipe, str):
                    continue
                bound = Bound(device, pipe, tile(sp), bufs, m, k, n)
                device.queue.write_buffer(bufs[2], 0, np.full(m * n, np.nan, np.float32))
                times[nm].append(_time_pass(device, [bound], 1 if args.small else args.reps))
                if nm not in same:
                    got = _read(device, bufs[2], m * n)
                    same[nm] = bool(np.array_equal(got.view(np.uint32), base.view(np.uint32)))
                    failures += not same[nm]
        flop = 2 * m * k * n
        print(
            f"\n== {m}x{k}x{n} (M x K x N), {args.reps} products per pass, best of "
            f"{args.rounds} rounds; matmul.wgsl's max err / scale {err:.2e} =="
        )
        print("| variant | ms | TFLOP/s | rounds ms | bits == matmul.wgsl | compile s |")
        print("| --- | --- | --- | --- | --- | --- |")
        for nm, _ in todo:
            pipe = pipes[nm]
            if isinstance(pipe, str):
                print(f"| {nm} | failed: {pipe} | | | | |")
                continue
            best = min(times[nm])
            print(
                f"| {nm} | {best * 1e3:.3f} | {flop / best / 1e12:.2f} | "
                + " ".join(f"{t * 1e3:.3f}" for t in times[nm])
                + f" | {same[nm]} | {pipe.compile_s:.2f} |",
                flush=True,
            )
            results.append(
                {
                    "shape": [m, k, n],
                    "variant": nm,
                    "ms": [t * 1e3 for t in times[nm]],
                    "tflops": flop / best / 1e12,
                    "bits_equal": same[nm],
                }
            )
        for buf in bufs:
            buf.destroy()
    if not args.only and not args.no_small:
        bench_small(device, 2 if args.small else 200)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": ex.info, "results": results}, f, indent=1)
    ex.dispose()
    print(f"\nvariants whose bits differ: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
