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

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (row >= p.rows) { return; }
  let base = (row / p.inner) * p.size * p.inner + row % p.inner;
  var acc = 0.0f;
  for (var j = lid; j < p.size; j += 64u) {
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
