// clamp (OP_clamp) of a float32 tensor (an R32F texture) or an
// int32 one (A_INT: R32I in and OUT_INT out), on its 32-bit words, so the result keeps its exact
// bits (the WGSL twin, kernels/wgsl/map_bits.wgsl, says how each op treats each dtype).
// u_lo / u_hi: clamp's bounds as words (backends-js/src/clamp-bounds.mjs).
#if defined(A_INT)
uniform highp isampler2D u_a;
#else
uniform sampler2D u_a;
#endif
uniform uint u_lo;
uniform uint u_hi;

// Bit casts between uint and int (through the float bitcasts: no value conversion).
int asInt(uint b) { return floatBitsToInt(uintBitsToFloat(b)); }
uint asUint(int v) { return floatBitsToUint(intBitsToFloat(v)); }

#if defined(A_INT)
uint op(uint b) {
#if defined(OP_clamp)
  int v = asInt(b);
  v = v < asInt(u_lo) ? asInt(u_lo) : v;
  v = v > asInt(u_hi) ? asInt(u_hi) : v;
  return asUint(v);
#else
#error unknown map_bits op
#endif
}

uint kernelWord(int i) {
  return op(asUint(texelFetch(u_a, ivec2(gl_FragCoord.xy), 0).r));
}
#else
// float32 x < y on the words (-0 equal to +0, false for NaN), integer compares only, as in the
// WGSL twin: Mesa's llvmpipe (Firefox's WebGL2 here) turned the float compare-and-select into
// min/max, so clamp(-0, min=+0) gave +0 and clamp(+0, min=-0) gave -0 (the Firefox lane).
bool isNanBits(uint b) { return (b & 0x7fffffffu) > 0x7f800000u; }
uint orderedBits(uint b) { return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u); }
bool lessBits(uint x, uint y) {
  if (isNanBits(x) || isNanBits(y) || ((x | y) & 0x7fffffffu) == 0u) return false;
  return orderedBits(x) < orderedBits(y);
}

uint op(uint b) {
#if defined(OP_clamp)
  if (isNanBits(b)) return b;  // NaN stays
  uint y = lessBits(b, u_lo) ? u_lo : b;
  return lessBits(u_hi, y) ? u_hi : y;
#else
#error unknown map_bits op
#endif
}

uint kernelWord(int i) {
  return op(floatBitsToUint(loadHere(u_a)));
}
#endif
