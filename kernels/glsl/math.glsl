// float32 math with known error, instead of the GLSL built-ins: GLSL ES only promises exp/log
// to "3 + 2|x| ulp" (many GPUs compute exp as exp2(x * log2 e), which loses ~|x| ulps), so
// these follow FreeBSD's msun float routines (e_expf.c, s_expm1f.c, e_logf.c, s_tanhf.c),
// about 1 ulp, and Numerical Recipes' erfc (fractional error < 1.2e-7).
// Non-finite inputs are handled on the bits before any arithmetic.

// a / b. Many GPUs divide as a * (1 / b), and 1 / b flushes to zero for |b| > 2^126, so
// such b (and a) are scaled down by 4 first; inf and NaN pass through unchanged.
float div_f32(float a, float b) {
  if (abs(b) > 8.507059173023462e+37 && !isNaNBits(b)) return (a * 0.25) / (b * 0.25);
  return a / b;
}

// sqrt with IEEE special cases: GPUs may compute x * inversesqrt(x), which is NaN at 0 and inf.
float sqrt_f32(float x) {
  if (isNaNBits(x) || x < 0.0) return quietNaN();
  if (x == 0.0 || x == posInf()) return x;  // keeps -0
  return sqrt(x);
}

// 2^k for k in [-126, 127], exact.
float pow2i(int k) { return uintBitsToFloat(uint(k + 127) << 23); }

// y * 2^k for k in [-150, 128] (results below 2^-126 may flush to zero on the GPU).
float scaleByPow2(float y, int k) {
  if (k > 127) return y * 2.0 * pow2i(127);
  if (k < -125) return y * pow2i(k + 100) * pow2i(-100);
  return y * pow2i(k);
}

float exp_f32(float x) {
  uint hx = floatBitsToUint(x);
  bool neg = (hx >> 31) != 0u;
  hx &= 0x7fffffffu;
  if (hx >= 0x42b17218u) {          // |x| >= 88.72..., or non-finite
    if (hx > 0x7f800000u) return x;  // NaN
    if (hx == 0x7f800000u) return neg ? 0.0 : x;
    if (x > 88.7216796875) return posInf();
    if (x < -103.97208404541016) return 0.0;
  }
  const float ln2HI = 0.693145751953125;     // 0x3f317200: k * ln2HI is exact
  const float ln2LO = 1.428606765330187e-06;  // 0x35bfbe8e
  const float invln2 = 1.4426950216293335;
  const float P1 = 0.16666625440120697;
  const float P2 = -0.0027667332906275988;
  float hi = 0.0;
  float lo = 0.0;
  int k = 0;
  if (hx > 0x3eb17218u) {           // |x| > 0.5 ln2: reduce by k ln2
    if (hx < 0x3f851592u) {         // and |x| < 1.5 ln2
      hi = neg ? x + ln2HI : x - ln2HI;
      lo = neg ? -ln2LO : ln2LO;
      k = neg ? -1 : 1;
    } else {
      k = int(invln2 * x + (neg ? -0.5 : 0.5));
      float t = float(k);
      hi = x - t * ln2HI;
      lo = t * ln2LO;
    }
    x = hi - lo;
  } else if (hx < 0x39000000u) {    // |x| < 2^-14
    return 1.0 + x;
  }
  float t = x * x;
  float c = x - t * (P1 + t * P2);
  if (k == 0) return 1.0 - ((x * c) / (c - 2.0) - x);
  float y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
  return scaleByPow2(y, k);
}

float expm1_f32(float x) {
  uint hx = floatBitsToUint(x);
  bool neg = (hx >> 31) != 0u;
  hx &= 0x7fffffffu;
  if (hx >= 0x4195b844u) {          // |x| >= 27 ln2
    if (hx >= 0x42b17218u) {        // |x| >= 88.72...
      if (hx > 0x7f800000u) return x;
      if (hx == 0x7f800000u) return neg ? -1.0 : x;
      if (x > 88.7216796875) return posInf();
    }
    if (neg) return -1.0;
  }
  const float ln2_hi = 0.6931381225585938;   // 0x3f317180
  const float ln2_lo = 9.05800061445916e-06;  // 0x3717f7d1
  const float invln2 = 1.4426950216293335;
  const float Q1 = -0.03333321213722229;
  const float Q2 = 0.0015807170420885086;
  float c = 0.0;
  int k = 0;
  if (hx > 0x3eb17218u) {           // |x| > 0.5 ln2
    float hi;
    float lo;
    if (hx < 0x3f851592u) {
      hi = neg ? x + ln2_hi : x - ln2_hi;
      lo = neg ? -ln2_lo : ln2_lo;
      k = neg ? -1 : 1;
    } else {
      k = int(invln2 * x + (neg ? -0.5 : 0.5));
      float t = float(k);
      hi = x - t * ln2_hi;
      lo = t * ln2_lo;
    }
    x = hi - lo;
    c = (hi - x) - lo;
  } else if (hx < 0x33000000u) {    // |x| < 2^-25
    return x;
  }
  float hfx = 0.5 * x;
  float hxs = x * hfx;
  float r1 = 1.0 + hxs * (Q1 + hxs * Q2);
  float t = 3.0 - r1 * hfx;
  float e = hxs * ((r1 - t) / (6.0 - x * t));
  if (k == 0) return x - (x * e - hxs);
  e = (x * (e - c) - c);
  e -= hxs;
  if (k == -1) return 0.5 * (x - e) - 0.5;
  if (k == 1) {
    if (x < -0.25) return -2.0 * (e - (x + 0.5));
    return 1.0 + 2.0 * (x - e);
  }
  if (k <= -2 || k > 56) {
    float y = 1.0 - (e - x);
    return scaleByPow2(y, k) - 1.0;
  }
  if (k < 23) {
    float t1 = uintBitsToFloat(uint(0x3f800000 - (0x1000000 >> k)));  // 1 - 2^-k
    float y = t1 - (e - x);
    return y * pow2i(k);
  }
  float t2 = pow2i(-k);
  float y = x - (e + t2);
  y += 1.0;
  return y * pow2i(k);
}

