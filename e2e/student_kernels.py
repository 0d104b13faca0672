"""Students' WGSL kernels as protocol graphs: the corpus both lanes run.

Each case is built with `Graph.wgsl` (the API a student uses) into a plain-JSON graph, with a
numpy reference. e2e/test_student_wgsl.py runs every case in Chromium's WebGPU (SwiftShader)
and natively on wgpu (lavapipe): integer outputs must agree bit for bit, float outputs of the
elementwise kernels within 1 ulp (the op table's `student` class), across the lanes and with
the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gpulab import Graph

SAXPY = """@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
struct Params { a: f32, n: u32 }
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let i = id.x;
  if (i < p.n) {
    out[i] = p.a * x[i] + y[i];
  }
}
"""

# integer arithmetic wraps in WGSL: products, shifts, xor, a signed division
INT_MIX = """@group(0) @binding(0) var<storage, read> a: array<i32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> si: array<i32>;
@group(0) @binding(3) var<storage, read_write> ui: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let i = id.x;
  if (i >= arrayLength(&si)) { return; }
  let d = select(a[i] % 7, 3, a[i] % 7 == 0);
  si[i] = a[i] * 1103515245 + (a[i] >> 3u) - a[i] / d;
  ui[i] = (b[i] * 2654435761u) ^ (b[i] >> 13u) ^ (u32(i) << 7u);
}
"""

# two float results and a bool-as-u32 result from one dispatch
SPLIT = """@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> pos: array<f32>;
@group(0) @binding(2) var<storage, read_write> neg: array<f32>;
@group(0) @binding(3) var<storage, read_write> big: array<u32>;
struct P { t: f32 }
@group(0) @binding(4) var<uniform> p: P;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let i = id.x;
  if (i >= arrayLength(&x)) { return; }
  pos[i] = max(x[i], 0.0);
  neg[i] = min(x[i], 0.0) * 0.5;
  big[i] = select(0u, 1u, abs(x[i]) > p.t);
}
"""

# a 16x16 tiled matmul with workgroup memory (the student times it against ours)
TILED_MATMUL = """@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
struct Dims { m: u32, k: u32, n: u32 }
@group(0) @binding(3) var<uniform> d: Dims;

