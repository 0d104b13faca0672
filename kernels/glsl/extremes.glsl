// reduce_max / reduce_min / argmax / argmin (WANT_MAX or not, ARG or not) of a float32 (u_dt 0)
// or int32 (u_dt 1) tensor viewed as [outer, len, inner]: row r = (o, q) holds elements
// (o * len + k) * inner + q. Each element becomes an int32 key in the protocol's order (the
// WGSL twin, kernels/wgsl/extremes.wgsl, explains it); the best is the larger (smaller) key,
// the smaller index on equal keys: a total order, so the split of the work does not matter.
//   STAGE_FUSED  one fragment per row: every element in turn.
//   STAGE_LANES  one fragment per (row, lane j): the best of k = j, j + 64, ...: its index k.
//   STAGE_TREE   one fragment per row: the best of the 64 candidate indices of STAGE_LANES.
// A result is the extreme's bits or its index k (int32 bits), stored in the R32F texture as is.
uniform int u_len;
uniform int u_inner;
uniform int u_dt;
uniform sampler2D u_a;
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

int keyOf(uint b) {
  if (u_dt == 1) return asInt(b);
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

int rowBase(int r) {
  return (r / u_inner) * u_len * u_inner + (r % u_inner);
}

int keyAt(int base, int k) {
  return keyOf(floatBitsToUint(load(u_a, base + k * u_inner)));
}

// Take (key, k) when it beats the best so far (on equal keys the smaller index wins).
void take(inout int bestKey, inout int bestK, int key, int k) {
  if (BEYOND(key, bestKey) || (key == bestKey && k < bestK)) {
    bestKey = key;
    bestK = k;
  }
}

uint result(int key, int k) {
#if defined(ARG)
  return asUint(k);
#else
  if (u_dt == 1) return asUint(key);
  if (key == KEY_MAX || key == KEY_MIN) return 0x7fc00000u;  // NaN propagates
  return asUint(key ^ ((key >> 31) & 0x7fffffff));
#endif
}

#if defined(STAGE_LANES)
float kernel(int i) {
  int r = i / 64;
  int j = i - r * 64;
  int base = rowBase(r);
  int bestKey = keyAt(base, min(j, u_len - 1));
  int bestK = min(j, u_len - 1);
  for (int k = j + 64; k < u_len; k += 64) take(bestKey, bestK, keyAt(base, k), k);
  return intBitsToFloat(bestK);
}
#else
float kernel(int r) {
  int base = rowBase(r);
#if defined(STAGE_TREE)
  int bestK = floatBitsToInt(load(u_p, r * 64));
  int bestKey = keyAt(base, bestK);
  for (int j = 1; j < 64; ++j) {
    int k = floatBitsToInt(load(u_p, r * 64 + j));
    take(bestKey, bestK, keyAt(base, k), k);
  }
#else
  int bestKey = keyAt(base, 0);
  int bestK = 0;
  for (int k = 1; k < u_len; ++k) take(bestKey, bestK, keyAt(base, k), k);
#endif
  return uintBitsToFloat(result(bestKey, bestK));
}
#endif
