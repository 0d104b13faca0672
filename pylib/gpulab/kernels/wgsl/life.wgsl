// One Game of Life step on a toroidal H x W grid. A cell is alive when > 0.5 (NaN: dead);
// the result is exactly 1 or 0.

override WG: u32 = 64u;

struct Params { h: u32, w: u32, pad0: u32, pad1: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

fn alive(r: u32, c: u32) -> u32 {
  return select(0u, 1u, a[r * p.w + c] > 0.5f);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG + lid;
  if (i >= p.h * p.w) { return; }
  let r = i / p.w;
  let c = i % p.w;
  // Neighbours wrap around: r - 1 is r + h - 1 mod h, so no signed arithmetic is needed.
  let up = (r + p.h - 1u) % p.h;
  let down = (r + 1u) % p.h;
  let left = (c + p.w - 1u) % p.w;
  let right = (c + 1u) % p.w;
  let count = alive(up, left) + alive(up, c) + alive(up, right) + alive(r, left) +
    alive(r, right) + alive(down, left) + alive(down, c) + alive(down, right);
  let me = alive(r, c);
  let next = count == 3u || (me == 1u && count == 2u);
  out[i] = select(0.0f, 1.0f, next);
}
