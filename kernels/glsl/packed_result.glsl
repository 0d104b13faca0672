// Element i of a matmul result [..., M, N] still in matmul's packed form (read by unpack.glsl,
// and by a kernel that takes the product without unpacking it). Exact bits. Empty unless a
// layout is defined:
//   RESULT_LAYERS: matmul_blocks.glsl's texture array u_rq of u_rrows layers: row m of a
//                  matrix is layer m % R, texel (c / 4, matrix * ceil(M / R) + m / R).
//   RESULT_FLAT:    matmul.glsl's flat packing u_rp, u_rtpr texels of 4 values per row.
#if defined(RESULT_LAYERS) || defined(RESULT_FLAT)
uniform int u_rcols;  // N
#if defined(RESULT_LAYERS)
uniform highp sampler2DArray u_rq;
uniform int u_rm;     // M
uniform int u_rrows;  // R, rows per block (layers)
#else
uniform sampler2D u_rp;
uniform int u_rtpr;   // ceil(N / 4)
#endif

float resultValue(int i) {
  int r = i / u_rcols;
  int c = i - r * u_rcols;
#if defined(RESULT_LAYERS)
  int matrix = r / u_rm;
  int m = r - matrix * u_rm;
  int g = m / u_rrows;
  int groups = (u_rm + u_rrows - 1) / u_rrows;
  return texelFetch(u_rq, ivec3(c / 4, matrix * groups + g, m - u_rrows * g), 0)[c & 3];
#else
  return load4(u_rp, r * u_rtpr + c / 4)[c & 3];
#endif
}

// Values 4t .. 4t+3 of the result, when N is a multiple of 4 (a packed tensor's texel t).
vec4 resultTexel(int t) {
#if defined(RESULT_LAYERS)
  int tpr = u_rcols / 4;
  int r = t / tpr;
  int j = t - r * tpr;
  int matrix = r / u_rm;
  int m = r - matrix * u_rm;
  int g = m / u_rrows;
  int groups = (u_rm + u_rrows - 1) / u_rrows;
  return texelFetch(u_rq, ivec3(j, matrix * groups + g, m - u_rrows * g), 0);
#else
  return load4(u_rp, t);
#endif
}
#endif
