//! A first program: open the best device, build tensors, run a few ops, read the result
//! back and check it against the same arithmetic on the host.
//!
//! `cargo run --release --example first_program` (`UNICOMPUTE_BACKEND=cpu|webgpu|cuda`
//! chooses the device).

// Natively only: the example waits on the device with the blocking API, which browsers lack.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use unicompute::{BackendChoice, Device, Tensor};

fn main() -> unicompute::Result<()> {
    // auto: a hardware GPU; else the faster of the CPU and any software adapter.
    let device = Device::open(BackendChoice::Auto)?;
    println!(
        "device: {} ({:?})",
        device.info().name,
        device.info().backend
    );

    let x = [1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0];
    let bias = [0.5f32, -0.5, 1.0];
    let w = [0.1f32, 0.2, 0.3, 0.4, 0.5, 0.6];
    let tx = Tensor::from_slice(&device, &x, &[2, 3])?;
    let tb = Tensor::from_slice(&device, &bias, &[3])?; // broadcast over the rows
    let tw = Tensor::from_slice(&device, &w, &[3, 2])?;
    // relu(x + bias) @ w, then a softmax over each row: recorded on the default queue.
    let z = tx.add(&tb)?.relu()?.matmul(&tw)?.softmax()?;
    let got = z.to_vec_blocking::<f32>()?; // waits for the device; `to_vec().await` in browsers

    let want = reference(&x, &bias, &w);
    for (i, (g, r)) in got.iter().zip(&want).enumerate() {
        if (f64::from(*g) - r).abs() > 1e-5 {
            return Err(unicompute::Error::Invalid(format!(
                "element {i}: got {g}, expected {r}"
            )));
        }
    }
    println!("softmax(relu(x + bias) @ w) = {got:?} (matches the host within 1e-5)");
    Ok(())
}

/// The same arithmetic on the host in f64.
fn reference(x: &[f32], bias: &[f32], w: &[f32]) -> Vec<f64> {
    let mut out = Vec::new();
    for row in x.chunks(3) {
        let h: Vec<f64> = row
            .iter()
            .zip(bias)
            .map(|(a, b)| f64::from(a + b).max(0.0))
            .collect();
        let logits: Vec<f64> = (0..2)
            .map(|j| (0..3).map(|k| h[k] * f64::from(w[k * 2 + j])).sum())
            .collect();
        let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = logits.iter().map(|l| (l - max).exp()).sum();
        out.extend(logits.iter().map(|l| (l - max).exp() / sum));
    }
    out
}
