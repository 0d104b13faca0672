// The row-major result [..., M, N] (R32F) from matmul's packed output, exact bits.
//   default: pack.glsl's layout, u_tpr texels of 4 values per row of u_cols values.
//   LAYERS4: matmul_blocks.glsl's texture array: row m of a matrix is layer m % 4, texel
//            (c / 4, matrix * ceil(M / 4) + m / 4).
uniform int u_cols;
#if defined(LAYERS4)
uniform highp sampler2DArray u_q;
uniform int u_m;
float kernel(int i) {
  int r = i / u_cols;
  int c = i - r * u_cols;
  int matrix = r / u_m;
  int m = r - matrix * u_m;
  int g = m / 4;
  return texelFetch(u_q, ivec3(c / 4, matrix * ((u_m + 3) / 4) + g, m - 4 * g), 0)[c & 3];
}
#else
uniform sampler2D u_p;
uniform int u_tpr;
float kernel(int i) {
  int r = i / u_cols;
  int c = i - r * u_cols;
  return load4(u_p, r * u_tpr + c / 4)[c & 3];
}
#endif
