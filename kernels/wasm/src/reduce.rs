//! Reductions in the protocol's fixed order: 64 lanes, lane j takes elements j, j+64, ...
//! in ascending order starting from the identity, then a tree (s = 32..1: lane[i] op= lane[i+s]).
//! Sixteen f32x4 accumulators are exactly the 64 lanes, so the SIMD loop is the protocol order.
use crate::vec::{load, max, splat, store};
use core::arch::wasm32::*;

pub const LANES: usize = 64;

/// The two reductions the protocol uses: the lane identity and combine op, SIMD and scalar.
pub trait Combine {
    const INIT: f32;
    fn v(a: v128, b: v128) -> v128;
    fn s(a: f32, b: f32) -> f32;
}

pub struct Sum;
impl Combine for Sum {
    const INIT: f32 = 0.0;
    #[inline(always)]
    fn v(a: v128, b: v128) -> v128 {
        f32x4_add(a, b)
    }
    #[inline(always)]
    fn s(a: f32, b: f32) -> f32 {
        a + b
    }
}

pub struct Max;
impl Combine for Max {
    const INIT: f32 = f32::NEG_INFINITY;
    #[inline(always)]
    fn v(a: v128, b: v128) -> v128 {
        f32x4_max(a, b)
    }
    #[inline(always)]
    fn s(a: f32, b: f32) -> f32 {
        max(a, b)
    }
}

/// The final tree over 64 scalar lanes.
#[inline(always)]
fn tree<C: Combine>(lane: &mut [f32; LANES]) -> f32 {
    let mut s = LANES / 2;
    while s >= 1 {
        for i in 0..s {
            lane[i] = C::s(lane[i], lane[i + s]);
        }
        s /= 2;
    }
    lane[0]
}

/// Reduces `n` contiguous values.
#[inline(always)]
pub unsafe fn contiguous<C: Combine>(p: *const f32, n: usize) -> f32 {
    let mut acc = [splat(C::INIT); 16];
    let full = n / LANES;
    for c in 0..full {
        let base = p.add(c * LANES);
        for (q, a) in acc.iter_mut().enumerate() {
            *a = C::v(*a, load(base.add(4 * q)));
        }
    }
    let mut lane = [0.0f32; LANES];
    for (q, a) in acc.iter().enumerate() {
        store(lane.as_mut_ptr().add(4 * q), *a);
    }
    for j in 0..n - full * LANES {
        lane[j] = C::s(lane[j], *p.add(full * LANES + j));
    }
    tree::<C>(&mut lane)
}

/// Reduces `n` values `stride` apart.
#[inline(always)]
pub unsafe fn strided<C: Combine>(p: *const f32, n: usize, stride: usize) -> f32 {
    let mut lane = [C::INIT; LANES];
    for k in 0..n {
        lane[k % LANES] = C::s(lane[k % LANES], *p.add(k * stride));
    }
    tree::<C>(&mut lane)
}

/// Reduces four adjacent columns at once (values `stride` apart): lane-for-lane the
/// protocol order, one column per SIMD lane.
#[inline(always)]
unsafe fn columns4<C: Combine>(p: *const f32, n: usize, stride: usize) -> v128 {
    let mut lane = [splat(C::INIT); LANES];
    for k in 0..n {
        lane[k % LANES] = C::v(lane[k % LANES], load(p.add(k * stride)));
    }
    let mut s = LANES / 2;
    while s >= 1 {
        for i in 0..s {
            lane[i] = C::v(lane[i], lane[i + s]);
        }
        s /= 2;
    }
    lane[0]
}

/// Reduces axis `n` of a tensor viewed as [outer, n, inner] into [outer, inner].
#[inline(always)]
pub unsafe fn axis<C: Combine>(a: *const f32, out: *mut f32, outer: usize, n: usize, inner: usize) {
    for o in 0..outer {
        let src = a.add(o * n * inner);
        let dst = out.add(o * inner);
        if inner == 1 {
            *dst = contiguous::<C>(src, n);
            continue;
        }
        let mut i = 0;
        while i + 4 <= inner {
            store(dst.add(i), columns4::<C>(src.add(i), n, inner));
            i += 4;
        }
        while i < inner {
            *dst.add(i) = strided::<C>(src.add(i), n, inner);
            i += 1;
        }
    }
}

/// sum over one axis (or all: outer = inner = 1); `mean` != 0 divides by n afterwards.
#[no_mangle]
pub unsafe extern "C" fn reduce_sum(a: *const f32, out: *mut f32, outer: usize, n: usize, inner: usize, mean: u32) {
    axis::<Sum>(a, out, outer, n, inner);
    if mean != 0 {
        let d = n as f32;
        for i in 0..outer * inner {
            *out.add(i) /= d;
        }
    }
}
