// Packs the rows of a row-major tensor (R32F) into RGBA32F texels along the row, for matmul:
// texel t holds elements (r, 4j .. 4j+3) of row r = t / u_tpr, j = t % u_tpr, and 0 past the
// row's end. Values move as exact bits. Loader define: PACKED_OUT. With a texture exactly
// u_tpr texels wide, texel (j, r) is row r's j-th texel.
//   A_PACKED: u_a is stored packed (backends/webgl2/packing.mjs).
//   TRANSPOSED: the tensor is the transpose of u_a, which is never computed: element (i, c) of
//   a matrix of the tensor ([u_rows, u_cols]) is element (c, i) of the same matrix of u_a.
uniform sampler2D u_a;
uniform int u_cols;  // row length
uniform int u_tpr;   // texels per row: ceil(u_cols / 4)
uniform int u_rows;  // rows per matrix (TRANSPOSED)

// Flat index in u_a of element (row r, column c) of the tensor.
int sourceIndex(int r, int c) {
#if defined(TRANSPOSED)
  int matrix = r / u_rows;
  int i = r - matrix * u_rows;
  return (matrix * u_cols + c) * u_rows + i;
#else
  return r * u_cols + c;
#endif
}

// Element e of u_a: an R32F tensor, or with A_PACKED a packed one (4 values per texel).
float loadA(int e) {
#if defined(A_PACKED)
  return load4(u_a, e / 4)[e & 3];
#else
  return load(u_a, e);
#endif
}

vec4 kernel4(int t) {
  int r = t / u_tpr;
  int c = (t - r * u_tpr) * 4;
  vec4 v = vec4(0.0);
  v.x = loadA(sourceIndex(r, c));
  if (c + 1 < u_cols) v.y = loadA(sourceIndex(r, c + 1));
  if (c + 2 < u_cols) v.z = loadA(sourceIndex(r, c + 2));
  if (c + 3 < u_cols) v.w = loadA(sourceIndex(r, c + 3));
  return v;
}
