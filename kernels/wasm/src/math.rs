//! Transcendental functions for float32 results, computed in float64 and rounded once, so
//! each result is within about one float32 ulp of the exact value (the `transcendental`
//! tolerance allows 16). `core` has no libm, hence these short, self-contained versions.
const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
const LN2: f64 = core::f64::consts::LN_2;
const LOG2E: f64 = core::f64::consts::LOG2_E;
const FRAC_2_SQRT_PI: f64 = core::f64::consts::FRAC_2_SQRT_PI;
const SQRT_PI: f64 = 1.772_453_850_905_516;
const FRAC_1_SQRT_2: f64 = core::f64::consts::FRAC_1_SQRT_2;
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
/// 1/n for n < 128 (index 0 unused): series loops multiply instead of dividing.
const INV: [f64; 128] = {
    let mut t = [0.0; 128];
    let mut i = 1;
    while i < 128 {
        t[i] = 1.0 / i as f64;
        i += 1;
    }
    t
};
/// 1.5 * 2^52: adding it rounds a float64 below 2^51 to an integer, readable from the low bits.
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;

/// |x| (`f64::abs` lives in std, not core, in this toolchain).
#[inline(always)]
pub fn fabs(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & !(1u64 << 63))
}

/// 2^k for k in the normal float64 exponent range.
#[inline(always)]
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// y * 2^k for any k the callers produce (split so each factor stays a normal number).
#[inline(always)]
fn scale2(y: f64, k: i32) -> f64 {
    if k > 1000 {
        y * pow2(1000) * pow2(k - 1000)
    } else if k < -1000 {
        y * pow2(-1000) * pow2(k + 1000)
    } else {
        y * pow2(k)
    }
}

/// e^x: Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, then the degree-11 Taylor polynomial
/// (truncation error < 1e-14 relative), unrolled.
pub fn exp64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.78 {
        return f64::INFINITY;
    }
    if x < -745.2 {
        return 0.0;
    }
    let kd = x * LOG2E + ROUND_MAGIC;
    let k = kd.to_bits() as u32 as i32;
    let kf = kd - ROUND_MAGIC;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    let p = 1.0 / 362_880.0 + r * (1.0 / 3_628_800.0 + r * (1.0 / 39_916_800.0));
    let p = 1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0 + r * p)));
    let p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * p))));
    scale2(p, k)
}

/// e^x - 1, accurate near 0 (tanh needs it).
fn expm1_64(x: f64) -> f64 {
    if fabs(x) >= 0.7 {
        return exp64(x) - 1.0;
    }
    // Taylor to x^17: the next term is < 1e-17 relative for |x| < 0.7.
    let mut term = x;
    let mut sum = x;
    for inv in &INV[2..18] {
        term *= x * inv;
        sum += term;
    }
    sum
}

/// Natural log: x = m 2^e with m in [sqrt(1/2), sqrt 2), log m = 2 atanh((m-1)/(m+1)).
pub fn log64(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return x;
    }
    let mut bits = x.to_bits();
    let mut e: i32 = 0;
    if bits >> 52 == 0 {
        // subnormal: scale into the normal range first
        bits = (x * pow2(54)).to_bits();
        e -= 54;
    }
    e += ((bits >> 52) as i32) - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut p = 0.0;
    let mut k = 21.0;
    while k >= 1.0 {
        p = p * s2 + 1.0 / k;
        k -= 2.0;
    }
    e as f64 * LN2 + 2.0 * s * p
}

/// b^t for b >= 0 (Adam's bias corrections).
pub fn pow64(b: f64, t: f64) -> f64 {
    if t == 0.0 {
        return 1.0;
    }
    exp64(t * log64(b))
}

pub fn tanh64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = fabs(x);
    if a > 20.0 {
        return if x > 0.0 { 1.0 } else { -1.0 };
    }
    let e = expm1_64(2.0 * a);
    let t = e / (e + 2.0);
    if x < 0.0 {
        -t
    } else {
        t
    }
}

/// erf(z) for 0 <= z < 2.5 by its Taylor series (absolute error < 1e-13), stopping once the
/// terms no longer change the sum.
fn erf_series(z: f64) -> f64 {
    let z2 = z * z;
    let mut term = z;
    let mut sum = z;
    let mut n = 1;
    while n < 60 {
        term *= -z2 * INV[n];
        let add = term * INV[2 * n + 1];
        sum += add;
        if fabs(add) < 1e-17 * sum {
            break;
        }
        n += 1;
    }
    sum * FRAC_2_SQRT_PI
}

/// erfc(z) for z >= 2.5 by its continued fraction (relative error < 1e-13), evaluated
/// backwards as one fraction p/q so the loop has no division.
fn erfc_cf(z: f64) -> f64 {
    let (mut p, mut q) = (z, 1.0);
    let mut n = 40;
    while n >= 1 {
        let c = n as f64 * 0.5;
        let next = z * p + c * q;
        q = p;
        p = next;
        n -= 1;
    }
    exp64(-z * z) * q / (SQRT_PI * p)
}

/// erfc(z) for any z, accurate relative to the result in both tails.
pub fn erfc64(z: f64) -> f64 {
    if z.is_nan() {
        return z;
    }
    if z < 0.0 {
        return 2.0 - erfc64(-z);
    }
    if z < 2.5 {
        1.0 - erf_series(z)
    } else if z > 27.0 {
        0.0
    } else {
        erfc_cf(z)
    }
}

/// Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2.
pub fn phi_cdf(x: f64) -> f64 {
    0.5 * erfc64(-x * FRAC_1_SQRT_2)
}

/// gelu(x) = x Phi(x); gelu(+inf) = +inf, gelu(-inf) = -0 (the limit: negative for every x < 0).
pub fn gelu64(x: f64) -> f64 {
    if x == f64::INFINITY {
        return x;
    }
    if x == f64::NEG_INFINITY {
        return -0.0;
    }
    x * phi_cdf(x)
}

/// gelu'(x) = Phi(x) + x phi(x); gelu'(+inf) = 1, gelu'(-inf) = +0 (the limits).
pub fn gelu_grad64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if fabs(x) > 40.0 {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    phi_cdf(x) + x * FRAC_1_SQRT_2PI * exp64(-0.5 * x * x)
}

pub fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + exp64(-x))
}

