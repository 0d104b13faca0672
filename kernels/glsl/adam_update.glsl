// a - step * b / (sqrt(c) / sqrt(1 - beta2^t) + eps), step = lr / (1 - beta1^t).
//   STAGE_BIAS  one packed texel (PACKED_OUT) holding step and sqrt(1 - beta2^t), t read from a
//               1-element tensor (so sessions can carry it): computed once per step, not once
//               per element.
//   STAGE_FUSED the adam_m and adam_v nodes feeding this update, computed with it (OUT3): one
//               pass writes m = b1 m0 + (1 - b1) g, v = b2 v0 + (1 - b2) g g (as binary.glsl
//               computes them) and the update from those values. g is the tensor u_g, or with
//               RESULT_LAYERS / RESULT_FLAT a matmul product read in its packed form.
//   else        the update of every element, reading those two values from u_bias.
// 1 - beta^t = -expm1(t ln beta): ln beta comes from the host in float64 (rounded once), which
// keeps 1 - 0.999^t accurate in float32.
//! include math.glsl
//! include packed_result.glsl
#if defined(STAGE_BIAS)
uniform sampler2D u_t;
uniform float u_lr;
uniform float u_lnb1;
uniform float u_lnb2;
vec4 kernel4(int i) {
  float t = load(u_t, 0);
  return vec4(u_lr / -expm1_f32(t * u_lnb1), sqrt_f32(-expm1_f32(t * u_lnb2)), 0.0, 0.0);
}
#else
uniform sampler2D u_a;
uniform sampler2D u_bias;
uniform float u_eps;
// The update of one element from its new moments m and v.
float update(float m, float v) {
  vec4 bias = texelFetch(u_bias, ivec2(0, 0), 0);  // step, sqrt(1 - beta2^t)
  return loadHere(u_a) - (bias.x * m) / (sqrt_f32(v) / bias.y + u_eps);
}
#if defined(STAGE_FUSED)
uniform sampler2D u_m0;
uniform sampler2D u_v0;
#if defined(RESULT_LAYERS) || defined(RESULT_FLAT)
float gradient(int i) { return resultValue(i); }
#else
uniform sampler2D u_g;
float gradient(int i) { return loadHere(u_g); }
#endif
uniform float u_b1;
uniform float u_c1;  // 1 - beta1, rounded once from float64
uniform float u_b2;
uniform float u_c2;  // 1 - beta2
void kernel3(int i, out float p, out float m, out float v) {
  float g = gradient(i);
  m = u_b1 * loadHere(u_m0) + u_c1 * g;
  v = u_b2 * loadHere(u_v0) + u_c2 * g * g;
  p = update(m, v);
}
#else
uniform sampler2D u_b;
uniform sampler2D u_c;
float kernel(int i) {
  return update(loadHere(u_b), loadHere(u_c));
}
#endif
#endif
