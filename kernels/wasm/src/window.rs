//! The protocol-v6 window ops (conv2d, max_pool2d, avg_pool2d, resize), float32 NCHW, direct:
//! each output walks its own window in the protocol's order (docs/protocol.md "The v6 window
//! ops"), the same arithmetic as the JS cpu kernels (backends-js/src/backends/cpu/conv_ops.mjs),
//! so the two give the same bits: one f32 multiply and one f32 add per conv tap (no fused
//! multiply-add in wasm), a sequential f32 sum / count for avg, ordered integer keys for max,
//! exact integer coordinates for resize. backends-js/src/backends/wasm/kernels-window.mjs
//! writes the descriptor.

/// The integers of one window op (the layout of window.wgsl's Params).
#[repr(C)]
pub struct Window {
    n: u32,
    nb: u32,
    c: u32,
    h: u32,
    w: u32,
    m: u32,
    oh: u32,
    ow: u32,
    kh: u32,
    kw: u32,
    sh: u32,
    sw: u32,
    dh: u32,
    dw: u32,
    pt: u32,
    pl: u32,
    pb: u32,
    pr: u32,
    cg: u32,
    mg: u32,
    include_pad: u32,
    coord: u32,
    rounding: u32,
    flags: u32, // conv2d: 1 with a bias; resize: 1 linear
}

#[inline(always)]
fn tap(o: u32, s: u32, i: u32, d: u32, before: u32) -> i32 {
    (o * s + i * d) as i32 - before as i32
}

/// conv2d: out[n, m, oy, ox] = sum over (c, i, j) ascending of w * a, then + bias[m].
#[no_mangle]
pub unsafe extern "C" fn conv2d(a: *const f32, wt: *const f32, bias: *const f32, out: *mut f32, p: *const Window) {
    let p = &*p;
    let taps = (p.cg * p.kh * p.kw) as usize;
    let mut o = 0usize;
    for n in 0..p.nb {
        for m in 0..p.m {
            let c0 = (m / p.mg) * p.cg;
            for oy in 0..p.oh {
                for ox in 0..p.ow {
                    let mut acc = 0.0f32;
                    for c in 0..p.cg {
                        let plane = ((n * p.c + c0 + c) * p.h) as usize;
                        let wb = m as usize * taps + (c * p.kh * p.kw) as usize;
                        for i in 0..p.kh {
                            let y = tap(oy, p.sh, i, p.dh, p.pt);
                            let y_in = y >= 0 && y < p.h as i32;
                            for j in 0..p.kw {
                                let x = tap(ox, p.sw, j, p.dw, p.pl);
                                // a tap in the padding reads a zero (w * 0: NaN for an infinite w)
                                let v = if y_in && x >= 0 && x < p.w as i32 {
                                    *a.add((plane + y as usize) * p.w as usize + x as usize)
                                } else {
                                    0.0
                                };
                                let prod = *wt.add(wb + (i * p.kw + j) as usize) * v;
                                acc += prod;
                            }
                        }
                    }
                    *out.add(o) = if p.flags & 1 == 1 { acc + *bias.add(m as usize) } else { acc };
                    o += 1;
                }
            }
        }
    }
}

#[inline(always)]
fn key(x: f32) -> i32 {
    let b = x.to_bits() as i32;
    b ^ ((b >> 31) & 0x7fff_ffff)
}

/// Calls f(offset) for every tap of window (oy, ox) of `plane` inside a.
#[inline(always)]
unsafe fn each_tap(p: &Window, plane: u32, oy: u32, ox: u32, mut f: impl FnMut(usize)) {
    for i in 0..p.kh {
        let y = tap(oy, p.sh, i, p.dh, p.pt);
        if y < 0 || y >= p.h as i32 {
            continue;
        }
        for j in 0..p.kw {
            let x = tap(ox, p.sw, j, p.dw, p.pl);
            if x >= 0 && x < p.w as i32 {
                f(((plane * p.h + y as u32) * p.w + x as u32) as usize);
            }
        }
    }
}

/// max_pool2d: IEEE maximum (NaN propagates, -0 < +0) over the taps inside a.
#[no_mangle]
pub unsafe extern "C" fn max_pool2d(a: *const f32, out: *mut f32, p: *const Window) {
    let p = &*p;
    let mut o = 0usize;
    for plane in 0..p.nb * p.c {
        for oy in 0..p.oh {
            for ox in 0..p.ow {
                let mut best = i32::MIN;
                let mut nan = false;
                each_tap(p, plane, oy, ox, |at| {
                    let v = *a.add(at);
                    nan |= v.is_nan();
                    best = best.max(key(v));
                });
                *out.add(o) = if nan { f32::NAN } else { f32::from_bits((best ^ ((best >> 31) & 0x7fff_ffff)) as u32) };
                o += 1;
            }
        }
    }
}

#[inline(always)]
fn counted(t: i32, size: u32, before: u32, after: u32, include: bool) -> u32 {
    let inside = if include { t >= -(before as i32) && t < (size + after) as i32 } else { t >= 0 && t < size as i32 };
    inside as u32
}

