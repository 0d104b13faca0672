// The protocol-v3 select ops on 32-bit words (docs/protocol.md "The v3 select ops"), one
// kernel for all of them, selected by OP; DT is the dtype of the operands it compares or
// converts (0 float32, 1 int32, 2 uint32, 3 bool: the planners' SELECT_DTYPE):
//   0 maximum, 1 minimum           a, b (broadcast)        -> the chosen word
//   2 eq, 3 ne, 4 lt, 5 le, 6 gt, 7 ge   a, b (broadcast)  -> 0 / 1
//   8 where                        cond = a, then b, c     -> b or c (broadcast, 3 operands)
//   9 cast                         a (same shape), p.to the target dtype code
//   10 hash_uniform                a[0] the counter        -> float32 bits of (h >> 8) * 2^-24
//   11 dropout                     a (same shape), b[0] the counter
// Everything is integer arithmetic on the words: float32 compares are compares of an ordered
// key (a driver may turn a float compare-and-select into min/max and lose the sign of a zero:
// NVIDIA did, for clamp), casts and the uniform's float bits are built by hand; the one float
// operation is dropout's multiply, one IEEE float32 product. Operands an op lacks are bound to
// one of its others (the planners pass it twice).

override WG: u32 = 64u;
override OP: u32;
override DT: u32;

struct Params {
  n: u32, seed: u32, thr: u32, scale: u32,   // dropout: keep when (h >> 8) >= thr; scale bits
  to: u32, same: u32, pad0: u32, pad1: u32,  // cast's target dtype code; 1: all of one shape
  d0: u32, d1: u32, d2: u32, d3: u32,        // the result's shape, padded left to rank 4
  sa0: u32, sa1: u32, sa2: u32, sa3: u32,     // operand strides, 0 where broadcast
  sb0: u32, sb1: u32, sb2: u32, sb3: u32,     // (scalar words: the planners write Params
  sc0: u32, sc1: u32, sc2: u32, sc3: u32,     //  field by field, test_native_kernels checks)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

const SIGN: u32 = 0x80000000u;

fn is_nan(w: u32) -> bool { return (w & 0x7fffffffu) > 0x7f800000u; }

// float32 words in increasing order as unsigned integers: -0 < +0 (NaN tested apart)
fn key(w: u32) -> u32 { return select(w | SIGN, ~w, (w & SIGN) != 0u); }

// x < y in the order of DT, NaN aside: float32 by key (-0 < +0), int32 signed, else unsigned
fn below(x: u32, y: u32) -> bool {
  if (DT == 0u) { return key(x) < key(y); }
  if (DT == 1u) { return bitcast<i32>(x) < bitcast<i32>(y); }
  return x < y;
}

// IEEE 754-2019 maximum / minimum: NaN propagates (a's first), -0 < +0
fn extreme(x: u32, y: u32, is_max: bool) -> u32 {
  if (DT == 0u && is_nan(x)) { return x; }
  if (DT == 0u && is_nan(y)) { return y; }
  if (is_max) { return select(x, y, below(x, y)); }
  return select(x, y, below(y, x));
}

// IEEE comparisons: NaN unordered, -0 == +0
fn equal(x: u32, y: u32) -> bool {
  if (DT != 0u) { return x == y; }
  return !is_nan(x) && !is_nan(y) && (x == y || ((x | y) & 0x7fffffffu) == 0u);
}

fn less(x: u32, y: u32) -> bool {
  if (DT != 0u) { return below(x, y); }
  return !is_nan(x) && !is_nan(y) && ((x | y) & 0x7fffffffu) != 0u && key(x) < key(y);
}

fn compare(x: u32, y: u32) -> u32 {
  var r = false;
  switch OP {
    case 2u: { r = equal(x, y); }
    case 3u: { r = !equal(x, y); }
    case 4u: { r = less(x, y); }
    case 5u: { r = less(x, y) || equal(x, y); }
    case 6u: { r = less(y, x); }
    default: { r = less(y, x) || equal(x, y); }
  }
  return select(0u, 1u, r);
}

// ---- cast ----

// float32 bits of an unsigned integer, rounded to nearest, ties to even (integer only)
fn msb(v: u32) -> u32 {
  var m = v;
  var e = 0u;
  if (m >= 0x10000u) { m = m >> 16u; e = e + 16u; }
  if (m >= 0x100u) { m = m >> 8u; e = e + 8u; }
  if (m >= 0x10u) { m = m >> 4u; e = e + 4u; }
  if (m >= 0x4u) { m = m >> 2u; e = e + 2u; }
  if (m >= 0x2u) { e = e + 1u; }
  return e;
}

fn u32_to_f32_bits(m: u32) -> u32 {
  if (m == 0u) { return 0u; }
  let e = msb(m);
  if (e <= 23u) { return ((e + 127u) << 23u) + ((m << (23u - e)) - 0x800000u); }
  let shift = e - 23u;
  var mant = m >> shift;
  let rest = m & ((1u << shift) - 1u);
  let half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (mant & 1u) == 1u)) { mant = mant + 1u; }
  return ((e + 127u) << 23u) + (mant - 0x800000u);  // a carry to 2^24 bumps the exponent
}

