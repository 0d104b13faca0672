// [..., M, K] @ [..., K, N] with broadcast batch axes, 4 * BLOCK_ROWS outputs per fragment:
// the block C[R g .. R g + R - 1, 4j .. 4j+3] (R = BLOCK_ROWS, 4 or 8) of one matrix of the
// batch, written as R texels (one per row) into the R layers of a texture array (R color
// attachments; 8 where the context offers 8 draw buffers). Operands are packed with one matrix
// row per texture row (pack.glsl with the texture width = texels per row): a along K (texel
// (q, row) = a[row, 4q .. 4q+3]), b along N (texel (j, row) = b[row, 4j .. 4j+3]). Per 4
// values of k a fragment reads R texels of a and 4 of b for 16 R multiply-adds: texel fetches
// are what a matmul costs on a software renderer.
// Each output accumulates its dot product in ascending k from 0.0, one product at a time
// (acc += a_k * b_k per component, the protocol's order; FMA contraction allowed by the matmul
// class). Rows past M repeat row M - 1 and columns past N read b's zero padding: neither is
// ever unpacked. The rows are spelled out (no arrays): SwiftShader keeps arrays in memory.
// Output texel p: p.x = j, p.y = matrix * ceil(M / R) + g.
uniform sampler2D u_a;
uniform sampler2D u_b;
uniform ivec4 u_shape;  // [B0, B1, ceil(M / R), ceil(N / 4)]
uniform int u_m;
uniform int u_k;
uniform ivec2 u_sa;     // matrix strides of a's two batch axes (0 where broadcast)
uniform ivec2 u_sb;