/// avg_pool2d: the f32 sum of the taps inside a, ascending, / the count.
#[no_mangle]
pub unsafe extern "C" fn avg_pool2d(a: *const f32, out: *mut f32, p: *const Window) {
    let p = &*p;
    let include = p.include_pad == 1;
    let mut o = 0usize;
    for plane in 0..p.nb * p.c {
        for oy in 0..p.oh {
            let cy: u32 = (0..p.kh).map(|i| counted(tap(oy, p.sh, i, p.dh, p.pt), p.h, p.pt, p.pb, include)).sum();
            for ox in 0..p.ow {
                let cx: u32 = (0..p.kw).map(|j| counted(tap(ox, p.sw, j, p.dw, p.pl), p.w, p.pl, p.pr, include)).sum();
                let mut acc = 0.0f32;
                each_tap(p, plane, oy, ox, |at| acc += *a.add(at));
                *out.add(o) = acc / (cy * cx) as f32;
                o += 1;
            }
        }
    }
}

#[inline(always)]
fn floor_div(num: i32, den: i32) -> i32 {
    let q = num / den;
    if num % den != 0 && num < 0 {
        q - 1
    } else {
        q
    }
}

/// resize's source coordinate of output index x as (num, den) (coord: 0 half_pixel,
/// 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel).
#[inline(always)]
fn source(coord: u32, x: u32, size: u32, outsz: u32) -> (i32, i32) {
    let (x, s, o) = (x as i32, size as i32, outsz as i32);
    match coord {
        1 => (x * s, o),
        2 | 3 if outsz == 1 => (0, 1),
        2 => (x * (s - 1), o - 1),
        _ => ((2 * x + 1) * s - o, 2 * o),
    }
}

#[inline(always)]
fn clamp_index(i: i32, size: u32) -> usize {
    i.max(0).min(size as i32 - 1) as usize
}

/// nearest_mode's rounding (0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil).
#[inline(always)]
fn nearest(rounding: u32, (num, den): (i32, i32), size: u32) -> usize {
    let i = match rounding {
        2 => floor_div(num, den),
        3 => -floor_div(-num, den),
        1 => floor_div(2 * num + den, 2 * den),
        _ => -floor_div(den - 2 * num, 2 * den),
    };
    clamp_index(i, size)
}

/// (i0, i1, w0, w1): linear's two source indices and float32 weights.
#[inline(always)]
fn linear((num, den): (i32, i32), size: u32) -> (usize, usize, f32, f32) {
    let i0 = floor_div(num, den);
    let w1 = (num - i0 * den) as f32 / den as f32;
    (clamp_index(i0, size), clamp_index(i0 + 1, size), 1.0 - w1, w1)
}

/// resize (flags 0 nearest, 1 linear: along W, then H).
#[no_mangle]
pub unsafe extern "C" fn resize(a: *const f32, out: *mut f32, p: *const Window) {
    let p = &*p;
    let (h, w) = (p.h as usize, p.w as usize);
    let mut o = 0usize;
    for plane in 0..(p.nb * p.c) as usize {
        let base = plane * h * w;
        for oy in 0..p.oh {
            let fy = source(p.coord, oy, p.h, p.oh);
            for ox in 0..p.ow {
                let fx = source(p.coord, ox, p.w, p.ow);
                *out.add(o) = if p.flags & 1 == 0 {
                    *a.add(base + nearest(p.rounding, fy, p.h) * w + nearest(p.rounding, fx, p.w))
                } else {
                    let (y0, y1, wy0, wy1) = linear(fy, p.h);
                    let (x0, x1, wx0, wx1) = linear(fx, p.w);
                    let row = |y: usize| wx0 * *a.add(base + y * w + x0) + wx1 * *a.add(base + y * w + x1);
                    wy0 * row(y0) + wy1 * row(y1)
                };
                o += 1;
            }
        }
    }
}

/// conv2d's columns [N, G, K, P] (k = (c * kh + i) * kw + j, P = oh * ow; zeros in the
/// padding) for the matmul form (kernels-window.mjs multiplies w [G, M/G, K] by them with the
/// matmul export, which accumulates in ascending k: the protocol's order).
#[no_mangle]
pub unsafe extern "C" fn im2col(a: *const f32, cols: *mut f32, p: *const Window) {
    let p = &*p;
    let groups = p.c / p.cg;
    let mut o = 0usize;
    for n in 0..p.nb {
        for g in 0..groups {
            for c in 0..p.cg {
                let plane = ((n * p.c + g * p.cg + c) * p.h) as usize;
                for i in 0..p.kh {
                    for j in 0..p.kw {
                        for oy in 0..p.oh {
                            let y = tap(oy, p.sh, i, p.dh, p.pt);
                            let y_in = y >= 0 && y < p.h as i32;
                            for ox in 0..p.ow {
                                let x = tap(ox, p.sw, j, p.dw, p.pl);
                                *cols.add(o) = if y_in && x >= 0 && x < p.w as i32 {
                                    *a.add((plane + y as usize) * p.w as usize + x as usize)
                                } else {
                                    0.0
                                };
                                o += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}
