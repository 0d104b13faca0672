// The protocol-v6 window ops (docs/protocol.md "The v6 window ops"), float32 NCHW, one
// invocation per output element (a direct kernel: each output walks its own window in the
// protocol's order, so no cross-invocation reduction and no atomics). The op by OP:
//   OP 0 conv2d:     acc = 0, acc += w[m, c, i, j] * a[n, g*cg + c, y, x] over (c, i, j)
//                    ascending, taps in the padding reading zeros; then + bias[m] (HAS_BIAS)
//   OP 1 max_pool2d: IEEE maximum on ordered integer keys of the words (NaN propagates,
//                    -0 < +0), over the taps inside a
//   OP 2 avg_pool2d: the float32 sum of the taps inside a, ascending (i, j), / count
//   OP 3 resize, nearest: the source element by nearest_mode's integer rounding
//   OP 4 resize, linear: two taps per axis with float32 weights, along W then H
//   OP 5 conv2d's im2col: out = the columns [N, G, cg*kh*kw, oh*ow] (zeros in the padding),
//                    which the planner hands to the tiled matmul kernel with w as [G, M/G, K]
//   OP 6 conv2d's bias: out[i] += bias[m] after that matmul
// resize's source coordinate is the exact fraction num / den of docs/protocol.md (i32; the
// validator keeps (in + 1) * out <= 2^29).

override WG: u32 = 64u;
override OP: u32 = 0u;
override HAS_BIAS: u32 = 0u;

