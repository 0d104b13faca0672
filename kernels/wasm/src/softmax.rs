//! softmax, log_softmax, cross_entropy and its gradient. Every max and sum runs in the
//! protocol's 64-lane order (`reduce::lanes`); exp and log are evaluated in float64 and
//! rounded once, like every transcendental here.
use crate::math::{exp64, log64};
use crate::reduce::{Combine, Max, Sum, LANES};

/// Reduces f(0), f(1), ..., f(n-1) in the protocol order without storing the values.
#[inline(always)]
fn lanes<C: Combine>(n: usize, f: impl Fn(usize) -> f32) -> f32 {
    let mut lane = [C::INIT; LANES];
    for k in 0..n {
        lane[k % LANES] = C::s(lane[k % LANES], f(k));
    }
    let mut s = LANES / 2;
    while s >= 1 {
        for i in 0..s {
            lane[i] = C::s(lane[i], lane[i + s]);
        }
        s /= 2;
    }
    lane[0]
}

#[inline(always)]
fn expf(x: f32) -> f32 {
    exp64(x as f64) as f32
}

#[inline(always)]
fn logf(x: f32) -> f32 {
    log64(x as f64) as f32
}

/// One softmax vector: `n` values `stride` apart. Writes exp(a - max) / sum.
unsafe fn softmax_vec(a: *const f32, out: *mut f32, n: usize, stride: usize) {
    let m = lanes::<Max>(n, |k| *a.add(k * stride));
    for k in 0..n {
        *out.add(k * stride) = expf(*a.add(k * stride) - m);
    }
    let s = lanes::<Sum>(n, |k| *out.add(k * stride));
    for k in 0..n {
        *out.add(k * stride) /= s;
    }
}

/// One log_softmax vector: (a - max) - log(sum(exp(a - max))).
unsafe fn log_softmax_vec(a: *const f32, out: *mut f32, n: usize, stride: usize) {
    let m = lanes::<Max>(n, |k| *a.add(k * stride));
    let lse = logf(lanes::<Sum>(n, |k| expf(*a.add(k * stride) - m)));
    for k in 0..n {
        *out.add(k * stride) = (*a.add(k * stride) - m) - lse;
    }
}

/// Applies `f` to every vector along the middle axis of [outer, n, inner].
#[inline(always)]
unsafe fn along(a: *const f32, out: *mut f32, outer: usize, n: usize, inner: usize, f: unsafe fn(*const f32, *mut f32, usize, usize)) {
    for o in 0..outer {
        for i in 0..inner {
            let off = o * n * inner + i;
            f(a.add(off), out.add(off), n, inner);
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn softmax(a: *const f32, out: *mut f32, outer: usize, n: usize, inner: usize) {
    along(a, out, outer, n, inner, softmax_vec);
}

#[no_mangle]
pub unsafe extern "C" fn log_softmax(a: *const f32, out: *mut f32, outer: usize, n: usize, inner: usize) {
    along(a, out, outer, n, inner, log_softmax_vec);
}

/// cross_entropy of logits `a` [rows, cols] and targets `b`: each row's -sum(b * log_softmax)
/// over classes in the protocol order, then the rows in that order, divided by rows.
#[no_mangle]
pub unsafe extern "C" fn cross_entropy(a: *const f32, b: *const f32, out: *mut f32, rows: usize, cols: usize) {
    let total = lanes::<Sum>(rows, |r| {
        let (ar, br) = (a.add(r * cols), b.add(r * cols));
        let m = lanes::<Max>(cols, |c| *ar.add(c));
        let lse = logf(lanes::<Sum>(cols, |c| expf(*ar.add(c) - m)));
        -lanes::<Sum>(cols, |c| *br.add(c) * ((*ar.add(c) - m) - lse))
    });
    *out = total / rows as f32;
}

/// (softmax(a) - b) / rows.
#[no_mangle]
pub unsafe extern "C" fn cross_entropy_grad(a: *const f32, b: *const f32, out: *mut f32, rows: usize, cols: usize) {
    let d = rows as f32;
    for r in 0..rows {
        let off = r * cols;
        softmax_vec(a.add(off), out.add(off), cols, 1);
        for c in 0..cols {
            let o = out.add(off + c);
            *o = (*o - *b.add(off + c)) / d;
        }
    }
}
