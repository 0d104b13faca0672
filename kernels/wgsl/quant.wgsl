// Block-quantized weights on WebGPU / wgpu: ggml's q4_k, q6_k, q8_0 and q4_0 blocks decoded in
// the kernel (entry points `dequantize`, `dequantize_rows`, `matmul_q4k`, `matmul_q6k`, their
// `_vec` GEMVs and `matmul_q32` for the 32-value kinds: a @ w.T, the float weight is never
// stored) and `matmul_fixed` (int32 fixed-point operands, 64-bit sums as (lo, hi) u32 pairs:
// WGSL has no i64). The rules are docs/protocol.md's; the numpy twin is pylib/gpulab/quant.py.
//
// A quantized tensor is its blocks' bytes packed 4 to a little-endian u32 (the last word
// zero-padded). q4_k blocks are 144 bytes (36 words, word-aligned); q6_k blocks are 210 bytes,
// q8_0 34 and q4_0 18, so every other block starts on a half word: those kinds read bytes and
// 16-bit halves by address.
//
// Decoding is exact: f16 -> f32 by bits (subnormals and -0 kept, no flush), then products of a
// f16 by small integers, which fit in f32's 24 bits, so a fused multiply-add gives the same bits.

struct Params {
  m: u32, n: u32, k: u32, nb: u32,
  groups_n: u32, batch: u32, b1: u32, a_s0: u32,
  a_s1: u32, b_s0: u32, b_s1: u32, frac: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// matmul_q4k: x as vec4s; matmul_q6k: x as floats; dequantize: the weight; matmul_fixed: a
@group(0) @binding(1) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(1) var<storage, read> wd: array<u32>;
@group(0) @binding(1) var<storage, read> fa: array<f32>;
// matmul_q*: the weight; dequantize: its output; matmul_fixed: b
@group(0) @binding(2) var<storage, read> wq: array<u32>;
@group(0) @binding(2) var<storage, read_write> yd: array<f32>;
@group(0) @binding(2) var<storage, read> fb: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// dequantize_rows: the row indices (binding 2) and the plan's check words (binding 4)
@group(0) @binding(2) var<storage, read> ridx: array<i32>;
@group(0) @binding(4) var<storage, read_write> qerr: array<atomic<u32>>;

// ---- decoding, shared by every entry point (values in, no buffer access) ----

// An IEEE binary16 (low 16 bits of h) as f32, exactly.
fn half_f32(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 31u;
  let m = h & 1023u;
  if (e == 0u) { // zero or subnormal: m * 2^-24, a normal f32 unless m = 0
    return bitcast<f32>(bitcast<u32>(f32(m) * 5.9604644775390625e-8f) | s);
  }
  if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

fn byte_of(word: u32, i: u32) -> u32 { return (word >> (i * 8u)) & 0xffu; }

// Scale and min of q4_k sub-block j from the 12 packed bytes (words s0, s1, s2): ggml's
// get_scale_min_k4.
fn q4k_scale_min(s0: u32, s1: u32, s2: u32, j: u32) -> vec2<u32> {
  if (j < 4u) { return vec2<u32>(byte_of(s0, j) & 63u, byte_of(s1, j) & 63u); }
  let i = j - 4u;
  return vec2<u32>((byte_of(s2, i) & 15u) | ((byte_of(s0, i) >> 6u) << 4u),
                   (byte_of(s2, i) >> 4u) | ((byte_of(s1, i) >> 6u) << 4u));
}

// f32(d * sc) and f32(dmin * m) of q4_k sub-block j: y = a.x * q - a.y.
fn q4k_coef(head: u32, s0: u32, s1: u32, s2: u32, j: u32) -> vec2<f32> {
  let sm = q4k_scale_min(s0, s1, s2, j);
  return vec2<f32>(half_f32(head & 0xffffu) * f32(sm.x), half_f32(head >> 16u) * f32(sm.y));
}

fn sext8(b: u32) -> i32 { return bitcast<i32>(b << 24u) >> 24u; }

// ---- dequantize: one value per thread ----

fn wd_byte(o: u32) -> u32 { return byte_of(wd[o >> 2u], o & 3u); }

fn q4k_value(i: u32) -> f32 {
  let wb = (i / 256u) * 36u;
  let j = i % 256u;
  let sub = j / 32u;
  let l = j % 32u;
  let c = q4k_coef(wd[wb], wd[wb + 1u], wd[wb + 2u], wd[wb + 3u], sub);
  let qb = byte_of(wd[wb + 4u + (sub / 2u) * 8u + l / 4u], l % 4u);
  let q = select(qb & 15u, qb >> 4u, (sub & 1u) == 1u);
  return c.x * f32(q) - c.y;
}

fn q6k_value(i: u32) -> f32 {
  let base = (i / 256u) * 210u;
  let j = i % 256u;
  let h = j >> 7u;
  let t = (j >> 5u) & 3u;
  let l = j & 31u;
  let ql = wd_byte(base + h * 64u + l + (t & 1u) * 32u);
  let nib = select(ql & 15u, ql >> 4u, t >= 2u);
  let qh = wd_byte(base + 128u + h * 32u + l);
  let q = i32(nib | (((qh >> (2u * t)) & 3u) << 4u)) - 32;
  let sc = sext8(wd_byte(base + 192u + h * 8u + l / 16u + 2u * t));
  let d = half_f32(wd_byte(base + 208u) | (wd_byte(base + 209u) << 8u));
  return (d * f32(sc)) * f32(q);
}

// q8_0: 34 bytes per 32 values, y = d * q (q an int8)
fn q8_0_value(i: u32) -> f32 {
  let base = (i / 32u) * 34u;
  let d = half_f32(wd_byte(base) | (wd_byte(base + 1u) << 8u));
  return d * f32(sext8(wd_byte(base + 2u + i % 32u)));
}

// q4_0: 18 bytes per 32 values, y = d * (q - 8); byte j holds values j (low) and j + 16 (high)
fn q4_0_value(i: u32) -> f32 {
  let base = (i / 32u) * 18u;
  let j = i % 32u;
  let b = wd_byte(base + 2u + j % 16u);
  let q = select(b & 15u, b >> 4u, j >= 16u);
  let d = half_f32(wd_byte(base) | (wd_byte(base + 1u) << 8u));
  return d * f32(i32(q) - 8);
}

// value i of the weight, kind 0 q4_k, 1 q6_k, 2 q8_0, 3 q4_0
fn quant_value(kind: u32, i: u32) -> f32 {
  switch (kind) {
    case 0u: { return q4k_value(i); }
    case 1u: { return q6k_value(i); }
    case 2u: { return q8_0_value(i); }
    default: { return q4_0_value(i); }
  }
}

// p.m: the value count, p.n: the kind (quant_value's)
@compute @workgroup_size(64)
fn dequantize(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * 64u + lid;
  if (i >= p.m) { return; }
  yd[i] = quant_value(p.n, i);
}

// ---- dequantize_rows: out[r, j] = value j of row idx[r] of the weight [N, K] ----
// p.m: the output's value count (M * K), p.n: the kind, p.k: K, p.nb: N, p.groups_n: the
// node's check word. An index outside 0..N-1 records its position (the smallest, atomicMin) and
// writes 0 (the run then fails with BACKEND: the programs read the check words).
@compute @workgroup_size(64)
fn dequantize_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * 64u + lid;
  if (i >= p.m) { return; }
  let r = i / p.k;
  let row = ridx[r];
  if (row < 0 || u32(row) >= p.nb) {
    atomicMin(&qerr[p.groups_n], r);
    out[i] = 0.0;
    return;
  }
  out[i] = quant_value(p.n, u32(row) * p.k + i % p.k);
}

// ---- matmul_q: out[r, c] = sum_k x[r, k] * w[c, k] ----
// (every entry point reads the same 12-word Params)
// A workgroup of 256 threads = 8 groups of 32 lanes; SPLIT groups (an override: 1, 2, 4 or 8)
// share one weight row (output column), so a workgroup computes 8 / SPLIT columns for up to
// MB rows of x. Group `part` of a row walks the row's blocks part, part + SPLIT, ... (a k-split:
// more memory requests in flight, a shorter chain per thread); its 32 lanes split each
// 256-value block (8 values each, the block's quant bytes read as 32 consecutive words). The
// row's 32 * SPLIT partial sums are then added as a tree in workgroup memory. So the weight is
// read once per MB rows of x, in u32 words, and a batch-1 product is a GEMV.
// Order: lane-sequential over its blocks, then the tree (deterministic; within the matmul
// class, whose bound holds for any order of the K additions).

override SPLIT: u32 = 1u;
const MB: u32 = 8u;
var<workgroup> partial: array<f32, 2048>; // [MB][256 threads]

fn reduce_and_store(acc: array<f32, 8>, lid: u32, col: u32, m0: u32, rows: u32) {
  for (var r = 0u; r < MB; r++) { partial[r * 256u + lid] = acc[r]; }
  workgroupBarrier();
  let lane = lid % (32u * SPLIT); // the thread's place among its row's 32 * SPLIT
  for (var s = 16u * SPLIT; s > 0u; s = s / 2u) {
    if (lane < s) {
      for (var r = 0u; r < MB; r++) { partial[r * 256u + lid] += partial[r * 256u + lid + s]; }
    }
    workgroupBarrier();
  }
  if (lane == 0u && col < p.n) {
    for (var r = 0u; r < rows; r++) { out[(m0 + r) * p.n + col] = partial[r * 256u + lid]; }
  }
}

// p.m: rows of x (all batch axes), p.n: N, p.k: K, p.nb: K / 256, p.groups_n:
// ceil(N / (8 / SPLIT))
@compute @workgroup_size(256)
fn matmul_q4k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let col = (g % p.groups_n) * (8u / SPLIT) + (lid / 32u) / SPLIT;
  let part = (lid / 32u) % SPLIT;
  let m0 = (g / p.groups_n) * MB;
  let rows = min(MB, p.m - m0);
  let lane = lid % 32u;
  let pair = lane / 8u;          // sub-blocks 2 pair (low nibbles) and 2 pair + 1 (high)
  let word = pair * 8u + lane % 8u;
  let k_in = pair * 64u + (lane % 8u) * 4u; // the lane's first value in the block
  var acc: array<f32, 8>;
  if (col < p.n) {
    for (var b = part; b < p.nb; b += SPLIT) {
      let wb = (col * p.nb + b) * 36u;
      let head = wq[wb];
      let s0 = wq[wb + 1u];
      let s1 = wq[wb + 2u];
      let s2 = wq[wb + 3u];
      let qw = wq[wb + 4u + word];
      let lo = q4k_coef(head, s0, s1, s2, 2u * pair);
      let hi = q4k_coef(head, s0, s1, s2, 2u * pair + 1u);
      let ql = vec4<f32>(vec4<u32>(qw, qw >> 8u, qw >> 16u, qw >> 24u) & vec4<u32>(15u));
      let qh = vec4<f32>(vec4<u32>(qw >> 4u, qw >> 12u, qw >> 20u, qw >> 28u) & vec4<u32>(15u));
      let ylo = lo.x * ql - vec4<f32>(lo.y);
      let yhi = hi.x * qh - vec4<f32>(hi.y);
      let k0 = b * 256u + k_in;
      for (var r = 0u; r < MB; r++) {
        if (r < rows) {
          let at = ((m0 + r) * p.k + k0) / 4u;
          let xa = x4[at];
          let xb = x4[at + 8u];
          var s = acc[r];
          s = s + xa.x * ylo.x; s = s + xa.y * ylo.y; s = s + xa.z * ylo.z; s = s + xa.w * ylo.w;
          s = s + xb.x * yhi.x; s = s + xb.y * yhi.y; s = s + xb.z * yhi.z; s = s + xb.w * yhi.w;
          acc[r] = s;
        }
      }
    }
  }
  reduce_and_store(acc, lid, col, m0, rows);
}

