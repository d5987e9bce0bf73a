//! The quantised matmul (`Tensor::qmatmul`, reading MatMulNBits' packed 4-bit weights)
//! beside the dequantise-then-matmul path MatMulNBits ran before it (the weights unpacked to
//! f32 with tensor ops, then `matmul`), for m = 1 (decoding) and m = 16 (a short prefill), n =
//! k = 4096 in blocks of 32 with packed zero points: the median of 5 timed runs after one
//! warm-up, on the cpu and webgpu devices (on a software adapter, webgpu runs the
//! barrier-free kernels; `webgpu-gpu-kernels` then measures the GPUs' workgroup kernel there).
//!
//! Run with `cargo bench --bench qmatmul`; `-- cpu`, `-- webgpu` or `-- webgpu-gpu-kernels`
//! runs one of them.

use std::time::Instant;

use unicompute::ops::concat::concat;
use unicompute::ops::qmatmul::QuantWeights;
use unicompute::{
    BackendChoice, BackendKind, DType, Device, DeviceOptions, DeviceType, Result, Tensor, UnaryOp,
};

const N: usize = 4096;
const K: usize = 4096;
const BLOCK: usize = 32;

/// Median seconds of `f` over 5 runs after a warm-up.
fn median(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        f()?;
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[2])
}

/// 4-bit values packed two a byte (low first) as f32, the last axis twice as long.
fn unpack(d: &Device, b: &Tensor) -> Result<Tensor> {
    let f = b.cast(DType::F32)?;
    let high = f.div_scalar(16.0f32.into())?.unary(UnaryOp::Floor)?;
    let low = f.sub(&high.mul_scalar(16.0f32.into())?)?;
    let mut shape = b.shape().to_vec();
    let rank = shape.len();
    shape.push(1);
    let pairs = concat(
        &d.queue(),
        &[&low.reshape(&shape)?, &high.reshape(&shape)?],
        rank,
    )?;
    shape.pop();
    shape[rank - 1] *= 2;
    pairs.reshape(&shape)
}

/// The earlier MatMulNBits path: `a · ((unpack(b) - unpack(zp)) · scales)ᵀ`.
fn dequant_matmul(d: &Device, a: &Tensor, w: &QuantWeights<'_>) -> Result<Tensor> {
    let blocks = K / BLOCK;
    let zp = w.zero_points.expect("the bench's weights have zero points");
    let zero = unpack(d, &zp.reshape(&[N, blocks / 2])?)?.reshape(&[N, blocks, 1])?;
    let scales = w.scales.reshape(&[N, blocks, 1])?;
    let weights = unpack(d, w.packed)?
        .sub(&zero)?
        .mul(&scales)?
        .reshape(&[N, K])?;
    a.matmul(&weights.permute(&[1, 0])?)
}

fn bench(d: &Device, label: &str) -> Result<()> {
    let d = d.clone();
    println!("== {label}: {}", d.info().name);
    let blocks = K / BLOCK;
    let mut rng = fastrand::Rng::with_seed(1);
    let bytes: Vec<u8> = (0..N * K / 2).map(|_| rng.u8(..)).collect();
    let zero_bytes: Vec<u8> = (0..N * blocks / 2).map(|_| rng.u8(..)).collect();
    let scales: Vec<f32> = (0..N * blocks).map(|_| 0.01 + rng.f32() * 0.02).collect();
    let packed = Tensor::from_slice(&d, &bytes, &[N, blocks, BLOCK / 2])?;
    let zp = Tensor::from_slice(&d, &zero_bytes, &[N, blocks / 2])?;
    let scales = Tensor::from_slice(&d, &scales, &[N, blocks])?;
    let w = QuantWeights {
        packed: &packed,
        scales: &scales,
        zero_points: Some(&zp),
        k: K,
        bits: 4,
        block: BLOCK,
    };
    for m in [1, 16] {
        let av: Vec<f32> = (0..m * K).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let a = Tensor::from_slice(&d, &av, &[m, K])?;
        let packed_s = median(|| a.qmatmul(&w, None)?.to_vec_blocking::<f32>().map(drop))?;
        let old_s = median(|| {
            dequant_matmul(&d, &a, &w)?
                .to_vec_blocking::<f32>()
                .map(drop)
        })?;
        let (x, y) = (a.qmatmul(&w, None)?, dequant_matmul(&d, &a, &w)?);
        let diff = x.sub(&y)?.unary(UnaryOp::Abs)?.to_vec_blocking::<f32>()?;
        let worst = diff.iter().fold(0.0f32, |m, &v| m.max(v));
        println!(
            "m {m:2}, n = k = {N}, block {BLOCK}: packed {:8.2} ms, dequantise + matmul \
             {:8.2} ms ({:.1}x), largest difference {worst:.2e}",
            packed_s * 1e3,
            old_s * 1e3,
            old_s / packed_s
        );
    }
    Ok(())
}

fn main() -> Result<()> {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |label: &str| only.as_deref().is_none_or(|o| o == label);
    for kind in [BackendKind::Cpu, BackendKind::WebGpu] {
        if wanted(&kind.to_string()) {
            bench(
                &Device::open(BackendChoice::Backend(kind))?,
                &kind.to_string(),
            )?;
        }
    }
    let gpu_kernels = DeviceOptions {
        software_kernels: false,
        ..DeviceOptions::default()
    };
    if wanted("webgpu-gpu-kernels") {
        let d = Device::open_with(BackendChoice::Backend(BackendKind::WebGpu), gpu_kernels)?;
        if d.info().device_type == DeviceType::SoftwareGpu {
            bench(&d, "webgpu-gpu-kernels")?;
        }
    }
    Ok(())
}