void kernelBlock(ivec2 p, out vec4 r0, out vec4 r1, out vec4 r2, out vec4 r3, out vec4 r4,
                 out vec4 r5, out vec4 r6, out vec4 r7) {
  int j = p.x;
  int matrix = p.y / u_shape.z;
  int g = p.y - matrix * u_shape.z;
  int b0 = matrix / u_shape.y;
  int b1 = matrix - b0 * u_shape.y;
  int rowA = (b0 * u_sa.x + b1 * u_sa.y) * u_m;
  int last = rowA + u_m - 1;
  int m = rowA + BLOCK_ROWS * g;
  int rowB = (b0 * u_sb.x + b1 * u_sb.y) * u_k;
  int y0 = min(m + 0, last);
  int y1 = min(m + 1, last);
  int y2 = min(m + 2, last);
  int y3 = min(m + 3, last);
  vec4 acc0 = vec4(0.0);
  vec4 acc1 = vec4(0.0);
  vec4 acc2 = vec4(0.0);
  vec4 acc3 = vec4(0.0);
#if BLOCK_ROWS == 8
  int y4 = min(m + 4, last);
  int y5 = min(m + 5, last);
  int y6 = min(m + 6, last);
  int y7 = min(m + 7, last);
  vec4 acc4 = vec4(0.0);
  vec4 acc5 = vec4(0.0);
  vec4 acc6 = vec4(0.0);
  vec4 acc7 = vec4(0.0);
#endif
  int whole = u_k / 4;
  vec4 b;
  for (int q = 0; q < whole; ++q) {
    vec4 a0 = texelFetch(u_a, ivec2(q, y0), 0);
    vec4 a1 = texelFetch(u_a, ivec2(q, y1), 0);
    vec4 a2 = texelFetch(u_a, ivec2(q, y2), 0);
    vec4 a3 = texelFetch(u_a, ivec2(q, y3), 0);
#if BLOCK_ROWS == 8
    vec4 a4 = texelFetch(u_a, ivec2(q, y4), 0);
    vec4 a5 = texelFetch(u_a, ivec2(q, y5), 0);
    vec4 a6 = texelFetch(u_a, ivec2(q, y6), 0);
    vec4 a7 = texelFetch(u_a, ivec2(q, y7), 0);
#endif
    int k = rowB + 4 * q;
    b = texelFetch(u_b, ivec2(j, k), 0);
    acc0 += a0.x * b; acc1 += a1.x * b; acc2 += a2.x * b; acc3 += a3.x * b;
#if BLOCK_ROWS == 8
    acc4 += a4.x * b; acc5 += a5.x * b; acc6 += a6.x * b; acc7 += a7.x * b;
#endif
    b = texelFetch(u_b, ivec2(j, k + 1), 0);
    acc0 += a0.y * b; acc1 += a1.y * b; acc2 += a2.y * b; acc3 += a3.y * b;
#if BLOCK_ROWS == 8
    acc4 += a4.y * b; acc5 += a5.y * b; acc6 += a6.y * b; acc7 += a7.y * b;
#endif
    b = texelFetch(u_b, ivec2(j, k + 2), 0);
    acc0 += a0.z * b; acc1 += a1.z * b; acc2 += a2.z * b; acc3 += a3.z * b;
#if BLOCK_ROWS == 8
    acc4 += a4.z * b; acc5 += a5.z * b; acc6 += a6.z * b; acc7 += a7.z * b;
#endif
    b = texelFetch(u_b, ivec2(j, k + 3), 0);
    acc0 += a0.w * b; acc1 += a1.w * b; acc2 += a2.w * b; acc3 += a3.w * b;
#if BLOCK_ROWS == 8
    acc4 += a4.w * b; acc5 += a5.w * b; acc6 += a6.w * b; acc7 += a7.w * b;
#endif
  }
  int rest = u_k - whole * 4;  // the last 1 to 3 values of k: never read b past row K - 1
  if (rest > 0) {
    vec4 a0 = texelFetch(u_a, ivec2(whole, y0), 0);
    vec4 a1 = texelFetch(u_a, ivec2(whole, y1), 0);
    vec4 a2 = texelFetch(u_a, ivec2(whole, y2), 0);
    vec4 a3 = texelFetch(u_a, ivec2(whole, y3), 0);
#if BLOCK_ROWS == 8
    vec4 a4 = texelFetch(u_a, ivec2(whole, y4), 0);
    vec4 a5 = texelFetch(u_a, ivec2(whole, y5), 0);
    vec4 a6 = texelFetch(u_a, ivec2(whole, y6), 0);
    vec4 a7 = texelFetch(u_a, ivec2(whole, y7), 0);
#endif
    int k = rowB + 4 * whole;
    b = texelFetch(u_b, ivec2(j, k), 0);
    acc0 += a0.x * b; acc1 += a1.x * b; acc2 += a2.x * b; acc3 += a3.x * b;
#if BLOCK_ROWS == 8
    acc4 += a4.x * b; acc5 += a5.x * b; acc6 += a6.x * b; acc7 += a7.x * b;
#endif
    if (rest > 1) {
      b = texelFetch(u_b, ivec2(j, k + 1), 0);
      acc0 += a0.y * b; acc1 += a1.y * b; acc2 += a2.y * b; acc3 += a3.y * b;
#if BLOCK_ROWS == 8
      acc4 += a4.y * b; acc5 += a5.y * b; acc6 += a6.y * b; acc7 += a7.y * b;
#endif
    }
    if (rest > 2) {
      b = texelFetch(u_b, ivec2(j, k + 2), 0);
      acc0 += a0.z * b; acc1 += a1.z * b; acc2 += a2.z * b; acc3 += a3.z * b;
#if BLOCK_ROWS == 8
      acc4 += a4.z * b; acc5 += a5.z * b; acc6 += a6.z * b; acc7 += a7.z * b;
#endif
    }
  }
  r0 = acc0;
  r1 = acc1;
  r2 = acc2;
  r3 = acc3;
#if BLOCK_ROWS == 8
  r4 = acc4;
  r5 = acc5;
  r6 = acc6;
  r7 = acc7;
#endif
}
