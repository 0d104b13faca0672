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

fn a_at(row_ok: bool, base: u32, k: u32) -> f32 {
  return select(0.0f, a[base + k], row_ok && k < p.k);
}

// Thread lid loads row (lid % 64) of the tile, k = k0 + (lid / 64) * 4 .. +4. Loads past the
// edges read 0 (out-of-range indices are clamped by WebGPU's robust access, then replaced).
fn load_a(a_base: u32, row0: u32, k0: u32, lid: u32) -> vec4<f32> {
  let r = row0 + lid % TILE;
  let ok = r < p.m;
  let base = a_base + r * p.k;
  let k = k0 + (lid / TILE) * 4u;
  return vec4<f32>(a_at(ok, base, k), a_at(ok, base, k + 1u), a_at(ok, base, k + 2u),
                   a_at(ok, base, k + 3u));
}

fn store_a(buf: u32, lid: u32, v: vec4<f32>) {
  let r = lid % TILE;
  let at = buf * BUF + ((lid / TILE) * 4u) * VEC_ROW + r / 4u;
  let c = r % 4u;
  as_[at][c] = v.x;
  as_[at + VEC_ROW][c] = v.y;
  as_[at + 2u * VEC_ROW][c] = v.z;
  as_[at + 3u * VEC_ROW][c] = v.w;
}

fn b_at(k_ok: bool, base: u32, c: u32) -> f32 {
  return select(0.0f, b[base + c], k_ok && c < p.n);
}

// Thread lid loads k = k0 + lid / 16, columns col0 + (lid % 16) * 4 .. +4.
fn load_b(b_base: u32, k0: u32, col0: u32, lid: u32) -> vec4<f32> {
  let k = k0 + lid / 16u;
  let ok = k < p.k;
  let base = b_base + k * p.n;
  let c = col0 + (lid % 16u) * 4u;
  return vec4<f32>(b_at(ok, base, c), b_at(ok, base, c + 1u), b_at(ok, base, c + 2u),
                   b_at(ok, base, c + 3u));
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

  var acc: array<vec4<f32>, 4>; // zero-initialized; acc[i]: row ty*4 + i

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

  // Constant indices only, so the accumulators stay in registers.
  let c_base = bi * p.m * p.n;
  let r0 = row0 + ty * 4u;
  let c0 = col0 + tx * 4u;
  store4(c_base, r0, c0, acc[0]);
  store4(c_base, r0 + 1u, c0, acc[1]);
  store4(c_base, r0 + 2u, c0, acc[2]);
  store4(c_base, r0 + 3u, c0, acc[3]);
}
