// ---- Adam's bias corrections: kernels/wgsl/src/adam_pow.wgsl, included by `make gen` ----
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
