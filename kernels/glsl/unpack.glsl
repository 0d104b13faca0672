// The row-major result [..., M, N] (R32F) of a matmul from its packed form (packed_result.glsl;
// the loader defines RESULT_LAYERS or RESULT_FLAT). Exact bits.
//! include packed_result.glsl

float kernel(int i) {
  return resultValue(i);
}
