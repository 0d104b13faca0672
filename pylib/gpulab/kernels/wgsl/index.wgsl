// The protocol-v4 selection ops (docs/protocol.md "The v4 selection ops"), on 32-bit words of
// float32 or int32 data: one kernel, the pass chosen by the OP override.
//   OP 0 read:   out[i] = a[base + c . s]             (slice; the copy pass of slice_scatter)
//   OP 1 write:  out[tbase + c . t] = a[i]            (slice_scatter's and concat's and pad's
//                                                      placing pass; c over a's shape)
//   OP 2 fill:   out[i] = value                       (pad's first pass)
//   OP 3 gather: out[i] = a[c . s with c[axis] -> idx[c . t]]   (index_select, gather)
//   OP 4 add:    out[i] = a[i] + src[..] for every position q along idx's axis, in ascending q,
//                whose idx equals c[axis]              (index_add, scatter_add)
// c is the coordinate vector of element i in the domain shape d (rank 4, padded). OP 4 is one
// invocation per output element walking the indices in order: no atomics on data, so the sum
// is the protocol's sequential one, bit for bit, on every device. An index outside 0..size-1
// is never read through: the read is clamped (OP 3) or skipped (OP 4) and the smallest such
// position in idx is recorded with atomicMin in err[slot] (0xffffffff: none), which the
// executors read back with the outputs and turn into BACKEND.

override WG: u32 = 64u;
override OP: u32 = 0u;
override FLOAT: u32 = 1u;  // OP 4: 1 float32 additions, 0 int32 (wrapping)

// Scalar words only (the packers write u32/f32 words); the vectors are rebuilt below: d the
// domain shape, s / t / u signed strides (two's complement words), lim idx's extents.
struct Params {
  n: u32, base: u32, axis: u32, size: u32,
  d0: u32, d1: u32, d2: u32, d3: u32,
  s0: u32, s1: u32, s2: u32, s3: u32,
  t0: u32, t1: u32, t2: u32, t3: u32,
  u0: u32, u1: u32, u2: u32, u3: u32,
  l0: u32, l1: u32, l2: u32, l3: u32,
  value: u32, tbase: u32, slot: u32, m: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> idx: array<i32>;
@group(0) @binding(3) var<storage, read> src: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> err: array<atomic<u32>>;

fn dims() -> vec4<u32> { return vec4<u32>(p.d0, p.d1, p.d2, p.d3); }
fn sv() -> vec4<i32> { return bitcast<vec4<i32>>(vec4<u32>(p.s0, p.s1, p.s2, p.s3)); }
fn tv() -> vec4<i32> { return bitcast<vec4<i32>>(vec4<u32>(p.t0, p.t1, p.t2, p.t3)); }
fn uv() -> vec4<i32> { return bitcast<vec4<i32>>(vec4<u32>(p.u0, p.u1, p.u2, p.u3)); }
fn lim() -> vec4<u32> { return vec4<u32>(p.l0, p.l1, p.l2, p.l3); }

fn coords(i: u32) -> vec4<i32> {
  let d = dims();
  let c3 = i % d.w;
  let r2 = i / d.w;
  let c2 = r2 % d.z;
  let r1 = r2 / d.z;
  return vec4<i32>(vec4<u32>(r1 / d.y, r1 % d.y, c2, c3));
}

fn in_range(j: i32) -> bool {
  return j >= 0 && u32(j) < p.size;
}

fn add(x: u32, y: u32) -> u32 {
  if (FLOAT == 1u) {
    return bitcast<u32>(bitcast<f32>(x) + bitcast<f32>(y));
  }
  return bitcast<u32>(bitcast<i32>(x) + bitcast<i32>(y));
}

// OP 4: the sum over idx's positions q (ascending) that point at this element's c[axis].
fn accumulate(i: u32, c: vec4<i32>) -> u32 {
  var acc = a[i];
  let l = lim();
  for (var k = 0u; k < 4u; k++) {
    if (k != p.axis && u32(c[k]) >= l[k]) { return acc; }  // no source reaches here
  }
  let t = tv();
  let u = uv();
  let ax = c[p.axis];
  let ibase = dot(c, t) - ax * t[p.axis];
  let sbase = dot(c, u) - ax * u[p.axis];
  for (var q = 0u; q < p.m; q++) {
    let at = ibase + i32(q) * t[p.axis];
    let j = idx[at];
    if (!in_range(j)) {
      atomicMin(&err[p.slot], u32(at));
    } else if (j == ax) {
      acc = add(acc, src[sbase + i32(q) * u[p.axis]]);
    }
  }
  return acc;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.n) { return; }
  let c = coords(i);
  if (OP == 0u) {
    out[i] = a[bitcast<i32>(p.base) + dot(c, sv())];
  } else if (OP == 1u) {
    out[bitcast<i32>(p.tbase) + dot(c, tv())] = a[i];
  } else if (OP == 2u) {
    out[i] = p.value;
  } else if (OP == 3u) {
    let at = dot(c, tv());
    var j = idx[at];
    if (!in_range(j)) {
      atomicMin(&err[p.slot], u32(at));
      j = 0;
    }
    let s = sv();
    out[i] = a[dot(c, s) + (j - c[p.axis]) * s[p.axis]];
  } else {
    out[i] = accumulate(i, c);
  }
}
