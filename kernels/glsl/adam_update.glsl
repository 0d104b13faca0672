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
// The update of parameter value a from its new moments m and v.
float updateOf(float a, float m, float v) {
  vec4 bias = texelFetch(u_bias, ivec2(0, 0), 0);  // step, sqrt(1 - beta2^t)
  return a - (bias.x * m) / (sqrt_f32(v) / bias.y + u_eps);
}
float update(float m, float v) { return updateOf(loadHere(u_a), m, v); }
#if defined(STAGE_FUSED) && defined(PACKED_OUT)
// The packed update (packing.mjs): texel t holds elements 4t .. 4t+3 of the three results.
// Each operand is packed too (X_PACKED: its texel t, here) or an R32F tensor (4 loads); each
// element is computed by the same statements as in the one-element pass below.
uniform sampler2D u_m0;
uniform sampler2D u_v0;
vec4 quad(sampler2D t, int i, bool packed) {
  if (packed) return texelFetch(t, ivec2(gl_FragCoord.xy), 0);
  return vec4(load(t, 4 * i), load(t, 4 * i + 1), load(t, 4 * i + 2), load(t, 4 * i + 3));
}
#if defined(RESULT_LAYERS) || defined(RESULT_FLAT)
vec4 gradient4(int t) { return resultTexel(t); }
#else
uniform sampler2D u_g;
vec4 gradient4(int t) { return quad(u_g, t, G_PACKED == 1); }
#endif
uniform float u_b1;
uniform float u_c1;
uniform float u_b2;
uniform float u_c2;
void one(float g, float a, float m0, float v0, out float p, out float m, out float v) {
  m = u_b1 * m0 + u_c1 * g;
  v = u_b2 * v0 + u_c2 * g * g;
  p = updateOf(a, m, v);
}
// Components spelled out: a loop indexing vec4s is many times slower on SwiftShader.
void kernel3v(int t, out vec4 p, out vec4 m, out vec4 v) {
  vec4 g = gradient4(t);
  vec4 a = quad(u_a, t, A_PACKED == 1);
  vec4 m0 = quad(u_m0, t, M_PACKED == 1);
  vec4 v0 = quad(u_v0, t, V_PACKED == 1);
  one(g.x, a.x, m0.x, v0.x, p.x, m.x, v.x);
  one(g.y, a.y, m0.y, v0.y, p.y, m.y, v.y);
  one(g.z, a.z, m0.z, v0.z, p.z, m.z, v.z);
  one(g.w, a.w, m0.w, v0.w, p.w, m.w, v.w);
}
#elif defined(STAGE_FUSED)
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
