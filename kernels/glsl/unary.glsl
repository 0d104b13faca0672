// Elementwise ops of one operand; the loader defines exactly one OP_<name>.
//! include math.glsl
uniform sampler2D u_a;

float op(float x) {
#if defined(OP_relu)
  return (x > 0.0 && !isNaNBits(x)) ? x : 0.0;   // NaN and -0 give +0
#elif defined(OP_positive)
  return (x > 0.0 && !isNaNBits(x)) ? 1.0 : 0.0;
#elif defined(OP_neg)
  return uintBitsToFloat(floatBitsToUint(x) ^ 0x80000000u);  // flip the sign bit, NaN included
#elif defined(OP_exp)
  return exp_f32(x);
#elif defined(OP_log)
  return log_f32(x);
#elif defined(OP_sqrt)
  return sqrt_f32(x);
#elif defined(OP_tanh)
  return tanh_f32(x);
#elif defined(OP_sigmoid)
  return sigmoid_f32(x);
#elif defined(OP_gelu)
  return gelu_f32(x);
#else
#error unknown unary op
#endif
}

float kernel(int i) {
  return op(loadHere(u_a));
}
