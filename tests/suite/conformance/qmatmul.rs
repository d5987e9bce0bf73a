//! The quantised matmul (`Tensor::qmatmul`, MatMulNBits' layout) against the f64 reference on
//! seeded random packed weights: odd m, n and k (k padded to whole blocks), block sizes 16, 32
//! and 128, 4 and 8 bits, every kind of zero point, with and without a bias, f16 inputs, k
//! past the loop limit of llvmpipe, and its errors. On lavapipe both the barrier-free kernels
//! and the GPUs' workgroup kernel run (`per_backend!(.., variants)`).

use unicompute::ops::qmatmul::{reference, HostQuant, QuantWeights};
use unicompute::{f16, DType, Device, Tensor};

use crate::common::{assert_close, expect_err, name, per_backend, random, read, tensor};

/// How a case gives its zero points (also `MatMulNBits`'s, in `onnx_quant`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Zero {
    /// None: the middle of the range.
    Default,
    /// u8, packed like the weights.
    Packed,
    /// f32, one per block.
    Float,
}

/// One case: A is `[m, k]`, the weights `[n, k]`.
#[derive(Clone, Copy, Debug)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    bits: usize,
    block: usize,
    zero: Zero,
    bias: bool,
}

/// A case's inputs on the host.
struct Host {
    a: Vec<f32>,
    packed: Vec<u8>,
    scales: Vec<f32>,
    zero_bytes: Vec<u8>,
    zero_floats: Vec<f32>,
    bias: Vec<f32>,
}

impl Case {
    fn blocks(&self) -> usize {
        self.k.div_ceil(self.block)
    }

    fn zero_row(&self) -> usize {
        (self.blocks() * self.bits).div_ceil(8)
    }

    fn host(&self, seed: u64) -> Host {
        let (n, blocks) = (self.n, self.blocks());
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut bytes = |count: usize| (0..count).map(|_| rng.u8(..)).collect::<Vec<u8>>();
        let packed = bytes(n * blocks * self.block * self.bits / 8);
        let zero_bytes = bytes(n * self.zero_row());
        let top = (1u32 << self.bits) as f32;
        Host {
            a: random(seed + 1, self.m * self.k, -1.0, 1.0),
            packed,
            scales: random(seed + 2, n * blocks, 0.001, 0.05),
            zero_bytes,
            zero_floats: random(seed + 3, n * blocks, 0.0, top),
            bias: random(seed + 4, n, -1.0, 1.0),
        }
    }

    /// The f64 reference of the case's product.
    fn want(&self, h: &Host) -> Vec<f64> {
        let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let (scales, zero_floats) = (wide(&h.scales), wide(&h.zero_floats));
        let w = HostQuant {
            packed: &h.packed,
            scales: &scales,
            zero_bytes: matches!(self.zero, Zero::Packed).then_some(&h.zero_bytes[..]),
            zero_floats: matches!(self.zero, Zero::Float).then_some(&zero_floats[..]),
            n: self.n,
            k: self.k,
            bits: self.bits,
            block: self.block,
        };
        let bias = wide(&h.bias);
        reference(&wide(&h.a), self.m, &w, self.bias.then_some(&bias[..]))
    }

    /// The case on `d` (A in `dtype`), read back as f32.
    fn run(&self, d: &Device, h: &Host, dtype: DType) -> Vec<f32> {
        let (n, blocks) = (self.n, self.blocks());
        let a = tensor(d, &h.a, &[self.m, self.k]).cast(dtype).unwrap();
        let packed =
            Tensor::from_slice(d, &h.packed, &[n, blocks, self.block * self.bits / 8]).unwrap();
        let scales = tensor(d, &h.scales, &[n, blocks]).cast(dtype).unwrap();
        let zero = match self.zero {
            Zero::Default => None,
            Zero::Packed => {
                Some(Tensor::from_slice(d, &h.zero_bytes, &[n, self.zero_row()]).unwrap())
            }
            Zero::Float => Some(tensor(d, &h.zero_floats, &[n, blocks])),
        };
        let bias = self.bias.then(|| tensor(d, &h.bias, &[n]));
        let w = QuantWeights {
            packed: &packed,
            scales: &scales,
            zero_points: zero.as_ref(),
            k: self.k,
            bits: self.bits,
            block: self.block,
        };
        let y = a.qmatmul(&w, bias.as_ref()).unwrap();
        assert_eq!(
            (y.shape(), y.dtype()),
            (&[self.m, n][..], dtype),
            "{self:?}"
        );
        read(&y.cast(DType::F32).unwrap())
    }
}

/// The sums' tolerance: f32 rounding over `k` terms of size up to about 8 · 0.05.
fn tolerance(k: usize) -> f64 {
    2e-6 * (k as f64).sqrt() + 1e-5
}

/// Every m, n and k of the sweep, with the block size, width, zero points and bias turning
/// over from case to case.
fn sweep() -> Vec<Case> {
    let zeros = [Zero::Default, Zero::Packed, Zero::Float];
    let mut cases = Vec::new();
    for m in [1, 3, 17] {
        for n in [1, 7, 67, 300] {
            for k in [16, 48, 100, 4096] {
                let i = cases.len();
                cases.push(Case {
                    m,
                    n,
                    k,
                    bits: if i % 5 == 4 { 8 } else { 4 },
                    block: [16, 32, 128][i % 3],
                    zero: zeros[(i / 3) % 3],
                    bias: i % 2 == 0,
                });
            }
        }
    }
    cases
}

