// The protocol-v3 select ops on 32-bit words (the WGSL twin, kernels/wgsl/select.wgsl, explains
// the rules; OP codes and dtype codes are its): SEL_OP picks the op, SEL_DT is the operands'
// dtype code (0 float32, 1 int32, 2 uint32, 3 bool). Operand textures are R32F, R32I or R32UI
// (A_INT / A_UINT, B_..., C_...: read through the matching sampler); the result is written as
// a word (WORDS_OUT, OUT_INT / OUT_UINT in common.glsl). Everything is integer arithmetic on
// the words but dropout's one float32 multiply: float compare-and-select may become min/max in
// a driver (Mesa's llvmpipe did, for clamp).
precision highp isampler2D;
precision highp usampler2D;

#if defined(A_INT)
uniform isampler2D u_a;
#elif defined(A_UINT)
uniform usampler2D u_a;
#else
uniform sampler2D u_a;
#endif
#if defined(HAS_B)
#if defined(B_INT)
uniform isampler2D u_b;
#elif defined(B_UINT)
uniform usampler2D u_b;
#else
uniform sampler2D u_b;
#endif
#endif
#if defined(HAS_C)
#if defined(C_INT)
uniform isampler2D u_c;
#elif defined(C_UINT)
uniform usampler2D u_c;
#else
uniform sampler2D u_c;
#endif
#endif
uniform ivec4 u_shape;   // the result's shape, padded left to rank 4 (BROADCAST)
uniform ivec4 u_sa;      // operand strides, 0 where broadcast (BROADCAST)
uniform ivec4 u_sb;
uniform ivec4 u_sc;
uniform uint u_seed;     // hash_uniform, dropout
uniform uint u_thr;      // dropout: keep when (h >> 8) >= u_thr
uniform uint u_scale;    // dropout: float32(1 / (1 - p)) as bits
uniform uint u_to;       // cast: the target dtype code

// uint(int) and int(uint) keep the bit pattern (GLSL ES 3.00, 5.4.1)
uint wordAt(sampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return floatBitsToUint(texelFetch(t, ivec2(i % w, i / w), 0).r);
}
uint wordAt(isampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return uint(texelFetch(t, ivec2(i % w, i / w), 0).r);
}
uint wordAt(usampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return texelFetch(t, ivec2(i % w, i / w), 0).r;
}

const uint SIGN = 0x80000000u;

bool isNanWord(uint w) { return (w & 0x7fffffffu) > 0x7f800000u; }
uint orderKey(uint w) { return (w & SIGN) != 0u ? ~w : (w | SIGN); }

bool below(uint x, uint y) {
#if SEL_DT == 0
  return orderKey(x) < orderKey(y);
#elif SEL_DT == 1
  return int(x) < int(y);
#else
  return x < y;
#endif
}

uint extreme(uint x, uint y, bool isMax) {
#if SEL_DT == 0
  if (isNanWord(x)) return x;
  if (isNanWord(y)) return y;
#endif
  bool takeY = isMax ? below(x, y) : below(y, x);
  return takeY ? y : x;
}

bool equalWords(uint x, uint y) {
#if SEL_DT == 0
  return !isNanWord(x) && !isNanWord(y) && (x == y || ((x | y) & 0x7fffffffu) == 0u);
#else
  return x == y;
#endif
}

bool lessWords(uint x, uint y) {
#if SEL_DT == 0
  return !isNanWord(x) && !isNanWord(y) && ((x | y) & 0x7fffffffu) != 0u &&
    orderKey(x) < orderKey(y);
#else
  return below(x, y);
#endif
}

// ---- cast ----

uint msb(uint v) {
  uint m = v;
  uint e = 0u;
  if (m >= 0x10000u) { m >>= 16; e += 16u; }
  if (m >= 0x100u) { m >>= 8; e += 8u; }
  if (m >= 0x10u) { m >>= 4; e += 4u; }
  if (m >= 0x4u) { m >>= 2; e += 2u; }
  if (m >= 0x2u) { e += 1u; }
  return e;
}

