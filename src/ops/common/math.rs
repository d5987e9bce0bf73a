//! Branch-free f32 math that the compiler can vectorise (libm's scalar calls cannot be):
//! `exp` and the activations built on it. Accurate to about one ulp.
//!
//! Each function is compiled twice through `const FUSED: bool`: `false` for any CPU (and
//! wasm), `true` for the AVX2 + FMA twins of the loops, where [`madd`] is one instruction.

/// `a * b + c`: one fused multiply-add when `FUSED` (only in code compiled for FMA), else a
/// multiply and an add (`mul_add` without the instruction is a slow library call).
#[inline(always)]
pub(crate) fn madd<const FUSED: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FUSED {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// One scalar function in both builds: `plain` for any CPU, `fused` for loops compiled with
/// AVX2 + FMA. [`twin!`] writes both from one expression.
#[derive(Clone, Copy)]
pub(crate) struct Twin<P, F> {
    /// Built with `FUSED = false`.
    pub plain: P,
    /// Built with `FUSED = true` (run on x86-64 only).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fused: F,
}

/// `twin!(F => expr)`: a [`Twin`] of `expr` built once with the const `F` false and once true.
macro_rules! twin {
    ($fused:ident => $f:expr) => {
        $crate::ops::common::math::Twin {
            plain: {
                const $fused: bool = false;
                $f
            },
            fused: {
                const $fused: bool = true;
                $f
            },
        }
    };
}
pub(crate) use twin;

/// `e^x`: `x = n ln 2 + r` with `|r| <= ln 2 / 2`, `e^r` by a degree-7 polynomial (Cephes'
/// expf coefficients), `2^n` from exponent bits in two halves so results down in the
/// subnormals and up to overflow come out right. NaN propagates; `+-inf` give `inf` / 0.
#[inline(always)]
pub(crate) fn exp<const FUSED: bool>(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding and subtracting it rounds to the nearest integer without a call.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-104.0, 89.0);
    let m = madd::<FUSED>;
    let t = m(x, LOG2E, ROUND);
    let n = t - ROUND;
    let r = m(-n, LN2_LO, m(-n, LN2_HI, x));
    let p = m(
        m(
            m(
                m(m(1.987_569_2e-4, r, 1.398_199_9e-3), r, 8.333_452e-3),
                r,
                4.166_579_6e-2,
            ),
            r,
            0.166_666_65,
        ),
        r,
        0.5,
    );
    let p = m(p, r * r, r) + 1.0;
    // n as an integer, read from t's mantissa bits: x was clamped, so n lies in [-151, 129]
    // (a float-to-int conversion would keep the loop from vectorising, on wasm32 always).
    let n = t.to_bits() as i32 - ROUND.to_bits() as i32;
    let (n1, n2) = (n >> 1, n - (n >> 1));
    let scale = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    p * scale(n1) * scale(n2)
}

/// The widest x86-64 build of the loops in [`x86_twins!`] that this CPU runs.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Simd {
    /// The x86-64 baseline (SSE2): the plain build.
    Base,
    /// AVX2 + FMA: 8 lanes.
    Avx2,
    /// AVX-512F (with AVX2 + FMA): 16 lanes and 32 registers.
    Avx512,
}

/// Which build of the loops this CPU runs (feature detection is cached by std).
#[cfg(target_arch = "x86_64")]
pub(crate) fn simd() -> Simd {
    use std::arch::is_x86_feature_detected as has;
    if !(has!("avx2") && has!("fma")) {
        Simd::Base
    } else if has!("avx512f") {
        Simd::Avx512
    } else {
        Simd::Avx2
    }
}

/// `x86_twins!(fn name(args) { body })`: a module `name` holding `avx2` and `avx512`, the
/// function compiled for AVX2 + FMA and for AVX-512F (x86-64 only). [`x86_run!`] calls the
/// widest one the CPU has. Bodies call the `FUSED = true` builds of the math here.
macro_rules! x86_twins {
    ($(#[$doc:meta])* fn $name:ident $($rest:tt)*) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            /// The AVX2 + FMA build.
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn avx2 $($rest)*
            /// The AVX-512F build.
            #[target_feature(enable = "avx512f,avx2,fma")]
            pub(super) unsafe fn avx512 $($rest)*
        }
    };
}
pub(crate) use x86_twins;

