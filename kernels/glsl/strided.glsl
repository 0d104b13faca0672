// transpose and permute: output element at coordinates c reads a at dot(c, u_sa), where u_sa
// holds a's element stride for the axis that lands on each output axis. Exact bits.
uniform sampler2D u_a;
uniform ivec4 u_shape;  // output shape, padded at the front with 1s to rank 4
uniform ivec4 u_sa;

float kernel(int i) {
  return load(u_a, dot4(unravel(i, u_shape), u_sa));
}