fn wq_byte(o: u32) -> u32 { return byte_of(wq[o >> 2u], o & 3u); }
// 16 bits at an even byte address
fn wq_half(o: u32) -> u32 { return (wq[o >> 2u] >> ((o & 2u) * 8u)) & 0xffffu; }

@compute @workgroup_size(256)
fn matmul_q6k(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let col = (g % p.groups_n) * (8u / SPLIT) + (lid / 32u) / SPLIT;
  let part = (lid / 32u) % SPLIT;
  let m0 = (g / p.groups_n) * MB;
  let rows = min(MB, p.m - m0);
  let lane = lid % 32u;
  let h = lane / 16u;            // the block's half (128 values)
  let l0 = (lane % 16u) * 2u;    // values l0, l0 + 1 of each of its 4 quarters
  var acc: array<f32, 8>;
  if (col < p.n) {
    for (var b = part; b < p.nb; b += SPLIT) {
      let base = (col * p.nb + b) * 210u;
      let qla = wq_half(base + h * 64u + l0);        // quarters 0 (low) and 2 (high)
      let qlb = wq_half(base + h * 64u + 32u + l0);  // quarters 1 and 3
      let qh = wq_half(base + 128u + h * 32u + l0);
      let d = half_f32(wq_half(base + 208u));
      let sb = base + 192u + h * 8u + l0 / 16u;
      var y: array<f32, 8>; // [quarter * 2 + e]
      for (var t = 0u; t < 4u; t++) {
        let dsc = d * f32(sext8(wq_byte(sb + 2u * t)));
        let src = select(qla, qlb, (t & 1u) == 1u) >> select(0u, 4u, t >= 2u);
        for (var e = 0u; e < 2u; e++) {
          let nib = (src >> (8u * e)) & 15u;
          let hi2 = (qh >> (8u * e + 2u * t)) & 3u;
          y[t * 2u + e] = dsc * f32(i32(nib | (hi2 << 4u)) - 32);
        }
      }
      let k0 = b * 256u + h * 128u + l0;
      for (var r = 0u; r < MB; r++) {
        if (r < rows) {
          let at = (m0 + r) * p.k + k0;
          var s = acc[r];
          for (var t = 0u; t < 4u; t++) {
            s = s + xs[at + t * 32u] * y[t * 2u];
            s = s + xs[at + t * 32u + 1u] * y[t * 2u + 1u];
          }
          acc[r] = s;
        }
      }
    }
  }
  reduce_and_store(acc, lid, col, m0, rows);
}

