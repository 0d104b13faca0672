// sum (OP 0) or mean (OP 1) of each row, in the protocol's 64-lane order (docs/protocol.md,
// "Numerics"): one 64-thread workgroup per row; lane j adds elements j, j+64, ... from 0.0,
// then lanes combine as a tree s = 32 .. 1. Row r reads
// (r / inner) * size * inner + j * inner + r % inner for j < size and writes out[r].

override OP: u32;

struct Params { size: u32, inner: u32, rows: u32, pad0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> lanes: array<f32, 64>;

// acc + a[at] + a[at + step] + ... + a[at + 31 step], added in that order. Written out because
// llvmpipe (lavapipe) stops a shader invocation's loops after 65535 iterations in total: with
// 32 additions per iteration a lane can walk 2^20 elements (a 2^26-element row) in 32768.
fn add32(acc: f32, at: u32, step: u32) -> f32 {
  var s = acc;
  s = s + a[at]; s = s + a[at + step]; s = s + a[at + 2u * step];
  s = s + a[at + 3u * step]; s = s + a[at + 4u * step]; s = s + a[at + 5u * step];
  s = s + a[at + 6u * step]; s = s + a[at + 7u * step]; s = s + a[at + 8u * step];
  s = s + a[at + 9u * step]; s = s + a[at + 10u * step]; s = s + a[at + 11u * step];
  s = s + a[at + 12u * step]; s = s + a[at + 13u * step]; s = s + a[at + 14u * step];
  s = s + a[at + 15u * step]; s = s + a[at + 16u * step]; s = s + a[at + 17u * step];
  s = s + a[at + 18u * step]; s = s + a[at + 19u * step]; s = s + a[at + 20u * step];
  s = s + a[at + 21u * step]; s = s + a[at + 22u * step]; s = s + a[at + 23u * step];
  s = s + a[at + 24u * step]; s = s + a[at + 25u * step]; s = s + a[at + 26u * step];
  s = s + a[at + 27u * step]; s = s + a[at + 28u * step]; s = s + a[at + 29u * step];
  s = s + a[at + 30u * step]; s = s + a[at + 31u * step];
  return s;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (row >= p.rows) { return; }
  let base = (row / p.inner) * p.size * p.inner + row % p.inner;
  let step = 64u * p.inner;
  var acc = 0.0f;
  var j = lid;
  for (; j + 31u * 64u < p.size; j += 32u * 64u) {
    acc = add32(acc, base + j * p.inner, step);
  }
  for (; j < p.size; j += 64u) {
    acc = acc + a[base + j * p.inner];
  }
  lanes[lid] = acc;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s = s >> 1u) {
    if (lid < s) { lanes[lid] = lanes[lid] + lanes[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let total = lanes[0];
    out[row] = select(total, total / f32(p.size), OP == 1u);
  }
}
