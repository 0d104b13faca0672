// abs, square, clamp (OP_abs / OP_square / OP_clamp) of a float32 (u_dt 0) or int32 (u_dt 1)
// tensor, on the 32-bit words its texture holds, so the result keeps its exact bits (the WGSL
// twin, kernels/wgsl/map_bits.wgsl, says how each op treats each dtype). u_lo / u_hi: clamp's
// bounds as words (backends-js/src/clamp-bounds.mjs).
uniform sampler2D u_a;
uniform int u_dt;
uniform uint u_lo;
uniform uint u_hi;

// Bit casts between uint and int (through the float bitcasts: no value conversion).
int asInt(uint b) { return floatBitsToInt(uintBitsToFloat(b)); }
uint asUint(int v) { return floatBitsToUint(intBitsToFloat(v)); }

uint op(uint b) {
#if defined(OP_abs)
  if (u_dt == 0) return b & 0x7fffffffu;
  return (b & 0x80000000u) != 0u ? 0u - b : b;  // abs(-2^31) wraps to -2^31
#elif defined(OP_square)
  if (u_dt == 0) {
    float x = uintBitsToFloat(b);
    return floatBitsToUint(x * x);
  }
  return b * b;  // the low 32 bits of the int32 product
#elif defined(OP_clamp)
  if (u_dt == 0) {
    if ((b & 0x7fffffffu) > 0x7f800000u) return b;  // NaN stays
    uint y = uintBitsToFloat(b) < uintBitsToFloat(u_lo) ? u_lo : b;
    return uintBitsToFloat(y) > uintBitsToFloat(u_hi) ? u_hi : y;
  }
  int v = asInt(b);
  v = v < asInt(u_lo) ? asInt(u_lo) : v;
  v = v > asInt(u_hi) ? asInt(u_hi) : v;
  return asUint(v);
#else
#error unknown map_bits op
#endif
}

float kernel(int i) {
  return uintBitsToFloat(op(floatBitsToUint(loadHere(u_a))));
}