/// `x86_run!(name(args))`: returns from the caller with the widest build of
/// [`x86_twins!`]' `name` that this CPU runs; on the baseline (and off x86-64) falls through.
macro_rules! x86_run {
    ($name:ident($($arg:expr),*)) => {
        #[cfg(target_arch = "x86_64")]
        match $crate::ops::common::math::simd() {
            // SAFETY: the build's features were just detected.
            $crate::ops::common::math::Simd::Avx512 => return unsafe { $name::avx512($($arg),*) },
            // SAFETY: as above.
            $crate::ops::common::math::Simd::Avx2 => return unsafe { $name::avx2($($arg),*) },
            $crate::ops::common::math::Simd::Base => {}
        }
    };
}
pub(crate) use x86_run;

/// `dst[i] = f(src[i])`: the plain build, or the widest x86-64 one (with `f.fused`).
#[inline(always)]
pub(crate) fn map(src: &[f32], dst: &mut [f32], f: Twin<impl Fn(f32) -> f32, impl Fn(f32) -> f32>) {
    x86_run!(map_fused(src, dst, f.fused));
    for (o, &v) in dst.iter_mut().zip(src) {
        *o = (f.plain)(v);
    }
}

x86_twins! {
    /// The loop of [`map`].
    fn map_fused(src: &[f32], dst: &mut [f32], f: impl Fn(f32) -> f32) {
        for (o, &v) in dst.iter_mut().zip(src) {
            *o = f(v);
        }
    }
}

/// `data[i] = f(data[i])` in place (see [`map`]).
#[inline(always)]
pub(crate) fn map_in_place(data: &mut [f32], f: Twin<impl Fn(f32) -> f32, impl Fn(f32) -> f32>) {
    x86_run!(map_in_place_fused(data, f.fused));
    for v in data.iter_mut() {
        *v = (f.plain)(*v);
    }
}

x86_twins! {
    /// The loop of [`map_in_place`].
    fn map_in_place_fused(data: &mut [f32], f: impl Fn(f32) -> f32) {
        for v in data.iter_mut() {
            *v = f(*v);
        }
    }
}

/// `dst[i] = f(dst[i], src[i])`: the plain build, or the AVX2 one. Not the AVX-512 one:
/// there a select `f` becomes a masked store, and the next fold of the same `dst` (pooling
/// folds each row several times) stalls on forwarding from it (2× slower in MaxPool).
#[inline(always)]
pub(crate) fn fold_into(dst: &mut [f32], src: &[f32], f: impl Fn(f32, f32) -> f32 + Copy) {
    #[cfg(target_arch = "x86_64")]
    if simd() != Simd::Base {
        // SAFETY: AVX2 and FMA were just detected.
        return unsafe { fold_into_avx2(dst, src, f) };
    }
    for (o, &v) in dst.iter_mut().zip(src) {
        *o = f(*o, v);
    }
}

/// The loop of [`fold_into`], built for AVX2 + FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fold_into_avx2(dst: &mut [f32], src: &[f32], f: impl Fn(f32, f32) -> f32) {
    for (o, &v) in dst.iter_mut().zip(src) {
        *o = f(*o, v);
    }
}

/// Softmax of one row, `dst = e^(src - max) / sum`, vectorised (AVX2 or AVX-512 where present).
pub(crate) fn softmax(src: &[f32], dst: &mut [f32]) {
    x86_run!(softmax_fused(src, dst));
    softmax_any::<false>(src, dst);
}

x86_twins! {
    /// [`softmax`] with fused multiply-adds.
    fn softmax_fused(src: &[f32], dst: &mut [f32]) {
        softmax_any::<true>(src, dst);
    }
}

/// Elements per block of the softmax sum: summed in 16 f32 lanes (16 terms each, so about
/// 1e-6 relative at worst), then added in f64.
const SUM_BLOCK: usize = 256;