const T = 16u;
var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(local_invocation_id) l: vec3u) {
  let row = g.y;
  let col = g.x;
  var acc = 0.0;
  for (var t = 0u; t < (d.k + T - 1u) / T; t++) {
    let ka = t * T + l.x;
    let kb = t * T + l.y;
    ta[l.y * T + l.x] = select(0.0, a[row * d.k + ka], row < d.m && ka < d.k);
    tb[l.y * T + l.x] = select(0.0, b[kb * d.n + col], kb < d.k && col < d.n);
    workgroupBarrier();
    for (var k = 0u; k < T; k++) {
      acc += ta[l.y * T + k] * tb[k * T + l.x];
    }
    workgroupBarrier();
  }
  if (row < d.m && col < d.n) {
    c[row * d.n + col] = acc;
  }
}
"""

# one explicit heat-diffusion step on a periodic 1-D rod (a session carries u)
HEAT = """@group(0) @binding(0) var<storage, read> u: array<f32>;
@group(0) @binding(1) var<storage, read_write> next: array<f32>;
struct P { k: f32 }
@group(0) @binding(2) var<uniform> p: P;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  let n = arrayLength(&u);
  let i = id.x;
  if (i >= n) { return; }
  let left = u[(i + n - 1u) % n];
  let right = u[(i + 1u) % n];
  next[i] = u[i] + p.k * (left - 2.0 * u[i] + right);
}
"""


@dataclass
class Case:
    name: str
    graph: dict[str, Any]
    reference: dict[str, np.ndarray]
    exact_float: bool  # elementwise float code: within 1 ulp of each other and the reference


def _rng() -> np.random.Generator:
    return np.random.default_rng(21)


def saxpy_case() -> Case:
    n = 1000
    x = _rng().standard_normal(n).astype(np.float32)
    y = _rng().standard_normal(n).astype(np.float32) * 3
    g = Graph()
    out = g.wgsl(
        SAXPY,
        inputs=[g.tensor(x), g.tensor(y)],
        outputs={"out": ((n,), "float32")},
        workgroups=(n + 63) // 64,
        params={"a": 2.5, "n": n},
    )
    ref = (np.float32(2.5) * x + y).astype(np.float32)  # one rounding each (FMA: within 1 ulp)
    return Case("saxpy", g.to_dict(out=out, twice=out * 2), {"out": ref, "twice": ref * 2}, True)


def int_case() -> Case:
    n = 300
    a = _rng().integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    b = _rng().integers(0, 2**32, n, dtype=np.int64).astype(np.uint32)
    g = Graph()
    si, ui = g.wgsl(
        INT_MIX,
        inputs=[g.tensor(a, dtype="int32"), g.tensor(b, dtype="uint32")],
        outputs={"si": ((n,), "int32"), "ui": ((n,), "uint32")},
        workgroups=(n + 63) // 64,
    )
    a64 = a.astype(np.int64)
    d = np.where(np.fmod(a64, 7) == 0, 3, np.fmod(a64, 7))
    q = np.trunc(a64 / d).astype(np.int64)  # WGSL i32 division truncates
    s = (a64 * 1103515245 + (a64 >> 3) - q) & 0xFFFFFFFF
    b64 = b.astype(np.uint64)
    idx = np.arange(n, dtype=np.uint64)
    u = ((b64 * 2654435761) & 0xFFFFFFFF) ^ (b64 >> 13) ^ ((idx << 7) & 0xFFFFFFFF)
    ref = {"si": s.astype(np.uint32).view(np.int32), "ui": u.astype(np.uint32)}
    return Case("int_mix", g.to_dict(si=si, ui=ui), ref, True)


def split_case() -> Case:
    n = 100
    x = (_rng().standard_normal(n) * 2).astype(np.float32)
    g = Graph()
    pos, neg, big = g.wgsl(
        SPLIT,
        inputs=[g.tensor(x)],
        outputs={"pos": ((n,), "float32"), "neg": ((n,), "float32"), "big": ((n,), "bool")},
        workgroups=(n + 31) // 32,
        params={"t": 1.0},
    )
    ref = {
        "pos": np.maximum(x, 0),
        "neg": np.minimum(x, 0) * np.float32(0.5),
        "big": (np.abs(x) > 1).astype(np.uint8),
        "sum": np.maximum(x, 0) + np.minimum(x, 0) * np.float32(0.5),
    }
    return Case("split", g.to_dict(pos=pos, neg=neg, big=big, sum=pos + neg), ref, True)


def matmul_case(m: int = 40, k: int = 50, n: int = 30) -> Case:
    a = _rng().standard_normal((m, k)).astype(np.float32)
    b = _rng().standard_normal((k, n)).astype(np.float32)
    g = Graph()
    ta, tb = g.tensor(a), g.tensor(b)
    c = g.wgsl(
        TILED_MATMUL,
        inputs=[ta, tb],
        outputs={"c": ((m, n), "float32")},
        workgroups=((n + 15) // 16, (m + 15) // 16),
        params={"m": m, "k": k, "n": n},
    )
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    return Case("tiled_matmul", g.to_dict(c=c, ours=ta @ tb), {"c": ref, "ours": ref}, False)


CASES: list[Callable[[], Case]] = [saxpy_case, int_case, split_case, matmul_case]


def heat_graph(n: int = 64, k: float = 0.25) -> tuple[dict[str, Any], int, np.ndarray]:
    """A session graph: u carried into itself through one heat step; (graph, u id, u0)."""
    u0 = np.zeros(n, np.float32)
    u0[n // 2] = 100.0
    g = Graph()
    u = g.tensor(u0)
    nxt = g.wgsl(
        HEAT,
        inputs=[u],
        outputs={"next": ((n,), "float32")},
        workgroups=(n + 63) // 64,
        params={"k": k},
    )
    return g.to_dict(next=nxt), u.id, u0


def heat_reference(u0: np.ndarray, steps: int, k: float = 0.25) -> np.ndarray:
    u = u0.astype(np.float32)
    for _ in range(steps):
        lap = np.roll(u, 1) - np.float32(2) * u + np.roll(u, -1)
        u = (u + np.float32(k) * lap).astype(np.float32)
    return u


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in float32 ulps (ordered integer keys of the bits)."""

    def key(x: np.ndarray) -> np.ndarray:
        i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(2**31) - i, i)

    return int(np.max(np.abs(key(a) - key(b)))) if a.size else 0


# The four compiler/binding errors of the Done-when, each on both sides: (name, source edit,
# where the error must point).
BROKEN = {
    "syntax": (SAXPY.replace("out[i] = p.a * x[i] + y[i];", "out[i] = p.a * x[i] + * y[i];"), 11),
    "reserved": (SAXPY.replace("let i = id.x;", "let meta = id.x;\n  let i = meta;"), 9),
    "type": (SAXPY.replace("out[i] = p.a * x[i] + y[i];", "out[i] = p.a * x[i] + 1u;"), 11),
    "binding": (SAXPY.replace("read> y", "read_write> y"), 2),
}


def broken_graph(source: str) -> dict[str, Any]:
    """SAXPY's graph with another source, built as plain data (the builder would refuse a
    binding mismatch at once: here the validators must)."""
    graph = saxpy_case().graph
    for node in graph["nodes"]:
        if node["op"] == "wgsl":
            node["source"] = source
    return graph
