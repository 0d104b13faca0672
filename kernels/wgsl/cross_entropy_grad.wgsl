// cross_entropy_grad: (softmax(a) - b) / N for logits a [N, C] and targets b, one 64-thread
// workgroup per row; the row's max and sum of exp in the protocol's 64-lane order.

struct Params { classes: u32, rows: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

var<workgroup> lanes: array<f32, 64>;

const INF_BITS: u32 = 0x7f800000u;

fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > INF_BITS; }

fn max_nan(x: f32, y: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (is_nan(y)) { return y; }
  return select(y, x, x > y);
}

fn f_exp(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x > 88.72284f) { let bits = INF_BITS; return bitcast<f32>(bits); }
  if (x < -103.97208f) { return 0.0f; }
  return exp(x);
}

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

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  if (row >= p.rows) { return; }
  let base = row * p.classes;
  let inf_bits = INF_BITS; // a `let`: Chromium's Tint refuses to constant-fold a bitcast to inf
  var m = -bitcast<f32>(inf_bits);
  for (var j = lid; j < p.classes; j += 64u) { m = max_nan(m, a[base + j]); }
  let row_max = tree(lid, m, true);
  var acc = 0.0f;
  for (var j = lid; j < p.classes; j += 64u) { acc = acc + f_exp(a[base + j] - row_max); }
  let total = tree(lid, acc, false);
  let n = f32(p.rows);
  for (var j = lid; j < p.classes; j += 64u) {
    out[base + j] = (f_exp(a[base + j] - row_max) / total - b[base + j]) / n;
  }
}
