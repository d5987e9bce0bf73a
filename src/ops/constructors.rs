//! Tensors made by a rule instead of from data: one value everywhere (`full`, `ones`), a
//! range (`arange`), and seeded random values (`random_uniform`, `random_normal`).
//!
//! A filled tensor is one element uploaded and copied out by the copy kernels (no host array
//! of its size); ranges and random values are computed on the host in f64 and uploaded.
//!
//! The random values come from SplitMix64 (Steele, Lea and Flood, "Fast splittable
//! pseudorandom number generators", OOPSLA 2014) used as a counter-based generator: the
//! `i`-th 64-bit word of seed `s` is `mix(s + (i + 1) * 0x9E3779B97F4A7C15)`, the `i`-th
//! output of SplitMix64 seeded with `s`. Its top 53 bits make a uniform `u` in `[0, 1)`.
//! Normal values pair words `2j` and `2j + 1` by Box–Muller (`libm`'s `log`, `cos` and `sin`,
//! which are the same on every platform), so a seed gives the same values on every backend
//! and in the wasm build.

use crate::{DType, Device, Error, Result, Tensor};

/// SplitMix64's increment (2^64 divided by the golden ratio).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The `i`-th word of SplitMix64 seeded with `seed`.
fn splitmix64(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_add(1).wrapping_mul(GAMMA));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `i`-th uniform of `seed` in `[0, 1)`: the top 53 bits of its word.
fn unit(seed: u64, i: u64) -> f64 {
    (splitmix64(seed, i) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform values in `[low, high)` for element indices `0..n` of `seed`, rounded down to whole
/// numbers for an integer `dtype` (so that `[low, high)` still holds).
pub(crate) fn uniform_values(n: usize, low: f64, high: f64, seed: u64, dtype: DType) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let v = low + (high - low) * unit(seed, i);
            if !dtype.is_float() {
                v.floor()
            } else {
                v
            }
        })
        .collect()
}

/// Normal values of `mean` and standard deviation `std` for element indices `0..n` of
/// `seed`: Box–Muller over the uniform pairs `(2j, 2j + 1)`, cosine for even `i`, sine for
/// odd.
pub(crate) fn normal_values(n: usize, mean: f64, std: f64, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let pair = i & !1;
            // 1 - u lies in (0, 1]: the logarithm is finite.
            let radius = libm::sqrt(-2.0 * libm::log(1.0 - unit(seed, pair)));
            let angle = 2.0 * std::f64::consts::PI * unit(seed, pair + 1);
            let z = if i % 2 == 0 {
                libm::cos(angle)
            } else {
                libm::sin(angle)
            };
            mean + std * radius * z
        })
        .collect()
}

/// `value` as a whole number of `dtype` (an integer dtype), or an error naming `op`.
fn whole(op: &str, value: f64, dtype: DType) -> Result<i64> {
    if !value.is_finite() || value.fract() != 0.0 {
        return Err(Error::Invalid(format!(
            "{op}: {value} for a {dtype} tensor: expected a whole number"
        )));
    }
    let (lo, hi) = match dtype {
        DType::I32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
        DType::U32 => (0.0, f64::from(u32::MAX)),
        DType::Bool => (0.0, 1.0),
        DType::U8 => (0.0, f64::from(u8::MAX)),
        DType::I8 => (f64::from(i8::MIN), f64::from(i8::MAX)),
        _ => (-(2f64.powi(63)), 2f64.powi(63)),
    };
    if value < lo || value > hi || (dtype == DType::I64 && value == hi) {
        return Err(Error::OutOfRange(format!(
            "{op}: {value} for a {dtype} tensor: expected a value from {lo} to {hi}"
        )));
    }
    Ok(value as i64)
}

/// A contiguous tensor of `shape` and `dtype` holding `values` (row-major), each converted to
/// `dtype`: rounded to nearest for floats, checked to be whole and in range for integers
/// (errors name `op`).
pub(crate) fn from_f64(
    device: &Device,
    op: &str,
    values: &[f64],
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let ints = |values: &[f64]| -> Result<Vec<i64>> {
        values.iter().map(|&v| whole(op, v, dtype)).collect()
    };
    match dtype {
        DType::F32 => {
            let v: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            Tensor::from_slice(device, &v, shape)
        }
        DType::F16 => {
            let v: Vec<_> = values.iter().map(|&v| half::f16::from_f64(v)).collect();
            Tensor::from_slice(device, &v, shape)
        }
        DType::BF16 => {
            let v: Vec<_> = values.iter().map(|&v| half::bf16::from_f64(v)).collect();
            Tensor::from_slice(device, &v, shape)
        }
        DType::I32 => {
            let v: Vec<i32> = ints(values)?.into_iter().map(|v| v as i32).collect();
            Tensor::from_slice(device, &v, shape)
        }
        DType::U32 => {
            let v: Vec<u32> = ints(values)?.into_iter().map(|v| v as u32).collect();
            Tensor::from_slice(device, &v, shape)
        }
        DType::I64 => Tensor::from_slice(device, &ints(values)?, shape),
        DType::U8 | DType::Bool => {
            let v: Vec<u8> = ints(values)?.into_iter().map(|v| v as u8).collect();
            Ok(Tensor::from_slice(device, &v, shape)?.retyped(dtype))
        }
        DType::I8 => {
            let v: Vec<i8> = ints(values)?.into_iter().map(|v| v as i8).collect();
            Tensor::from_slice(device, &v, shape)
        }
    }
}