// float32 bits -> int32 (signed) or uint32 words: truncation, NaN -> 0, saturation
fn f32_to_int_bits(w: u32, signed: bool) -> u32 {
  if (is_nan(w)) { return 0u; }
  let neg = (w & SIGN) != 0u;
  let e = i32((w >> 23u) & 0xffu) - 127;
  if (e < 0) { return 0u; }
  if (!signed && neg) { return 0u; }
  if (signed && e >= 31) { return select(0x7fffffffu, SIGN, neg); }
  if (!signed && e >= 32) { return 0xffffffffu; }
  let m = (w & 0x7fffffu) | 0x800000u;
  var mag = 0u;
  if (e >= 23) { mag = m << u32(e - 23); } else { mag = m >> u32(23 - e); }
  return select(mag, 0u - mag, neg);
}

fn cast_word(w: u32) -> u32 {
  if (p.to == 3u) {  // -> bool: nonzero (NaN included, -0 not)
    if (DT == 0u) { return select(0u, 1u, (w & 0x7fffffffu) != 0u); }
    return select(0u, 1u, w != 0u);
  }
  if (DT == 0u) {
    if (p.to == 1u) { return f32_to_int_bits(w, true); }
    if (p.to == 2u) { return f32_to_int_bits(w, false); }
    return w;
  }
  if (p.to == 0u) {  // -> float32
    if (DT == 1u && (w & SIGN) != 0u) { return u32_to_f32_bits(0u - w) | SIGN; }
    return u32_to_f32_bits(w);
  }
  return w;  // int32 <-> uint32, bool -> int: the same 32 bits
}

// ---- the counter-hash uniform ----

fn lowbias32(v: u32) -> u32 {
  var x = v;
  x = x ^ (x >> 16u);
  x = x * 0x7feb352du;
  x = x ^ (x >> 15u);
  x = x * 0x846ca68bu;
  x = x ^ (x >> 16u);
  return x;
}

fn hash_word(counter: u32, i: u32) -> u32 {
  return lowbias32(lowbias32(lowbias32(p.seed) ^ counter) ^ lowbias32(i));
}

// float32 bits of (h >> 8) * 2^-24: the exponent of the 24-bit integer lowered by 24
fn uniform_bits(h: u32) -> u32 {
  let top = h >> 8u;
  if (top == 0u) { return 0u; }
  return u32_to_f32_bits(top) - (24u << 23u);
}

// Non-finite values are answered on the words (WGSL lets a compiler assume finite floats):
// kept NaN stays NaN and inf * s = inf (s >= 1); dropped: a * 0, the sign of a with zero
// magnitude, NaN for NaN or inf.
fn dropout_word(w: u32, counter: u32, i: u32) -> u32 {
  let finite = (w & 0x7fffffffu) < 0x7f800000u;
  if ((hash_word(counter, i) >> 8u) >= p.thr) {
    if (!finite) { return select(w, 0x7fc00000u, is_nan(w)); }
    return bitcast<u32>(bitcast<f32>(w) * bitcast<f32>(p.scale));
  }
  if (!finite) { return 0x7fc00000u; }
  return w & SIGN;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  var ia = i;
  var ib = i;
  var ic = i;
  if (p.same == 0u) {
    let d = vec4<u32>(p.d0, p.d1, p.d2, p.d3);
    let sa = vec4<u32>(p.sa0, p.sa1, p.sa2, p.sa3);
    let sb = vec4<u32>(p.sb0, p.sb1, p.sb2, p.sb3);
    let sc = vec4<u32>(p.sc0, p.sc1, p.sc2, p.sc3);
    let c3 = i % d.w;
    let r2 = i / d.w;
    let c2 = r2 % d.z;
    let r1 = r2 / d.z;
    let c1 = r1 % d.y;
    let c0 = r1 / d.y;
    ia = c0 * sa.x + c1 * sa.y + c2 * sa.z + c3 * sa.w;
    ib = c0 * sb.x + c1 * sb.y + c2 * sb.z + c3 * sb.w;
    ic = c0 * sc.x + c1 * sc.y + c2 * sc.z + c3 * sc.w;
  }
  switch OP {
    case 0u: { out[i] = extreme(a[ia], b[ib], true); }
    case 1u: { out[i] = extreme(a[ia], b[ib], false); }
    case 8u: { out[i] = select(c[ic], b[ib], a[ia] != 0u); }
    case 9u: { out[i] = cast_word(a[i]); }
    case 10u: { out[i] = uniform_bits(hash_word(a[0], i)); }
    case 11u: { out[i] = dropout_word(a[i], b[0], i); }
    default: { out[i] = compare(a[ia], b[ib]); }
  }
}
