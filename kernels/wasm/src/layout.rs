//! Data movement: permute/transpose (strided gather into a contiguous result), copies and
//! fills. All exact: values move bit for bit.

/// Output dims and, per output axis, the input element stride (rank 4, left-padded).
#[repr(C)]
pub struct Perm {
    dims: [u32; 4],
    strides: [u32; 4],
}

#[no_mangle]
pub unsafe extern "C" fn permute(a: *const f32, out: *mut f32, d: *const Perm) {
    let d = &*d;
    let [d0, d1, d2, d3] = d.dims.map(|x| x as usize);
    let [s0, s1, s2, s3] = d.strides.map(|x| x as usize);
    let mut o = out;
    for i0 in 0..d0 {
        for i1 in 0..d1 {
            for i2 in 0..d2 {
                let src = a.add(i0 * s0 + i1 * s1 + i2 * s2);
                for i3 in 0..d3 {
                    *o.add(i3) = *src.add(i3 * s3);
                }
                o = o.add(d3);
            }
        }
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
