//! Block-quantized weights: ggml's q4_k / q6_k / q8_0 / q4_0 blocks (their bytes in memory as
//! uploaded; kind 0, 1, 2, 3) decoded as ggml decodes them, inside `matmul_q` (a @ w.T: each
//! weight row decoded into `scratch`, K floats, then dot products in ascending k from 0.0, each
//! product and sum rounded: no contraction), `dequantize` and `dequantize_rows`; and
//! `matmul_fixed` (int32 fixed point, i64 sums wrapping, one rounding). Rules:
//! docs/protocol.md; twins: cpu/quant.mjs, pylib/gpulab/quant.py.

/// Values and bytes per block of each kind.
fn block(kind: u32) -> (usize, usize) {
    match kind {
        1 => (256, 210),
        2 => (32, 34),
        3 => (32, 18),
        _ => (256, 144),
    }
}

/// An IEEE binary16 as f32, exactly (subnormals and -0 kept).
fn half(h: u32) -> f32 {
    let s = (h & 0x8000) << 16;
    let e = (h >> 10) & 31;
    let m = h & 1023;
    if e == 0 {
        return f32::from_bits((m as f32 * 5.960_464_5e-8).to_bits() | s);
    }
    if e == 31 {
        return f32::from_bits(s | 0x7f80_0000 | (m << 13));
    }
    f32::from_bits(s | ((e + 112) << 23) | (m << 13))
}

unsafe fn byte(p: *const u8, i: usize) -> u32 {
    *p.add(i) as u32
}

/// Block `blk` of q4_k bytes into out[0..256]: y = f32(d * sc) * q - f32(dmin * m).
unsafe fn decode_q4k(w: *const u8, blk: usize, out: *mut f32) {
    let b = w.add(blk * 144);
    let d = half(byte(b, 0) | (byte(b, 1) << 8));
    let dmin = half(byte(b, 2) | (byte(b, 3) << 8));
    let q = b.add(4);
    for j in 0..8 {
        let (sc, m) = if j < 4 {
            (byte(q, j) & 63, byte(q, j + 4) & 63)
        } else {
            ((byte(q, j + 4) & 15) | ((byte(q, j - 4) >> 6) << 4),
             (byte(q, j + 4) >> 4) | ((byte(q, j) >> 6) << 4))
        };
        let d1 = d * sc as f32;
        let m1 = dmin * m as f32;
        let qs = b.add(16 + (j / 2) * 32);
        let shift = (j & 1) * 4;
        for l in 0..32 {
            *out.add(j * 32 + l) = d1 * ((byte(qs, l) >> shift) & 15) as f32 - m1;
        }
    }
}

/// Block `blk` of q6_k bytes into out[0..256]: y = f32(d * scale) * (q - 32).
unsafe fn decode_q6k(w: *const u8, blk: usize, out: *mut f32) {
    let b = w.add(blk * 210);
    let d = half(byte(b, 208) | (byte(b, 209) << 8));
    for i in 0..256 {
        let (h, t, l) = (i >> 7, (i >> 5) & 3, i & 31);
        let ql = byte(b, h * 64 + l + (t & 1) * 32);
        let nib = if t < 2 { ql & 15 } else { ql >> 4 };
        let qh = byte(b, 128 + h * 32 + l);
        let q = (nib | (((qh >> (2 * t)) & 3) << 4)) as i32 - 32;
        let sc = *b.add(192 + h * 8 + l / 16 + 2 * t) as i8;
        *out.add(i) = d * sc as f32 * q as f32;
    }
}

/// Block `blk` of q8_0 bytes into out[0..32]: y = d * q (q an int8).
unsafe fn decode_q8_0(w: *const u8, blk: usize, out: *mut f32) {
    let b = w.add(blk * 34);
    let d = half(byte(b, 0) | (byte(b, 1) << 8));
    for j in 0..32 {
        *out.add(j) = d * (*b.add(2 + j) as i8) as f32;
    }
}

/// Block `blk` of q4_0 bytes into out[0..32]: y = d * (q - 8); byte j holds values j and j + 16.
unsafe fn decode_q4_0(w: *const u8, blk: usize, out: *mut f32) {
    let b = w.add(blk * 18);
    let d = half(byte(b, 0) | (byte(b, 1) << 8));
    for j in 0..16 {
        let q = byte(b, 2 + j);
        *out.add(j) = d * ((q & 15) as i32 - 8) as f32;
        *out.add(j + 16) = d * ((q >> 4) as i32 - 8) as f32;
    }
}

