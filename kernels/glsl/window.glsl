// The protocol-v6 window ops on WebGL2 (docs/protocol.md "The v6 window ops"), float32 NCHW,
// one fragment per output element walking its own window in the protocol's order (window.wgsl's
// arithmetic): WIN_OP 0 conv2d ((c, kh, kw) ascending, padding taps reading zeros, then + bias
// with HAS_BIAS), 1 max_pool2d (ordered integer keys of the words: NaN propagates, -0 < +0),
// 2 avg_pool2d (the sequential sum / the count), 3 resize nearest, 4 resize linear. GLSL leaves
// / and % of negative ints undefined: the coordinates use magnitudes only.
uniform sampler2D u_a;
#if WIN_OP == 0
uniform sampler2D u_wt;
#if defined(HAS_BIAS)
uniform sampler2D u_bias;
#endif
#endif
uniform ivec4 u_dims;   // a: n, c, h, w
uniform ivec4 u_out;    // m (output channels), oh, ow, cg (input channels per group)
uniform ivec4 u_k;      // kh, kw, sh, sw
uniform ivec4 u_d;      // dh, dw, mg (output channels per group), count_include_pad
uniform ivec4 u_pad;    // top, left, bottom, right
uniform ivec4 u_mode;   // resize: coordinate mode, nearest mode

int tapY(int oy, int i) { return oy * u_k.z + i * u_d.x - u_pad.x; }
int tapX(int ox, int j) { return ox * u_k.w + j * u_d.y - u_pad.y; }
bool insideY(int y) { return y >= 0 && y < u_dims.z; }
bool insideX(int x) { return x >= 0 && x < u_dims.w; }

#if WIN_OP == 0
float conv(int plane, int oy, int ox) {
  int m = plane % u_out.x;
  int n = plane / u_out.x;
  int c0 = (m / u_d.z) * u_out.w;
  float acc = 0.0;
  for (int c = 0; c < u_out.w; c++) {
    int src = (n * u_dims.y + c0 + c) * u_dims.z;
    int wb = (m * u_out.w + c) * u_k.x * u_k.y;
    for (int i = 0; i < u_k.x; i++) {
      int y = tapY(oy, i);
      for (int j = 0; j < u_k.y; j++) {
        int x = tapX(ox, j);
        // a tap in the padding reads a zero (w * 0: NaN for an infinite w, as torch)
        float v = insideY(y) && insideX(x) ? load(u_a, (src + y) * u_dims.w + x) : 0.0;
        acc = acc + load(u_wt, wb + i * u_k.y + j) * v;
      }
    }
  }
#if defined(HAS_BIAS)
  acc = acc + load(u_bias, m);
#endif
  return acc;
}
#endif

#if WIN_OP == 1
int keyOf(float x) {
  int b = floatBitsToInt(x);
  return b ^ ((b >> 31) & 0x7fffffff);
}

float poolMax(int plane, int oy, int ox) {
  int best = -2147483647 - 1;
  bool sawNaN = false;
  for (int i = 0; i < u_k.x; i++) {
    int y = tapY(oy, i);
    if (!insideY(y)) continue;
    for (int j = 0; j < u_k.y; j++) {
      int x = tapX(ox, j);
      if (!insideX(x)) continue;
      float v = load(u_a, (plane * u_dims.z + y) * u_dims.w + x);
      sawNaN = sawNaN || isNaNBits(v);
      best = max(best, keyOf(v));
    }
  }
  if (sawNaN) return quietNaN();
  return intBitsToFloat(best ^ ((best >> 31) & 0x7fffffff));
}
#endif

#if WIN_OP == 2
// a tap along one axis counted for the divisor: inside a, or inside the padded input
int counted(int t, int size, int before, int after) {
  if (u_d.w == 1) return (t >= -before && t < size + after) ? 1 : 0;
  return (t >= 0 && t < size) ? 1 : 0;
}

