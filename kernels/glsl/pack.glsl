// Packs the rows of a row-major tensor (R32F) into RGBA32F texels along the row, for matmul:
// texel t holds elements (r, 4j .. 4j+3) of row r = t / u_tpr, j = t % u_tpr, and 0 past the
// row's end. Values move as exact bits. Loader define: PACKED_OUT. With a texture exactly
// u_tpr texels wide, texel (j, r) is row r's j-th texel.
uniform sampler2D u_a;
uniform int u_cols;  // row length
uniform int u_tpr;   // texels per row: ceil(u_cols / 4)

vec4 kernel4(int t) {
  int r = t / u_tpr;
  int c = (t - r * u_tpr) * 4;
  int base = r * u_cols + c;
  vec4 v = vec4(0.0);
  v.x = load(u_a, base);
  if (c + 1 < u_cols) v.y = load(u_a, base + 1);
  if (c + 2 < u_cols) v.z = load(u_a, base + 2);
  if (c + 3 < u_cols) v.w = load(u_a, base + 3);
  return v;
}
