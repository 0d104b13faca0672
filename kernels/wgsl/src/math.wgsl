// ---- shared math: kernels/wgsl/src/math.wgsl, included by `make gen` (edit it there) ----
// WGSL lets compilers assume no NaN/inf and Vulkan leaves exp/log accuracy loose (exp: 3 + 2|x|
// ulp), so special values are tested by bit pattern and exp/log/tanh/erfc are computed here
// (FreeBSD expf/logf reductions, < 1 ulp in exact arithmetic): the same answers on every device.

const INF_BITS: u32 = 0x7f800000u;
const NAN_BITS: u32 = 0x7fc00000u;

fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > INF_BITS; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == INF_BITS; }
// Through a `let`: a const bitcast to NaN/inf is a shader-creation error in Chromium's Tint.
fn nan_f32() -> f32 { let bits = NAN_BITS; return bitcast<f32>(bits); }
fn inf_f32() -> f32 { let bits = INF_BITS; return bitcast<f32>(bits); }
fn neg_zero_f32() -> f32 { let bits = 0x80000000u; return bitcast<f32>(bits); }

// max that keeps NaN (WGSL's max may return either operand when one is NaN).
fn max_nan(x: f32, y: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (is_nan(y)) { return y; }
  return select(y, x, x > y);
}

// y * 2^k for k in [-150, 128], in two halves so neither ldexp leaves its defined range.
fn scale2(y: f32, k: i32) -> f32 {
  let half = k / 2;
  return ldexp(ldexp(y, half), k - half);
}

fn exp_f32(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x > 88.72283935546875f) { return inf_f32(); }
  if (x < -103.97208f) { return 0.0f; }
  let k = round(x * 1.4426950216f);
  let hi = x - k * 0.69314575195f; // exact: the constant has 16 significant bits
  let lo = k * 1.4286067653e-06f;
  let r = hi - lo;
  let t = r * r;
  let c = r - t * (1.6666625440e-1f + t * -2.7667332906e-3f);
  let y = 1.0f - ((lo - (r * c) / (2.0f - c)) - hi);
  return scale2(y, i32(k));
}

fn log_f32(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x < 0.0f) { return nan_f32(); }
  if (x == 0.0f) { return -inf_f32(); }
  if (is_inf(x)) { return x; }
  var ix = bitcast<u32>(x);
  var k = 0i;
  if (ix < 0x00800000u) { // subnormal: scale into the normal range first
    k = -25i;
    ix = bitcast<u32>(x * 33554432.0f);
  }
  k += i32(ix >> 23u) - 127i;
  ix = ix & 0x007fffffu;
  let i = (ix + 0x4afb20u) & 0x800000u; // mantissa >= sqrt(2): halve it
  let m = bitcast<f32>(ix | (i ^ 0x3f800000u));
  k += i32(i >> 23u);
  let f = m - 1.0f;
  let s = f / (2.0f + f);
  let z = s * s;
  let w = z * z;
  let r = z * (0.66666662693f + w * 0.28498786688f) + w * (0.40000972152f + w * 0.24279078841f);
  let hfsq = 0.5f * f * f;
  let dk = f32(k);
  return dk * 6.9313812256e-01f - ((hfsq - (s * (hfsq + r) + dk * 9.0580006145e-06f)) - f);
}

fn tanh_f32(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  let ax = abs(x);
  if (ax > 9.1f) { return sign(x); } // tanh rounds to +-1 in float32 past 9.01
  if (ax < 1e-4f) { return x; }
  if (ax < 0.25f) { // Taylor series; the next term is below 1e-10 relative
    let z = x * x;
    return x + x * z * (-0.33333333333f + z * (0.13333333333f + z * (-0.053968253968f +
      z * (0.021869488536f - z * 0.0088632355299f))));
  }
  let r = 1.0f - 2.0f / (exp_f32(2.0f * ax) + 1.0f);
  return select(-r, r, x >= 0.0f);
}

// exp(-x * x / 2) without the rounding of x * x: x * x = hi + lo exactly (Dekker's product,
// which needs no fused fma: lavapipe's fma is not always fused), and exp(-hi/2) * exp(-lo/2)
// keeps the error at a few ulps even where x * x / 2 is near 100 (|x| <= 14.2 here).
fn exp_neg_half_sq(x: f32) -> f32 {
  let c = 4097.0f * x; // Veltkamp split: x = xh + xl, each with at most 12 significant bits
  let xh = c - (c - x);
  let xl = x - xh;
  let hi = x * x;
  let lo = ((xh * xh - hi) + 2.0f * xh * xl) + xl * xl;
  return exp_f32(-0.5f * hi) * exp_f32(-0.5f * lo);
}

// erfc(x / sqrt 2) to ~1.2e-7 relative (Numerical Recipes erfcc, a Chebyshev fit) times the
// rounding of a few float32 operations. Taking x rather than x / sqrt 2 keeps the exponent exact.
fn erfc_half(x: f32) -> f32 {
  let xc = min(abs(x), 14.2f); // erfc(10) underflows float32
  let t = 1.0f / (1.0f + 0.5f * (xc * 0.70710678118654752f));
  let poly = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
    t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
    t * (-0.82215223f + t * 0.17087277f))))))));
  let r = t * exp_neg_half_sq(xc) * exp_f32(poly);
  return select(2.0f - r, r, x >= 0.0f);
}

// ---- helpers of map ops (kernels/ops.json expressions call them) ----

const SIGN: u32 = 0x80000000u;

fn sqrt_f32(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x < 0.0f) { return nan_f32(); }
  if (x == 0.0f || is_inf(x)) { return x; }
  return sqrt(x);
}

fn sigmoid_f32(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  return 1.0f / (1.0f + exp_f32(-x));
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2): no cancellation for x < 0.
// Non-finite x (docs/protocol.md "Numerics"): gelu(+inf) = +inf, gelu(-inf) = -0 (the limit
// of x Phi(x), negative for every x < 0), not -inf * 0.
fn gelu_f32(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (is_inf(x)) { return select(neg_zero_f32(), x, x > 0.0f); }
  return 0.5f * x * erfc_half(-x);
}

// x / y. NVIDIA's Vulkan compiler divides as x * (1 / y), and 1 / y flushes to zero for
// |y| > 2^126, so both operands are scaled down by 4 first (ldexp, which no compiler folds back
// into the division); inf and NaN take the plain path, whose result is already right.
fn div_f32(x: f32, y: f32) -> f32 {
  if (abs(y) > 8.507059173023462e+37f && !is_inf(y) && !is_nan(y)) {
    return ldexp(x, -2i) / ldexp(y, -2i);
  }
  return x / y;
}

// g * gelu'(x), gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi).
// gelu'(+inf) = 1 and gelu'(-inf) = +0 (the limits), so the result is g * 1 or g * 0 (NaN for
// an infinite g at x = -inf, as IEEE's inf * 0).
fn gelu_grad(x: f32, g: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (is_inf(x)) { return g * select(0.0f, 1.0f, x > 0.0f); }
  let xc = clamp(x, -20.0f, 20.0f); // past +-20 the result is g * (0 or 1) in float32
  let cdf = 0.5f * erfc_half(-xc);
  let pdf = exp_neg_half_sq(xc) * 0.39894228040143268f;
  return g * (cdf + xc * pdf);
}
// ---- end shared math ----