// float32 bits of an unsigned integer, rounded to nearest, ties to even
uint u32ToF32Bits(uint m) {
  if (m == 0u) return 0u;
  uint e = msb(m);
  if (e <= 23u) return ((e + 127u) << 23) + ((m << (23u - e)) - 0x800000u);
  uint shift = e - 23u;
  uint mant = m >> shift;
  uint rest = m & ((1u << shift) - 1u);
  uint half_ = 1u << (shift - 1u);
  if (rest > half_ || (rest == half_ && (mant & 1u) == 1u)) mant += 1u;
  return ((e + 127u) << 23) + (mant - 0x800000u);
}

// float32 bits -> int32 (signed) or uint32 words: truncation, NaN -> 0, saturation
uint f32ToIntBits(uint w, bool signed_) {
  if (isNanWord(w)) return 0u;
  bool neg = (w & SIGN) != 0u;
  int e = int((w >> 23) & 0xffu) - 127;
  if (e < 0 || (!signed_ && neg)) return 0u;
  if (signed_ && e >= 31) return neg ? SIGN : 0x7fffffffu;
  if (!signed_ && e >= 32) return 0xffffffffu;
  uint m = (w & 0x7fffffu) | 0x800000u;
  uint mag = e >= 23 ? m << uint(e - 23) : m >> uint(23 - e);
  return neg ? 0u - mag : mag;
}

uint castWord(uint w) {
  if (u_to == 3u) {
#if SEL_DT == 0
    return (w & 0x7fffffffu) != 0u ? 1u : 0u;
#else
    return w != 0u ? 1u : 0u;
#endif
  }
#if SEL_DT == 0
  if (u_to == 1u) return f32ToIntBits(w, true);
  if (u_to == 2u) return f32ToIntBits(w, false);
  return w;
#else
  if (u_to == 0u) {
#if SEL_DT == 1
    if ((w & SIGN) != 0u) return u32ToF32Bits(0u - w) | SIGN;
#endif
    return u32ToF32Bits(w);
  }
  return w;
#endif
}

// ---- the counter-hash uniform (highp uint arithmetic wraps modulo 2^32) ----

uint lowbias32(uint v) {
  uint x = v;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

uint hashWord(uint counter, uint i) {
  return lowbias32(lowbias32(lowbias32(u_seed) ^ counter) ^ lowbias32(i));
}

uint uniformBits(uint h) {
  uint top = h >> 8;
  return top == 0u ? 0u : u32ToF32Bits(top) - (24u << 23);
}

uint dropoutWord(uint w, uint h) {
  bool finite = (w & 0x7fffffffu) < 0x7f800000u;
  if ((h >> 8) >= u_thr) {
    if (!finite) return isNanWord(w) ? 0x7fc00000u : w;
    return floatBitsToUint(uintBitsToFloat(w) * uintBitsToFloat(u_scale));
  }
  return finite ? (w & SIGN) : 0x7fc00000u;
}

uint kernelWord(int i) {
  int ia = i;
  int ib = i;
  int ic = i;
#if defined(BROADCAST)
  ivec4 c = unravel(i, u_shape);
  ia = dot4(c, u_sa);
  ib = dot4(c, u_sb);
  ic = dot4(c, u_sc);
#endif
#if SEL_OP == 0
  return extreme(wordAt(u_a, ia), wordAt(u_b, ib), true);
#elif SEL_OP == 1
  return extreme(wordAt(u_a, ia), wordAt(u_b, ib), false);
#elif SEL_OP >= 2 && SEL_OP <= 7
  uint x = wordAt(u_a, ia);
  uint y = wordAt(u_b, ib);
  bool r;
#if SEL_OP == 2
  r = equalWords(x, y);
#elif SEL_OP == 3
  r = !equalWords(x, y);
#elif SEL_OP == 4
  r = lessWords(x, y);
#elif SEL_OP == 5
  r = lessWords(x, y) || equalWords(x, y);
#elif SEL_OP == 6
  r = lessWords(y, x);
#else
  r = lessWords(y, x) || equalWords(x, y);
#endif
  return r ? 1u : 0u;
#elif SEL_OP == 8
  return wordAt(u_a, ia) != 0u ? wordAt(u_b, ib) : wordAt(u_c, ic);
#elif SEL_OP == 9
  return castWord(wordAt(u_a, i));
#elif SEL_OP == 10
  return uniformBits(hashWord(wordAt(u_a, 0), uint(i)));
#elif SEL_OP == 11
  return dropoutWord(wordAt(u_a, i), hashWord(wordAt(u_b, 0), uint(i)));
#else
#error unknown select op
#endif
}
