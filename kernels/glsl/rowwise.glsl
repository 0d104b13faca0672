// The elementwise last pass of the softmax family, from per-row m = max and s = sum of
// exp(a - m) (computed by reduce.glsl). The tensor is viewed as [outer, len, inner]; element i
// belongs to row (i / (len * inner)) * inner + i % inner.
//   OP_softmax             exp(a - m) / s
//   OP_log_softmax         (a - m) - log(s)
//   OP_cross_entropy_grad  (exp(a - m) / s - b) / u_div   (u_div = N)
//! include math.glsl
uniform sampler2D u_a;
uniform sampler2D u_m;
uniform sampler2D u_s;
#if defined(OP_cross_entropy_grad)
uniform sampler2D u_b;
#endif
uniform int u_len;
uniform int u_inner;
uniform float u_div;

float kernel(int i) {
  int r = (i / (u_len * u_inner)) * u_inner + i % u_inner;
  float v = loadHere(u_a) - load(u_m, r);
#if defined(OP_softmax)
  return exp_f32(v) / load(u_s, r);
#elif defined(OP_log_softmax)
  return v - log_f32(load(u_s, r));
#elif defined(OP_cross_entropy_grad)
  return (exp_f32(v) / load(u_s, r) - loadHere(u_b)) / u_div;
#else
#error unknown rowwise op
#endif
}
