//! A first program: open the best device, build tensors, run a few ops, read the result back
//! and check it. The README shows this file from its `use` line on; `tests/docs.rs`
//! checks that the two agree.
//!
//! `cargo run --release --example first_program` (`UNICOMPUTE_BACKEND=cpu|webgpu|cuda`
//! chooses the device).

// Natively only: the example waits on the device with the blocking API, which browsers lack.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use unicompute::{BackendChoice, Device, Tensor};

fn main() -> unicompute::Result<()> {
    // A hardware GPU if there is one; else the faster of the CPU and a software adapter.
    let device = Device::open(BackendChoice::Auto)?;
    let x = Tensor::from_slice(&device, &[1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0], &[2, 3])?;
    let bias = Tensor::from_slice(&device, &[0.5f32, 0.5, 0.5], &[3])?; // broadcast over rows
    let w = Tensor::from_slice(&device, &[1.0f32, 0.0, 0.0, 1.0, 1.0, -1.0], &[3, 2])?;
    // softmax(relu(x + bias) @ w), recorded on the device's default queue.
    let z = x.add(&bias)?.relu()?.matmul(&w)?.softmax()?;
    let got = z.to_vec_blocking::<f32>()?; // waits for the device; `to_vec().await` in browsers
    println!("{}: {got:?}", device.info().name);

    // relu(x + bias) @ w = [[5, -3.5], [0, 5.5]], so each row's softmax is a logistic.
    let logistic = |d: f32| 1.0 / (1.0 + (-d).exp());
    let want = [logistic(8.5), logistic(-8.5), logistic(-5.5), logistic(5.5)];
    assert!(
        got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6),
        "expected {want:?}"
    );
    Ok(())
}
