// a - step * b / (sqrt(c) / sqrt(1 - beta2^t) + eps), step = lr / (1 - beta1^t).
//   STAGE_BIAS  a 2-element tensor [step, sqrt(1 - beta2^t)], t read from a 1-element tensor
//               (so sessions can carry it): computed once per step, not once per element.
//   else        the update of every element, reading those two values from u_bias.
// 1 - beta^t = -expm1(t ln beta): ln beta comes from the host in float64 (rounded once), which
// keeps 1 - 0.999^t accurate in float32.
//! include math.glsl
#if defined(STAGE_BIAS)
uniform sampler2D u_t;
uniform float u_lr;
uniform float u_lnb1;
uniform float u_lnb2;
float kernel(int i) {
  float t = load(u_t, 0);
  if (i == 0) return u_lr / -expm1_f32(t * u_lnb1);
  return sqrt_f32(-expm1_f32(t * u_lnb2));
}
#else
uniform sampler2D u_a;
uniform sampler2D u_b;
uniform sampler2D u_c;
uniform sampler2D u_bias;
uniform float u_eps;
float kernel(int i) {
  float step = load(u_bias, 0);
  float sqrtBc2 = load(u_bias, 1);
  return loadHere(u_a) - (step * loadHere(u_b)) / (sqrt_f32(loadHere(u_c)) / sqrtBc2 + u_eps);
}
#endif
