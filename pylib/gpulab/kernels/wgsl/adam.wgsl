// Adam, one module with two entry points (the plan's `entry`):
//   adam_update: the parameter step a - (lr / (1 - beta1^t)) * b / (sqrt(c) / sqrt(1 - beta2^t)
//     + eps), a = parameter, b = first moment, c = second moment, t = the step number (one
//     element);
//   adam_step: adam_m, adam_v and adam_update fused in one dispatch (the planner does this when
//     those moments feed nothing else; docs/plan.md), with the same expressions as binary.wgsl's
//     adam_m / adam_v (OP 7, 8) and adam_update, so the same results:
//       m' = bm * m + (1 - bm) * g,  v' = bv * v + (1 - bv) * g * g,
//       w' = w - (lr / (1 - beta1^t)) * m' / (sqrt(v') / sqrt(1 - beta2^t) + eps);
//     bm, bv are adam_m's beta1 and adam_v's beta2; lr, beta1, beta2, eps are adam_update's
//     (adam_update's plan leaves bm, bv 0).
// Bindings 1..5 are each entry point's own variables (WGSL allows that across entry points):
// adam_update binds 1..5 (a, b, c, t, out), adam_step 1..8 (m, v, g, w, t, m_out, v_out, w_out).
//
// 1 - beta^t cancels badly near t = 1 (beta = 0.999 leaves 0.001), and pow() is exp2(log2)
// with vendor accuracy, so for integer t the power is computed in double-float arithmetic
// (hi + lo pairs, exact products via fma) by repeated squaring: ~2^-48 relative per step.

override WG: u32 = 64u;

struct Params {
  n: u32, lr: f32, beta1: f32, beta2: f32,
  eps: f32, bm: f32, bv: f32, pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

// adam_update's operands
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> c: array<f32>;
@group(0) @binding(4) var<storage, read> t: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

// adam_step's operands
@group(0) @binding(1) var<storage, read> m: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read> w: array<f32>;
@group(0) @binding(5) var<storage, read> t5: array<f32>;
@group(0) @binding(6) var<storage, read_write> m_out: array<f32>;
@group(0) @binding(7) var<storage, read_write> v_out: array<f32>;
@group(0) @binding(8) var<storage, read_write> w_out: array<f32>;

// (hi, lo) * (hi, lo), renormalized.
fn df_mul(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
  let prod = x.x * y.x;
  let err = fma(x.x, y.x, -prod) + (x.x * y.y + x.y * y.x);
  let hi = prod + err;
  return vec2<f32>(hi, err - (hi - prod));
}

// 1 - beta^step, accurately for integer steps below 2^24.
fn one_minus_pow(beta: f32, step: f32) -> f32 {
  if (step != floor(step) || step < 0.0f || step >= 16777216.0f) {
    return 1.0f - pow(beta, step);
  }
  var n = u32(step);
  var acc = vec2<f32>(1.0f, 0.0f);
  var base = vec2<f32>(beta, 0.0f);
  loop {
    if (n == 0u) { break; }
    if ((n & 1u) == 1u) { acc = df_mul(acc, base); }
    base = df_mul(base, base);
    n = n >> 1u;
  }
  return (1.0f - acc.x) - acc.y;
}

@compute @workgroup_size(WG)
fn adam_update(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  let step = t[0];
  let step_size = p.lr / one_minus_pow(p.beta1, step);
  let root_bias2 = sqrt(one_minus_pow(p.beta2, step));
  out[i] = a[i] - step_size * b[i] / (sqrt(c[i]) / root_bias2 + p.eps);
}

@compute @workgroup_size(WG)
fn adam_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  let gi = g[i];
  let m1 = p.bm * m[i] + (1.0f - p.bm) * gi;
  let v1 = p.bv * v[i] + (1.0f - p.bv) * gi * gi;
  m_out[i] = m1;
  v_out[i] = v1;
  let step = t5[0];
  let step_size = p.lr / one_minus_pow(p.beta1, step);
  let root_bias2 = sqrt(one_minus_pow(p.beta2, step));
  w_out[i] = w[i] - step_size * m1 / (sqrt(v1) / root_bias2 + p.eps);
}
