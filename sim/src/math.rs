//! Deterministic `ln` and `exp` built from IEEE basic operations only.
//!
//! `f64::ln` and `f64::exp` call the platform's libm, which is not required to round
//! correctly and differs between libcs and versions. A run must give the same trace hash
//! on every machine, so the store's samplers use these instead: `+ - * /`, `sqrt`,
//! `round` and bit manipulation are exact or correctly rounded everywhere, and Rust does
//! not contract them into fused operations.

/// ln 2 split so that `k * LN_2_HI` is exact for any exponent `k` (fdlibm's split:
/// 6.93147180369123816490e-01 and 1.90821492927058770002e-10), given as bits so that no
/// decimal rounding stands between the source and the constant.
const LN_2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN_2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// Terms of the Taylor series for exp on |r| <= ln2/2: the 19th term is below 1e-20.
const EXP_TERMS: u32 = 18;
/// Terms of the atanh series for ln on |s| <= 0.1716: the 13th term is below 1e-19.
const LN_TERMS: u32 = 12;
/// 2^54, to lift subnormal inputs of `ln` into the normal range.
const TWO_POW_54: f64 = 18_014_398_509_481_984.0;

/// 2^k for k in the normal exponent range.
fn pow2(k: i64) -> f64 {
    assert!((-1022..=1023).contains(&k));
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// e^x.
pub(crate) fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -708.0 {
        return 0.0;
    }
    let k = (x * core::f64::consts::LOG2_E).round();
    let r = (x - k * LN_2_HI) - k * LN_2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=EXP_TERMS {
        term *= r / f64::from(i);
        sum += term;
    }
    sum * pow2(k as i64)
}

/// Natural logarithm; NaN below zero, -inf at zero.
pub(crate) fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    let (x, e_bias) = if x < f64::MIN_POSITIVE { (x * TWO_POW_54, -54) } else { (x, 0) };
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023 + e_bias;
    // Mantissa in [1, 2), then folded into [sqrt(1/2), sqrt(2)) so the series converges fast.
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut term = s;
    let mut sum = 0.0;
    for i in 0..LN_TERMS {
        sum += term / f64::from(2 * i + 1);
        term *= s2;
    }
    let e = e as f64;
    (2.0 * sum + e * LN_2_LO) + e * LN_2_HI
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-14 * b.abs().max(1.0)
    }

    #[test]
    fn ln_2_split_sums_to_ln_2() {
        assert_eq!(LN_2_HI + LN_2_LO, core::f64::consts::LN_2);
        assert_eq!(LN_2_HI.to_bits() & 0x1f_ffff, 0, "k * LN_2_HI must be exact");
    }

    #[test]
    fn exp_matches_libm_closely() {
        let mut x = -40.0;
        while x < 40.0 {
            assert!(close(exp(x), x.exp()), "exp({x}) = {} vs {}", exp(x), x.exp());
            x += 0.0137;
        }
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn ln_matches_libm_closely() {
        for &x in &[1e-300, 1e-30, 1e-5, 0.1, 0.5, 0.7, 1.0, 1.25, 1.5, 2.0, 10.0, 1e10, 1e300] {
            assert!(close(ln(x), x.ln()), "ln({x}) = {} vs {}", ln(x), x.ln());
        }
        assert!(close(ln(5e-320), (5e-320f64).ln()));
        assert_eq!(ln(1.0), 0.0);
        assert!(ln(-1.0).is_nan());
    }
}
