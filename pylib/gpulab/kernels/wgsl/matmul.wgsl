// Batched matmul, 64x64 tile (fits WebGPU's default 16 KiB of workgroup storage): out[b] =
// a[b] @ b[b] with a [M, K], b [K, N] per batch (batch strides in params, 0 where an operand
// broadcasts). 256 threads (16 x 16); thread (tx, ty) owns rows ty*4 .. ty*4+3 and columns
// tx*4 .. tx*4+3. k tiles are 16 deep and double-buffered (2 x 2 x 16 x 64 floats = 16 KiB).
// Every output accumulates in ascending k from 0.0 with fma (the protocol's matmul order).

struct Params {
  m: u32, n: u32, k: u32, tiles_m: u32,
  tiles_n: u32, batch: u32, b1: u32, a_s0: u32,
  a_s1: u32, b_s0: u32, b_s1: u32, pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const TILE: u32 = 64u;
const BK: u32 = 16u;
const VEC_ROW: u32 = 16u; // vec4s per k row of a tile (64 / 4)
const BUF: u32 = 256u;    // vec4s per buffer (BK * VEC_ROW)

var<workgroup> as_: array<vec4<f32>, 512>;
var<workgroup> bs: array<vec4<f32>, 512>;

fn load_a(base: u32, row0: u32, k0: u32, lid: u32) -> vec4<f32> {
  // Thread lid loads row (lid % 64), k = k0 + (lid / 64) * 4 .. +4.
  var v = vec4<f32>(0.0f);
  let r = row0 + lid % TILE;
  let kk = k0 + (lid / TILE) * 4u;
  for (var q = 0u; q < 4u; q++) {
    if (r < p.m && kk + q < p.k) { v[q] = a[base + r * p.k + kk + q]; }
  }
  return v;
}

fn store_a(buf: u32, lid: u32, v: vec4<f32>) {
  let r = lid % TILE;
  let kk = (lid / TILE) * 4u;
  for (var q = 0u; q < 4u; q++) {
    as_[buf * BUF + (kk + q) * VEC_ROW + r / 4u][r % 4u] = v[q];
  }
}

fn load_b(base: u32, k0: u32, col0: u32, lid: u32) -> vec4<f32> {
  // Thread lid loads k = k0 + lid / 16, columns col0 + (lid % 16) * 4 .. +4.
  var v = vec4<f32>(0.0f);
  let kk = k0 + lid / 16u;
  let c = col0 + (lid % 16u) * 4u;
  for (var q = 0u; q < 4u; q++) {
    if (kk < p.k && c + q < p.n) { v[q] = b[base + kk * p.n + c + q]; }
  }
  return v;
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

  var acc: array<vec4<f32>, 4>;
  for (var i = 0u; i < 4u; i++) { acc[i] = vec4<f32>(0.0f); }

  let tiles_k = (p.k + BK - 1u) / BK;
  store_a(0u, lid, load_a(a_base, row0, 0u, lid));
  bs[(lid / 16u) * VEC_ROW + lid % 16u] = load_b(b_base, 0u, col0, lid);
  workgroupBarrier();
  for (var t = 0u; t < tiles_k; t++) {
    let cur = t % 2u;
    let more = t + 1u < tiles_k;
    var next_a = vec4<f32>(0.0f);
    var next_b = vec4<f32>(0.0f);
    if (more) {
      next_a = load_a(a_base, row0, (t + 1u) * BK, lid);
      next_b = load_b(b_base, (t + 1u) * BK, col0, lid);
    }
    for (var kk = 0u; kk < BK; kk++) {
      let at = cur * BUF + kk * VEC_ROW;
      let av = as_[at + ty];
      let bv = bs[at + tx];
      acc[0] = fma(vec4<f32>(av.x), bv, acc[0]);
      acc[1] = fma(vec4<f32>(av.y), bv, acc[1]);
      acc[2] = fma(vec4<f32>(av.z), bv, acc[2]);
      acc[3] = fma(vec4<f32>(av.w), bv, acc[3]);
    }
    if (more) {
      store_a(1u - cur, lid, next_a);
      bs[(1u - cur) * BUF + (lid / 16u) * VEC_ROW + lid % 16u] = next_b;
    }
    workgroupBarrier();
  }

  let c_base = bi * p.m * p.n;
  for (var i = 0u; i < 4u; i++) {
    store4(c_base, row0 + ty * 4u + i, col0 + tx * 4u, acc[i]);
  }
}
