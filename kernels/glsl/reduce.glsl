// Reductions in the protocol's fixed order (docs/protocol.md, "Numerics"). The reduced tensor
// is viewed as [outer, len, inner]; row r = (o, q) holds elements (o * len + k) * inner + q.
// Lane j of a row adds (or maxes) its elements k = j, j + 64, ... in ascending order from the
// identity; the 64 lanes are then combined as a tree (s = 32, 16, ..., 1).
//   STAGE_FUSED  one fragment per row: the 64 lanes in turn, then the tree.
//   STAGE_LANES  one fragment per (row, lane): output [rows, 64] of lane partials.
//   STAGE_TREE   one fragment per row: the tree over the partials of STAGE_LANES.
// Long rows use LANES + TREE (64 fragments per row); the bits are the same either way.
// Terms: TERM_expdiff = exp(a - m[r]); TERM_ce = b * ((a - m[r]) - log(s[r])); else a.
// Epilogues (after the tree): EPI_div = v / u_div; EPI_negdiv = -v / u_div.
//! include math.glsl
uniform int u_len;
uniform int u_inner;
uniform float u_div;
#if defined(STAGE_TREE)
uniform sampler2D u_p;
#else
uniform sampler2D u_a;
#endif
#if defined(TERM_expdiff) || defined(TERM_ce)
uniform sampler2D u_m;
#endif
#if defined(TERM_ce)
uniform sampler2D u_b;
uniform sampler2D u_s;
#endif

float combine(float acc, float v) {
#if defined(COMBINE_MAX)
  return v > acc ? v : acc;  // NaN never wins (the softmax exp turns it into NaN later)
#else
  return acc + v;
#endif
}

float identity() {
#if defined(COMBINE_MAX)
  return negInf();
#else
  return 0.0;
#endif
}

#if !defined(STAGE_TREE)
// Per-row values the terms need: x = m[r], y = log(s[r]).
vec2 rowTerms(int r) {
  vec2 t = vec2(0.0);
#if defined(TERM_expdiff) || defined(TERM_ce)
  t.x = load(u_m, r);
#endif
#if defined(TERM_ce)
  t.y = log_f32(load(u_s, r));
#endif
  return t;
}

float term(int e, vec2 rt) {
  float v = load(u_a, e);
#if defined(TERM_expdiff)
  return exp_f32(v - rt.x);
#elif defined(TERM_ce)
  return load(u_b, e) * ((v - rt.x) - rt.y);
#else
  return v;
#endif
}

// Lane j of row r: its elements in ascending order, eight per loop iteration (the same order,
// so the same bits). Why: Mesa's llvmpipe ends a loop after 65535 iterations
// (LP_MAX_TGSI_LOOP_ITERATIONS), which left 64 elements out of a sum of 2^22 on Firefox's WebGL2
// (the Firefox lane); unrolled, a lane holds up to 8 * 65535 elements.
#define LANE_STEP(d) acc = combine(acc, term(base + (k + (d) * 64) * u_inner, rt))
float lane(int r, int j, vec2 rt) {
  int base = (r / u_inner) * u_len * u_inner + (r % u_inner);
  float acc = identity();
  int k = j;
  while (k + 7 * 64 < u_len) {
    LANE_STEP(0); LANE_STEP(1); LANE_STEP(2); LANE_STEP(3);
    LANE_STEP(4); LANE_STEP(5); LANE_STEP(6); LANE_STEP(7);
    k += 8 * 64;
  }
  for (; k < u_len; k += 64) LANE_STEP(0);  // the last 0..7 elements
  return acc;
}
#endif

float epilogue(float v) {
#if defined(EPI_div)
  return v / u_div;
#elif defined(EPI_negdiv)
  return -v / u_div;
#else
  return v;
#endif
}

#if defined(SHORT_LEN)
// Rows of at most 64 elements (SHORT_LEN = len, with STAGE_FUSED): lane j holds element j alone
// (or nothing), so the same lanes and the same tree, with every lane and every combination that
// involves only empty lanes left out: those would combine with the identity, which changes no
// value (sums start from 0.0, so no lane is -0; max from -inf). Spelled out with constant
// indices: SwiftShader runs the looped, dynamically indexed version many times slower.
#define LANE(j) if ((j) < SHORT_LEN) l[j] = first(term(base + (j) * u_inner, rt));
#define LANE4(j) LANE(j) LANE((j) + 1) LANE((j) + 2) LANE((j) + 3)
#define LANE16(j) LANE4(j) LANE4((j) + 4) LANE4((j) + 8) LANE4((j) + 12)
#define TREE(j, s) if ((j) + (s) < SHORT_LEN) l[j] = combine(l[j], l[(j) + (s)]);
#define TREE4(j, s) TREE(j, s) TREE((j) + 1, s) TREE((j) + 2, s) TREE((j) + 3, s)
#define TREE16(j, s) TREE4(j, s) TREE4((j) + 4, s) TREE4((j) + 8, s) TREE4((j) + 12, s)
// A lane of one element: combine(identity(), v) without the identity, which a compiler may
// fold away (0.0 + v is v except for v = -0, which becomes +0).
float first(float v) {
#if defined(COMBINE_MAX)
  return v > negInf() ? v : negInf();
#else
  return uintBitsToFloat(floatBitsToUint(v) & (v == 0.0 ? 0x7fffffffu : 0xffffffffu));
#endif
}
float kernel(int r) {
  float l[64];
  vec2 rt = rowTerms(r);
  int base = (r / u_inner) * u_len * u_inner + (r % u_inner);
  LANE16(0) LANE16(16) LANE16(32) LANE16(48)
  TREE16(0, 32) TREE16(16, 32)
  TREE16(0, 16)
  TREE4(0, 8) TREE4(4, 8)
  TREE4(0, 4)
  TREE(0, 2) TREE(1, 2)
  TREE(0, 1)
  return epilogue(l[0]);
}
#elif defined(STAGE_LANES)
float kernel(int i) {
  int r = i / 64;
  return lane(r, i - r * 64, rowTerms(r));
}
#else
float kernel(int r) {
  float l[64];
#if defined(STAGE_TREE)
  for (int j = 0; j < 64; ++j) l[j] = load(u_p, r * 64 + j);
#else
  vec2 rt = rowTerms(r);
  for (int j = 0; j < 64; ++j) l[j] = lane(r, j, rt);
#endif
  for (int s = 32; s > 0; s /= 2) {
    for (int j = 0; j < s; ++j) l[j] = combine(l[j], l[j + s]);
  }
  return epilogue(l[0]);
}
#endif