// ---- matmul_q4k_vec: x of 1 to 8 rows (a GEMV; llama.cpp's mul_mat_vec layout) ----
// A workgroup of 128 threads computes 128 / QL weight rows (output columns) for all MR rows of
// x (MR = M, an override: 1..8). QL lanes (an override: 8, 16, 32 or 64) share a weight row and
// 8 lanes share a block: lane `sub` of a block reads its 16 header bytes and quant bytes
// 16 sub .. 16 sub + 15 as two vec4<u32> loads: 32 values, 16 consecutive ones of sub-block
// 2 (sub / 2) in the low nibbles and the same 16 of sub-block 2 (sub / 2) + 1 in the high ones.
// QL / 8 blocks of a row are read at once, UNROLL (1 or 2) times that per loop turn (both
// blocks' loads first: more bytes in flight). Each block's values are decoded once and used
// for every row of x; the QL partial sums of a row are then added as a tree in workgroup
// memory (log2 QL barriers). No arrays in function memory (drivers put those in local memory):
// the 32 values are a struct of vec4s, the MR sums a struct of scalars, the rows past MR
// compiled out (MR is a pipeline constant). Order: each lane sums its 32 values in ascending
// k (the low 16, then the high 16), its blocks in ascending order, then the tree.

override QL: u32 = 16u;
override MR: u32 = 1u;
override UNROLL: u32 = 1u;
const VG: u32 = 128u; // threads of a matmul_q4k_vec workgroup
var<workgroup> vred: array<f32, 1024>; // [MR <= 8][VG]
@group(0) @binding(2) var<storage, read> wq4: array<vec4<u32>>; // q4_k blocks: 9 vec4 each

