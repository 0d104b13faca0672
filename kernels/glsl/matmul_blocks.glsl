// [..., M, K] @ [..., K, N] with broadcast batch axes, 16 outputs per fragment: the 4x4 block
// C[4g .. 4g+3, 4j .. 4j+3] of one matrix of the batch, written as 4 texels (one per row) into
// the 4 layers of a texture array (PACKED_OUT4). Operands are packed with one matrix row per
// texture row (pack.glsl with the texture width = texels per row): a along K (texel (q, row)
// = a[row, 4q .. 4q+3]), b along N (texel (j, row) = b[row, 4j .. 4j+3]). Per 4 values of k a
// fragment reads 4 texels of a and 4 of b for 64 multiply-adds: texel fetches are what a
// matmul costs on a software renderer.
// Each output accumulates its dot product in ascending k from 0.0, one product at a time
// (acc += a_k * b_k per component, the protocol's order; FMA contraction allowed by the matmul
// class). Rows past M repeat row M - 1 and columns past N read b's zero padding: neither is
// ever unpacked.
// Output texel p: p.x = j, p.y = matrix * ceil(M / 4) + g.
uniform sampler2D u_a;
uniform sampler2D u_b;
uniform ivec4 u_shape;  // [B0, B1, ceil(M / 4), ceil(N / 4)]
uniform int u_m;
uniform int u_k;
uniform ivec2 u_sa;     // matrix strides of a's two batch axes (0 where broadcast)
uniform ivec2 u_sb;
void kernel4x4(ivec2 p, out vec4 r0, out vec4 r1, out vec4 r2, out vec4 r3) {
  int j = p.x;
  int matrix = p.y / u_shape.z;
  int g = p.y - matrix * u_shape.z;
  int b0 = matrix / u_shape.y;
  int b1 = matrix - b0 * u_shape.y;
  int rowA = (b0 * u_sa.x + b1 * u_sa.y) * u_m;
  int last = rowA + u_m - 1;
  int m = rowA + 4 * g;
  int y0 = m;
  int y1 = min(m + 1, last);
  int y2 = min(m + 2, last);
  int y3 = min(m + 3, last);
  int rowB = (b0 * u_sb.x + b1 * u_sb.y) * u_k;
  vec4 acc0 = vec4(0.0);
  vec4 acc1 = vec4(0.0);
  vec4 acc2 = vec4(0.0);
  vec4 acc3 = vec4(0.0);
  int whole = u_k / 4;
  for (int q = 0; q < whole; ++q) {
    vec4 a0 = texelFetch(u_a, ivec2(q, y0), 0);
    vec4 a1 = texelFetch(u_a, ivec2(q, y1), 0);
    vec4 a2 = texelFetch(u_a, ivec2(q, y2), 0);
    vec4 a3 = texelFetch(u_a, ivec2(q, y3), 0);
    int k = rowB + 4 * q;
    vec4 b = texelFetch(u_b, ivec2(j, k), 0);
    acc0 += a0.x * b; acc1 += a1.x * b; acc2 += a2.x * b; acc3 += a3.x * b;
    b = texelFetch(u_b, ivec2(j, k + 1), 0);
    acc0 += a0.y * b; acc1 += a1.y * b; acc2 += a2.y * b; acc3 += a3.y * b;
    b = texelFetch(u_b, ivec2(j, k + 2), 0);
    acc0 += a0.z * b; acc1 += a1.z * b; acc2 += a2.z * b; acc3 += a3.z * b;
    b = texelFetch(u_b, ivec2(j, k + 3), 0);
    acc0 += a0.w * b; acc1 += a1.w * b; acc2 += a2.w * b; acc3 += a3.w * b;
  }
  int rest = u_k - whole * 4;  // the last 1 to 3 values of k: never read b past row K - 1
  if (rest > 0) {
    vec4 a0 = texelFetch(u_a, ivec2(whole, y0), 0);
    vec4 a1 = texelFetch(u_a, ivec2(whole, y1), 0);
    vec4 a2 = texelFetch(u_a, ivec2(whole, y2), 0);
    vec4 a3 = texelFetch(u_a, ivec2(whole, y3), 0);
    int k = rowB + 4 * whole;
    vec4 b = texelFetch(u_b, ivec2(j, k), 0);
    acc0 += a0.x * b; acc1 += a1.x * b; acc2 += a2.x * b; acc3 += a3.x * b;
    if (rest > 1) {
      b = texelFetch(u_b, ivec2(j, k + 1), 0);
      acc0 += a0.y * b; acc1 += a1.y * b; acc2 += a2.y * b; acc3 += a3.y * b;
    }
    if (rest > 2) {
      b = texelFetch(u_b, ivec2(j, k + 2), 0);
      acc0 += a0.z * b; acc1 += a1.z * b; acc2 += a2.z * b; acc3 += a3.z * b;
    }
  }
  r0 = acc0;
  r1 = acc1;
  r2 = acc2;
  r3 = acc3;
}