fn qmatmul_matches_the_reference(d: &Device) {
    for (i, case) in sweep().iter().enumerate() {
        let h = case.host(100 + i as u64);
        let got = case.run(d, &h, DType::F32);
        let what = format!("{} {case:?}", name(d));
        assert_close(&got, &case.want(&h), 1e-4, tolerance(case.k), &what);
    }
}
per_backend!(qmatmul_matches_the_reference, variants);

/// Every block size with every kind of zero point and both widths, m = 1 and m = 5.
fn qmatmul_of_every_block_and_zero_point(d: &Device) {
    let mut seed = 500;
    for block in [16, 32, 128] {
        for zero in [Zero::Default, Zero::Packed, Zero::Float] {
            for (bits, m) in [(4, 1), (8, 1), (4, 5), (8, 5)] {
                seed += 1;
                let case = Case {
                    m,
                    n: 13,
                    k: 200,
                    bits,
                    block,
                    zero,
                    bias: seed % 2 == 0,
                };
                let h = case.host(seed);
                let what = format!("{} {case:?}", name(d));
                assert_close(
                    &case.run(d, &h, DType::F32),
                    &case.want(&h),
                    1e-4,
                    1e-4,
                    &what,
                );
            }
        }
    }
}
per_backend!(qmatmul_of_every_block_and_zero_point, variants);

/// A and the scales in f16: computed in f32, the result rounded to f16.
fn qmatmul_of_f16_inputs(d: &Device) {
    let case = Case {
        m: 3,
        n: 29,
        k: 80,
        bits: 4,
        block: 32,
        zero: Zero::Packed,
        bias: true,
    };
    let mut h = case.host(7);
    // The reference sees the f16 values the device gets.
    let round = |v: &mut Vec<f32>| v.iter_mut().for_each(|x| *x = f16::from_f32(*x).to_f32());
    round(&mut h.a);
    round(&mut h.scales);
    let got = case.run(d, &h, DType::F16);
    assert_close(
        &got,
        &case.want(&h),
        2e-3,
        2e-3,
        &format!("{} f16", name(d)),
    );
}
per_backend!(qmatmul_of_f16_inputs);

/// k of 60,000 in blocks of 16: past the loop iterations llvmpipe allows one invocation, so
/// the webgpu kernel takes k in pieces there.
fn qmatmul_of_k_past_the_loop_limit(d: &Device) {
    for m in [1, 6] {
        let case = Case {
            m,
            n: 5,
            k: 60_000,
            bits: 4,
            block: 16,
            zero: Zero::Float,
            bias: true,
        };
        let h = case.host(9 + m as u64);
        let what = format!("{} {case:?}", name(d));
        assert_close(
            &case.run(d, &h, DType::F32),
            &case.want(&h),
            1e-4,
            tolerance(case.k),
            &what,
        );
    }
}
per_backend!(qmatmul_of_k_past_the_loop_limit, variants);

fn qmatmul_errors_say_what_was_expected(d: &Device) {
    let a = tensor(d, &[0.5; 2 * 32], &[2, 32]);
    let packed = Tensor::from_slice(d, &[0u8; 3 * 2 * 8], &[3, 2, 8]).unwrap();
    let scales = tensor(d, &[1.0; 6], &[3, 2]);
    let w = QuantWeights {
        packed: &packed,
        scales: &scales,
        zero_points: None,
        k: 32,
        bits: 4,
        block: 16,
    };
    assert_eq!(a.qmatmul(&w, None).unwrap().shape(), [2, 3]);
    expect_err(
        a.qmatmul(&QuantWeights { bits: 3, ..w }, None),
        "INVALID",
        &["bits = 3"],
        d,
    );
    expect_err(
        a.qmatmul(&QuantWeights { block: 24, ..w }, None),
        "INVALID",
        &["block = 24"],
        d,
    );
    expect_err(
        a.qmatmul(&QuantWeights { k: 40, ..w }, None),
        "SHAPE",
        &["[n, 3, 8]"],
        d,
    );
    let short = tensor(d, &[1.0; 5], &[5]);
    expect_err(
        a.qmatmul(
            &QuantWeights {
                scales: &short,
                ..w
            },
            None,
        ),
        "SHAPE",
        &["6 floats"],
        d,
    );
    let zp = Tensor::from_slice(d, &[0u8; 2], &[2]).unwrap();
    let with_zp = QuantWeights {
        zero_points: Some(&zp),
        ..w
    };
    expect_err(
        a.qmatmul(&with_zp, None),
        "SHAPE",
        &["expected n · ceil"],
        d,
    );
    let b = tensor(d, &[0.5; 2 * 31], &[2, 31]);
    expect_err(b.qmatmul(&w, None), "SHAPE", &["k = 32"], d);
    expect_err(a.qmatmul(&w, Some(&short)), "SHAPE", &["3 floats"], d);
}
per_backend!(qmatmul_errors_say_what_was_expected);
