//! The browser suite inside a dedicated Web Worker: WebGPU (where the worker's navigator
//! offers it) and the CPU backend compute there too, without the main thread. Built with
//! UNICOMPUTE_REQUIRE_WEBGPU=1 (CI), a worker without a WebGPU adapter fails.
#![cfg(target_arch = "wasm32")]

use unicompute::{BackendChoice, BackendKind, Device, Tensor};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

#[wasm_bindgen_test]
async fn matmul_runs_in_a_worker() {
    let mut devices = vec![Device::open_async(BackendChoice::Backend(BackendKind::Cpu))
        .await
        .unwrap()];
    match Device::open_async(BackendChoice::Backend(BackendKind::WebGpu)).await {
        Ok(d) => devices.push(d),
        Err(e) if option_env!("UNICOMPUTE_REQUIRE_WEBGPU") == Some("1") => {
            panic!("UNICOMPUTE_REQUIRE_WEBGPU=1 but the worker has no WebGPU: {e}")
        }
        Err(e) => console_log!("SKIPPING webgpu in the worker: {e}"),
    }
    for d in devices {
        let n = 48;
        let a: Vec<f32> = (0..n * n)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let t = Tensor::from_slice(&d, &a, &[n, n]).unwrap();
        let got = t.matmul(&t).unwrap().to_vec::<f32>().await.unwrap();
        for (i, &g) in got.iter().enumerate().step_by(31) {
            let want: f64 = (0..n)
                .map(|k| f64::from(a[i / n * n + k]) * f64::from(a[k * n + i % n]))
                .sum();
            assert!(
                (f64::from(g) - want).abs() < 1e-4 * (1.0 + want.abs()),
                "{} element {i}: {g} vs {want}",
                d.backend()
            );
        }
    }
}
