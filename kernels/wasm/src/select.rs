//! The protocol-v3 select ops on 32-bit words (twin of kernels/wgsl/select.wgsl, which explains
//! the rules): maximum, minimum, eq..ge, where, cast, hash_uniform, dropout. One export,
//! `select`, picked by `op` (the WGSL OP codes) with `dt` the operands' dtype code (0 float32,
//! 1 int32, 2 uint32, 3 bool). Everything is integer arithmetic on the words except dropout's
//! one float32 multiply, so the bits equal every other backend's.

const SIGN: u32 = 0x8000_0000;

/// The walk's descriptor (u32 words, made by backends/wasm/kernels-select.mjs): the result's
/// shape padded to rank 4, then a's, b's and c's strides (0 where broadcast).
#[repr(C)]
pub struct Walk {
    d: [u32; 4],
    sa: [u32; 4],
    sb: [u32; 4],
    sc: [u32; 4],
}

/// The dropout / hash / cast words (hash-uniform.mjs): seed, keep threshold, scale bits, target.
#[repr(C)]
pub struct Words {
    seed: u32,
    thr: u32,
    scale: u32,
    to: u32,
}

#[inline(always)]
fn is_nan(w: u32) -> bool {
    (w & 0x7fff_ffff) > 0x7f80_0000
}

/// float32 words in increasing order as unsigned integers (-0 < +0; NaN tested apart).
#[inline(always)]
fn key(w: u32) -> u32 {
    if w & SIGN != 0 { !w } else { w | SIGN }
}

#[inline(always)]
fn below(x: u32, y: u32, dt: u32) -> bool {
    match dt {
        0 => key(x) < key(y),
        1 => (x as i32) < (y as i32),
        _ => x < y,
    }
}

#[inline(always)]
fn extreme(x: u32, y: u32, dt: u32, is_max: bool) -> u32 {
    if dt == 0 && is_nan(x) {
        return x;
    }
    if dt == 0 && is_nan(y) {
        return y;
    }
    let take_y = if is_max { below(x, y, dt) } else { below(y, x, dt) };
    if take_y { y } else { x }
}

#[inline(always)]
fn equal(x: u32, y: u32, dt: u32) -> bool {
    if dt != 0 {
        return x == y;
    }
    !is_nan(x) && !is_nan(y) && (x == y || (x | y) & 0x7fff_ffff == 0)
}

#[inline(always)]
fn less(x: u32, y: u32, dt: u32) -> bool {
    if dt != 0 {
        return below(x, y, dt);
    }
    !is_nan(x) && !is_nan(y) && (x | y) & 0x7fff_ffff != 0 && key(x) < key(y)
}

#[inline(always)]
fn compare(op: u32, x: u32, y: u32, dt: u32) -> u32 {
    let r = match op {
        2 => equal(x, y, dt),
        3 => !equal(x, y, dt),
        4 => less(x, y, dt),
        5 => less(x, y, dt) || equal(x, y, dt),
        6 => less(y, x, dt),
        _ => less(y, x, dt) || equal(x, y, dt),
    };
    r as u32
}

/// float32 bits of an unsigned integer, rounded to nearest, ties to even (integer only).
fn u32_to_f32_bits(m: u32) -> u32 {
    if m == 0 {
        return 0;
    }
    let e = 31 - m.leading_zeros();
    if e <= 23 {
        return ((e + 127) << 23) + ((m << (23 - e)) - 0x80_0000);
    }
    let shift = e - 23;
    let mut mant = m >> shift;
    let rest = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && mant & 1 == 1) {
        mant += 1;
    }
    ((e + 127) << 23) + (mant - 0x80_0000)
}

/// float32 bits -> int32 (signed) or uint32 words: truncation, NaN -> 0, saturation.
fn f32_to_int_bits(w: u32, signed: bool) -> u32 {
    if is_nan(w) {
        return 0;
    }
    let neg = w & SIGN != 0;
    let e = ((w >> 23) & 0xff) as i32 - 127;
    if e < 0 || (!signed && neg) {
        return 0;
    }
    if signed && e >= 31 {
        return if neg { SIGN } else { 0x7fff_ffff };
    }
    if !signed && e >= 32 {
        return 0xffff_ffff;
    }
    let m = (w & 0x7f_ffff) | 0x80_0000;
    let mag = if e >= 23 { m << (e - 23) as u32 } else { m >> (23 - e) as u32 };
    if neg { mag.wrapping_neg() } else { mag }
}

