//! The CPU backend's WGSL executor beside the CPU backend's own ops: an elementwise add and a
//! tiled 8x8 matmul written in WGSL, against `Tensor::add` and `Tensor::matmul`, each the
//! median of 9 timed runs after 2 warm-ups, with the rate (GB/s, GFLOP/s) and the ratio.
//!
//! Run with `cargo bench --bench wgsl_cpu`; `-- add` or `-- matmul` runs one of the two.

use std::time::Instant;

use unicompute::{BackendChoice, BackendKind, Binding, Buffer, Device, Kernel, Tensor};

/// `c = a + b`, one invocation per element.
const ADD: &str = include_str!("wgsl/add.wgsl");

/// The tiled matmul of the WGSL corpus (tests/suite/wgsl_kernels.rs).
const MATMUL: &str = include_str!("../tests/suite/wgsl/tiled_matmul.wgsl");

/// Median seconds of `f` over 9 runs after 2 warm-ups.
fn median(mut f: impl FnMut() -> unicompute::Result<()>) -> unicompute::Result<f64> {
    for _ in 0..2 {
        f()?;
    }
    let mut times = Vec::new();
    for _ in 0..9 {
        let t0 = Instant::now();
        f()?;
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[4])
}

fn main() -> unicompute::Result<()> {
    let d = Device::open(BackendChoice::Backend(BackendKind::Cpu))?;
    println!("{}", d.info().name);
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if only.as_deref().is_none_or(|o| o == "add") {
        add(&d)?;
    }
    if only.as_deref().is_none_or(|o| o == "matmul") {
        matmul(&d)?;
    }
    Ok(())
}

/// `c = a + b` over 4M elements.
fn add(d: &Device) -> unicompute::Result<()> {
    let n = 1 << 22;
    let data: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 1e-3).collect();
    let (ta, tb) = (
        Tensor::from_slice(d, &data, &[n])?,
        Tensor::from_slice(d, &data, &[n])?,
    );
    let builtin = median(|| ta.add(&tb)?.to_vec_blocking::<f32>().map(drop))?;
    let (ba, bb, bc) = (
        Buffer::from_slice(d, &data)?,
        Buffer::from_slice(d, &data)?,
        Buffer::<f32>::zeros(d, n)?,
    );
    let k = Kernel::from_wgsl(d, ADD, "main")?;
    let wgsl = median(|| {
        d.queue().launch(
            &k,
            &[Binding::from(&ba), Binding::from(&bb), Binding::from(&bc)],
            [(n as u32).div_ceil(256), 1, 1],
        )?;
        bc.read_blocking().map(drop)
    })?;
    let gbs = |s: f64| 12.0 * n as f64 / s / 1e9;
    println!("add of {n}: built-in {:.2} ms ({:.2} GB/s), WGSL {:.2} ms ({:.2} GB/s): {:.1} % of the built-in", builtin * 1e3, gbs(builtin), wgsl * 1e3, gbs(wgsl), 100.0 * builtin / wgsl);
    Ok(())
}

/// A 256x256 by 256x256 matmul.
fn matmul(d: &Device) -> unicompute::Result<()> {
    let m = 256;
    let a: Vec<f32> = (0..m * m).map(|i| (i % 17) as f32 * 0.1).collect();
    let (x, y) = (
        Tensor::from_slice(d, &a, &[m, m])?,
        Tensor::from_slice(d, &a, &[m, m])?,
    );
    let builtin = median(|| x.matmul(&y)?.to_vec_blocking::<f32>().map(drop))?;
    let (ba, bc) = (Buffer::from_slice(d, &a)?, Buffer::<f32>::zeros(d, m * m)?);
    let dims = Buffer::from_slice(d, &[m as u32, m as u32, m as u32, 0])?;
    let k = Kernel::from_wgsl(d, MATMUL, "main")?;
    let wgsl = median(|| {
        d.queue().launch(
            &k,
            &[
                Binding::from(&ba),
                Binding::from(&ba),
                Binding::from(&bc),
                Binding::from(&dims),
            ],
            [(m as u32) / 8, (m as u32) / 8, 1],
        )?;
        bc.read_blocking().map(drop)
    })?;
    let gflops = |s: f64| 2.0 * (m * m * m) as f64 / s / 1e9;
    println!("matmul {m}^3: built-in {:.2} ms ({:.2} GFLOP/s), WGSL 8x8 tiles {:.2} ms ({:.3} GFLOP/s): {:.2} % of the built-in", builtin * 1e3, gflops(builtin), wgsl * 1e3, gflops(wgsl), 100.0 * builtin / wgsl);
    Ok(())
}
