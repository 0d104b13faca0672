// softmax (OP 0) or log_softmax (OP 1) along one axis: one 64-thread workgroup per row, rows laid
// out as in reduce.wgsl (size, inner, rows). The row's max and the sum of exp(x - max) both run in
// the protocol's 64-lane order, so every device gets the same bits for them.

override OP: u32;

struct Params { size: u32, inner: u32, rows: u32, pad0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> lanes: array<f32, 64>;

const INF_BITS: u32 = 0x7f800000u;

fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > INF_BITS; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == INF_BITS; }

// max that keeps NaN (WGSL's max may return either operand for NaN).
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

fn f_log(x: f32) -> f32 {
  if (is_nan(x) || is_inf(x)) { return x; }
  return log(x);
}

// Combine the 64 lanes as a tree s = 32 .. 1 with max (use_max) or +; every lane gets lanes[0].
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
  let base = (row / p.inner) * p.size * p.inner + row % p.inner;
  let inf_bits = INF_BITS; // a `let`: Chromium's Tint refuses to constant-fold a bitcast to inf
  var m = -bitcast<f32>(inf_bits);
  for (var j = lid; j < p.size; j += 64u) {
    m = max_nan(m, a[base + j * p.inner]);
  }
  let row_max = tree(lid, m, true);
  var acc = 0.0f;
  for (var j = lid; j < p.size; j += 64u) {
    acc = acc + f_exp(a[base + j * p.inner] - row_max);
  }
  let total = tree(lid, acc, false);
  let log_total = f_log(total);
  for (var j = lid; j < p.size; j += 64u) {
    let x = a[base + j * p.inner] - row_max;
    out[base + j * p.inner] = select(f_exp(x) / total, x - log_total, OP == 1u);
  }
}
