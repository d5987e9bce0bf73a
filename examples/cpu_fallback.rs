//! Falling back to the CPU: ask for a GPU backend, and when the machine has none, say why and
//! run the same code on the CPU backend, which is also the reference the GPU backends are
//! tested against.
//!
//! `cargo run --release --example cpu_fallback`

// Natively only: the example waits on the device with the blocking API, which browsers lack.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use unicompute::{BackendChoice, BackendKind, Device, Tensor};

fn open_gpu_or_cpu() -> unicompute::Result<Device> {
    for kind in [BackendKind::Cuda, BackendKind::WebGpu] {
        match Device::open(BackendChoice::Backend(kind)) {
            Ok(d) => return Ok(d),
            Err(e) => println!("no {kind:?} device: {e}"),
        }
    }
    println!("falling back to the CPU backend");
    Device::open(BackendChoice::Backend(BackendKind::Cpu))
}

fn main() -> unicompute::Result<()> {
    let device = open_gpu_or_cpu()?;
    println!(
        "device: {} ({:?})",
        device.info().name,
        device.info().device_type
    );
    let cpu = Device::open(BackendChoice::Backend(BackendKind::Cpu))?;

    // The same layer norm on the chosen device and on the CPU.
    let (rows, cols) = (31, 257);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 37) % 101) as f32 / 10.0 - 5.0)
        .collect();
    let on = |d: &Device| -> unicompute::Result<Vec<f32>> {
        Tensor::from_slice(d, &x, &[rows, cols])?
            .layer_norm(Default::default())?
            .to_vec_blocking::<f32>()
    };
    let (got, reference) = (on(&device)?, on(&cpu)?);
    let worst = got
        .iter()
        .zip(&reference)
        .map(|(g, r)| (g - r).abs())
        .fold(0.0f32, f32::max);
    if worst > 1e-4 {
        return Err(unicompute::Error::Invalid(format!(
            "the device differs from the CPU reference by {worst}"
        )));
    }
    println!("layer norm of [{rows}, {cols}]: largest difference from the CPU reference {worst:e}");
    Ok(())
}