float log_f32(float x) {
  uint ux = floatBitsToUint(x);
  if ((ux & 0x7fffffffu) == 0u) return negInf();  // log(+-0) = -inf
  if ((ux >> 31) != 0u) return quietNaN();          // log(<0) = NaN, log(NaN) = NaN
  if (ux >= 0x7f800000u) return x;                   // +inf, NaN
  int k = 0;
  int ix = int(ux);
  if (ix < 0x00800000) {            // subnormal: scale up by 2^25
    k -= 25;
    x *= 33554432.0;
    ix = int(floatBitsToUint(x));
  }
  const float ln2_hi = 0.6931381225585938;
  const float ln2_lo = 9.05800061445916e-06;
  const float Lg1 = 0.6666666269302368;
  const float Lg2 = 0.40000972151756287;
  const float Lg3 = 0.2849878668785095;
  const float Lg4 = 0.24279078841209412;
  k += (ix >> 23) - 127;
  ix &= 0x007fffff;
  int i = (ix + (0x95f64 << 3)) & 0x800000;
  x = uintBitsToFloat(uint(ix | (i ^ 0x3f800000)));  // x or x/2 in [sqrt(2)/2, sqrt(2))
  k += (i >> 23);
  float f = x - 1.0;
  float dk = float(k);
  if ((0x007fffff & (0x8000 + ix)) < 0xc000) {        // -2^-9 <= f < 2^-9
    if (f == 0.0) return k == 0 ? 0.0 : dk * ln2_hi + dk * ln2_lo;
    float R = f * f * (0.5 - 0.3333333333333333 * f);
    if (k == 0) return f - R;
    return dk * ln2_hi - ((R - dk * ln2_lo) - f);
  }
  float s = f / (2.0 + f);
  float z = s * s;
  i = ix - (0x6147a << 3);
  float w = z * z;
  int j = (0x6b851 << 3) - ix;
  float t1 = w * (Lg2 + w * Lg4);
  float t2 = z * (Lg1 + w * Lg3);
  i |= j;
  float R = t2 + t1;
  if (i > 0) {
    float hfsq = 0.5 * f * f;
    if (k == 0) return f - (hfsq - s * (hfsq + R));
    return dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
  }
  if (k == 0) return f - s * (f - R);
  return dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
}

float tanh_f32(float x) {
  uint hx = floatBitsToUint(x);
  uint ax = hx & 0x7fffffffu;
  if (ax > 0x7f800000u) return x;                   // NaN
  float s = (hx >> 31) != 0u ? -1.0 : 1.0;
  float a = abs(x);
  if (ax >= 0x41b00000u) return s;                  // |x| >= 22: tanh = +-1 in float32
  if (ax < 0x39800000u) return x;                   // |x| < 2^-12
  float z;
  if (ax >= 0x3f800000u) {                          // |x| >= 1
    z = 1.0 - 2.0 / (expm1_f32(2.0 * a) + 2.0);
  } else {
    float t = expm1_f32(-2.0 * a);
    z = -t / (t + 2.0);
  }
  return s * z;
}

float sigmoid_f32(float x) {
  return 1.0 / (1.0 + exp_f32(-x));
}

// exp(-z*z) without the error of rounding z*z: z = zh + zl with zh's low 12 bits clear, so
// zh*zh is exact (as in msun's erff).
float expNegSquare(float z) {
  float zh = uintBitsToFloat(floatBitsToUint(z) & 0xfffff000u);
  return exp_f32(-zh * zh) * exp_f32((zh - z) * (zh + z));
}

// erfc(x), Numerical Recipes' erfcc (fractional error < 1.2e-7 for every x).
float erfc_f32(float x) {
  if (isNaNBits(x)) return x;
  float z = abs(x);
  if (z > 10.0) return x > 0.0 ? 0.0 : 2.0;  // erfc(10) < 2e-45: zero in float32
  float t = 1.0 / (1.0 + 0.5 * z);
  float p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277))))))));
  float r = t * expNegSquare(z) * exp_f32(p);
  return x >= 0.0 ? r : 2.0 - r;
}

const float SQRT1_2 = 0.7071067811865476;
const float INV_SQRT_2PI = 0.3989422804014327;

// Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2.
float normalCdf(float x) {
  return 0.5 * erfc_f32(-x * SQRT1_2);
}

// Non-finite x (docs/protocol.md "Numerics"): gelu(+inf) = +inf, gelu(-inf) = -0 (the limit
// of x Phi(x), negative for every x < 0), not -inf * 0.
float gelu_f32(float x) {
  uint bits = floatBitsToUint(x);
  if ((bits & 0x7fffffffu) == 0x7f800000u) return (bits >> 31) != 0u ? uintBitsToFloat(0x80000000u) : x;
  return x * normalCdf(x);
}

// gelu'(x) = Phi(x) + x phi(x), phi the standard normal density; gelu'(+inf) = 1 and
// gelu'(-inf) = +0, the limits (x phi(x) would be inf * 0).
float geluGrad_f32(float x) {
  uint bits = floatBitsToUint(x);
  if ((bits & 0x7fffffffu) == 0x7f800000u) return (bits >> 31) != 0u ? 0.0 : 1.0;
  float xs = x * SQRT1_2;
  return normalCdf(x) + x * INV_SQRT_2PI * expNegSquare(xs);
}