struct Y32 { // a lane's 32 decoded values: lo (16 of sub-block 2c), hi (16 of 2c + 1)
  lo0: vec4<f32>, lo1: vec4<f32>, lo2: vec4<f32>, lo3: vec4<f32>,
  hi0: vec4<f32>, hi1: vec4<f32>, hi2: vec4<f32>, hi3: vec4<f32>,
}

struct Rows8 { r0: f32, r1: f32, r2: f32, r3: f32, r4: f32, r5: f32, r6: f32, r7: f32 }

fn nib_lo(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}

fn nib_hi(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}

// the lane's 32 values of a block (header h, its 16 quant bytes q, sub-block pair c)
fn q4k_y32(h: vec4<u32>, q: vec4<u32>, c: u32) -> Y32 {
  let lo = q4k_coef(h.x, h.y, h.z, h.w, 2u * c);
  let hi = q4k_coef(h.x, h.y, h.z, h.w, 2u * c + 1u);
  let ml = vec4<f32>(lo.y);
  let mh = vec4<f32>(hi.y);
  return Y32(lo.x * nib_lo(q.x) - ml, lo.x * nib_lo(q.y) - ml, lo.x * nib_lo(q.z) - ml,
             lo.x * nib_lo(q.w) - ml, hi.x * nib_hi(q.x) - mh, hi.x * nib_hi(q.y) - mh,
             hi.x * nib_hi(q.z) - mh, hi.x * nib_hi(q.w) - mh);
}

fn dot4_into(s: f32, x: vec4<f32>, y: vec4<f32>) -> f32 {
  return (((s + x.x * y.x) + x.y * y.y) + x.z * y.z) + x.w * y.w;
}

// s plus the lane's 32 products with one row of x: its values lo0, lo1, ... hi3 are at vec4
// indices at + [0, 1, a, a + 1, b, b + 1, b + a, b + a + 1] (q4_k: a 2, b 8; q6_k: a 8, b 16)
fn dot32(s0: f32, at: u32, a: u32, b: u32, y: Y32) -> f32 {
  var s = dot4_into(s0, x4[at], y.lo0);
  s = dot4_into(s, x4[at + 1u], y.lo1);
  s = dot4_into(s, x4[at + a], y.lo2);
  s = dot4_into(s, x4[at + a + 1u], y.lo3);
  s = dot4_into(s, x4[at + b], y.hi0);
  s = dot4_into(s, x4[at + b + 1u], y.hi1);
  s = dot4_into(s, x4[at + b + a], y.hi2);
  return dot4_into(s, x4[at + b + a + 1u], y.hi3);
}