unsafe fn decode(kind: u32, w: *const u8, blk: usize, out: *mut f32) {
    match kind {
        1 => decode_q6k(w, blk, out),
        2 => decode_q8_0(w, blk, out),
        3 => decode_q4_0(w, blk, out),
        _ => decode_q4k(w, blk, out),
    }
}

/// `count` values of a tensor of `kind`.
#[no_mangle]
pub unsafe extern "C" fn dequantize(w: *const u8, out: *mut f32, count: usize, kind: u32) {
    let (per, _) = block(kind);
    for blk in 0..count / per {
        decode(kind, w, blk, out.add(blk * per));
    }
}

/// out[m, k] = rows idx[0..m] of a [N, k] tensor of `kind` (the caller checked every index).
#[no_mangle]
pub unsafe extern "C" fn dequantize_rows(w: *const u8, idx: *const i32, out: *mut f32, m: usize,
                                         k: usize, kind: u32) {
    let (per, bytes) = block(kind);
    let row_bytes = (k / per) * bytes;
    for r in 0..m {
        let wr = w.add(*idx.add(r) as usize * row_bytes);
        for blk in 0..k / per {
            decode(kind, wr, blk, out.add(r * k + blk * per));
        }
    }
}

/// out[rows, n] = x[rows, k] @ w[n, k].T; `scratch` holds k floats (one decoded weight row).
#[no_mangle]
pub unsafe extern "C" fn matmul_q(x: *const f32, w: *const u8, out: *mut f32, rows: usize,
                                  n: usize, k: usize, kind: u32, scratch: *mut f32) {
    let (per, bytes) = block(kind);
    let row_bytes = (k / per) * bytes;
    for c in 0..n {
        let wr = w.add(c * row_bytes);
        for blk in 0..k / per {
            decode(kind, wr, blk, scratch.add(blk * per));
        }
        for r in 0..rows {
            let xr = x.add(r * k);
            let mut acc = 0.0f32;
            for i in 0..k {
                acc += *xr.add(i) * *scratch.add(i);
            }
            *out.add(r * n + c) = acc;
        }
    }
}

/// round-half-even(x * 2^frac) saturated to int32, NaN -> 0, from the bits.
fn to_fixed(x: f32, frac: u32) -> i64 {
    let bits = x.to_bits();
    let e = (bits >> 23) & 255;
    let mant = bits & 0x7f_ffff;
    let neg = bits >> 31 == 1;
    if (e == 255 && mant != 0) || e == 0 {
        return 0;
    }
    let m = mant | 0x80_0000;
    let sh = e as i32 - 150 + frac as i32;
    if sh >= 8 {
        return if neg { i32::MIN as i64 } else { i32::MAX as i64 };
    }
    let mag = if sh >= 0 {
        m << sh
    } else if sh >= -24 {
        let r = (-sh) as u32;
        let q = m >> r;
        let rem = m & ((1 << r) - 1);
        let half = 1 << (r - 1);
        if rem > half || (rem == half && q & 1 == 1) { q + 1 } else { q }
    } else {
        0
    };
    if neg { -(mag as i64) } else { mag as i64 }
}

/// One [m, k] @ [k, n] product in fixed point: i64 sums (wrapping), each rounded once to f32
/// (Rust's i64 -> f32 conversion rounds to nearest even) and scaled by 2^-2frac (exact).
#[no_mangle]
pub unsafe extern "C" fn matmul_fixed(a: *const f32, b: *const f32, out: *mut f32, m: usize,
                                      k: usize, n: usize, frac: u32) {
    let scale = f32::from_bits((127 - 2 * frac) << 23);
    for r in 0..m {
        for c in 0..n {
            let mut acc: i64 = 0;
            for i in 0..k {
                let p = to_fixed(*a.add(r * k + i), frac) * to_fixed(*b.add(i * n + c), frac);
                acc = acc.wrapping_add(p);
            }
            *out.add(r * n + c) = acc as f32 * scale;
        }
    }
}