float poolAvg(int plane, int oy, int ox) {
  int cy = 0;
  int cx = 0;
  for (int i = 0; i < u_k.x; i++) cy += counted(tapY(oy, i), u_dims.z, u_pad.x, u_pad.z);
  for (int j = 0; j < u_k.y; j++) cx += counted(tapX(ox, j), u_dims.w, u_pad.y, u_pad.w);
  float acc = 0.0;
  for (int i = 0; i < u_k.x; i++) {
    int y = tapY(oy, i);
    if (!insideY(y)) continue;
    for (int j = 0; j < u_k.y; j++) {
      int x = tapX(ox, j);
      if (!insideX(x)) continue;
      acc = acc + load(u_a, (plane * u_dims.z + y) * u_dims.w + x);
    }
  }
  return acc / float(cy * cx);
}
#endif

#if WIN_OP >= 3
// floor(num / den) for den > 0, on magnitudes
int floorDiv(int num, int den) {
  if (num >= 0) return num / den;
  return -((-num + den - 1) / den);
}

// the source coordinate of output index x along an axis (size -> outsz) as num / den
ivec2 source(int x, int size, int outsz) {
  if (u_mode.x == 1) return ivec2(x * size, outsz);  // asymmetric
  if (u_mode.x == 2 || (u_mode.x == 3 && outsz == 1)) {  // align_corners, pytorch at 1
    if (outsz == 1) return ivec2(0, 1);
    return ivec2(x * (size - 1), outsz - 1);
  }
  return ivec2((2 * x + 1) * size - outsz, 2 * outsz);  // half_pixel, pytorch_half_pixel
}

int clampIndex(int i, int size) { return clamp(i, 0, size - 1); }

int nearestIndex(ivec2 f, int size) {
  int i;
  if (u_mode.y == 2) i = floorDiv(f.x, f.y);
  else if (u_mode.y == 3) i = -floorDiv(-f.x, f.y);
  else if (u_mode.y == 1) i = floorDiv(2 * f.x + f.y, 2 * f.y);  // round_prefer_ceil
  else i = -floorDiv(f.y - 2 * f.x, 2 * f.y);  // round_prefer_floor
  return clampIndex(i, size);
}

float resize(int plane, int oy, int ox) {
  ivec2 fy = source(oy, u_dims.z, u_out.y);
  ivec2 fx = source(ox, u_dims.w, u_out.z);
  int base = plane * u_dims.z * u_dims.w;
#if WIN_OP == 3
  return load(u_a, base + nearestIndex(fy, u_dims.z) * u_dims.w + nearestIndex(fx, u_dims.w));
#else
  int y0 = floorDiv(fy.x, fy.y);
  int x0 = floorDiv(fx.x, fx.y);
  float wy1 = float(fy.x - y0 * fy.y) / float(fy.y);
  float wx1 = float(fx.x - x0 * fx.y) / float(fx.y);
  float wy0 = 1.0 - wy1;
  float wx0 = 1.0 - wx1;
  int r0 = base + clampIndex(y0, u_dims.z) * u_dims.w;
  int r1 = base + clampIndex(y0 + 1, u_dims.z) * u_dims.w;
  int c0 = clampIndex(x0, u_dims.w);
  int c1 = clampIndex(x0 + 1, u_dims.w);
  float top = wx0 * load(u_a, r0 + c0) + wx1 * load(u_a, r0 + c1);
  float bottom = wx0 * load(u_a, r1 + c0) + wx1 * load(u_a, r1 + c1);
  return wy0 * top + wy1 * bottom;
#endif
}
#endif

float kernel(int i) {
  int ox = i % u_out.z;
  int t = i / u_out.z;
  int oy = t % u_out.y;
  int plane = t / u_out.y;
#if WIN_OP == 0
  return conv(plane, oy, ox);
#elif WIN_OP == 1
  return poolMax(plane, oy, ox);
#elif WIN_OP == 2
  return poolAvg(plane, oy, ox);
#else
  return resize(plane, oy, ox);
#endif
}
