// a - (lr / (1 - beta1^t)) * b / (sqrt(c) / sqrt(1 - beta2^t) + eps), t read from a
// 1-element tensor (so sessions can carry it). 1 - beta^t = -expm1(t ln beta): ln beta comes
// from the host in float64 (rounded once), which keeps 1 - 0.999^t accurate in float32.
//! include math.glsl
uniform sampler2D u_a;
uniform sampler2D u_b;
uniform sampler2D u_c;
uniform sampler2D u_t;
uniform float u_lr;
uniform float u_eps;
uniform float u_lnb1;
uniform float u_lnb2;

float kernel(int i) {
  float t = load(u_t, 0);
  float bc1 = -expm1_f32(t * u_lnb1);
  float bc2 = -expm1_f32(t * u_lnb2);
  float step = u_lr / bc1;
  return load(u_a, i) - (step * load(u_b, i)) / (sqrt_f32(load(u_c, i)) / sqrt_f32(bc2) + u_eps);
}
