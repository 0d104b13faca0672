// reduce_max / reduce_min / argmax / argmin (WANT_MAX or not, ARG or not) of a float32 tensor
// (R32F) or an int32 one (A_INT: R32I) viewed as [outer, len, inner]: row r = (o, q) holds
// elements (o * len + k) * inner + q. Each element becomes an int32 key in the protocol's order
// (the WGSL twin, kernels/wgsl/extremes.wgsl, explains it); the best is the larger (smaller)
// key, the smaller index on equal keys: a total order, so the split of the work does not matter.
//   STAGE_FUSED  one fragment per row: every element in turn.
//   STAGE_LANES  one fragment per (row, lane j): the best of k = j, j + 64, ...; it stores
//                c = (k - j) / 64 as a float (exact: c < 2^20), since j is its position.
//   STAGE_TREE   one fragment per row: the best of the 64 candidates k = j + 64 c.
// FUSED and TREE write a word (WORDS_OUT): the extreme's bits, or its index k (OUT_INT, int32).
uniform int u_len;
uniform int u_inner;
#if defined(A_INT)
uniform highp isampler2D u_a;
#else
uniform sampler2D u_a;
#endif
#if defined(STAGE_TREE)
uniform sampler2D u_p;
#endif

// Bit casts between uint and int (through the float bitcasts: no value conversion).
int asInt(uint b) { return floatBitsToInt(uintBitsToFloat(b)); }
uint asUint(int v) { return floatBitsToUint(intBitsToFloat(v)); }

const int KEY_MAX = 2147483647;
const int KEY_MIN = -2147483647 - 1;

#if defined(WANT_MAX)
#define BEYOND(k, best) ((k) > (best))
#else
#define BEYOND(k, best) ((k) < (best))
#endif

#if defined(A_INT)
int keyAt(int e) {
  int w = textureSize(u_a, 0).x;
  return texelFetch(u_a, ivec2(e % w, e / w), 0).r;
}
#else
int keyAt(int e) {
  uint b = floatBitsToUint(load(u_a, e));
  if ((b & 0x7fffffffu) > 0x7f800000u) {  // NaN: past every number
#if defined(WANT_MAX)
    return KEY_MAX;
#else
    return KEY_MIN;
#endif
  }
#if defined(ARG)
  if (b == 0x80000000u) b = 0u;  // argmax/argmin: -0 ties +0
#endif
  int s = asInt(b);
  return s ^ ((s >> 31) & 0x7fffffff);
}
#endif

int rowBase(int r) {
  return (r / u_inner) * u_len * u_inner + (r % u_inner);
}

// Take (key, k) when it beats the best so far (on equal keys the smaller index wins).
void take(inout int bestKey, inout int bestK, int key, int k) {
  if (BEYOND(key, bestKey) || (key == bestKey && k < bestK)) {
    bestKey = key;
    bestK = k;
  }
}

#if defined(STAGE_LANES)
#define LANE_TAKE(d) take(bestKey, bestK, keyAt(base + (k + (d) * 64) * u_inner), k + (d) * 64)
float kernel(int i) {
  int r = i / 64;
  int j = i - r * 64;
  int base = rowBase(r);
  int bestKey = keyAt(base + j * u_inner);
  int bestK = j;
  // eight elements per iteration, in order: llvmpipe ends a loop after 65535 iterations
  // (reduce.glsl's lane() says more)
  int k = j + 64;
  while (k + 7 * 64 < u_len) {
    LANE_TAKE(0); LANE_TAKE(1); LANE_TAKE(2); LANE_TAKE(3);
    LANE_TAKE(4); LANE_TAKE(5); LANE_TAKE(6); LANE_TAKE(7);
    k += 8 * 64;
  }
  for (; k < u_len; k += 64) take(bestKey, bestK, keyAt(base + k * u_inner), k);
  return float((bestK - j) / 64);
}
#else
uint result(int key, int k) {
#if defined(ARG)
  return asUint(k);
#elif defined(A_INT)
  return asUint(key);
#else
  if (key == KEY_MAX || key == KEY_MIN) return 0x7fc00000u;  // NaN propagates
  return asUint(key ^ ((key >> 31) & 0x7fffffff));
#endif
}

uint kernelWord(int r) {
  int base = rowBase(r);
#if defined(STAGE_TREE)
  int bestK = int(load(u_p, r * 64)) * 64;
  int bestKey = keyAt(base + bestK * u_inner);
  for (int j = 1; j < 64; ++j) {
    int k = j + 64 * int(load(u_p, r * 64 + j));
    take(bestKey, bestK, keyAt(base + k * u_inner), k);
  }
#else
  int bestKey = keyAt(base);
  int bestK = 0;
  for (int k = 1; k < u_len; ++k) take(bestKey, bestK, keyAt(base + k * u_inner), k);
#endif
  return result(bestKey, bestK);
}
#endif
