// reshape, and carried values copied into an input: the same flat elements, exact bits.
uniform sampler2D u_a;

float kernel(int i) {
  return loadHere(u_a);  // same element count: same layout
}
