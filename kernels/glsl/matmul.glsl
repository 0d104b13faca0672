// [..., M, K] @ [..., K, N] with broadcast batch axes, on packed operands (pack.glsl): a packed
// along K (u_a: [batch, M, ceil(K/4)] texels), b packed along N (u_b: [batch, K, ceil(N/4)]).
// One fragment computes 4 neighbouring outputs C[m, 4j .. 4j+3] (one output texel, PACKED_OUT):
// per 4 values of k it reads one texel of a and four of b, instead of 32 single values.
// Each output still accumulates its dot product in ascending k from 0.0, one product at a
// time (acc += a_k * b_k per component: the protocol's order; the compiler may contract to FMA,
// which the matmul class allows). Outputs past N read b's zero padding and are never unpacked.
uniform sampler2D u_a;
uniform sampler2D u_b;
uniform ivec4 u_shape;  // packed output [B0, B1, M, ceil(N/4)]
uniform int u_k;
uniform ivec2 u_sa;     // texel strides of a's two batch axes (0 where broadcast)
uniform ivec2 u_sb;
// Texel of b at pb, then pb moved one row of b down (tn texels).
vec4 nextB(inout ivec2 pb, ivec2 stepB, int wb) {
  vec4 v = texelFetch(u_b, pb, 0);
  pb += stepB;
  if (pb.x >= wb) { pb.x -= wb; pb.y += 1; }
  return v;
}
vec4 kernel4(int t) {
  ivec4 c = unravel(t, u_shape);
  int tk = (u_k + 3) / 4;
  int tn = u_shape.w;
  int wa = textureSize(u_a, 0).x;
  int wb = textureSize(u_b, 0).x;
  ivec2 pa = texelOf(c.x * u_sa.x + c.y * u_sa.y + c.z * tk, wa);
  ivec2 pb = texelOf(c.x * u_sb.x + c.y * u_sb.y + c.w, wb);
  ivec2 stepB = texelOf(tn, wb);
  vec4 acc = vec4(0.0);
  int whole = u_k / 4;
  for (int q = 0; q < whole; ++q) {
    vec4 a = texelFetch(u_a, pa, 0);
    acc += a.x * nextB(pb, stepB, wb);
    acc += a.y * nextB(pb, stepB, wb);
    acc += a.z * nextB(pb, stepB, wb);
    acc += a.w * nextB(pb, stepB, wb);
    pa.x += 1;
    if (pa.x == wa) { pa.x = 0; pa.y += 1; }
  }
  int rest = u_k - whole * 4;  // the last 1 to 3 values of k: never read b past row K - 1
  if (rest > 0) {
    vec4 a = texelFetch(u_a, pa, 0);
    acc += a.x * nextB(pb, stepB, wb);
    if (rest > 1) acc += a.y * nextB(pb, stepB, wb);
    if (rest > 2) acc += a.z * nextB(pb, stepB, wb);
  }
  return acc;
}
