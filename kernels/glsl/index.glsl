// The protocol-v4 selection ops on WebGL2, output-centric (a fragment computes its own
// element: no scatter writes), on 32-bit words read through the sampler of each texture's kind
// (A_INT: R32I int32 tensors) and written as words (WORDS_OUT, OUT_INT / OUT_UINT): exact bits.
// IDX_OP: 0 slice, 1 slice_scatter, 2 concat, 3 pad, 4 gather (index_select, gather: an index
// out of range is clamped to 0), 5 check (fragment r: the smallest position of an out-of-range
// index in row r of idx's texture, 0xffffffff none: the program reads it back after each
// step), 6 add (index_add, scatter_add: per output element, the positions q along idx's axis
// in ascending order whose index equals its coordinate: the protocol's sequential sum).
precision highp isampler2D;

#if defined(A_INT)
#define SAMPLER isampler2D
#else
#define SAMPLER sampler2D
#endif
uniform SAMPLER u_a;      // slice, slice_scatter, pad: a; concat: tensors[0]
#if IDX_OP == 1 || IDX_OP == 6
uniform SAMPLER u_src;
#endif
#if IDX_OP >= 4
uniform isampler2D u_idx;
uniform int u_size;      // a.shape[axis]: the valid indices are 0..u_size-1
uniform ivec4 u_t;       // idx strides at the output coordinates (gather, add)
uniform ivec4 u_u;       // add: src strides
uniform ivec4 u_lim;     // add: idx's extents (c[d] < u_lim[d] off the axis, or no source)
uniform int u_m;         // add: positions along idx's axis
uniform int u_icount;    // check: idx's element count
#endif
#if IDX_OP == 2
uniform SAMPLER u_t1;
#if NT > 2
uniform SAMPLER u_t2;
#endif
#if NT > 3
uniform SAMPLER u_t3;
#endif
#if NT > 4
uniform SAMPLER u_t4;
#endif
#if NT > 5
uniform SAMPLER u_t5;
#endif
#if NT > 6
uniform SAMPLER u_t6;
#endif
#if NT > 7
uniform SAMPLER u_t7;
#endif
#endif
uniform ivec4 u_shape;   // the result's shape, padded left to rank 4
uniform ivec4 u_sa;      // slice: a's strides times the steps
uniform int u_base;      // slice: the offset of the first element
uniform ivec4 u_start;   // slice_scatter: the slice's start; pad: the widths before
uniform ivec4 u_step;    // slice_scatter: the steps
uniform ivec4 u_count;   // slice_scatter: src's shape; pad: a's shape
uniform int u_axis;      // concat (padded rank 4)
uniform ivec4 u_ends0;   // concat: where tensors 0..3 end along the axis
uniform ivec4 u_ends1;   // concat: where tensors 4..7 end
uniform uint u_value;    // pad: the value's word

uint wordAt(sampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return floatBitsToUint(texelFetch(t, ivec2(i % w, i / w), 0).r);
}
uint wordAt(isampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return uint(texelFetch(t, ivec2(i % w, i / w), 0).r);
}

// Flat index of coordinates c in a row-major tensor of (padded) shape s.
int flatIn(ivec4 c, ivec4 s) {
  return ((c.x * s.y + c.y) * s.z + c.z) * s.w + c.w;
}

#if IDX_OP == 1
// The slice position q of output coordinates c, or false when c is not in the slice. Integer
// division and remainder on magnitudes only (GLSL leaves them undefined for negatives).
bool inSlice(ivec4 c, out ivec4 q) {
  for (int d = 0; d < 4; d++) {
    int k = c[d] - u_start[d];
    int st = u_step[d];
    if ((k < 0) != (st < 0) && k != 0) return false;
    int m = abs(k);
    int a = abs(st);
    if (m % a != 0) return false;
    q[d] = m / a;
    if (q[d] >= u_count[d]) return false;
  }
  return true;
}
#endif

#if IDX_OP == 2
uint concatWord(ivec4 c) {
  int ax = c[u_axis];
  int k = 0;
  int start = 0;
  int ends[8] = int[8](u_ends0.x, u_ends0.y, u_ends0.z, u_ends0.w,
                       u_ends1.x, u_ends1.y, u_ends1.z, u_ends1.w);
  for (int j = 0; j < NT - 1; j++) {
    if (ax >= ends[j]) { k = j + 1; start = ends[j]; }
  }
  ivec4 s = u_shape;
  s[u_axis] = ends[k] - start;
  c[u_axis] = ax - start;
  int i = flatIn(c, s);
  if (k == 0) return wordAt(u_a, i);
  if (k == 1) return wordAt(u_t1, i);
#if NT > 2
  if (k == 2) return wordAt(u_t2, i);
#endif
#if NT > 3
  if (k == 3) return wordAt(u_t3, i);
#endif
#if NT > 4
  if (k == 4) return wordAt(u_t4, i);
#endif
#if NT > 5
  if (k == 5) return wordAt(u_t5, i);
#endif
#if NT > 6
  if (k == 6) return wordAt(u_t6, i);
#endif
#if NT > 7
  if (k == 7) return wordAt(u_t7, i);
#endif
  return 0u;
}
#endif

#if IDX_OP >= 4
int indexAt(int p) {
  int w = textureSize(u_idx, 0).x;
  return texelFetch(u_idx, ivec2(p % w, p / w), 0).r;
}
bool inRange(int j) { return j >= 0 && j < u_size; }
#endif

#if IDX_OP == 6
uint addWords(uint x, uint y) {
#if defined(A_INT)
  return uint(int(x) + int(y));
#else
  return floatBitsToUint(uintBitsToFloat(x) + uintBitsToFloat(y));
#endif
}

uint accumulate(int i, ivec4 c) {
  uint acc = wordAt(u_a, i);
  for (int d = 0; d < 4; d++) {
    if (d != u_axis && c[d] >= u_lim[d]) return acc;
  }
  int ax = c[u_axis];
  int ibase = dot4(c, u_t) - ax * u_t[u_axis];
  int sbase = dot4(c, u_u) - ax * u_u[u_axis];
  for (int q = 0; q < u_m; q++) {
    if (indexAt(ibase + q * u_t[u_axis]) == ax) acc = addWords(acc, wordAt(u_src, sbase + q * u_u[u_axis]));
  }
  return acc;
}
#endif

uint kernelWord(int i) {
#if IDX_OP == 5
  int w = textureSize(u_idx, 0).x;
  uint bad = 0xffffffffu;
  for (int x = 0; x < w; x++) {
    int p = i * w + x;
    if (p < u_icount && !inRange(indexAt(p))) bad = min(bad, uint(p));
  }
  return bad;
#else
  ivec4 c = unravel(i, u_shape);
#endif
#if IDX_OP == 0
  return wordAt(u_a, u_base + dot4(c, u_sa));
#elif IDX_OP == 1
  ivec4 q;
  return inSlice(c, q) ? wordAt(u_src, flatIn(q, u_count)) : wordAt(u_a, i);
#elif IDX_OP == 2
  return concatWord(c);
#elif IDX_OP == 4
  int j = indexAt(dot4(c, u_t));
  if (!inRange(j)) j = 0;  // never read through; the check pass reports it
  return wordAt(u_a, dot4(c, u_sa) + (j - c[u_axis]) * u_sa[u_axis]);
#elif IDX_OP == 6
  return accumulate(i, c);
#elif IDX_OP == 3
  ivec4 q = c - u_start;
  bool inside = all(greaterThanEqual(q, ivec4(0))) && all(lessThan(q, u_count));
  return inside ? wordAt(u_a, flatIn(q, u_count)) : u_value;
#endif
}
