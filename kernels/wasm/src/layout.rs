//! Data movement: permute/transpose (strided gather into a contiguous result), copies and
//! fills. All exact: values move bit for bit.

/// Output dims and, per output axis, the input element stride (rank 4, left-padded).
#[repr(C)]
pub struct Perm {
    dims: [u32; 4],
    strides: [u32; 4],
}

/// Side of the square tiles a transposing permute is copied in.
const TILE: usize = 16;

#[no_mangle]
pub unsafe extern "C" fn permute(a: *const f32, out: *mut f32, d: *const Perm) {
    let d = &*d;
    let [d0, d1, d2, d3] = d.dims.map(|x| x as usize);
    let [s0, s1, s2, s3] = d.strides.map(|x| x as usize);
    let plane = d2 * d3;
    for i0 in 0..d0 {
        for i1 in 0..d1 {
            let src = a.add(i0 * s0 + i1 * s1);
            let dst = out.add((i0 * d1 + i1) * plane);
            if s3 != 1 && d2 >= TILE && d3 >= TILE {
                tiled(src, dst, d2, d3, s2, s3);
            } else {
                for i2 in 0..d2 {
                    for i3 in 0..d3 {
                        *dst.add(i2 * d3 + i3) = *src.add(i2 * s2 + i3 * s3);
                    }
                }
            }
        }
    }
}

/// The last two output axes in TILE x TILE blocks, so the strided reads of a block stay in
/// cache (a plain row-by-row transpose misses on nearly every read of a large matrix).
#[inline(always)]
unsafe fn tiled(src: *const f32, dst: *mut f32, d2: usize, d3: usize, s2: usize, s3: usize) {
    let mut b2 = 0;
    while b2 < d2 {
        let e2 = if b2 + TILE < d2 { b2 + TILE } else { d2 };
        let mut b3 = 0;
        while b3 < d3 {
            let e3 = if b3 + TILE < d3 { b3 + TILE } else { d3 };
            for i2 in b2..e2 {
                for i3 in b3..e3 {
                    *dst.add(i2 * d3 + i3) = *src.add(i2 * s2 + i3 * s3);
                }
            }
            b3 = e3;
        }
        b2 = e2;
    }
}

/// n floats from `src` to `dst` (distinct buffers).
#[no_mangle]
pub unsafe extern "C" fn copy(src: *const f32, dst: *mut f32, n: usize) {
    core::ptr::copy_nonoverlapping(src, dst, n);
}

/// Fills with one float given by its bits, so NaN payloads and -0 survive the call.
#[no_mangle]
pub unsafe extern "C" fn fill(out: *mut u32, n: usize, bits: u32) {
    for i in 0..n {
        *out.add(i) = bits;
    }
}
