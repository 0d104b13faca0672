// Elementwise ops of two operands with NumPy broadcasting (rank <= 4), selected by OP
// (docs/plan.md): 0 add, 1 sub, 2 mul, 3 div, 4 gelu_grad, 5 sgd_update, 6 momentum_update,
// 7 adam_m, 8 adam_v. `s` is the op's float attribute (lr, momentum, beta1, beta2).
// Operand coordinates come from the result's shape and each operand's strides (0 where it
// broadcasts); `same` = 1 skips that arithmetic when both operands have the result's shape.

override WG: u32 = 64u;
override OP: u32;

struct Params {
  n: u32, same: u32, s: f32, pad0: u32,
  d0: u32, d1: u32, d2: u32, d3: u32,
  a0: u32, a1: u32, a2: u32, a3: u32,
  b0: u32, b1: u32, b2: u32, b3: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const INF_BITS: u32 = 0x7f800000u;

fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > INF_BITS; }

// erfc(x) to ~1.2e-7 relative: the same function as in unary.wgsl (WGSL has no includes).
fn erfc_f32(x: f32) -> f32 {
  let z = min(abs(x), 10.0f);
  let t = 1.0f / (1.0f + 0.5f * z);
  let poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
    t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
    t * (-0.82215223f + t * 0.17087277f))))))));
  let zz = z * z;
  let err = fma(z, z, -zz);
  let r = t * exp(-zz) * exp(poly - err);
  return select(2.0f - r, r, x >= 0.0f);
}

// gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi).
fn gelu_grad(x: f32, g: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let xc = clamp(x, -20.0f, 20.0f);
  let cdf = 0.5f * erfc_f32(-xc * 0.70710678118654752f);
  let h = 0.5f * xc * xc;
  let pdf = exp(-h) * 0.39894228040143268f;
  return g * (cdf + xc * pdf);
}

fn apply(x: f32, y: f32) -> f32 {
  switch OP {
    case 0u: { return x + y; }
    case 1u: { return x - y; }
    case 2u: { return x * y; }
    case 3u: { return x / y; }
    case 4u: { return gelu_grad(x, y); }
    case 5u: { return x - p.s * y; }
    case 6u: { return p.s * x + y; }
    case 7u: { return p.s * x + (1.0f - p.s) * y; }
    default: { return p.s * x + (1.0f - p.s) * y * y; }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  if (p.same == 1u) {
    out[i] = apply(a[i], b[i]);
    return;
  }
  let c3 = i % p.d3;
  let r2 = i / p.d3;
  let c2 = r2 % p.d2;
  let r1 = r2 / p.d2;
  let c1 = r1 % p.d1;
  let c0 = r1 / p.d1;
  let ia = c0 * p.a0 + c1 * p.a1 + c2 * p.a2 + c3 * p.a3;
  let ib = c0 * p.b0 + c1 * p.b1 + c2 * p.b2 + c3 * p.b3;
  out[i] = apply(a[ia], b[ib]);
}
