// Batched matmul, 128x128 register-blocked tile: out[b] = a[b] @ b[b] with a [M, K], b [K, N]
// per batch (batch strides in params, 0 where an operand broadcasts). 256 threads (16 x 16);
// thread (tx, ty) owns rows {ty*4 .. ty*4+3, 64+ty*4 .. 64+ty*4+3} and the same columns with tx,
// 8 x 8 outputs in 16 vec4 registers. k tiles are 16 deep and double-buffered in workgroup
// memory (2 x 2 x 16 x 128 floats = 32 KiB), so one barrier per tile. Every output accumulates in
// ascending k from 0.0 with fma (the protocol's matmul order). Needs 32 KiB of workgroup storage:
// the planner picks this kernel only when maxComputeWorkgroupStorageSize >= 32768.

struct Params {
  m: u32, n: u32, k: u32, tiles_m: u32,
  tiles_n: u32, batch: u32, b1: u32, a_s0: u32,
  a_s1: u32, b_s0: u32, b_s1: u32, pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const TILE: u32 = 128u;
const BK: u32 = 16u;
const VEC_ROW: u32 = 32u; // vec4s per k row of a tile (128 / 4)
const BUF: u32 = 512u;    // vec4s per buffer (BK * VEC_ROW)

// as_[buf * BUF + k * 32 + r / 4][r % 4] = a[row r, k]: k-major so a thread reads 4 rows at once.
var<workgroup> as_: array<vec4<f32>, 1024>;
// bs[buf * BUF + k * 32 + c / 4][c % 4] = b[k, column c].
var<workgroup> bs: array<vec4<f32>, 1024>;

fn load_a(base: u32, row0: u32, k0: u32, lid: u32) -> array<f32, 8> {
  // Thread lid loads row (lid % 128), k = k0 + (lid / 128) * 8 .. +8: 32 contiguous bytes.
  var v: array<f32, 8>;
  let r = row0 + lid % TILE;
  let kk = k0 + (lid / TILE) * 8u;
  for (var q = 0u; q < 8u; q++) {
    v[q] = 0.0f;
    if (r < p.m && kk + q < p.k) { v[q] = a[base + r * p.k + kk + q]; }
  }
  return v;
}

fn store_a(buf: u32, lid: u32, v: array<f32, 8>) {
  let r = lid % TILE;
  let kk = (lid / TILE) * 8u;
  for (var q = 0u; q < 8u; q++) {
    as_[buf * BUF + (kk + q) * VEC_ROW + r / 4u][r % 4u] = v[q];
  }
}

fn load_b(base: u32, k0: u32, col0: u32, lid: u32) -> array<f32, 8> {
  // Thread lid loads k = k0 + lid / 16, columns col0 + (lid % 16) * 8 .. +8.
  var v: array<f32, 8>;
  let kk = k0 + lid / 16u;
  let c = col0 + (lid % 16u) * 8u;
  for (var q = 0u; q < 8u; q++) {
    v[q] = 0.0f;
    if (kk < p.k && c + q < p.n) { v[q] = b[base + kk * p.n + c + q]; }
  }
  return v;
}

fn store_b(buf: u32, lid: u32, v: array<f32, 8>) {
  let at = buf * BUF + (lid / 16u) * VEC_ROW + (lid % 16u) * 2u;
  bs[at] = vec4<f32>(v[0], v[1], v[2], v[3]);
  bs[at + 1u] = vec4<f32>(v[4], v[5], v[6], v[7]);
}

fn store4(base: u32, row: u32, col: u32, v: vec4<f32>) {
  if (row >= p.m) { return; }
  let at = base + row * p.n + col;
  if (col < p.n) { out[at] = v.x; }
  if (col + 1u < p.n) { out[at + 1u] = v.y; }
  if (col + 2u < p.n) { out[at + 2u] = v.z; }
  if (col + 3u < p.n) { out[at + 3u] = v.w; }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let w = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let per_batch = p.tiles_m * p.tiles_n;
  if (w >= per_batch * p.batch) { return; }
  let bi = w / per_batch;
  let row0 = ((w / p.tiles_n) % p.tiles_m) * TILE;
  let col0 = (w % p.tiles_n) * TILE;
  let a_base = (bi / p.b1) * p.a_s0 + (bi % p.b1) * p.a_s1;
  let b_base = (bi / p.b1) * p.b_s0 + (bi % p.b1) * p.b_s1;
  let tx = lid % 16u;
  let ty = lid / 16u;

  var acc: array<vec4<f32>, 16>;
  for (var i = 0u; i < 16u; i++) { acc[i] = vec4<f32>(0.0f); }

  let tiles_k = (p.k + BK - 1u) / BK;
  store_a(0u, lid, load_a(a_base, row0, 0u, lid));
  store_b(0u, lid, load_b(b_base, 0u, col0, lid));
  workgroupBarrier();
  for (var t = 0u; t < tiles_k; t++) {
    let cur = t % 2u;
    let more = t + 1u < tiles_k;
    var next_a: array<f32, 8>;
    var next_b: array<f32, 8>;
    if (more) {
      next_a = load_a(a_base, row0, (t + 1u) * BK, lid);
      next_b = load_b(b_base, (t + 1u) * BK, col0, lid);
    }
    for (var kk = 0u; kk < BK; kk++) {
      let at = cur * BUF + kk * VEC_ROW;
      let a0 = as_[at + ty];
      let a1 = as_[at + 16u + ty];
      let b0 = bs[at + tx];
      let b1 = bs[at + 16u + tx];
      acc[0] = fma(vec4<f32>(a0.x), b0, acc[0]);
      acc[1] = fma(vec4<f32>(a0.x), b1, acc[1]);
      acc[2] = fma(vec4<f32>(a0.y), b0, acc[2]);
      acc[3] = fma(vec4<f32>(a0.y), b1, acc[3]);
      acc[4] = fma(vec4<f32>(a0.z), b0, acc[4]);
      acc[5] = fma(vec4<f32>(a0.z), b1, acc[5]);
      acc[6] = fma(vec4<f32>(a0.w), b0, acc[6]);
      acc[7] = fma(vec4<f32>(a0.w), b1, acc[7]);
      acc[8] = fma(vec4<f32>(a1.x), b0, acc[8]);
      acc[9] = fma(vec4<f32>(a1.x), b1, acc[9]);
      acc[10] = fma(vec4<f32>(a1.y), b0, acc[10]);
      acc[11] = fma(vec4<f32>(a1.y), b1, acc[11]);
      acc[12] = fma(vec4<f32>(a1.z), b0, acc[12]);
      acc[13] = fma(vec4<f32>(a1.z), b1, acc[13]);
      acc[14] = fma(vec4<f32>(a1.w), b0, acc[14]);
      acc[15] = fma(vec4<f32>(a1.w), b1, acc[15]);
    }
    if (more) {
      store_a(1u - cur, lid, next_a);
      store_b(1u - cur, lid, next_b);
    }
    workgroupBarrier();
  }

  let c_base = bi * p.m * p.n;
  for (var i = 0u; i < 8u; i++) {
    let row = row0 + select(ty * 4u + i, 64u + ty * 4u + i - 4u, i >= 4u);
    store4(c_base, row, col0 + tx * 4u, acc[i * 2u]);
    store4(c_base, row, col0 + 64u + tx * 4u, acc[i * 2u + 1u]);
  }
}
