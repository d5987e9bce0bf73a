//! Branch-free f32 math that the compiler can vectorise (libm's scalar calls cannot be):
//! `exp` and the activations built on it. Accurate to about one ulp.

/// `e^x`: `x = n ln 2 + r` with `|r| <= ln 2 / 2`, `e^r` by a degree-7 polynomial (Cephes'
/// expf coefficients), `2^n` from exponent bits in two halves so results down in the
/// subnormals and up to overflow come out right. NaN propagates; `+-inf` give `inf` / 0.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding and subtracting it rounds to the nearest integer without a call.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-104.0, 89.0);
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = ((((((1.987_569_2e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 0.166_666_65) * r + 0.5) * r * r) + r + 1.0;
    // n as an integer, read from t's mantissa bits: x was clamped, so n lies in [-151, 129]
    // (a float-to-int conversion would keep the loop from vectorising, on wasm32 always).
    let n = t.to_bits() as i32 - ROUND.to_bits() as i32;
    let (n1, n2) = (n >> 1, n - (n >> 1));
    let scale = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    p * scale(n1) * scale(n2)
}

/// `dst[i] = f(src[i])`, compiled a second time for AVX2 + FMA and picked at run time where
/// the CPU has them (twice the vector width of the x86-64 baseline).
#[inline(always)]
pub(super) fn map(src: &[f32], dst: &mut [f32], f: impl Fn(f32) -> f32) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the features were just detected.
        unsafe { map_avx2(src, dst, f) };
        return;
    }
    for (o, &v) in dst.iter_mut().zip(src) {
        *o = f(v);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_avx2(src: &[f32], dst: &mut [f32], f: impl Fn(f32) -> f32) {
    for (o, &v) in dst.iter_mut().zip(src) {
        *o = f(v);
    }
}

/// Whether this x86-64 CPU has AVX2 and FMA (the `*_avx2` twins of the row kernels).
#[cfg(target_arch = "x86_64")]
pub(super) fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Softmax of one row in place: `e^(x - max) / sum`, vectorised (AVX2 + FMA where present).
pub(super) fn softmax_in_place(row: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the features were just detected.
        unsafe { softmax_avx2(row) };
        return;
    }
    softmax_any(row);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_avx2(row: &mut [f32]) {
    softmax_any(row);
}

/// The maximum ignores NaN: a NaN element makes its exponential, the sum and so the whole
/// row NaN, as does a `+inf` maximum (`inf - inf`) or a row of `-inf` — the reference's results.
#[inline(always)]
fn softmax_any(row: &mut [f32]) {
    let max = max_lanes(row);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = (1.0 / sum_lanes(row)) as f32;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// The largest element, NaN ignored, in eight lanes so it vectorises (`-inf` when empty).
#[inline(always)]
fn max_lanes(xs: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        let c: &[f32; 8] = c.try_into().unwrap_or(&[f32::NEG_INFINITY; 8]);
        for i in 0..8 {
            lanes[i] = if c[i] > lanes[i] { c[i] } else { lanes[i] };
        }
    }
    lanes.iter().chain(chunks.remainder()).fold(f32::NEG_INFINITY, |m, &v| m.max(v))
}

/// The sum in f64, from eight f64 lanes so it vectorises.
#[inline(always)]
pub(super) fn sum_lanes(xs: &[f32]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        let c: &[f32; 8] = c.try_into().unwrap_or(&[0.0; 8]);
        for i in 0..8 {
            lanes[i] += f64::from(c[i]);
        }
    }
    lanes.iter().sum::<f64>() + chunks.remainder().iter().map(|&v| f64::from(v)).sum::<f64>()
}

/// `erfc(z)` with fractional error below 1.2e-7 (the Chebyshev fit of Numerical Recipes,
/// also used by shaders/activation.wgsl), built on [`exp`].
#[inline(always)]
pub(super) fn erfc(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * z.abs());
    let p = -z * z - 1.265_512_2
        + t * (1.000_023_7 + t * (0.374_091_96 + t * (0.096_784_18 + t * (-0.186_288_06 + t * (0.278_868_07 + t * (-1.135_204 + t * (1.488_515_9 + t * (-0.822_152_2 + t * 0.170_872_77))))))));
    let r = t * exp(p);
    if z >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// `1 / (1 + e^-x)`
#[inline(always)]
pub(super) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_and_erfc_are_accurate() {
        let mut worst = 0.0f64;
        let mut x = -103.0f32;
        while x < 88.7 {
            let want = f64::from(x).exp();
            let got = f64::from(exp(x));
            // Relative error, measured in f32 epsilons of the result (normal range only).
            if want > f64::from(f32::MIN_POSITIVE) {
                worst = worst.max((got - want).abs() / want / f64::from(f32::EPSILON));
            }
            x += 0.000_97;
        }
        assert!(worst < 2.0, "worst error {worst} ulp");
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(-100.0) > 0.0 && exp(-100.0) < 1e-43, "subnormal results");
        let mut z = -6.0f32;
        while z < 6.0 {
            let want = libm::erfc(f64::from(z));
            // f32 rounding of the exponent argument leaves a few e-6 relative in the tail.
            assert!((f64::from(erfc(z)) - want).abs() <= 1e-5 * want, "erfc({z})");
            z += 0.013;
        }
        assert_eq!(sigmoid(-200.0), 0.0);
        assert_eq!(sigmoid(200.0), 1.0);
    }
}