fn cast_word(w: u32, dt: u32, to: u32) -> u32 {
    if to == 3 {
        return if dt == 0 { (w & 0x7fff_ffff != 0) as u32 } else { (w != 0) as u32 };
    }
    if dt == 0 {
        return match to {
            1 => f32_to_int_bits(w, true),
            2 => f32_to_int_bits(w, false),
            _ => w,
        };
    }
    if to == 0 {
        if dt == 1 && w & SIGN != 0 {
            return u32_to_f32_bits(w.wrapping_neg()) | SIGN;
        }
        return u32_to_f32_bits(w);
    }
    w
}

fn lowbias32(v: u32) -> u32 {
    let mut x = v;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

#[inline(always)]
fn uniform_bits(h: u32) -> u32 {
    let top = h >> 8;
    if top == 0 { 0 } else { u32_to_f32_bits(top) - (24 << 23) }
}

#[inline(always)]
fn dropout_word(w: u32, h: u32, k: &Words) -> u32 {
    let finite = w & 0x7fff_ffff < 0x7f80_0000;
    if h >> 8 >= k.thr {
        if !finite {
            return if is_nan(w) { 0x7fc0_0000 } else { w };
        }
        return (f32::from_bits(w) * f32::from_bits(k.scale)).to_bits();
    }
    if finite { w & SIGN } else { 0x7fc0_0000 }
}

/// out[i] = f(i, a[ia], b[ib], c[ic]) over the rank-4 walk.
#[inline(always)]
unsafe fn walk(a: *const u32, b: *const u32, c: *const u32, out: *mut u32, w: &Walk,
               f: impl Fn(u32, u32, u32, u32) -> u32) {
    let [d0, d1, d2, d3] = w.d;
    let mut i = 0u32;
    for x0 in 0..d0 {
        for x1 in 0..d1 {
            for x2 in 0..d2 {
                let mut ia = x0 * w.sa[0] + x1 * w.sa[1] + x2 * w.sa[2];
                let mut ib = x0 * w.sb[0] + x1 * w.sb[1] + x2 * w.sb[2];
                let mut ic = x0 * w.sc[0] + x1 * w.sc[1] + x2 * w.sc[2];
                for _ in 0..d3 {
                    let (x, y, z) = (*a.add(ia as usize), *b.add(ib as usize), *c.add(ic as usize));
                    *out.add(i as usize) = f(i, x, y, z);
                    ia += w.sa[3];
                    ib += w.sb[3];
                    ic += w.sc[3];
                    i += 1;
                }
            }
        }
    }
}

/// One select op over the whole tensor; `walk` and `words` point at descriptors in memory.
#[no_mangle]
pub unsafe extern "C" fn select(op: u32, dt: u32, a: *const u32, b: *const u32, c: *const u32,
                                out: *mut u32, walk_desc: *const Walk, words: *const Words) {
    let (w, k) = (&*walk_desc, &*words);
    match op {
        0 => walk(a, b, c, out, w, |_, x, y, _| extreme(x, y, dt, true)),
        1 => walk(a, b, c, out, w, |_, x, y, _| extreme(x, y, dt, false)),
        8 => walk(a, b, c, out, w, |_, x, y, z| if x != 0 { y } else { z }),
        9 => walk(a, b, c, out, w, |_, x, _, _| cast_word(x, dt, k.to)),
        10 => {
            let key = lowbias32(lowbias32(k.seed) ^ *a);
            walk(a, b, c, out, w, |i, _, _, _| uniform_bits(lowbias32(key ^ lowbias32(i))))
        }
        11 => {
            let key = lowbias32(lowbias32(k.seed) ^ *b);
            walk(a, b, c, out, w, |i, x, _, _| dropout_word(x, lowbias32(key ^ lowbias32(i)), k))
        }
        _ => walk(a, b, c, out, w, |_, x, y, _| compare(op, x, y, dt)),
    }
}