// every row of x against one block's 32 values (row r's at vec4 index at + r * kq)
fn rows_dot32(acc: Rows8, at: u32, kq: u32, a: u32, b: u32, y: Y32) -> Rows8 {
  var o = acc;
  o.r0 = dot32(o.r0, at, a, b, y);
  if (MR > 1u) { o.r1 = dot32(o.r1, at + kq, a, b, y); }
  if (MR > 2u) { o.r2 = dot32(o.r2, at + 2u * kq, a, b, y); }
  if (MR > 3u) { o.r3 = dot32(o.r3, at + 3u * kq, a, b, y); }
  if (MR > 4u) { o.r4 = dot32(o.r4, at + 4u * kq, a, b, y); }
  if (MR > 5u) { o.r5 = dot32(o.r5, at + 5u * kq, a, b, y); }
  if (MR > 6u) { o.r6 = dot32(o.r6, at + 6u * kq, a, b, y); }
  if (MR > 7u) { o.r7 = dot32(o.r7, at + 7u * kq, a, b, y); }
  return o;
}

fn row_of(a: Rows8, r: u32) -> f32 {
  switch (r) {
    case 0u: { return a.r0; }
    case 1u: { return a.r1; }
    case 2u: { return a.r2; }
    case 3u: { return a.r3; }
    case 4u: { return a.r4; }
    case 5u: { return a.r5; }
    case 6u: { return a.r6; }
    default: { return a.r7; }
  }
}

// the QL lanes of each weight row add their sums as a tree; lane 0 stores the MR results
fn vec_reduce_store(acc: Rows8, lid: u32, t: u32, col: u32) {
  for (var r = 0u; r < MR; r++) { vred[r * VG + lid] = row_of(acc, r); }
  workgroupBarrier();
  for (var s = QL / 2u; s > 0u; s = s / 2u) {
    if (t < s) {
      for (var r = 0u; r < MR; r++) { vred[r * VG + lid] += vred[r * VG + lid + s]; }
    }
    workgroupBarrier();
  }
  if (t == 0u && col < p.n) {
    for (var r = 0u; r < MR; r++) { out[r * p.n + col] = vred[r * VG + lid]; }
  }
}

@compute @workgroup_size(128)
fn matmul_q4k_vec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let col = g * (VG / QL) + lid / QL;
  let t = lid % QL;
  let sub = t % 8u;
  let c = sub / 2u;                        // sub-blocks 2c (low nibbles) and 2c + 1 (high)
  let k_in = c * 64u + (sub % 2u) * 16u;   // the lane's first value in the block
  let step = QL / 8u;                      // blocks of the row read at once
  let kq = p.k / 4u;
  var acc = Rows8(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  if (col < p.n) {
    let row = col * p.nb;
    for (var b = t / 8u; b < p.nb; b += step * UNROLL) {
      let v0 = (row + b) * 9u;
      let h0 = wq4[v0];
      let q0 = wq4[v0 + 1u + sub];
      if (UNROLL == 2u) { // the next block's loads before this block's arithmetic
        let b1 = b + step;
        let v1 = (row + min(b1, p.nb - 1u)) * 9u;
        let h1 = wq4[v1];
        let q1 = wq4[v1 + 1u + sub];
        acc = rows_dot32(acc, (b * 256u + k_in) / 4u, kq, 2u, 8u, q4k_y32(h0, q0, c));
        if (b1 < p.nb) {
          acc = rows_dot32(acc, (b1 * 256u + k_in) / 4u, kq, 2u, 8u, q4k_y32(h1, q1, c));
        }
      } else {
        acc = rows_dot32(acc, (b * 256u + k_in) / 4u, kq, 2u, 8u, q4k_y32(h0, q0, c));
      }
    }
  }
  vec_reduce_store(acc, lid, t, col);
}

// ---- matmul_q6k_vec: the same GEMV for q6_k's 210-byte blocks ----
// 8 lanes share a block: lane `sub` takes half hh = sub / 4 (128 values) and positions
// l0 .. l0 + 7 (l0 = 8 (sub % 4)) of its 4 quarters t: 32 values, k = 128 hh + 32 t + l, from
// 8 bytes of ql at 64 hh + l0, 8 at 64 hh + 32 + l0, 8 of qh at 128 + 32 hh + l0 and the 8
// scale bytes at 192 + 8 hh, each read as two u32 words by byte address (every other block
// starts on a half word), and d. Same order and reduction as matmul_q4k_vec.

