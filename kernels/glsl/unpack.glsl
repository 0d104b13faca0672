// The row-major tensor (R32F) from its RGBA32F packing along rows (pack.glsl's layout, u_tpr
// texels per row of u_cols values). Values move as exact bits.
uniform sampler2D u_p;
uniform int u_cols;
uniform int u_tpr;
float kernel(int i) {
  int r = i / u_cols;
  int c = i - r * u_cols;
  return load4(u_p, r * u_tpr + c / 4)[c & 3];
}
