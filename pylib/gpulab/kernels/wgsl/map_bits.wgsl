// clamp (OP 2) of a float32 (p.dt 0) or int32 (p.dt 1) tensor, on its 32-bit words, so one
// kernel serves both dtypes and results keep their exact bits (abs and square, once OP 0 and 1,
// are generated map1 ops: unary.wgsl / unary_i32.wgsl):
// - clamp: y = x < lo ? lo : x, then y > hi ? hi : y (comparisons, so NaN and a value equal
//   to a bound are kept as they are); p.lo / p.hi hold the bounds' bits (float32, or int32
//   already ceil/floor-ed and saturated by the planner; no bound: -inf/+inf or INT_MIN/MAX).

override WG: u32 = 64u;
override OP: u32;

struct Params { n: u32, dt: u32, lo: u32, hi: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

const SIGN: u32 = 0x80000000u;

// by bit pattern: WGSL lets compilers assume no NaN in float arithmetic
fn is_nan_bits(b: u32) -> bool { return (b & 0x7fffffffu) > 0x7f800000u; }

// float32 x < y on the words, -0 equal to +0, false when either is NaN: integer compares
// only. WGSL lets a compiler ignore the sign of a zero, and NVIDIA's Vulkan driver (through
// naga and through Tint alike) turned the float compare-and-select into min/max, so clamp(-0,
// min=+0) gave +0 and clamp(+0, min=-0) gave -0 (H200, 2026-12-01, docs/benchmarks.md).
fn ordered_bits(b: u32) -> u32 { return select(b | SIGN, ~b, (b & SIGN) != 0u); }

fn f32_less_bits(x: u32, y: u32) -> bool {
  if (is_nan_bits(x) || is_nan_bits(y) || ((x | y) & 0x7fffffffu) == 0u) { return false; }
  return ordered_bits(x) < ordered_bits(y);
}

fn clamp_bits(b: u32) -> u32 {
  if (p.dt == 0u) {
    if (is_nan_bits(b)) { return b; }
    var y = b;
    if (f32_less_bits(b, p.lo)) { y = p.lo; }
    if (f32_less_bits(p.hi, y)) { y = p.hi; }
    return y;
  }
  var y = bitcast<i32>(b);
  if (y < bitcast<i32>(p.lo)) { y = bitcast<i32>(p.lo); }
  if (y > bitcast<i32>(p.hi)) { y = bitcast<i32>(p.hi); }
  return bitcast<u32>(y);
}

fn apply(b: u32) -> u32 {
  switch OP {
    case 2u, default: { return clamp_bits(b); }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  out[i] = apply(a[i]);
}
