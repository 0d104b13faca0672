// Block-quantized weights on WebGL2: ggml's q4_k / q6_k / q8_0 / q4_0 blocks decoded in the
// shader (DEQUANT: one value per fragment; DEQUANT_ROWS: value j of row idx[r] per fragment;
// MATMUL_Q: out[r, c] = sum_k x[r, k] * w[c, k], ascending k from 0.0, each weight value
// decoded where it is used, never stored as float32) and matmul_fixed (FIXED: int32 fixed
// point, 64-bit sums as (lo, hi) uint pairs: GLSL ES 3.00 has no 64-bit integers, no
// uaddCarry, no umulExtended, no findMSB). The rules are docs/protocol.md's; the WGSL twin is
// kernels/wgsl/quant.wgsl. Defines: DEQUANT, DEQUANT_ROWS or MATMUL_Q with Q6K, Q80 or Q40
// (else q4_k); FIXED.
// A quantized tensor is an R32UI texture of its bytes packed 4 to a word.
precision highp usampler2D;
uniform highp usampler2D u_q;   // the quantized weight
uniform sampler2D u_a;          // matmul_q: x; matmul_fixed: a
uniform sampler2D u_b;          // matmul_fixed: b
uniform ivec4 u_dims;           // matmul_q: (N, K, 0, 0); matmul_fixed: (M, N, K, frac_bits)
uniform ivec4 u_strides;        // matmul_fixed: (b1, a_s0, a_s1, b_s0)
uniform int u_bs1;              // matmul_fixed: b_s1
#if defined(DEQUANT_ROWS)
precision highp isampler2D;
uniform highp isampler2D u_idx; // dequantize_rows: the row indices (checked by a check pass)
#endif

uint wordAt(int i) {
  int w = textureSize(u_q, 0).x;
  return texelFetch(u_q, ivec2(i % w, i / w), 0).r;
}
uint byteOf(uint word, int i) { return (word >> uint(8 * i)) & 0xffu; }
uint byteAt(int o) { return byteOf(wordAt(o >> 2), o & 3); }

// An IEEE binary16 (low 16 bits) as a float, exactly, from the bits.
float halfToFloat(uint h) {
  uint s = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 31u;
  uint m = h & 1023u;
  if (e == 0u) return uintBitsToFloat(floatBitsToUint(float(m) * 5.9604644775390625e-8) | s);
  if (e == 31u) return uintBitsToFloat(s | 0x7f800000u | (m << 13));
  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}

int sext8(uint b) { return int(b) - (b >= 128u ? 256 : 0); }

// q4_k sub-block j's f32(d * sc) and f32(dmin * m) (ggml's get_scale_min_k4)
vec2 q4kCoef(int wb, int j) {
  uint head = wordAt(wb);
  uint s0 = wordAt(wb + 1);
  uint s1 = wordAt(wb + 2);
  uint s2 = wordAt(wb + 3);
  uint sc;
  uint mn;
  if (j < 4) {
    sc = byteOf(s0, j) & 63u;
    mn = byteOf(s1, j) & 63u;
  } else {
    int i = j - 4;
    sc = (byteOf(s2, i) & 15u) | ((byteOf(s0, i) >> 6) << 4);
    mn = (byteOf(s2, i) >> 4) | ((byteOf(s1, i) >> 6) << 4);
  }
  return vec2(halfToFloat(head & 0xffffu) * float(sc), halfToFloat(head >> 16) * float(mn));
}

// value j (0..255) of block `blk`
float q4kValue(int blk, int j) {
  int wb = blk * 36;
  int sub = j / 32;
  int l = j % 32;
  vec2 c = q4kCoef(wb, sub);
  uint qb = byteOf(wordAt(wb + 4 + (sub / 2) * 8 + l / 4), l % 4);
  uint q = (sub % 2 == 1) ? (qb >> 4) : (qb & 15u);
  return c.x * float(q) - c.y;
}

