// ---- the rows kernels' lane tree: kernels/wgsl/src/rows_tree.wgsl, included by `make gen` ----
var<workgroup> lanes: array<f32, 64>;

// Combine the 64 lanes as the protocol's tree s = 32 .. 1 with max (use_max) or +; every
// thread gets the result. The leading barrier keeps a previous tree's readers safe.
fn tree(lid: u32, v: f32, use_max: bool) -> f32 {
  workgroupBarrier();
  lanes[lid] = v;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      let x = lanes[lid];
      let y = lanes[lid + s];
      lanes[lid] = select(x + y, max_nan(x, y), use_max);
    }
    workgroupBarrier();
  }
  return lanes[0];
}
