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
precision highp sampler2DArray;

uniform int u_n;   // element count of the output
uniform int u_w;   // width of the output texture
#if !defined(BLOCK_ROWS) && !defined(OUT3) && !defined(OUT_INT) && !defined(OUT_UINT) && !defined(INT_KERNEL)
out vec4 o_value;  // the render target is R32F (only .r is stored) or RGBA32F (PACKED_OUT)
#endif

// Element i of a tensor texture.
float load(sampler2D t, int i) {
  int w = textureSize(t, 0).x;
  return texelFetch(t, ivec2(i % w, i / w), 0).r;
}

// Element i of a tensor with as many elements as the output: it has the output's layout, so it
// sits at this fragment's own texel (no index arithmetic).
float loadHere(sampler2D t) {
  return texelFetch(t, ivec2(gl_FragCoord.xy), 0).r;
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

#if defined(BLOCK_ROWS)
// Kernels that render into the BLOCK_ROWS (4 or 8) layers of a packed texture array at once
// (one color attachment each) define the texels at p of every layer (u_n texels per layer).
layout(location = 0) out vec4 o_0;
layout(location = 1) out vec4 o_1;
layout(location = 2) out vec4 o_2;
layout(location = 3) out vec4 o_3;
#if BLOCK_ROWS == 8
layout(location = 4) out vec4 o_4;
layout(location = 5) out vec4 o_5;
layout(location = 6) out vec4 o_6;
layout(location = 7) out vec4 o_7;
#endif
void kernelBlock(ivec2 p, out vec4 r0, out vec4 r1, out vec4 r2, out vec4 r3, out vec4 r4,
                 out vec4 r5, out vec4 r6, out vec4 r7);

void main() {
  vec4 r[8];
  for (int i = 0; i < 8; ++i) r[i] = vec4(0.0);
  ivec2 p = ivec2(gl_FragCoord.xy);
  if (p.y * u_w + p.x < u_n) kernelBlock(p, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
  o_0 = r[0];
  o_1 = r[1];
  o_2 = r[2];
  o_3 = r[3];
#if BLOCK_ROWS == 8
  o_4 = r[4];
  o_5 = r[5];
  o_6 = r[6];
  o_7 = r[7];
#endif
}
#elif defined(OUT3) && defined(PACKED_OUT)
// Kernels that compute three packed tensors of the output's size at once (3 color
// attachments, RGBA32F) define the three texels t (u_n texels).
layout(location = 0) out vec4 o_0;
layout(location = 1) out vec4 o_1;
layout(location = 2) out vec4 o_2;
void kernel3v(int t, out vec4 r0, out vec4 r1, out vec4 r2);
void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int t = p.y * u_w + p.x;
  vec4 r0 = vec4(0.0);
  vec4 r1 = vec4(0.0);
  vec4 r2 = vec4(0.0);
  if (t < u_n) kernel3v(t, r0, r1, r2);
  o_0 = r0;
  o_1 = r1;
  o_2 = r2;
}
#elif defined(OUT3)
// Kernels that compute three tensors of the output's size at once (3 color attachments,
// R32F) define the three values of element i.
layout(location = 0) out vec4 o_0;
layout(location = 1) out vec4 o_1;
layout(location = 2) out vec4 o_2;
void kernel3(int i, out float r0, out float r1, out float r2);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = p.y * u_w + p.x;
  float r0 = 0.0;
  float r1 = 0.0;
  float r2 = 0.0;
  if (i < u_n) kernel3(i, r0, r1, r2);
  o_0 = vec4(r0, 0.0, 0.0, 1.0);
  o_1 = vec4(r1, 0.0, 0.0, 1.0);
  o_2 = vec4(r2, 0.0, 0.0, 1.0);
}
#elif defined(PACKED_OUT)
// Kernels that render into a packed scratch texture define the 4 values of texel t (u_n texels).
vec4 kernel4(int t);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int t = p.y * u_w + p.x;
  o_value = t < u_n ? kernel4(t) : vec4(0.0);
}
#elif defined(WORDS_OUT)
// Kernels that compute 32-bit words (map_bits.glsl, extremes.glsl) define word i, stored as
// is: into an R32I target (OUT_INT: an int32 tensor), an R32UI one (OUT_UINT: uint32 or bool,
// select.glsl) or as the bits of an R32F one.
#if defined(OUT_INT)
out ivec4 o_value;
#elif defined(OUT_UINT)
out uvec4 o_value;
#endif
uint kernelWord(int i);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = p.y * u_w + p.x;
  uint w = i < u_n ? kernelWord(i) : 0u;
#if defined(OUT_INT)
  o_value = ivec4(floatBitsToInt(uintBitsToFloat(w)), 0, 0, 1);
#elif defined(OUT_UINT)
  o_value = uvec4(w, 0u, 0u, 1u);
#else
  o_value = vec4(uintBitsToFloat(w), 0.0, 0.0, 1.0);
#endif
}
#elif defined(INT_KERNEL)
// Kernels that compute an int32 tensor as ints (the generated map arms at int32: unary.glsl,
// binary.glsl) define element i, stored into the R32I target as it is.
out ivec4 o_value;
int kernelInt(int i);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = p.y * u_w + p.x;
  o_value = ivec4(i < u_n ? kernelInt(i) : 0, 0, 0, 1);
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
