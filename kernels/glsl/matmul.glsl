// [..., M, K] @ [..., K, N] with broadcast batch axes: one fragment per output element, the dot
// product accumulated in ascending k from 0.0 (the protocol's order). The loop walks texel
// coordinates instead of dividing per element.
uniform sampler2D u_a;
uniform sampler2D u_b;
uniform ivec4 u_shape;  // output [B0, B1, M, N]
uniform int u_k;
uniform ivec2 u_sa;     // element strides of a's two batch axes (0 where broadcast)
uniform ivec2 u_sb;

float kernel(int i) {
  ivec4 c = unravel(i, u_shape);
  int n = u_shape.w;
  int wa = textureSize(u_a, 0).x;
  int wb = textureSize(u_b, 0).x;
  ivec2 pa = texelOf(c.x * u_sa.x + c.y * u_sa.y + c.z * u_k, wa);
  ivec2 pb = texelOf(c.x * u_sb.x + c.y * u_sb.y + c.w, wb);
  ivec2 stepB = texelOf(n, wb);  // moving n elements along b
  float acc = 0.0;
  for (int k = 0; k < u_k; ++k) {
    acc += texelFetch(u_a, pa, 0).r * texelFetch(u_b, pb, 0).r;
    pa.x += 1;
    if (pa.x == wa) { pa.x = 0; pa.y += 1; }
    pb += stepB;
    if (pb.x >= wb) { pb.x -= wb; pb.y += 1; }
  }
  return acc;
}
