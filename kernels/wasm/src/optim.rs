//! Optimizer updates (op table docs), float32 per element. Float attributes are used as
//! float32 values (as a GPU uniform would hold them); coefficients derived from them
//! (1 - beta, Adam's bias corrections) are computed exactly or in float64 and rounded once.
use crate::math::pow64;
use crate::vec::{load, splat, sqrt64, store};
use core::arch::wasm32::*;

/// out = f(a, b) over n elements, 4 lanes at a time.
#[inline(always)]
unsafe fn zip(a: *const f32, b: *const f32, out: *mut f32, n: usize, v: impl Fn(v128, v128) -> v128, s: impl Fn(f32, f32) -> f32) {
    let mut i = 0;
    while i + 4 <= n {
        store(out.add(i), v(load(a.add(i)), load(b.add(i))));
        i += 4;
    }
    while i < n {
        *out.add(i) = s(*a.add(i), *b.add(i));
        i += 1;
    }
}

/// beta and 1 - beta, from beta rounded to float32 (1 - beta is then exact for beta >= 0.5).
#[inline(always)]
fn coefficients(beta: f64) -> (f32, f32) {
    let p = beta as f32;
    (p, (1.0 - p as f64) as f32)
}

/// a - lr * b
#[no_mangle]
pub unsafe extern "C" fn sgd_update(a: *const f32, b: *const f32, out: *mut f32, n: usize, lr: f64) {
    let (l, lv) = (lr as f32, splat(lr as f32));
    zip(a, b, out, n, |x, g| f32x4_sub(x, f32x4_mul(lv, g)), |x, g| x - l * g);
}

/// momentum * a + b
#[no_mangle]
pub unsafe extern "C" fn momentum_update(a: *const f32, b: *const f32, out: *mut f32, n: usize, momentum: f64) {
    let (mu, mv) = (momentum as f32, splat(momentum as f32));
    zip(a, b, out, n, |v, g| f32x4_add(f32x4_mul(mv, v), g), |v, g| mu * v + g);
}

/// beta1 * a + (1 - beta1) * b
#[no_mangle]
pub unsafe extern "C" fn adam_m(a: *const f32, b: *const f32, out: *mut f32, n: usize, beta1: f64) {
    let (p, q) = coefficients(beta1);
    let (pv, qv) = (splat(p), splat(q));
    zip(a, b, out, n, |m, g| f32x4_add(f32x4_mul(pv, m), f32x4_mul(qv, g)), |m, g| p * m + q * g);
}

/// beta2 * a + (1 - beta2) * b * b
#[no_mangle]
pub unsafe extern "C" fn adam_v(a: *const f32, b: *const f32, out: *mut f32, n: usize, beta2: f64) {
    let (p, q) = coefficients(beta2);
    let (pv, qv) = (splat(p), splat(q));
    zip(a, b, out, n, |v, g| f32x4_add(f32x4_mul(pv, v), f32x4_mul(f32x4_mul(qv, g), g)), |v, g| p * v + q * g * g);
}

/// a - (lr / (1 - beta1^t)) * b / (sqrt(c) / sqrt(1 - beta2^t) + eps), t read from memory.
#[no_mangle]
pub unsafe extern "C" fn adam_update(
    a: *const f32,
    b: *const f32,
    c: *const f32,
    t: *const f32,
    out: *mut f32,
    n: usize,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
) {
    let step = *t as f64;
    let [lr, beta1, beta2] = [lr, beta1, beta2].map(|x| x as f32 as f64);
    let lr_t = (lr / (1.0 - pow64(beta1, step))) as f32;
    let root2 = sqrt64(1.0 - pow64(beta2, step)) as f32;
    let e = eps as f32;
    let (lv, rv, ev) = (splat(lr_t), splat(root2), splat(e));
    let mut i = 0;
    while i + 4 <= n {
        let den = f32x4_add(f32x4_div(f32x4_sqrt(load(c.add(i))), rv), ev);
        let upd = f32x4_div(f32x4_mul(lv, load(b.add(i))), den);
        store(out.add(i), f32x4_sub(load(a.add(i)), upd));
        i += 4;
    }
    while i < n {
        let den = crate::vec::sqrt32(*c.add(i)) / root2 + e;
        *out.add(i) = *a.add(i) - lr_t * *b.add(i) / den;
        i += 1;
    }
}