/// The number of elements of `arange(start, stop, step)`: `ceil((stop - start) / step)`, at
/// least 0 (numpy's rule), or an error for a zero or non-finite step or bounds.
pub(crate) fn arange_len(start: f64, stop: f64, step: f64) -> Result<usize> {
    if step == 0.0 || ![start, stop, step].iter().all(|v| v.is_finite()) {
        return Err(Error::Invalid(format!(
            "arange: start {start}, stop {stop}, step {step}: expected finite numbers and a \
             step other than 0"
        )));
    }
    let len = ((stop - start) / step).ceil().max(0.0);
    if len > crate::base::layout::MAX_ELEMENTS as f64 {
        return Err(Error::shape(
            "arange",
            format!("{len} elements from {start} to {stop} by {step}: expected fewer"),
        ));
    }
    Ok(len as usize)
}

/// Tensors made by a rule (see the module doc for the random generator).
impl Tensor {
    /// A tensor of `shape` and `dtype` with every element `value` (for an integer dtype a
    /// whole number in its range, else `INVALID` / `OUT_OF_RANGE`).
    pub fn full(device: &Device, shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        let one = from_f64(device, "full", &[value], &[], dtype)?;
        one.broadcast_to(shape)?.contiguous()
    }

    /// A tensor of `shape` and `dtype` filled with ones.
    pub fn ones(device: &Device, shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(device, shape, 1.0, dtype)
    }

    /// The 1-D tensor `start, start + step, ...` up to `stop` (excluded), as numpy's
    /// `arange`: `ceil((stop - start) / step)` elements (none when that is negative), each
    /// computed in f64 as `start + i * step` and converted to `dtype` (integer dtypes need
    /// whole values). A step of 0 is `INVALID`.
    pub fn arange(
        device: &Device,
        start: f64,
        stop: f64,
        step: f64,
        dtype: DType,
    ) -> Result<Tensor> {
        let n = arange_len(start, stop, step)?;
        let values: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
        from_f64(device, "arange", &values, &[n], dtype)
    }

    /// Seeded values uniform in `[low, high)` (SplitMix64, see the module doc); integer dtypes
    /// take the values rounded down. The same seed gives the same values on every backend.
    pub fn random_uniform(
        device: &Device,
        shape: &[usize],
        [low, high]: [f64; 2],
        seed: u64,
        dtype: DType,
    ) -> Result<Tensor> {
        if !(low.is_finite() && high.is_finite() && low < high) {
            return Err(Error::Invalid(format!(
                "random_uniform: low {low}, high {high}: expected finite bounds with low < high"
            )));
        }
        let n = crate::base::layout::checked_numel("random_uniform", shape)?;
        from_f64(
            device,
            "random_uniform",
            &uniform_values(n, low, high, seed, dtype),
            shape,
            dtype,
        )
    }

    /// Seeded normal values of `mean` and standard deviation `std` (SplitMix64 and
    /// Box–Muller, see the module doc), in a float dtype. The same seed gives the same values
    /// on every backend.
    pub fn random_normal(
        device: &Device,
        shape: &[usize],
        [mean, std]: [f64; 2],
        seed: u64,
        dtype: DType,
    ) -> Result<Tensor> {
        if !dtype.is_float() {
            return Err(Error::DType {
                op: "random_normal",
                expected: "a float dtype (f32, f16 or bf16)".into(),
                got: dtype.to_string(),
            });
        }
        if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
            return Err(Error::Invalid(format!(
                "random_normal: mean {mean}, std {std}: expected finite values and std >= 0"
            )));
        }
        let n = crate::base::layout::checked_numel("random_normal", shape)?;
        from_f64(
            device,
            "random_normal",
            &normal_values(n, mean, std, seed),
            shape,
            dtype,
        )
    }
}
