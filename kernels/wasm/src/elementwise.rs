//! Elementwise kernels: unary maps and NumPy-broadcast binary ops.
//!
//! Exact ops (relu, positive, neg) are bit operations on SIMD lanes; arithmetic is one
//! IEEE float32 operation per element (bit-identical to JS `Math.fround(a op b)`);
//! transcendental ops round a float64 evaluation once.
use crate::math;
use crate::vec::{load, splat, store};
use core::arch::wasm32::*;

/// Applies `v` to 4 lanes at a time and `s` to the tail.
#[inline(always)]
unsafe fn map_simd(a: *const f32, out: *mut f32, n: usize, v: impl Fn(v128) -> v128, s: impl Fn(f32) -> f32) {
    let mut i = 0;
    while i + 4 <= n {
        store(out.add(i), v(load(a.add(i))));
        i += 4;
    }
    while i < n {
        *out.add(i) = s(*a.add(i));
        i += 1;
    }
}

/// Scalar map for ops evaluated in float64.
#[inline(always)]
unsafe fn map64(a: *const f32, out: *mut f32, n: usize, f: impl Fn(f64) -> f64) {
    for i in 0..n {
        *out.add(i) = f(*a.add(i) as f64) as f32;
    }
}

const SIGN: u32 = 0x8000_0000;

/// relu: a > 0 ? a : +0 (the compare is false for NaN, giving +0).
#[no_mangle]
pub unsafe extern "C" fn relu(a: *const f32, out: *mut f32, n: usize) {
    let z = splat(0.0);
    map_simd(a, out, n, |x| v128_and(x, f32x4_gt(x, z)), |x| if x > 0.0 { x } else { 0.0 });
}

/// positive: a > 0 ? 1 : 0 (NaN gives 0).
#[no_mangle]
pub unsafe extern "C" fn positive(a: *const f32, out: *mut f32, n: usize) {
    let (z, one) = (splat(0.0), splat(1.0));
    map_simd(a, out, n, |x| v128_and(one, f32x4_gt(x, z)), |x| if x > 0.0 { 1.0 } else { 0.0 });
}

/// neg: flip the sign bit (also of NaN), exactly as the op table says.
#[no_mangle]
pub unsafe extern "C" fn neg(a: *const f32, out: *mut f32, n: usize) {
    let m = u32x4_splat(SIGN);
    map_simd(a, out, n, |x| v128_xor(x, m), |x| f32::from_bits(x.to_bits() ^ SIGN));
}

#[no_mangle]
pub unsafe extern "C" fn sqrt(a: *const f32, out: *mut f32, n: usize) {
    map_simd(a, out, n, |x| f32x4_sqrt(x), crate::vec::sqrt32);
}

#[no_mangle]
pub unsafe extern "C" fn exp(a: *const f32, out: *mut f32, n: usize) {
    map64(a, out, n, math::exp64);
}

#[no_mangle]
pub unsafe extern "C" fn log(a: *const f32, out: *mut f32, n: usize) {
    map64(a, out, n, math::log64);
}

#[no_mangle]
pub unsafe extern "C" fn tanh(a: *const f32, out: *mut f32, n: usize) {
    map64(a, out, n, math::tanh64);
}

#[no_mangle]
pub unsafe extern "C" fn sigmoid(a: *const f32, out: *mut f32, n: usize) {
    map64(a, out, n, math::sigmoid64);
}

#[no_mangle]
pub unsafe extern "C" fn gelu(a: *const f32, out: *mut f32, n: usize) {
    map64(a, out, n, math::gelu64);
}

/// gelu_grad: b * gelu'(a), evaluated in float64 and rounded once.
#[no_mangle]
pub unsafe extern "C" fn gelu_grad(a: *const f32, b: *const f32, out: *mut f32, n: usize) {
    for i in 0..n {
        let g = math::gelu_grad64(*a.add(i) as f64) * *b.add(i) as f64;
        *out.add(i) = g as f32;
    }
}

/// A broadcast binary op: `dims` and the element strides of `a` and `b` (0 on broadcast
/// axes), rank 4 after left-padding with ones; JS merges contiguous axes first, so the
/// innermost loop is usually long. The inner loop picks a SIMD form by its strides.
#[repr(C)]
pub struct Bcast {
    dims: [u32; 4],
    sa: [u32; 4],
    sb: [u32; 4],
}

#[inline(always)]
unsafe fn inner(
    a: *const f32,
    b: *const f32,
    out: *mut f32,
    n: usize,
    sa: usize,
    sb: usize,
    v: &impl Fn(v128, v128) -> v128,
    s: &impl Fn(f32, f32) -> f32,
) {
    let mut i = 0;
    match (sa, sb) {
        (1, 1) => {
            while i + 4 <= n {
                store(out.add(i), v(load(a.add(i)), load(b.add(i))));
                i += 4;
            }
        }
        (1, 0) => {
            let bv = splat(*b);
            while i + 4 <= n {
                store(out.add(i), v(load(a.add(i)), bv));
                i += 4;
            }
        }
        (0, 1) => {
            let av = splat(*a);
            while i + 4 <= n {
                store(out.add(i), v(av, load(b.add(i))));
                i += 4;
            }
        }
        _ => {}
    }
    while i < n {
        *out.add(i) = s(*a.add(i * sa), *b.add(i * sb));
        i += 1;
    }
}

#[inline(always)]
unsafe fn binary(
    a: *const f32,
    b: *const f32,
    out: *mut f32,
    d: &Bcast,
    v: impl Fn(v128, v128) -> v128,
    s: impl Fn(f32, f32) -> f32,
) {
    let [d0, d1, d2, d3] = d.dims.map(|x| x as usize);
    let sa = d.sa.map(|x| x as usize);
    let sb = d.sb.map(|x| x as usize);
    let mut o = out;
    for i0 in 0..d0 {
        for i1 in 0..d1 {
            for i2 in 0..d2 {
                let pa = a.add(i0 * sa[0] + i1 * sa[1] + i2 * sa[2]);
                let pb = b.add(i0 * sb[0] + i1 * sb[1] + i2 * sb[2]);
                inner(pa, pb, o, d3, sa[3], sb[3], &v, &s);
                o = o.add(d3);
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn add(a: *const f32, b: *const f32, out: *mut f32, d: *const Bcast) {
    binary(a, b, out, &*d, |x, y| f32x4_add(x, y), |x, y| x + y);
}

#[no_mangle]
pub unsafe extern "C" fn sub(a: *const f32, b: *const f32, out: *mut f32, d: *const Bcast) {
    binary(a, b, out, &*d, |x, y| f32x4_sub(x, y), |x, y| x - y);
}

#[no_mangle]
pub unsafe extern "C" fn mul(a: *const f32, b: *const f32, out: *mut f32, d: *const Bcast) {
    binary(a, b, out, &*d, |x, y| f32x4_mul(x, y), |x, y| x * y);
}

#[no_mangle]
pub unsafe extern "C" fn div(a: *const f32, b: *const f32, out: *mut f32, d: *const Bcast) {
    binary(a, b, out, &*d, |x, y| f32x4_div(x, y), |x, y| x / y);
}
