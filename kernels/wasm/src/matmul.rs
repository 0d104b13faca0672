//! matmul: C[m, n] = A[m, k] @ B[k, n], every dot product accumulated in ascending k from 0.0
//! with a separate multiply and add (wasm has no FMA), so the blocking below gives the same
//! bits as the naive triple loop.
//!
//! Blocking: B is packed, 8 columns at a time, into a contiguous [k][8] panel (JS passes the
//! scratch), then a 4x8 register tile (eight f32x4 accumulators) walks all of k for each group
//! of 4 rows of A. A and B are read through element strides, so a transposed operand (the
//! backward pass's x^T and W^T) is read in place instead of being materialized.
use crate::vec::{load, splat, store};
use core::arch::wasm32::*;

const NR: usize = 8;
const MR: usize = 4;

/// Copies columns j0..j0+cols of B (zero-padded to NR) into `dst` as [k][NR].
#[inline(always)]
unsafe fn pack(b: *const f32, sb_k: usize, sb_n: usize, k: usize, j0: usize, cols: usize, dst: *mut f32) {
    if cols == NR && sb_n == 1 {
        for kk in 0..k {
            let src = b.add(kk * sb_k + j0);
            store(dst.add(kk * NR), load(src));
            store(dst.add(kk * NR + 4), load(src.add(4)));
        }
        return;
    }
    for kk in 0..k {
        for c in 0..NR {
            *dst.add(kk * NR + c) = if c < cols { *b.add(kk * sb_k + (j0 + c) * sb_n) } else { 0.0 };
        }
    }
}

/// R rows of A times one packed panel, written to the first `cols` columns of C.
#[inline(always)]
unsafe fn tile<const R: usize>(a: *const f32, sa_m: usize, sa_k: usize, panel: *const f32, k: usize, c: *mut f32, ldc: usize, cols: usize) {
    let mut acc = [[splat(0.0); 2]; R];
    for kk in 0..k {
        let b0 = load(panel.add(kk * NR));
        let b1 = load(panel.add(kk * NR + 4));
        for (r, row) in acc.iter_mut().enumerate() {
            let av = splat(*a.add(r * sa_m + kk * sa_k));
            row[0] = f32x4_add(row[0], f32x4_mul(av, b0));
            row[1] = f32x4_add(row[1], f32x4_mul(av, b1));
        }
    }
    for (r, row) in acc.iter().enumerate() {
        let dst = c.add(r * ldc);
        if cols == NR {
            store(dst, row[0]);
            store(dst.add(4), row[1]);
        } else {
            let mut tmp = [0.0f32; NR];
            store(tmp.as_mut_ptr(), row[0]);
            store(tmp.as_mut_ptr().add(4), row[1]);
            for (j, v) in tmp.iter().take(cols).enumerate() {
                *dst.add(j) = *v;
            }
        }
    }
}

/// A [m, k] with element strides (sa_m, sa_k), B [k, n] with (sb_k, sb_n), C [m, n] contiguous;
/// `scratch` holds k * 8 floats.
#[no_mangle]
pub unsafe extern "C" fn matmul(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    sa_m: usize,
    sa_k: usize,
    sb_k: usize,
    sb_n: usize,
    scratch: *mut f32,
) {
    let mut j0 = 0;
    while j0 < n {
        let cols = if n - j0 < NR { n - j0 } else { NR };
        pack(b, sb_k, sb_n, k, j0, cols, scratch);
        let mut i = 0;
        while i + MR <= m {
            tile::<MR>(a.add(i * sa_m), sa_m, sa_k, scratch, k, c.add(i * n + j0), n, cols);
            i += MR;
        }
        let ar = a.add(i * sa_m);
        let cr = c.add(i * n + j0);
        match m - i {
            3 => tile::<3>(ar, sa_m, sa_k, scratch, k, cr, n, cols),
            2 => tile::<2>(ar, sa_m, sa_k, scratch, k, cr, n, cols),
            1 => tile::<1>(ar, sa_m, sa_k, scratch, k, cr, n, cols),
            _ => {}
        }
        j0 += NR;
    }
}
