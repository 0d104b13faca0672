// reduce_max (OP 0), reduce_min (OP 1), argmax (OP 2), argmin (OP 3) of each row of a float32
// (p.dt 0) or int32 (p.dt 1) tensor. One 64-thread workgroup per row; row r reads
// (r / inner) * size * inner + j * inner + r % inner for j < size and writes out[r] (the
// extreme's bits, or its index j as an int32).
//
// Every element becomes an int32 key whose order is the protocol's: int32 as it is; float32 by
// its bits, flipped when negative (-inf < ... < -0 < +0 < ... < inf), with NaN mapped past every
// number (so it propagates for max/min and the first NaN wins for argmax/argmin), and -0 read
// as +0 for argmax/argmin (they tie). The combine keeps the larger (smaller) key and on equal
// keys the smaller index: a total order, so any split of the work gives the same answer.

override OP: u32;

struct Params { size: u32, inner: u32, rows: u32, dt: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

struct Best { k: i32, i: u32 }

var<workgroup> lane_k: array<i32, 64>;
var<workgroup> lane_i: array<u32, 64>;

const KEY_MAX: i32 = 2147483647i;
const KEY_MIN: i32 = -2147483647i - 1i;
const NAN_BITS: u32 = 0x7fc00000u;

fn wants_max() -> bool { return OP == 0u || OP == 2u; }

// float32 bits <-> ordered keys (the map is its own inverse)
fn flip(s: i32) -> i32 { return s ^ ((s >> 31u) & 0x7fffffffi); }

fn key_of(b: u32) -> i32 {
  if (p.dt == 1u) { return bitcast<i32>(b); }
  if ((b & 0x7fffffffu) > 0x7f800000u) { return select(KEY_MIN, KEY_MAX, wants_max()); }
  let bits = select(b, 0u, OP >= 2u && b == 0x80000000u);
  return flip(bitcast<i32>(bits));
}

fn better(k: i32, i: u32, best: Best) -> bool {
  if (k == best.k) { return i < best.i; }
  return select((k < best.k), (k > best.k), wants_max());
}

fn take(best: Best, at: u32, j: u32) -> Best {
  let k = key_of(a[at]);
  if (better(k, j, best)) { return Best(k, j); }
  return best;
}

// take() of j, j + 64, ..., j + 31 * 64, written out: llvmpipe (lavapipe) stops a shader
// invocation's loops after 65535 iterations in total (see reduce.wgsl).
fn take32(best: Best, at: u32, step: u32, j: u32) -> Best {
  var b = best;
  b = take(b, at, j); b = take(b, at + 1u * step, j + 64u);
  b = take(b, at + 2u * step, j + 128u); b = take(b, at + 3u * step, j + 192u);
  b = take(b, at + 4u * step, j + 256u); b = take(b, at + 5u * step, j + 320u);
  b = take(b, at + 6u * step, j + 384u); b = take(b, at + 7u * step, j + 448u);
  b = take(b, at + 8u * step, j + 512u); b = take(b, at + 9u * step, j + 576u);
  b = take(b, at + 10u * step, j + 640u); b = take(b, at + 11u * step, j + 704u);
  b = take(b, at + 12u * step, j + 768u); b = take(b, at + 13u * step, j + 832u);
  b = take(b, at + 14u * step, j + 896u); b = take(b, at + 15u * step, j + 960u);
  b = take(b, at + 16u * step, j + 1024u); b = take(b, at + 17u * step, j + 1088u);
  b = take(b, at + 18u * step, j + 1152u); b = take(b, at + 19u * step, j + 1216u);
  b = take(b, at + 20u * step, j + 1280u); b = take(b, at + 21u * step, j + 1344u);
  b = take(b, at + 22u * step, j + 1408u); b = take(b, at + 23u * step, j + 1472u);
  b = take(b, at + 24u * step, j + 1536u); b = take(b, at + 25u * step, j + 1600u);
  b = take(b, at + 26u * step, j + 1664u); b = take(b, at + 27u * step, j + 1728u);
  b = take(b, at + 28u * step, j + 1792u); b = take(b, at + 29u * step, j + 1856u);
  b = take(b, at + 30u * step, j + 1920u); b = take(b, at + 31u * step, j + 1984u);
  return b;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (row >= p.rows) { return; }
  let base = (row / p.inner) * p.size * p.inner + row % p.inner;
  var best = Best(select(KEY_MAX, KEY_MIN, wants_max()), 0xffffffffu);
  var j = lid;
  for (; j + 31u * 64u < p.size; j += 32u * 64u) {
    best = take32(best, base + j * p.inner, 64u * p.inner, j);
  }
  for (; j < p.size; j += 64u) {
    best = take(best, base + j * p.inner, j);
  }
  lane_k[lid] = best.k;
  lane_i[lid] = best.i;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s = s >> 1u) {
    if (lid < s && better(lane_k[lid + s], lane_i[lid + s], Best(lane_k[lid], lane_i[lid]))) {
      lane_k[lid] = lane_k[lid + s];
      lane_i[lid] = lane_i[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let k = lane_k[0];
    if (OP >= 2u) {
      out[row] = lane_i[0];
    } else if (p.dt == 1u) {
      out[row] = bitcast<u32>(k);
    } else if (k == KEY_MAX || k == KEY_MIN) {
      out[row] = NAN_BITS;
    } else {
      out[row] = bitcast<u32>(flip(k));
    }
  }
}
