// reshape, and carried values copied into an input: the same flat elements, exact bits.
uniform sampler2D u_a;

float kernel(int i) {
  return load(u_a, i);
}
