// Elementwise ops of two operands, with NumPy broadcasting when BROADCAST is defined: output
// coordinates c read a at dot(c, u_sa) and b at dot(c, u_sb) (stride 0 on broadcast axes).
// The optimizer steps take their float attributes in u_p and u_q.
//! include math.glsl
uniform sampler2D u_a;
uniform sampler2D u_b;
#if defined(BROADCAST)
uniform ivec4 u_shape;
uniform ivec4 u_sa;
uniform ivec4 u_sb;
#endif
uniform float u_p;
uniform float u_q;

float op(float a, float b) {
#if defined(OP_add)
  return a + b;
#elif defined(OP_sub)
  return a - b;
#elif defined(OP_mul)
  return a * b;
#elif defined(OP_div)
  return div_f32(a, b);
#elif defined(OP_gelu_grad)
  return b * geluGrad_f32(a);
#elif defined(OP_sgd_update)
  return a - u_p * b;             // u_p = lr
#elif defined(OP_momentum_update)
  return u_p * a + b;             // u_p = momentum
#elif defined(OP_adam_m)
  return u_p * a + u_q * b;       // u_p = beta1, u_q = 1 - beta1 (rounded once, from float64)
#elif defined(OP_adam_v)
  return u_p * a + u_q * b * b;   // u_p = beta2, u_q = 1 - beta2
#else
#error unknown binary op
#endif
}

float kernel(int i) {
#if defined(BROADCAST)
  ivec4 c = unravel(i, u_shape);
  return op(load(u_a, dot4(c, u_sa)), load(u_b, dot4(c, u_sb)));
#else
  return op(loadHere(u_a), loadHere(u_b));  // same shapes: same layout
#endif
}
