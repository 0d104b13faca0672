// Batched matmul for little work (few output tiles, e.g. a training step's [64, 256] products):
// a 16x16 tile per 256-thread workgroup, one output per thread, so small products still spread
// over many workgroups. k tiles are 64 deep, so a long K takes few round trips to memory (such
// products wait on load latency, not arithmetic); the next tile is loaded into registers while
// the current one is used. Any M, N, K (scalar loads). Every output accumulates in ascending k
// from 0.0 with one fma per k, the same sequence as matmul.wgsl, so the same bits.
// `flags` bit 0: a is stored transposed ([K, M], a transpose read in place: a[m, k] at
// k * M + m); bit 1: likewise b ([N, K]).

struct Params {
  m: u32, n: u32, k: u32, tiles_m: u32,
  tiles_n: u32, batch: u32, b1: u32, a_s0: u32,
  a_s1: u32, b_s0: u32, b_s1: u32, flags: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const TILE: u32 = 16u;
const BK: u32 = 64u;

var<workgroup> as_: array<array<f32, 64>, 16>; // as_[row][k]
var<workgroup> bs: array<array<f32, 16>, 64>;  // bs[k][column]

struct Tile { a: vec4<f32>, b: vec4<f32> }

fn a_at(row: u32, k: u32, base: u32) -> f32 {
  let at = select(row * p.k + k, k * p.m + row, (p.flags & 1u) != 0u);
  return select(0.0f, a[base + at], row < p.m && k < p.k);
}

fn b_at(k: u32, col: u32, base: u32) -> f32 {
  let at = select(k * p.n + col, col * p.k + k, (p.flags & 2u) != 0u);
  return select(0.0f, b[base + at], k < p.k && col < p.n);
}

// Thread lid loads a[row0 + lid / 16, k0 + (lid % 16) * 4 ..+4] and b[k0 + lid / 4,
// col0 + (lid % 4) * 4 ..+4]; past M, N or K: 0.
fn load(a_base: u32, b_base: u32, row0: u32, col0: u32, k0: u32, lid: u32) -> Tile {
  let r = row0 + lid / 16u;
  let ka = k0 + (lid % 16u) * 4u;
  let kb = k0 + lid / 4u;
  let c = col0 + (lid % 4u) * 4u;
  return Tile(vec4<f32>(a_at(r, ka, a_base), a_at(r, ka + 1u, a_base), a_at(r, ka + 2u, a_base),
                        a_at(r, ka + 3u, a_base)),
              vec4<f32>(b_at(kb, c, b_base), b_at(kb, c + 1u, b_base), b_at(kb, c + 2u, b_base),
                        b_at(kb, c + 3u, b_base)));
}

fn store(t: Tile, lid: u32) {
  let r = lid / 16u;
  let k = (lid % 16u) * 4u;
  as_[r][k] = t.a.x;
  as_[r][k + 1u] = t.a.y;
  as_[r][k + 2u] = t.a.z;
  as_[r][k + 3u] = t.a.w;
  let kb = lid / 4u;
  let c = (lid % 4u) * 4u;
  bs[kb][c] = t.b.x;
  bs[kb][c + 1u] = t.b.y;
  bs[kb][c + 2u] = t.b.z;
  bs[kb][c + 3u] = t.b.w;
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

  var acc = 0.0f; // out[row0 + ty, col0 + tx]
  let tiles_k = (p.k + BK - 1u) / BK;
  var next = load(a_base, b_base, row0, col0, 0u, lid);
  for (var t = 0u; t < tiles_k; t++) {
    store(next, lid);
    workgroupBarrier();
    next = load(a_base, b_base, row0, col0, (t + 1u) * BK, lid);
    // 8 fma per iteration: llvmpipe stops a loop after 65535 iterations (docs/plan.md)
    for (var kk = 0u; kk < BK; kk += 8u) {
      acc = fma(as_[ty][kk], bs[kk][tx], acc);
      acc = fma(as_[ty][kk + 1u], bs[kk + 1u][tx], acc);
      acc = fma(as_[ty][kk + 2u], bs[kk + 2u][tx], acc);
      acc = fma(as_[ty][kk + 3u], bs[kk + 3u][tx], acc);
      acc = fma(as_[ty][kk + 4u], bs[kk + 4u][tx], acc);
      acc = fma(as_[ty][kk + 5u], bs[kk + 5u][tx], acc);
      acc = fma(as_[ty][kk + 6u], bs[kk + 6u][tx], acc);
      acc = fma(as_[ty][kk + 7u], bs[kk + 7u][tx], acc);
    }
    workgroupBarrier();
  }

  let r = row0 + ty;
  let col = col0 + tx;
  if (r < p.m && col < p.n) { out[bi * p.m * p.n + r * p.n + col] = acc; }
}
