//! The protocol-v4 selection ops on 32-bit words (float32 or int32 data), over a rank-4 walk:
//! slice, slice_scatter, index_select, gather, index_add, scatter_add, concat, pad
//! (backends-js/src/backends/wasm/kernels-index.mjs plans them; the indices are checked there,
//! in range, before any of these runs). Exact: words move unchanged; the adds visit the
//! sources in row-major order, so each output element adds them in ascending position along
//! the axis, one rounding (float32) or wrap (int32) per addition: the protocol's fixed order.

/// Domain dims d (left-padded to rank 4), a base offset and two stride vectors: s for the
/// tensor walked at c . s (signed: negative slice steps), t for the index tensor.
#[repr(C)]
pub struct Walk {
    axis: u32,
    base: i32,
    d: [u32; 4],
    s: [i32; 4],
    t: [i32; 4],
}

/// Calls f(i, c) for every element i of the domain, c its coordinates, in row-major order.
#[inline(always)]
unsafe fn each(w: &Walk, mut f: impl FnMut(usize, [i32; 4])) {
    let [d0, d1, d2, d3] = w.d.map(|x| x as i32);
    let mut i = 0;
    for c0 in 0..d0 {
        for c1 in 0..d1 {
            for c2 in 0..d2 {
                for c3 in 0..d3 {
                    f(i, [c0, c1, c2, c3]);
                    i += 1;
                }
            }
        }
    }
}

#[inline(always)]
fn dot(c: [i32; 4], s: [i32; 4]) -> i32 {
    c[0] * s[0] + c[1] * s[1] + c[2] * s[2] + c[3] * s[3]
}

/// The offset c . s with coordinate `axis` replaced by j.
#[inline(always)]
fn at_axis(c: [i32; 4], s: [i32; 4], axis: usize, j: i32) -> usize {
    (dot(c, s) + (j - c[axis]) * s[axis]) as usize
}

/// out[i] = a[base + c . s] (slice, and slice_scatter's copy).
#[no_mangle]
pub unsafe extern "C" fn walk_read(a: *const u32, out: *mut u32, w: *const Walk) {
    let w = &*w;
    each(w, |i, c| *out.add(i) = *a.offset((w.base + dot(c, w.s)) as isize));
}

/// out[base + c . s] = a[i] (slice_scatter's, concat's and pad's placing pass).
#[no_mangle]
pub unsafe extern "C" fn walk_write(a: *const u32, out: *mut u32, w: *const Walk) {
    let w = &*w;
    each(w, |i, c| *out.offset((w.base + dot(c, w.s)) as isize) = *a.add(i));
}

/// out[i] = a[c . s with c[axis] -> idx[c . t]] (index_select, gather).
#[no_mangle]
pub unsafe extern "C" fn walk_gather(a: *const u32, idx: *const i32, out: *mut u32,
                                     w: *const Walk) {
    let w = &*w;
    let axis = w.axis as usize;
    each(w, |i, c| {
        let j = *idx.add(dot(c, w.t) as usize);
        *out.add(i) = *a.add(at_axis(c, w.s, axis, j));
    });
}

/// For every source element i (row-major): out[c . s with c[axis] -> idx[c . t]] += src[i].
#[no_mangle]
pub unsafe extern "C" fn walk_add_f32(src: *const f32, idx: *const i32, out: *mut f32,
                                      w: *const Walk) {
    let w = &*w;
    let axis = w.axis as usize;
    each(w, |i, c| {
        let o = out.add(at_axis(c, w.s, axis, *idx.add(dot(c, w.t) as usize)));
        *o += *src.add(i);
    });
}

/// walk_add_f32 for int32 data: wrapping additions.
#[no_mangle]
pub unsafe extern "C" fn walk_add_i32(src: *const i32, idx: *const i32, out: *mut i32,
                                      w: *const Walk) {
    let w = &*w;
    let axis = w.axis as usize;
    each(w, |i, c| {
        let o = out.add(at_axis(c, w.s, axis, *idx.add(dot(c, w.t) as usize)));
        *o = (*o).wrapping_add(*src.add(i));
    });
}
