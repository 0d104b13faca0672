//! Protocol-v3 ops at float32 (dt 0) and int32 (dt 1), on the tensors' 32-bit words (twins of
//! kernels/wgsl/map_bits.wgsl and extremes.wgsl, which explain the rules):
//! clamp (abs and square are generated map1 ops: maps.rs), and reduce_max / reduce_min /
//! argmax / argmin by ordered int32 keys (NaN past every number, -0 < +0 for max/min, -0 == +0
//! for the arg ops; on equal keys the first index). The best-of is order-independent, so a
//! plain sequential walk is exact.

const SIGN: u32 = 0x8000_0000;

#[inline(always)]
fn is_nan(b: u32) -> bool {
    (b & 0x7fff_ffff) > 0x7f80_0000
}

#[inline(always)]
unsafe fn map(a: *const u32, out: *mut u32, n: usize, f: impl Fn(u32) -> u32) {
    for i in 0..n {
        *out.add(i) = f(*a.add(i));
    }
}

/// y = a < lo ? lo : a, then y > hi ? hi : y; lo / hi are the bounds' words (float32 bits, or
/// int32 already ceil/floor-ed and saturated by the caller).
#[no_mangle]
pub unsafe extern "C" fn bits_clamp(a: *const u32, out: *mut u32, n: usize, dt: u32, lo: u32, hi: u32) {
    if dt == 0 {
        let (l, h) = (f32::from_bits(lo), f32::from_bits(hi));
        map(a, out, n, |b| {
            if is_nan(b) {
                return b;
            }
            let y = if f32::from_bits(b) < l { lo } else { b };
            if f32::from_bits(y) > h { hi } else { y }
        })
    } else {
        let (l, h) = (lo as i32, hi as i32);
        map(a, out, n, |b| {
            let y = if (b as i32) < l { l } else { b as i32 };
            (if y > h { h } else { y }) as u32
        })
    }
}

/// The order key of one element (op 0 reduce_max, 1 reduce_min, 2 argmax, 3 argmin).
#[inline(always)]
fn key_of(b: u32, dt: u32, op: u32) -> i32 {
    if dt == 1 {
        return b as i32;
    }
    if is_nan(b) {
        return if op == 0 || op == 2 { i32::MAX } else { i32::MIN };
    }
    let bits = if op >= 2 && b == SIGN { 0 } else { b };
    flip(bits as i32)
}

/// float32 bits <-> ordered keys (its own inverse).
#[inline(always)]
fn flip(s: i32) -> i32 {
    s ^ ((s >> 31) & 0x7fff_ffff)
}

/// Each of the outer * inner rows of `len` elements (stride `inner`) into one word of `out`:
/// the extreme's bits (ops 0, 1) or its index as an int32 (ops 2, 3).
#[no_mangle]
pub unsafe extern "C" fn extremes(
    a: *const u32, out: *mut u32, outer: usize, len: usize, inner: usize, dt: u32, op: u32,
) {
    let wants_max = op == 0 || op == 2;
    for o in 0..outer {
        for q in 0..inner {
            let base = o * len * inner + q;
            let mut best = key_of(*a.add(base), dt, op);
            let mut at = 0usize;
            for k in 1..len {
                let key = key_of(*a.add(base + k * inner), dt, op);
                // strict: on equal keys the first index stays
                if (wants_max && key > best) || (!wants_max && key < best) {
                    best = key;
                    at = k;
                }
            }
            *out.add(o * inner + q) = if op >= 2 {
                at as u32
            } else if dt == 1 {
                best as u32
            } else if best == i32::MAX || best == i32::MIN {
                0x7fc0_0000 // NaN propagates
            } else {
                flip(best) as u32
            };
        }
    }
}
