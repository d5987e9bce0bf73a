//! A fuzz target for validation: arbitrary sizes, axes and geometries go through the public
//! API of the cpu device (the checks are the same code on every backend), and every call ends
//! in `Ok` with a consistent shape or in a clean error: no panic, no wrapped size.
//!
//! Under `cargo test` bolero runs it for a bounded number of random inputs (CI does this);
//! `cargo bolero test --test suite fuzz_validation::validation_never_panics_or_wraps --engine
//! libfuzzer` fuzzes it for as long as wanted.

use crate::common;
use unicompute::ops::{AttentionParams, Conv2dParams, Pool2dParams, PoolKind};
use unicompute::{DType, Device, Result, Tensor};

/// Codes a validation failure may have.
const CLEAN: [&str; 5] = ["SHAPE", "OUT_OF_RANGE", "LIMIT", "INVALID", "DTYPE"];

/// Sizes from fuzzer words: mostly small, sometimes anything.
fn size(word: u64) -> usize {
    match word % 4 {
        0 => (word >> 2) as usize,
        _ => ((word >> 2) % 9) as usize,
    }
}

fn sizes(words: &[u64], max: usize) -> Vec<usize> {
    words.iter().take(max).map(|&w| size(w)).collect()
}

fn small(d: &Device, shape: &[usize]) -> Result<Tensor> {
    if shape
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .is_none_or(|n| n > 4096)
    {
        return Tensor::zeros(d, &[2, 3], DType::F32); // keep the data small; sizes fuzz elsewhere
    }
    Tensor::zeros(d, shape, DType::F32)
}

/// One fuzzed call; `Err` only for clean errors.
fn call(d: &Device, op: u8, a: &[u64], b: &[u64]) -> Result<Vec<usize>> {
    let x = small(d, &sizes(a, 4))?;
    let s = sizes(b, 6);
    let at = |i: usize| s.get(i).copied().unwrap_or(1);
    let t = match op % 10 {
        0 => Tensor::zeros(d, &s, DType::F32)?,
        1 => x.reshape(&s)?,
        2 => x.broadcast_to(&s)?,
        3 => x.slice(at(0), at(1)..at(2))?,
        4 => x.permute(&s)?,
        5 => {
            let params = Conv2dParams {
                stride: [at(0), at(1)],
                padding: [at(2), at(3)],
                dilation: [at(4), at(5)],
                ..Default::default()
            };
            x.conv2d(&small(d, &sizes(&b[b.len().min(6)..], 4))?, params)?
        }
        6 => x.pool2d(
            PoolKind::Max,
            Pool2dParams {
                kernel: [at(0), at(1)],
                stride: Some([at(2), at(3)]),
                padding: [at(4), at(5)],
            },
        )?,
        7 => x.matmul(&small(d, &s)?)?,
        8 => Tensor::concat(&[&x, &small(d, &s)?], at(0))?,
        _ => {
            let k = small(d, &s)?;
            x.attention(
                &k,
                &k,
                AttentionParams {
                    causal: at(0) % 2 == 1,
                    ..Default::default()
                },
            )?
        }
    };
    Ok(t.shape().to_vec())
}

#[test]
fn validation_never_panics_or_wraps() {
    // A panic is a failure either way; the device is only read through its public API.
    let d = std::panic::AssertUnwindSafe(&common::devices()[0]);
    bolero::check!()
        .with_type::<(u8, Vec<u64>, Vec<u64>)>()
        .with_iterations(3000)
        .for_each(|(op, a, b)| match call(*d, *op, a, b) {
            Ok(shape) => {
                let n = shape
                    .iter()
                    .try_fold(1usize, |acc, &e| acc.checked_mul(e.max(1)));
                assert!(
                    n.is_some_and(|n| n <= unicompute::layout::MAX_ELEMENTS),
                    "op {op}: shape {shape:?} was accepted"
                );
            }
            Err(e) => assert!(CLEAN.contains(&e.code()), "op {op}: {e}"),
        });
}
