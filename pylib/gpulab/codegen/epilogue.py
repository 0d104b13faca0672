"""The matmul epilogue: WGSL that every matmul kernel applies to a finished output.

The planners (docs/plan.md "Fusion") fold a map2 node whose kernel-table row says `epilogue`
(add, sub, mul) and that reads a matmul's product into the matmul's dispatch, with the fusable
map1 ops (`fuse`) already folded into that map2: on its other operand (binary.wgsl's PRE_A /
PRE_B) and on its result (POST). The op runs once per output on the whole ascending-k sum,
exactly as binary.wgsl would on the stored product, so fused == unfused bit for bit.

`epilogue_wgsl()` is called by pylib/gpulab/codegen/matmul.py (the register-blocked kernels) and by
pylib/gpulab/codegen/wgsl.py (the `{{epilogue}}` slot of kernels/wgsl/src/matmul_small.wgsl.in); the
kernels call `epilogue(v, at, col)` at their store. Build time only.
"""

from __future__ import annotations

from gpulab.codegen import tables

# Binding of the epilogue's operand: after a (1) and b (2), before out (4), since a plan's last
# binding is the one a dispatch writes.
BINDING = 3


def _switch(selector: str, arms: list[tuple[int, str]]) -> str:
    lines = [f"  switch {selector} {{"]
    for i, (code, text) in enumerate(arms):
        case = f"{code}u, default" if i == len(arms) - 1 else f"{code}u"
        lines.append(f"    case {case}: {{ return {text}; }}")
    return "\n".join([*lines, "  }"])


def epilogue_wgsl() -> str:
    """The overrides, the operand binding and `epilogue()`, from the kernel table."""
    rows = [(op, r) for op, r in tables.family_ops("map2", "float32") if r.get("epilogue")]
    ops = [(r["code"], tables.expr(r, "wgsl", "float32")) for _, r in rows]
    fuse = [
        (r["code"], tables.expr(r, "wgsl", "float32"))
        for _, r in tables.family_ops("map1", "float32")
        if r.get("fuse")
    ]
    assert ops and fuse, "kernels/ops.json: no epilogue / fuse ops"
    names = ", ".join(f"{op} {1 + r['code']}" for op, r in rows)
    return f"""
// ---- epilogue: pylib/gpulab/codegen/epilogue.py from kernels/ops.json (docs/plan.md, Fusion) ----
// A map2 node reading this product, folded into the dispatch by the planners: EPI_OP = 1 + its
// binary.wgsl OP code ({names}; 0: no epilogue); the product is its
// operand a (EPI_SIDE 0) or b (1); its other operand c has the result's shape (EPI_BCAST 0), is
// one row [N] broadcast down the rows (1, a bias), one value (2), one column [M, 1] (3) or one
// value per row of each of b1 matrices (4: conv2d's bias, b1 = its groups).
// EPI_PRE / EPI_POST: 1 + the unary.wgsl OP code of a fusable map1 op on c / on the result
// (0: none). Unfused plans bind a at c.
override EPI_OP: u32 = 0u;
override EPI_SIDE: u32 = 0u;
override EPI_BCAST: u32 = 0u;
override EPI_PRE: u32 = 0u;
override EPI_POST: u32 = 0u;

@group(0) @binding({BINDING}) var<storage, read> c: array<f32>;

const SIGN: u32 = 0x80000000u;

fn epi_map2(x: f32, y: f32) -> f32 {{
{_switch("EPI_OP - 1u", ops)}
}}

fn epi_map1(code: u32, x: f32) -> f32 {{
{_switch("code", fuse)}
}}

// The element of c read with out[at] (column col): EPI_BCAST's layouts.
fn epi_at(at: u32, col: u32) -> u32 {{
  switch EPI_BCAST {{
    case 1u: {{ return col; }}
    case 2u: {{ return 0u; }}
    case 3u: {{ return (at / p.n) % p.m; }}
    case 4u: {{ return (at / p.n) % (p.m * p.b1); }}
    default: {{ return at; }}
  }}
}}

// v: the finished sum of out[at] (column col). Its bits pass through an integer OR with params
// bit 31 of `flags`, which the planners never set: no compiler can see through it to fold the op
// into the last fma of the sum, so the op rounds once, as binary.wgsl's does.
fn epilogue(v: f32, at: u32, col: u32) -> f32 {{
  if (EPI_OP == 0u) {{ return v; }}
  let x = bitcast<f32>(bitcast<u32>(v) | (p.flags & 0x80000000u));
  var y = c[epi_at(at, col)];
  if (EPI_PRE != 0u) {{ y = epi_map1(EPI_PRE - 1u, y); }}
  var r: f32;
  if (EPI_SIDE == 1u) {{ r = epi_map2(y, x); }} else {{ r = epi_map2(x, y); }}
  if (EPI_POST != 0u) {{ r = epi_map1(EPI_POST - 1u, r); }}
  return r;
}}

"""