/// The maximum ignores NaN: a NaN element makes its exponential, the sum and so the whole
/// row NaN, as does a `+inf` maximum (`inf - inf`) or a row of `-inf` — the reference's results.
/// The exponentials are summed in the pass that writes them.
#[inline(always)]
fn softmax_any<const FUSED: bool>(src: &[f32], dst: &mut [f32]) {
    let max = max_lanes(src);
    let mut sum = 0.0f64;
    for (s, d) in src.chunks(SUM_BLOCK).zip(dst.chunks_mut(SUM_BLOCK)) {
        let mut lanes = [0.0f32; 16];
        let (mut sc, mut dc) = (s.chunks_exact(16), d.chunks_exact_mut(16));
        for (x, o) in (&mut sc).zip(&mut dc) {
            let (Ok(x), Ok(o)) = (<&[f32; 16]>::try_from(x), <&mut [f32; 16]>::try_from(o)) else {
                continue;
            };
            for i in 0..16 {
                o[i] = softmax_term::<FUSED>(x[i] - max);
                lanes[i] += o[i];
            }
        }
        for (&x, o) in sc.remainder().iter().zip(dc.into_remainder()) {
            *o = softmax_term::<FUSED>(x - max);
            sum += f64::from(*o);
        }
        sum += lanes.iter().map(|&v| f64::from(v)).sum::<f64>();
    }
    let inv = (1.0 / sum) as f32;
    for v in dst.iter_mut() {
        *v *= inv;
    }
}

/// `e^x` for `x <= 0`, or 0 where it would be subnormal (below about 1.2e-38): arithmetic on
/// subnormals takes a microcode assist of about a hundred cycles on x86, and a masked-out
/// attention score (-10000 or -inf added) made one of every element of its row.
#[inline(always)]
fn softmax_term<const FUSED: bool>(x: f32) -> f32 {
    let e = exp::<FUSED>(x);
    if x < -87.0 {
        0.0
    } else {
        e
    }
}

/// The largest element, NaN ignored, in sixteen lanes so it vectorises (`-inf` when empty).
#[inline(always)]
pub(crate) fn max_lanes(xs: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 16];
    let mut chunks = xs.chunks_exact(16);
    for c in &mut chunks {
        let Ok(c) = <&[f32; 16]>::try_from(c) else {
            continue;
        };
        for i in 0..16 {
            lanes[i] = if c[i] > lanes[i] { c[i] } else { lanes[i] };
        }
    }
    lanes
        .iter()
        .chain(chunks.remainder())
        .fold(f32::NEG_INFINITY, |m, &v| m.max(v))
}

/// The sum in f64, from eight f64 lanes so it vectorises.
#[inline(always)]
pub(crate) fn sum_lanes(xs: &[f32]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        let c: &[f32; 8] = c.try_into().unwrap_or(&[0.0; 8]);
        for i in 0..8 {
            lanes[i] += f64::from(c[i]);
        }
    }
    lanes.iter().sum::<f64>()
        + chunks
            .remainder()
            .iter()
            .map(|&v| f64::from(v))
            .sum::<f64>()
}