// 8 bytes at an even byte address o of the weight, as two words
fn wq_pair(o: u32) -> vec2<u32> {
  let w = o >> 2u;
  let w0 = wq[w];
  let w1 = wq[w + 1u];
  if ((o & 2u) == 0u) { return vec2<u32>(w0, w1); }
  let w2 = wq[w + 2u];
  return vec2<u32>((w0 >> 16u) | (w1 << 16u), (w1 >> 16u) | (w2 << 16u));
}

// the 4 bytes of a word as floats, less 32
fn q6_bytes(q: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(q, q >> 8u, q >> 16u, q >> 24u) & vec4<u32>(255u)) - vec4<f32>(32.0);
}

// quarter t's 4 values of word e: (nibbles of ql | 2 bits of qh << 4) - 32, times f32(d * sc)
fn q6_quarter(ql: u32, qh: u32, t: u32, dsc: f32) -> vec4<f32> {
  let nib = (ql >> (4u * (t / 2u))) & 0x0f0f0f0fu;
  return dsc * q6_bytes(nib | (((qh >> (2u * t)) & 0x03030303u) << 4u));
}

fn q6k_y32(base: u32, hh: u32, l0: u32) -> Y32 {
  let qa = wq_pair(base + hh * 64u + l0);        // quarters 0 (low nibbles) and 2 (high)
  let qb = wq_pair(base + hh * 64u + 32u + l0);  // quarters 1 and 3
  let qh = wq_pair(base + 128u + hh * 32u + l0);
  let sc = wq_pair(base + 192u + hh * 8u);        // scales 8 hh .. 8 hh + 7
  let d = half_f32(wq_half(base + 208u));
  let j = (l0 / 16u) * 8u;                        // the byte of scale 8 hh + l0 / 16 + 2t
  let d0 = d * f32(sext8((sc.x >> j) & 255u));
  let d1 = d * f32(sext8((sc.x >> (j + 16u)) & 255u));
  let d2 = d * f32(sext8((sc.y >> j) & 255u));
  let d3 = d * f32(sext8((sc.y >> (j + 16u)) & 255u));
  return Y32(q6_quarter(qa.x, qh.x, 0u, d0), q6_quarter(qa.y, qh.y, 0u, d0),
             q6_quarter(qb.x, qh.x, 1u, d1), q6_quarter(qb.y, qh.y, 1u, d1),
             q6_quarter(qa.x, qh.x, 2u, d2), q6_quarter(qa.y, qh.y, 2u, d2),
             q6_quarter(qb.x, qh.x, 3u, d3), q6_quarter(qb.y, qh.y, 3u, d3));
}

@compute @workgroup_size(128)
fn matmul_q6k_vec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let col = g * (VG / QL) + lid / QL;
  let t = lid % QL;
  let sub = t % 8u;
  let hh = sub / 4u;
  let l0 = (sub % 4u) * 8u;
  let k_in = hh * 128u + l0;
  let step = QL / 8u;
  let kq = p.k / 4u;
  var acc = Rows8(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  if (col < p.n) {
    let row = col * p.nb;
    for (var b = t / 8u; b < p.nb; b += step) {
      let y = q6k_y32((row + b) * 210u, hh, l0);
      acc = rows_dot32(acc, (b * 256u + k_in) / 4u, kq, 8u, 16u, y);
    }
  }
  vec_reduce_store(acc, lid, t, col);
}

// ---- matmul_q32: q8_0 / q4_0 weights (32-value blocks) against x of any rows ----
// A workgroup of 128 threads computes 128 / QL weight rows (output columns) for up to 8 rows of
// x (MR: min(M, 8), a pipeline constant; the row groups of a larger x are further workgroups,
// each reading the weight again: batch-1 decoding is the case this kernel is for). QL lanes (an
// override: 8, 16 or 32) share a weight row and walk its quarter blocks (8 values each: 8 bytes
// of q8_0, or 8 bytes of q4_0 and their low or high nibbles) in steps of QL; every quarter is
// decoded once and used for every row of x, then the QL partial sums of a row are added as a
// tree in workgroup memory. Order: each lane sums its quarters in ascending order (8 products
// each, ascending k), then the tree. KIND32: 0 q8_0 (34-byte blocks), 1 q4_0 (18-byte blocks).

override KIND32: u32 = 0u;

