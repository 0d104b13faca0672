// A bit-exact strided copy (transpose, permute, reshape-as-copy): out[i] = a[offset], where the
// result coordinates of i (shape d, rank 4) are dotted with the source strides s. Words move as
// u32 so NaN payloads and signed zeros survive unchanged.

override WG: u32 = 64u;

struct Params {
  n: u32, pad0: u32, pad1: u32, pad2: u32,
  d0: u32, d1: u32, d2: u32, d3: u32,
  s0: u32, s1: u32, s2: u32, s3: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  let c3 = i % p.d3;
  let r2 = i / p.d3;
  let c2 = r2 % p.d2;
  let r1 = r2 / p.d2;
  let c1 = r1 % p.d1;
  let c0 = r1 / p.d1;
  out[i] = a[c0 * p.s0 + c1 * p.s1 + c2 * p.s2 + c3 * p.s3];
}
