// Elementwise unary ops, selected by the OP override (see docs/plan.md):
// 0 neg, 1 exp, 2 log, 3 sqrt, 4 tanh, 5 sigmoid, 6 gelu, 7 relu, 8 positive.
// Special values are handled by bit pattern: WGSL lets compilers assume no NaN/inf, and
// Vulkan leaves log/sqrt of negatives undefined, so the protocol's answers are built explicitly.

override WG: u32 = 64u;
override OP: u32;

struct Params { n: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const SIGN: u32 = 0x80000000u;
const INF_BITS: u32 = 0x7f800000u;
const NAN_BITS: u32 = 0x7fc00000u;

fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > INF_BITS; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == INF_BITS; }
// The bits go through a `let`: Chromium's Tint refuses to constant-fold a bitcast to NaN/inf.
fn nan() -> f32 { let bits = NAN_BITS; return bitcast<f32>(bits); }
fn inf() -> f32 { let bits = INF_BITS; return bitcast<f32>(bits); }

fn f_exp(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x > 88.72284f) { return inf(); }
  if (x < -103.97208f) { return 0.0f; }
  return exp(x);
}

fn f_log(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x < 0.0f) { return nan(); }
  if (x == 0.0f) { return -inf(); }
  if (is_inf(x)) { return x; }
  return log(x);
}

fn f_sqrt(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x < 0.0f) { return nan(); }
  if (x == 0.0f || is_inf(x)) { return x; }
  return sqrt(x);
}

// tanh saturates to +-1 in float32 past |x| = 9.01; the builtin may form inf/inf out there.
fn f_tanh(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (abs(x) > 9.1f) { return sign(x); }
  return tanh(x);
}

fn f_sigmoid(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  return 1.0f / (1.0f + f_exp(-x));
}

// erfc(x) to ~1.2e-7 relative (Numerical Recipes erfcc, Chebyshev fit). exp(-z*z) is split as
// exp(-zz) * exp(poly - err), err = fma(z, z, -zz), so the rounding of z*z does not amplify.
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

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2): no cancellation for x < 0.
fn f_gelu(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  return 0.5f * x * erfc_f32(-x * 0.70710678118654752f);
}

fn apply(x: f32) -> f32 {
  switch OP {
    case 0u: { return bitcast<f32>(bitcast<u32>(x) ^ SIGN); }
    case 1u: { return f_exp(x); }
    case 2u: { return f_log(x); }
    case 3u: { return f_sqrt(x); }
    case 4u: { return f_tanh(x); }
    case 5u: { return f_sigmoid(x); }
    case 6u: { return f_gelu(x); }
    case 7u: { return select(0.0f, x, x > 0.0f); }
    default: { return select(0.0f, 1.0f, x > 0.0f); }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  out[i] = apply(a[i]);
}