float q6kValue(int blk, int j) {
  int base = blk * 210;
  int h = j / 128;
  int t = (j / 32) % 4;
  int l = j % 32;
  uint ql = byteAt(base + h * 64 + l + (t % 2) * 32);
  uint nib = t >= 2 ? (ql >> 4) : (ql & 15u);
  uint qh = byteAt(base + 128 + h * 32 + l);
  int q = int(nib | (((qh >> uint(2 * t)) & 3u) << 4)) - 32;
  int sc = sext8(byteAt(base + 192 + h * 8 + l / 16 + 2 * t));
  float d = halfToFloat(byteAt(base + 208) | (byteAt(base + 209) << 8));
  return (d * float(sc)) * float(q);
}

// q8_0: 34 bytes per 32 values, y = d * q (q an int8)
float q80Value(int blk, int j) {
  int base = blk * 34;
  float d = halfToFloat(byteAt(base) | (byteAt(base + 1) << 8));
  return d * float(sext8(byteAt(base + 2 + j)));
}

// q4_0: 18 bytes per 32 values, y = d * (q - 8); byte j holds values j (low) and j + 16 (high)
float q40Value(int blk, int j) {
  int base = blk * 18;
  uint b = byteAt(base + 2 + j % 16);
  uint q = j >= 16 ? (b >> 4) : (b & 15u);
  float d = halfToFloat(byteAt(base) | (byteAt(base + 1) << 8));
  return d * float(int(q) - 8);
}

#if defined(Q6K)
float quantValue(int i) { return q6kValue(i / 256, i % 256); }
#elif defined(Q80)
float quantValue(int i) { return q80Value(i / 32, i % 32); }
#elif defined(Q40)
float quantValue(int i) { return q40Value(i / 32, i % 32); }
#else
float quantValue(int i) { return q4kValue(i / 256, i % 256); }
#endif

#if defined(DEQUANT)
uint kernelWord(int i) { return floatBitsToUint(quantValue(i)); }
#endif

#if defined(DEQUANT_ROWS)
// u_dims: (N, K); a row out of range writes 0 (the node's check pass reports it)
uint kernelWord(int i) {
  int k = u_dims.y;
  int r = i / k;
  int w = textureSize(u_idx, 0).x;
  int row = texelFetch(u_idx, ivec2(r % w, r / w), 0).r;
  if (row < 0 || row >= u_dims.x) return 0u;
  return floatBitsToUint(quantValue(row * k + (i - r * k)));
}
#endif

#if defined(MATMUL_Q)
float kernel(int i) {
  int n = u_dims.x;
  int k = u_dims.y;
  int r = i / n;
  int c = i - r * n;
  float acc = 0.0;
  for (int kk = 0; kk < k; ++kk) {
    acc += load(u_a, r * k + kk) * quantValue(c * k + kk);
  }
  return acc;
}
#endif

#if defined(FIXED)
// round-half-even(x * 2^frac) saturated to int32, NaN -> 0, from the bits
int toFixed(float x, int frac) {
  uint bits = floatBitsToUint(x);
  uint e = (bits >> 23) & 255u;
  uint mant = bits & 0x7fffffu;
  bool neg = (bits >> 31) == 1u;
  if ((e == 255u && mant != 0u) || e == 0u) return 0;
  uint m = mant | 0x800000u;
  int sh = int(e) - 150 + frac;
  if (sh >= 8) return neg ? (-2147483647 - 1) : 2147483647;
  uint mag = 0u;
  if (sh >= 0) {
    mag = m << uint(sh);
  } else if (sh >= -24) {
    uint r = uint(-sh);
    mag = m >> r;
    uint rem = m & ((1u << r) - 1u);
    uint half1 = 1u << (r - 1u);
    if (rem > half1 || (rem == half1 && (mag & 1u) == 1u)) mag += 1u;
  }
  return neg ? -int(mag) : int(mag);
}

uvec2 neg64(uvec2 v) {
  uint lo = ~v.x + 1u;
  return uvec2(lo, ~v.y + (lo == 0u ? 1u : 0u));
}