// the 4 bytes of a word as signed values
fn sbytes(w: u32) -> vec4<f32> {
  return vec4<f32>(f32(sext8(w & 255u)), f32(sext8((w >> 8u) & 255u)),
                   f32(sext8((w >> 16u) & 255u)), f32(sext8(w >> 24u)));
}

// s plus 8 products: x's 8 values at vec4 index at (two vec4s) with lo, hi
fn dot8_into(s: f32, at: u32, lo: vec4<f32>, hi: vec4<f32>) -> f32 {
  return dot4_into(dot4_into(s, x4[at], lo), x4[at + 1u], hi);
}

// every row of x (row r's 8 values at vec4 index at + r * kq) against one quarter's values
fn rows_dot8(acc: Rows8, at: u32, kq: u32, rows: u32, lo: vec4<f32>, hi: vec4<f32>) -> Rows8 {
  var o = acc;
  o.r0 = dot8_into(o.r0, at, lo, hi);
  if (MR > 1u && rows > 1u) { o.r1 = dot8_into(o.r1, at + kq, lo, hi); }
  if (MR > 2u && rows > 2u) { o.r2 = dot8_into(o.r2, at + 2u * kq, lo, hi); }
  if (MR > 3u && rows > 3u) { o.r3 = dot8_into(o.r3, at + 3u * kq, lo, hi); }
  if (MR > 4u && rows > 4u) { o.r4 = dot8_into(o.r4, at + 4u * kq, lo, hi); }
  if (MR > 5u && rows > 5u) { o.r5 = dot8_into(o.r5, at + 5u * kq, lo, hi); }
  if (MR > 6u && rows > 6u) { o.r6 = dot8_into(o.r6, at + 6u * kq, lo, hi); }
  if (MR > 7u && rows > 7u) { o.r7 = dot8_into(o.r7, at + 7u * kq, lo, hi); }
  return o;
}

// vec_reduce_store for rows m0 .. m0 + rows - 1
fn vec_reduce_store_rows(acc: Rows8, lid: u32, t: u32, col: u32, m0: u32, rows: u32) {
  for (var r = 0u; r < MR; r++) { vred[r * VG + lid] = row_of(acc, r); }
  workgroupBarrier();
  for (var s = QL / 2u; s > 0u; s = s / 2u) {
    if (t < s) {
      for (var r = 0u; r < MR; r++) { vred[r * VG + lid] += vred[r * VG + lid + s]; }
    }
    workgroupBarrier();
  }
  if (t == 0u && col < p.n) {
    for (var r = 0u; r < rows; r++) { out[(m0 + r) * p.n + col] = vred[r * VG + lid]; }
  }
}