struct Params {
  n: u32, nb: u32, c: u32, h: u32,
  w: u32, m: u32, oh: u32, ow: u32,
  kh: u32, kw: u32, sh: u32, sw: u32,
  dh: u32, dw: u32, pt: u32, pl: u32,
  pb: u32, pr: u32, cg: u32, mg: u32,
  include_pad: u32, coord: u32, rounding: u32, qnan: u32,  // qnan: 0x7fc00000
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

// the input row of tap i of output row oy (may lie outside 0..h-1)
fn tap_y(oy: u32, i: u32) -> i32 { return i32(oy * p.sh + i * p.dh) - i32(p.pt); }
fn tap_x(ox: u32, j: u32) -> i32 { return i32(ox * p.sw + j * p.dw) - i32(p.pl); }

fn conv(plane: u32, m: u32, oy: u32, ox: u32) -> f32 {
  let n = plane / p.m;
  let c0 = (m / p.mg) * p.cg;
  var acc = 0.0;
  for (var c = 0u; c < p.cg; c++) {
    let src = (n * p.c + c0 + c) * p.h;
    let wb = ((m * p.cg + c) * p.kh) * p.kw;
    for (var i = 0u; i < p.kh; i++) {
      let y = tap_y(oy, i);
      let y_in = y >= 0 && y < i32(p.h);
      for (var j = 0u; j < p.kw; j++) {
        let x = tap_x(ox, j);
        // a tap in the padding reads a zero (w * 0: NaN for an infinite w, as torch)
        var v = 0.0;
        if (y_in && x >= 0 && x < i32(p.w)) { v = a[(src + u32(y)) * p.w + u32(x)]; }
        acc = acc + wt[wb + i * p.kw + j] * v;
      }
    }
  }
  if (HAS_BIAS == 1u) { acc = acc + bias[m]; }
  return acc;
}

// float32 bits as int32 keys ordered -inf < ... < -0 < +0 < ... < inf
fn key(x: f32) -> i32 {
  let b = bitcast<i32>(x);
  return b ^ ((b >> 31u) & 0x7fffffff);
}

fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

fn pool_max(plane: u32, oy: u32, ox: u32) -> f32 {
  let src = plane * p.h;
  var best = i32(-2147483647 - 1);
  var saw_nan = false;
  for (var i = 0u; i < p.kh; i++) {
    let y = tap_y(oy, i);
    if (y < 0 || y >= i32(p.h)) { continue; }
    for (var j = 0u; j < p.kw; j++) {
      let x = tap_x(ox, j);
      if (x < 0 || x >= i32(p.w)) { continue; }
      let v = a[(src + u32(y)) * p.w + u32(x)];
      saw_nan = saw_nan || is_nan(v);
      best = max(best, key(v));
    }
  }
  if (saw_nan) { return bitcast<f32>(p.qnan); }
  return bitcast<f32>(best ^ ((best >> 31u) & 0x7fffffff));
}

// taps along one axis counted for the divisor: inside a, or (include_pad) inside the padded input
fn counted(t: i32, size: u32, before: u32, after: u32) -> bool {
  if (p.include_pad == 1u) { return t >= -i32(before) && t < i32(size + after); }
  return t >= 0 && t < i32(size);
}

fn pool_avg(plane: u32, oy: u32, ox: u32) -> f32 {
  let src = plane * p.h;
  var acc = 0.0;
  var cy = 0u;
  var cx = 0u;
  for (var i = 0u; i < p.kh; i++) {
    if (counted(tap_y(oy, i), p.h, p.pt, p.pb)) { cy++; }
  }
  for (var j = 0u; j < p.kw; j++) {
    if (counted(tap_x(ox, j), p.w, p.pl, p.pr)) { cx++; }
  }
  for (var i = 0u; i < p.kh; i++) {
    let y = tap_y(oy, i);
    if (y < 0 || y >= i32(p.h)) { continue; }
    for (var j = 0u; j < p.kw; j++) {
      let x = tap_x(ox, j);
      if (x < 0 || x >= i32(p.w)) { continue; }
      acc = acc + a[(src + u32(y)) * p.w + u32(x)];
    }
  }
  return acc / f32(cy * cx);
}

// floor(num / den) for den > 0, dividing non-negative values only: on an H200 through naga
// (Vulkan) the truncating form `q = num / den; if (num % den != 0 && num < 0) { q - 1 }` gave
// wrong source indices for negative numerators (4 resize cases; Dawn and lavapipe were right)
fn floor_div(num: i32, den: i32) -> i32 {
  if (num >= 0) { return num / den; }
  return -((den - 1 - num) / den);
}

// the source coordinate of output index x (of out) along an axis of size sz: num / den
fn source(x: u32, sz: u32, outsz: u32) -> vec2<i32> {
  let xi = i32(x);
  let s = i32(sz);
  let o = i32(outsz);
  if (p.coord == 1u) { return vec2<i32>(xi * s, o); }  // asymmetric
  if (p.coord == 2u || (p.coord == 3u && outsz == 1u)) {  // align_corners, pytorch at 1
    if (outsz == 1u) { return vec2<i32>(0, 1); }
    return vec2<i32>(xi * (s - 1), o - 1);
  }
  return vec2<i32>((2 * xi + 1) * s - o, 2 * o);  // half_pixel (pytorch_half_pixel)
}

fn clamp_index(i: i32, sz: u32) -> u32 { return u32(clamp(i, 0, i32(sz) - 1)); }

fn nearest(f: vec2<i32>, sz: u32) -> u32 {
  var i: i32;
  if (p.rounding == 2u) {
    i = floor_div(f.x, f.y);
  } else if (p.rounding == 3u) {
    i = -floor_div(-f.x, f.y);
  } else if (p.rounding == 1u) {
    i = floor_div(2 * f.x + f.y, 2 * f.y);  // round_prefer_ceil
  } else {
    i = -floor_div(f.y - 2 * f.x, 2 * f.y);  // round_prefer_floor
  }
  return clamp_index(i, sz);
}

fn resize(plane: u32, oy: u32, ox: u32) -> f32 {
  let fy = source(oy, p.h, p.oh);
  let fx = source(ox, p.w, p.ow);
  let base = plane * p.h * p.w;
  if (OP == 3u) {
    return a[base + nearest(fy, p.h) * p.w + nearest(fx, p.w)];
  }
  let y0 = floor_div(fy.x, fy.y);
  let x0 = floor_div(fx.x, fx.y);
  let wy1 = f32(fy.x - y0 * fy.y) / f32(fy.y);
  let wx1 = f32(fx.x - x0 * fx.y) / f32(fx.y);
  let wy0 = 1.0 - wy1;
  let wx0 = 1.0 - wx1;
  let r0 = base + clamp_index(y0, p.h) * p.w;
  let r1 = base + clamp_index(y0 + 1, p.h) * p.w;
  let c0 = clamp_index(x0, p.w);
  let c1 = clamp_index(x0 + 1, p.w);
  let top = wx0 * a[r0 + c0] + wx1 * a[r0 + c1];
  let bottom = wx0 * a[r1 + c0] + wx1 * a[r1 + c1];
  return wy0 * top + wy1 * bottom;
}

// OP 5: column element i of [N, G, K, P] (k = (c * kh + ki) * kw + kj, P = oh * ow)
fn im2col(i: u32) -> f32 {
  let pp = p.oh * p.ow;
  let kk = p.cg * p.kh * p.kw;
  let pix = i % pp;
  let k = (i / pp) % kk;
  let ng = i / (pp * kk);  // n * G + g
  let groups = p.c / p.cg;
  let ch = (ng / groups) * p.c + (ng % groups) * p.cg + k / (p.kh * p.kw);
  let y = tap_y(pix / p.ow, (k / p.kw) % p.kh);
  let x = tap_x(pix % p.ow, k % p.kw);
  if (y < 0 || y >= i32(p.h) || x < 0 || x >= i32(p.w)) { return 0.0; }
  return a[(ch * p.h + u32(y)) * p.w + u32(x)];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  if (OP == 5u) {
    out[i] = im2col(i);
    return;
  }
  if (OP == 6u) {
    out[i] = out[i] + bias[(i / (p.oh * p.ow)) % p.m];
    return;
  }
  let ox = i % p.ow;
  let t = i / p.ow;
  let oy = t % p.oh;
  let plane = t / p.oh;  // n * m + m (the output plane)
  var v: f32;
  if (OP == 0u) {
    v = conv(plane, plane % p.m, oy, ox);
  } else if (OP == 1u) {
    v = pool_max(plane, oy, ox);
  } else if (OP == 2u) {
    v = pool_avg(plane, oy, ox);
  } else {
    v = resize(plane, oy, ox);
  }
  out[i] = v;
}