uint magnitude(int a) { return a < 0 ? uint(-(a + 1)) + 1u : uint(a); }

// the exact product of two int32 as a two's complement (lo, hi) pair, by 16-bit halves
uvec2 mul64(int a, int b) {
  uint ua = magnitude(a);
  uint ub = magnitude(b);
  uint a0 = ua & 0xffffu;
  uint a1 = ua >> 16;
  uint b0 = ub & 0xffffu;
  uint b1 = ub >> 16;
  uint p00 = a0 * b0;
  uint p01 = a0 * b1;
  uint p10 = a1 * b0;
  uint mid = (p00 >> 16) + (p01 & 0xffffu) + (p10 & 0xffffu);
  uvec2 v = uvec2((p00 & 0xffffu) | (mid << 16), a1 * b1 + (p01 >> 16) + (p10 >> 16) + (mid >> 16));
  return ((a < 0) != (b < 0)) ? neg64(v) : v;
}

uvec2 add64(uvec2 x, uvec2 y) {
  uint lo = x.x + y.x;
  return uvec2(lo, x.y + y.y + (lo < x.x ? 1u : 0u));
}

uint msb(uint x) {  // index of the leading 1 bit of x > 0
  uint n = 0u;
  if (x >= 0x10000u) { x >>= 16; n += 16u; }
  if (x >= 0x100u) { x >>= 8; n += 8u; }
  if (x >= 0x10u) { x >>= 4; n += 4u; }
  if (x >= 4u) { x >>= 2; n += 2u; }
  if (x >= 2u) { n += 1u; }
  return n;
}

// the int64 sum rounded once to 24 bits (half to even), scaled by 2^-2frac through the exponent
uint fixedToBits(uvec2 s, int frac) {
  bool neg = (s.y >> 31) == 1u;
  uvec2 u = neg ? neg64(s) : s;
  if (u.x == 0u && u.y == 0u) return 0u;
  uint top = u.y != 0u ? 32u + msb(u.y) : msb(u.x);
  uint mant;
  if (top <= 23u) {
    mant = u.x << (23u - top);
  } else {
    uint r = top - 23u;
    uint q;
    uvec2 rem = uvec2(0u);
    uvec2 half1 = uvec2(0u);
    if (r < 32u) {
      q = (u.x >> r) | (u.y << (32u - r));
      rem.x = u.x & ((1u << r) - 1u);
      half1.x = 1u << (r - 1u);
    } else {
      uint r2 = r - 32u;
      q = u.y >> r2;
      rem = uvec2(u.x, u.y & ((1u << r2) - 1u));
      half1 = r2 == 0u ? uvec2(0x80000000u, 0u) : uvec2(0u, 1u << (r2 - 1u));
    }
    bool gt = rem.y > half1.y || (rem.y == half1.y && rem.x > half1.x);
    bool eq = rem.y == half1.y && rem.x == half1.x;
    if (gt || (eq && (q & 1u) == 1u)) q += 1u;
    if (q == 0x1000000u) { q >>= 1; top += 1u; }
    mant = q;
  }
  return (neg ? 0x80000000u : 0u) | ((top + 127u - 2u * uint(frac)) << 23) | (mant & 0x7fffffu);
}

uint kernelWord(int i) {
  int m = u_dims.x;
  int n = u_dims.y;
  int k = u_dims.z;
  int frac = u_dims.w;
  int per = m * n;
  int bi = i / per;
  int r = (i % per) / n;
  int c = i % n;
  int b1 = u_strides.x;
  int aBase = (bi / b1) * u_strides.y + (bi % b1) * u_strides.z + r * k;
  int bBase = (bi / b1) * u_strides.w + (bi % b1) * u_bs1 + c;
  uvec2 acc = uvec2(0u);
  for (int kk = 0; kk < k; ++kk) {
    acc = add64(acc, mul64(toFixed(load(u_a, aBase + kk), frac),
                           toFixed(load(u_b, bBase + kk * n), frac)));
  }
  return fixedToBits(acc, frac);
}
#endif
