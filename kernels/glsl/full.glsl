// full: every element is one value, given as its bits (so inf and NaN need no literal).
uniform uint u_bits;

float kernel(int i) {
  return uintBitsToFloat(u_bits);
}
