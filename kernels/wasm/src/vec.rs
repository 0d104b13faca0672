//! Small SIMD helpers over `core::arch::wasm32` so kernels read as arithmetic.
use core::arch::wasm32::*;

#[inline(always)]
pub unsafe fn load(p: *const f32) -> v128 {
    v128_load(p as *const v128)
}

#[inline(always)]
pub unsafe fn store(p: *mut f32, v: v128) {
    v128_store(p as *mut v128, v)
}

#[inline(always)]
pub fn splat(x: f32) -> v128 {
    f32x4_splat(x)
}

/// IEEE maximum as wasm's `f32.max` defines it (NaN propagates, -0 < +0), the same as
/// JavaScript's `Math.max`; `f32::max` would ignore NaN.
#[inline(always)]
pub fn max(a: f32, b: f32) -> f32 {
    f32x4_extract_lane::<0>(f32x4_max(f32x4_splat(a), f32x4_splat(b)))
}

/// Correctly rounded float32 square root (wasm `f32x4.sqrt` is IEEE exact).
#[inline(always)]
pub fn sqrt32(x: f32) -> f32 {
    f32x4_extract_lane::<0>(f32x4_sqrt(f32x4_splat(x)))
}

#[inline(always)]
pub fn sqrt64(x: f64) -> f64 {
    f64x2_extract_lane::<0>(f64x2_sqrt(f64x2_splat(x)))
}