// p.m: rows of x (all batch axes), p.n: N, p.k: K, p.nb: K / 32, p.groups_n: ceil(N / (VG / QL))
@compute @workgroup_size(128)
fn matmul_q32(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let col = (g % p.groups_n) * (VG / QL) + lid / QL;
  let m0 = (g / p.groups_n) * 8u;
  let rows = min(MR, p.m - m0);
  let t = lid % QL;
  let kq = p.k / 4u;
  let bb = select(18u, 34u, KIND32 == 0u); // bytes per block
  var acc = Rows8(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  if (col < p.n) {
    let row = col * p.nb * bb;
    for (var s = t; s < p.nb * 4u; s += QL) {
      let b = s / 4u;
      let part = s % 4u;
      let base = row + b * bb;
      let d = half_f32(wq_half(base));
      var lo: vec4<f32>;
      var hi: vec4<f32>;
      if (KIND32 == 0u) {
        let w = wq_pair(base + 2u + part * 8u);
        lo = d * sbytes(w.x);
        hi = d * sbytes(w.y);
      } else { // quarters 0, 1: low nibbles of bytes 0..15; quarters 2, 3: their high nibbles
        let w = wq_pair(base + 2u + (part % 2u) * 8u);
        let sh = (part / 2u) * 4u;
        lo = d * (nib_lo(w.x >> sh) - vec4<f32>(8.0));
        hi = d * (nib_lo(w.y >> sh) - vec4<f32>(8.0));
      }
      acc = rows_dot8(acc, (m0 * p.k + b * 32u + part * 8u) / 4u, kq, rows, lo, hi);
    }
  }
  vec_reduce_store_rows(acc, lid, t, col, m0, rows);
}

// ---- matmul_fixed: one output per thread, products summed as 64-bit (lo, hi) pairs ----

// round-half-even(x * 2^frac) saturated to int32, NaN -> 0, from the bits (no float rounding
// mode, no flush-to-zero can change it)
fn to_fixed(x: f32, frac: u32) -> i32 {
  let bits = bitcast<u32>(x);
  let e = (bits >> 23u) & 255u;
  let mant = bits & 0x7fffffu;
  let neg = (bits >> 31u) == 1u;
  if ((e == 255u && mant != 0u) || e == 0u) { return 0; }
  let m = mant | 0x800000u;
  let sh = i32(e) - 150 + i32(frac);
  if (sh >= 8) { return select(2147483647, -2147483647 - 1, neg); }
  var mag = 0u;
  if (sh >= 0) {
    mag = m << u32(sh);
  } else if (sh >= -24) {
    let r = u32(-sh);
    mag = m >> r;
    let rem = m & ((1u << r) - 1u);
    let half = 1u << (r - 1u);
    if (rem > half || (rem == half && (mag & 1u) == 1u)) { mag = mag + 1u; }
  }
  return select(bitcast<i32>(mag), -bitcast<i32>(mag), neg);
}

fn neg64(v: vec2<u32>) -> vec2<u32> {
  let lo = ~v.x + 1u;
  return vec2<u32>(lo, ~v.y + select(0u, 1u, lo == 0u));
}

// the exact product of two int32 as a two's complement (lo, hi) pair, by 16-bit halves
fn mul64(a: i32, b: i32) -> vec2<u32> {
  let ua = bitcast<u32>(abs(a)); // abs(-2^31) is -2^31: as u32 its magnitude 2^31
  let ub = bitcast<u32>(abs(b));
  let a0 = ua & 0xffffu;
  let a1 = ua >> 16u;
  let b0 = ub & 0xffffu;
  let b1 = ub >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  let v = vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
  return select(v, neg64(v), (a < 0) != (b < 0));
}

fn add64(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
  let lo = x.x + y.x;
  return vec2<u32>(lo, x.y + y.y + select(0u, 1u, lo < x.x));
}

// the int64 sum rounded once to 24 bits (half to even), scaled by 2^-2frac through the exponent
fn fixed_to_f32(s: vec2<u32>, frac: u32) -> f32 {
  let neg = (s.y >> 31u) == 1u;
  let u = select(s, neg64(s), neg);
  if (u.x == 0u && u.y == 0u) { return 0.0f; }
  // top: the index of the leading 1 bit
  var top = select(31u - countLeadingZeros(u.x), 63u - countLeadingZeros(u.y), u.y != 0u);
  var mant: u32;
  if (top <= 23u) {
    mant = u.x << (23u - top);
  } else {
    let r = top - 23u; // 1..40 bits dropped
    var q: u32;
    var rem = vec2<u32>(0u, 0u);
    var half = vec2<u32>(0u, 0u);
    if (r < 32u) {
      q = (u.x >> r) | (u.y << (32u - r));
      rem.x = u.x & ((1u << r) - 1u);
      half.x = 1u << (r - 1u);
    } else {
      let r2 = r - 32u;
      q = u.y >> r2;
      rem = vec2<u32>(u.x, u.y & ((1u << r2) - 1u));
      half = select(vec2<u32>(0u, 1u << (r2 - 1u)), vec2<u32>(0x80000000u, 0u), r2 == 0u);
    }
    let gt = rem.y > half.y || (rem.y == half.y && rem.x > half.x);
    let eq = rem.y == half.y && rem.x == half.x;
    if (gt || (eq && (q & 1u) == 1u)) { q = q + 1u; }
    if (q == 0x1000000u) { q = q >> 1u; top = top + 1u; }
    mant = q;
  }
  let bits = select(0u, 0x80000000u, neg) | ((top + 127u - 2u * frac) << 23u) | (mant & 0x7fffffu);
  return bitcast<f32>(bits);
}

// p as matmul.wgsl's (m, n, k, batch axes and strides) with p.frac = frac_bits
@compute @workgroup_size(64)
fn matmul_fixed(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * 64u + lid;
  let per = p.m * p.n;
  if (i >= per * p.batch) { return; }
  let bi = i / per;
  let r = (i % per) / p.n;
  let c = i % p.n;
  let a_base = (bi / p.b1) * p.a_s0 + (bi % p.b1) * p.a_s1 + r * p.k;
  let b_base = (bi / p.b1) * p.b_s0 + (bi % p.b1) * p.b_s1 + c;
  var acc = vec2<u32>(0u, 0u);
  for (var kk = 0u; kk < p.k; kk++) {
    acc = add64(acc, mul64(to_fixed(fa[a_base + kk], p.frac), to_fixed(fb[b_base + kk * p.n], p.frac)));
  }
  out[i] = fixed_to_f32(acc, p.frac);
}
