// Prelude of every GPU Lab fragment shader (GLSL ES 3.00). The loader in
// backends-js/src/backends/webgl2/shaders.mjs puts "#version 300 es" and the pass's #defines
// before it and the kernel file after it.
//
// Layout (docs/webgl2.md): a tensor of n float32 elements lives in an R32F texture of width
// w = min(n, MAX_TEXTURE_SIZE) and height ceil(n / w); element i is texel (i % w, i / w). One
// fragment computes one output element; all addressing is integer math and texelFetch, so
// copies move exact bits.
precision highp float;
precision highp int;
precision highp sampler2D;

uniform int u_n;   // element count of the output
uniform int u_w;   // width of the output texture
out vec4 o_value;  // the render target is R32F: only .r is stored

// Element i of a tensor texture.
float load(sampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return texelFetch(t, ivec2(i % w, i / w), 0).r;
}

// Texel of element i in a texture of width w (for kernels that walk a tensor).
ivec2 texelOf(int i, int w) {
  return ivec2(i % w, i / w);
}

// GLSL has no inf/NaN literals; build them from bits.
float posInf() { return uintBitsToFloat(0x7f800000u); }
float negInf() { return uintBitsToFloat(0xff800000u); }
float quietNaN() { return uintBitsToFloat(0x7fc00000u); }
// NaN test on the bits: compilers may fold x != x away.
bool isNaNBits(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }

// Coordinates of flat index i in a shape padded at the front with 1s to rank 4.
ivec4 unravel(int i, ivec4 shape) {
  ivec4 c;
  c.w = i % shape.w; i /= shape.w;
  c.z = i % shape.z; i /= shape.z;
  c.y = i % shape.y;
  c.x = i / shape.y;
  return c;
}

int dot4(ivec4 c, ivec4 strides) {
  return c.x * strides.x + c.y * strides.y + c.z * strides.z + c.w * strides.w;
}

// Texel t of a packed (RGBA32F) scratch texture: 4 values, texels laid out like elements above.
vec4 load4(sampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return texelFetch(t, ivec2(i % w, i / w), 0);
}

#if defined(PACKED_OUT)
// Kernels that render into a packed scratch texture define the 4 values of texel t (u_n texels).
vec4 kernel4(int t);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int t = p.y * u_w + p.x;
  o_value = t < u_n ? kernel4(t) : vec4(0.0);
}
#else
// Each kernel file defines the value of output element i.
float kernel(int i);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = p.y * u_w + p.x;
  // The last texture row may be longer than the tensor: those texels get 0 and are never read.
  o_value = vec4(i < u_n ? kernel(i) : 0.0, 0.0, 0.0, 1.0);
}
#endif
