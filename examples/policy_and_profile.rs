//! A policy chooses the device and the kernel variants; the profiler records every launch and
//! writes a Chrome trace (open it in Perfetto or chrome://tracing).
//!
//! `cargo run --release --example policy_and_profile [trace.json]`

// Natively only: the example waits on the device with the blocking API, which browsers lack.
#![cfg_attr(target_arch = "wasm32", no_main)]
#![cfg(not(target_arch = "wasm32"))]

use unicompute::{Device, Policy, Tensor};

const POLICY: &str = r#"{
    "backends": ["cuda", "webgpu", "cpu"],
    "selection": "ranked",
    "variants": { "reduce": "auto" },
    "fallback": true
}"#;

fn main() -> unicompute::Result<()> {
    let policy = Policy::from_json(POLICY)?;
    let device = Device::open_with_policy(&policy)?;
    println!("device: {}", device.info().name);
    for decision in device.decisions() {
        println!(
            "  {}: {} ({})",
            decision.op, decision.choice, decision.reason
        );
    }

    device.profiler().enable();
    let (m, k, n) = (256, 384, 128);
    let a = Tensor::from_slice(
        &device,
        &(0..m * k).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<_>>(),
        &[m, k],
    )?;
    let b = Tensor::from_slice(
        &device,
        &(0..k * n).map(|i| (i % 5) as f32 * 0.1).collect::<Vec<_>>(),
        &[k, n],
    )?;
    let c = a.matmul(&b)?.unary(unicompute::ops::UnaryOp::GeluErf)?;
    let total = c.sum(None)?.to_vec_blocking::<f32>()?[0];
    let profile = device.take_profile_blocking();

    println!("sum of gelu(a @ b) = {total}");
    println!("{}", profile.table());
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::temp_dir()
            .join("unicompute-trace.json")
            .display()
            .to_string()
    });
    profile.save_chrome_trace(&path)?;
    println!(
        "{} launches; Chrome trace written to {path}",
        profile.launches.len()
    );
    Ok(())
}
