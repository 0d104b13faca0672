// Batched matmul, 128x128 register-blocked tile with vec4 global loads and stores: the same
// tile, thread layout, double-buffered 32 KiB of workgroup memory and accumulation order as
// matmul_rb.wgsl (so the same bits), for K and N multiples of 4, where every row of a, b and out
// starts on a 16-byte boundary. The planner picks it when maxComputeWorkgroupStorageSize >=
// 32768 and K % 4 == 0 and N % 4 == 0. Batch strides in params are in floats (multiples of 4).

struct Params {
  m: u32, n: u32, k: u32, tiles_m: u32,
  tiles_n: u32, batch: u32, b1: u32, a_s0: u32,
  a_s1: u32, b_s0: u32, b_s1: u32, pad0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;

const TILE: u32 = 128u;
const BK: u32 = 16u;
const VEC_ROW: u32 = 32u; // vec4s per k row of a tile (128 / 4)
const BUF: u32 = 512u;    // vec4s per buffer (BK * VEC_ROW)

// as_[buf * BUF + k * 32 + r / 4][r % 4] = a[row r, k]: k-major so a thread reads 4 rows at once.
var<workgroup> as_: array<vec4<f32>, 1024>;
// bs[buf * BUF + k * 32 + c / 4][c % 4] = b[k, column c].
var<workgroup> bs: array<vec4<f32>, 1024>;

// Thread lid loads row (lid % 128) of the tile, k = k0 + (lid / 128) * 8 .. +8 (two vec4s).
fn load_a(a_base: u32, row0: u32, k0: u32, lid: u32) -> array<vec4<f32>, 2> {
  let r = row0 + lid % TILE;
  let k = k0 + (lid / TILE) * 8u;
  let at = (a_base + r * p.k + k) / 4u;
  let zero = vec4<f32>(0.0f);
  return array<vec4<f32>, 2>(select(zero, a[at], r < p.m && k < p.k),
                             select(zero, a[at + 1u], r < p.m && k + 4u < p.k));
}

fn store_a(buf: u32, lid: u32, v: array<vec4<f32>, 2>) {
  let r = lid % TILE;
  let at = buf * BUF + ((lid / TILE) * 8u) * VEC_ROW + r / 4u;
  let c = r % 4u;
  as_[at][c] = v[0].x;
  as_[at + VEC_ROW][c] = v[0].y;
  as_[at + 2u * VEC_ROW][c] = v[0].z;
  as_[at + 3u * VEC_ROW][c] = v[0].w;
  as_[at + 4u * VEC_ROW][c] = v[1].x;
  as_[at + 5u * VEC_ROW][c] = v[1].y;
  as_[at + 6u * VEC_ROW][c] = v[1].z;
  as_[at + 7u * VEC_ROW][c] = v[1].w;
}

// Thread lid loads k = k0 + lid / 16, columns col0 + (lid % 16) * 8 .. +8 (two vec4s).
fn load_b(b_base: u32, k0: u32, col0: u32, lid: u32) -> array<vec4<f32>, 2> {
  let k = k0 + lid / 16u;
  let c = col0 + (lid % 16u) * 8u;
  let at = (b_base + k * p.n + c) / 4u;
  let zero = vec4<f32>(0.0f);
  return array<vec4<f32>, 2>(select(zero, b[at], k < p.k && c < p.n),
                             select(zero, b[at + 1u], k < p.k && c + 4u < p.n));
}

fn store_b(buf: u32, lid: u32, v: array<vec4<f32>, 2>) {
  let at = buf * BUF + (lid / 16u) * VEC_ROW + (lid % 16u) * 2u;
  bs[at] = v[0];
  bs[at + 1u] = v[1];
}

// col is a multiple of 4 and so is N: a vec4 is either wholly inside the row or wholly past it.
fn store4(base: u32, row: u32, col: u32, v: vec4<f32>) {
  if (row < p.m && col < p.n) { out[(base + row * p.n + col) / 4u] = v; }
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

  var acc: array<vec4<f32>, 16>; // zero-initialized; [2 i + h]: row i, column half h

  let tiles_k = (p.k + BK - 1u) / BK;
  store_a(0u, lid, load_a(a_base, row0, 0u, lid));
  store_b(0u, lid, load_b(b_base, 0u, col0, lid));
  workgroupBarrier();
  for (var t = 0u; t < tiles_k; t++) {
    let cur = t % 2u;
    let more = t + 1u < tiles_k;
    var next_a: array<vec4<f32>, 2>;
    var next_b: array<vec4<f32>, 2>;
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

  // Constant indices only, so the accumulators stay in registers.
  let c_base = bi * p.m * p.n;
  let r0 = row0 + ty * 4u;
  let r1 = row0 + 64u + ty * 4u;
  let c0 = col0 + tx * 4u;
  let c1 = col0 + 64u + tx * 4u;
  store4(c_base, r0, c0, acc[0]);
  store4(c_base, r0, c1, acc[1]);
  store4(c_base, r0 + 1u, c0, acc[2]);
  store4(c_base, r0 + 1u, c1, acc[3]);
  store4(c_base, r0 + 2u, c0, acc[4]);
  store4(c_base, r0 + 2u, c1, acc[5]);
  store4(c_base, r0 + 3u, c0, acc[6]);
  store4(c_base, r0 + 3u, c1, acc[7]);
  store4(c_base, r1, c0, acc[8]);
  store4(c_base, r1, c1, acc[9]);
  store4(c_base, r1 + 1u, c0, acc[10]);
  store4(c_base, r1 + 1u, c1, acc[11]);
  store4(c_base, r1 + 2u, c0, acc[12]);
  store4(c_base, r1 + 2u, c1, acc[13]);
  store4(c_base, r1 + 3u, c0, acc[14]);
  store4(c_base, r1 + 3u, c1, acc[15]);
}