/// `erfc(z)` with fractional error below 1.2e-7 (the Chebyshev fit of Numerical Recipes,
/// also used by `activation.wgsl`), built on [`exp`].
#[inline(always)]
pub(crate) fn erfc<const FUSED: bool>(z: f32) -> f32 {
    // c[i] multiplies t^i.
    const C: [f32; 9] = [
        1.000_023_7,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_204,
        1.488_515_9,
        -0.822_152_2,
        0.170_872_77,
    ];
    let m = madd::<FUSED>;
    let t = 1.0 / (1.0 + 0.5 * z.abs());
    // Estrin's scheme: half the dependent steps of Horner's (the loops are latency-bound).
    let (t2, pair) = (t * t, |i: usize| m(C[i + 1], t, C[i]));
    let t4 = t2 * t2;
    let low = m(pair(2), t2, pair(0));
    let high = m(m(C[8], t2, pair(6)), t2, pair(4));
    let p = m(t, m(high, t4, low), -1.265_512_2) - z * z;
    let r = t * exp::<FUSED>(p);
    if z >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// `erf(x)`: near zero (`|x| < 0.5`, where `1 - erfc` would cancel) its odd Taylor series to
/// `x^11`, else `sign(x) (1 - erfc(|x|))`; both computed, so the loop stays branch-free.
/// Relative error below 1e-6 (`activation.wgsl` computes it the same way).
#[inline(always)]
pub(crate) fn erf<const FUSED: bool>(x: f32) -> f32 {
    // 2/sqrt(pi) (1 - z/3 + z^2/10 - z^3/42 + z^4/216 - z^5/1320) x, with z = x^2.
    const C: [f32; 6] = [
        1.0,
        -1.0 / 3.0,
        0.1,
        -1.0 / 42.0,
        1.0 / 216.0,
        -1.0 / 1320.0,
    ];
    let m = madd::<FUSED>;
    let z = x * x;
    let series = std::f32::consts::FRAC_2_SQRT_PI
        * x
        * m(
            m(m(m(m(C[5], z, C[4]), z, C[3]), z, C[2]), z, C[1]),
            z,
            C[0],
        );
    let a = x.abs();
    let tail = (1.0 - erfc::<FUSED>(a)).copysign(x);
    if a < 0.5 {
        series
    } else {
        tail
    }
}

/// `1 / (1 + e^-x)`
#[inline(always)]
pub(crate) fn sigmoid<const FUSED: bool>(x: f32) -> f32 {
    1.0 / (1.0 + exp::<FUSED>(-x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both builds (the fused one through libm's `fmaf` here, where the test is not compiled for
    /// FMA).
    #[test]
    fn exp_and_erfc_are_accurate() {
        accurate::<false>();
        accurate::<true>();
    }

    fn accurate<const FUSED: bool>() {
        let (exp, erfc, sigmoid) = (exp::<FUSED>, erfc::<FUSED>, sigmoid::<FUSED>);
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
        assert!(worst < 2.0, "worst error {worst} ulp (fused {FUSED})");
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert_eq!(exp(0.0), 1.0);
        assert!(
            exp(-100.0) > 0.0 && exp(-100.0) < 1e-43,
            "subnormal results"
        );
        let mut z = -6.0f32;
        while z < 6.0 {
            let want = libm::erfc(f64::from(z));
            // f32 rounding of the exponent argument leaves a few e-6 relative in the tail.
            assert!(
                (f64::from(erfc(z)) - want).abs() <= 1e-5 * want,
                "erfc({z}) (fused {FUSED})"
            );
            z += 0.013;
        }
        assert_eq!(sigmoid(-200.0), 0.0);
        assert_eq!(sigmoid(200.0), 1.0);
    }

    /// Softmax rows with masked-out scores (-10000 added, -inf) and terms on both sides of
    /// the subnormal cut, a row of 37 (two blocks of 16 and a tail) and one past a sum block,
    /// each element checked against f64: no result is subnormal.
    #[test]
    fn softmax_rows_with_masked_scores() {
        for len in [37usize, 300] {
            let src: Vec<f32> = (0..len)
                .map(|i| match i % 5 {
                    0 => -10_000.0 + i as f32,
                    1 => f32::NEG_INFINITY,
                    2 => -86.5 - (i % 3) as f32,
                    _ => (i as f32 * 0.37).sin() * 4.0,
                })
                .collect();
            let max = src
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
            let terms: Vec<f64> = src.iter().map(|&v| (f64::from(v) - max).exp()).collect();
            let sum: f64 = terms.iter().sum();
            let mut out = vec![f32::NAN; len];
            softmax(&src, &mut out);
            for (i, (&got, &t)) in out.iter().zip(&terms).enumerate() {
                let want = t / sum;
                assert!(
                    (f64::from(got) - want).abs() <= 1e-6 * want + 1e-37,
                    "{len}: {i}"
                );
                assert!(got == 0.0 || got.is_normal(), "{len}: {i} is {got}");
            }
        }
    }
}
