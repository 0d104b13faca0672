//! matmul: C[m, n] = A[m, k] @ B[k, n], every dot product accumulated in ascending k from 0.0
//! with a separate multiply and add (wasm has no FMA), so the blocking below gives the same
//! bits as the naive triple loop.
//!
//! Blocking (GotoBLAS-style, sized for L1/L2): k is cut into blocks of KC and n into blocks of
//! NC columns; each (k, n) block of B is packed once into contiguous [KC][8] panels (JS passes
//! the scratch); then, MC rows of A at a time (so they stay in cache), a 4x8 register tile
//! (eight f32x4 accumulators) walks the panels. A tile starts from 0.0 in the first k block and
//! from the partial sums stored in C after that: storing a float32 partial sum and continuing is
//! exactly the naive loop. A and B are read through element strides, so a transposed operand
//! (the backward pass's x^T and W^T) is read in place instead of being materialized.
use crate::vec::{load, splat, store};
use core::arch::wasm32::*;

const NR: usize = 8;
const MR: usize = 4;
const KC: usize = 256;
const NC: usize = 512;
const MC: usize = 64;

/// Floats of scratch `matmul` needs for these sizes (JS allocates it).
#[no_mangle]
pub extern "C" fn matmul_scratch(k: usize, n: usize) -> usize {
    let cols = if n < NC { (n + NR - 1) / NR * NR } else { NC };
    (if k < KC { k } else { KC }) * (cols + MC)
}

/// Copies rows i0..i0+rows (rows <= MR, zero-padded to MR) of A's k block into `dst` as [k][MR],
/// so the tile reads A contiguously whatever A's strides (a transposed A, or rows 4 KiB apart
/// that would alias in L1).
#[inline(always)]
unsafe fn pack_a(a: *const f32, sa_m: usize, sa_k: usize, rows: usize, k: usize, dst: *mut f32) {
    for kk in 0..k {
        for r in 0..MR {
            *dst.add(kk * MR + r) = if r < rows { *a.add(r * sa_m + kk * sa_k) } else { 0.0 };
        }
    }
}

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

/// A packed MR-row strip of A times one packed panel of B, over `k` values of the dot products,
/// into the first `rows` x `cols` of C; starts from 0.0 when `first`, else from the partial sums
/// in C. (Padded rows compute garbage that is never stored.)
#[inline(always)]
unsafe fn tile(ap: *const f32, panel: *const f32, k: usize, c: *mut f32, ldc: usize, rows: usize, cols: usize, first: bool) {
    let mut acc = [[splat(0.0); 2]; MR];
    if !first {
        for (r, row) in acc.iter_mut().take(rows).enumerate() {
            let src = c.add(r * ldc);
            if cols == NR {
                row[0] = load(src);
                row[1] = load(src.add(4));
            } else {
                let mut tmp = [0.0f32; NR];
                for (j, v) in tmp.iter_mut().take(cols).enumerate() {
                    *v = *src.add(j);
                }
                row[0] = load(tmp.as_ptr());
                row[1] = load(tmp.as_ptr().add(4));
            }
        }
    }
    for kk in 0..k {
        let b0 = load(panel.add(kk * NR));
        let b1 = load(panel.add(kk * NR + 4));
        for (r, row) in acc.iter_mut().enumerate() {
            let av = splat(*ap.add(kk * MR + r));
            row[0] = f32x4_add(row[0], f32x4_mul(av, b0));
            row[1] = f32x4_add(row[1], f32x4_mul(av, b1));
        }
    }
    for (r, row) in acc.iter().take(rows).enumerate() {
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

#[inline(always)]
fn min(a: usize, b: usize) -> usize {
    if a < b {
        a
    } else {
        b
    }
}

/// One packed (k block, n block): rows of A in groups of MC (packed into `apack`), each group
/// across every panel.
#[allow(clippy::too_many_arguments)]
unsafe fn block(a: *const f32, sa_m: usize, sa_k: usize, packed: *const f32, apack: *mut f32, m: usize, kc: usize, c: *mut f32, n: usize, j0: usize, nc: usize, first: bool) {
    let mut i0 = 0;
    while i0 < m {
        let i1 = min(i0 + MC, m);
        let mut i = i0;
        while i < i1 {
            pack_a(a.add(i * sa_m), sa_m, sa_k, min(MR, i1 - i), kc, apack.add((i - i0) * kc));
            i += MR;
        }
        let mut j = 0;
        while j < nc {
            let cols = min(NR, nc - j);
            let panel = packed.add(j * kc);
            let mut i = i0;
            while i < i1 {
                let ap = apack.add((i - i0) * kc);
                tile(ap, panel, kc, c.add(i * n + j0 + j), n, min(MR, i1 - i), cols, first);
                i += MR;
            }
            j += NR;
        }
        i0 = i1;
    }
}

/// A [m, k] with element strides (sa_m, sa_k), B [k, n] with (sb_k, sb_n), C [m, n] contiguous;
/// `scratch` holds `matmul_scratch(k, n)` floats.
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
    let cols = if n < NC { (n + NR - 1) / NR * NR } else { NC };
    let apack = scratch.add(min(k, KC) * cols);
    let mut k0 = 0;
    while k0 < k {
        let kc = min(KC, k - k0);
        let mut j0 = 0;
        while j0 < n {
            let nc = min(NC, n - j0);
            let mut j = 0;
            while j < nc {
                let cols = min(NR, nc - j);
                pack(b.add(k0 * sb_k), sb_k, sb_n, kc, j0 + j, cols, scratch.add(j * kc));
                j += NR;
            }
            block(a.add(k0 * sa_k), sa_m, sa_k, scratch, apack, m, kc, c, n, j0, nc, k0 == 0);
            j0 += NC;
        }
        k0 += KC;
    }
}
