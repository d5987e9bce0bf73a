//! The browser suite (`wasm-pack test --headless --chrome`, or `cargo test --target
//! wasm32-unknown-unknown` with wasm-bindgen-test-runner and chromedriver): a conformance
//! subset on the browser's WebGPU adapter and on the CPU backend compiled into the wasm,
//! and bad input through the JavaScript API. Built with UNICOMPUTE_REQUIRE_WEBGPU=1 (CI), a
//! browser without a WebGPU adapter fails instead of skipping.
#![cfg(target_arch = "wasm32")]

use unicompute::wasm::{init, JsDevice};
use unicompute::{BackendChoice, BackendKind, Device, Tensor};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[path = "suite/flow_model.rs"]
mod flow_model;

/// Deterministic inputs in [-1, 1), never zero.
fn inputs(seed: u32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            (((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) % 1999) as f32
                / 1000.0
                - 0.9995
        })
        .collect()
}

/// The devices under test: the browser's WebGPU adapter (required in CI) and the CPU.
async fn devices() -> Vec<Device> {
    let mut out = Vec::new();
    match Device::open_async(BackendChoice::Backend(BackendKind::WebGpu)).await {
        Ok(d) => out.push(d),
        Err(e) if option_env!("UNICOMPUTE_REQUIRE_WEBGPU") == Some("1") => {
            panic!("UNICOMPUTE_REQUIRE_WEBGPU=1 but: {e}")
        }
        Err(e) => web_sys_log(&format!("SKIPPING webgpu: {e}")),
    }
    out.push(
        Device::open_async(BackendChoice::Backend(BackendKind::Cpu))
            .await
            .expect("the cpu backend always opens"),
    );
    out
}

fn web_sys_log(message: &str) {
    wasm_bindgen_test::console_log!("{message}");
}

fn assert_close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

#[wasm_bindgen_test]
async fn matmul_softmax_and_broadcast_add_match_the_reference() {
    for d in devices().await {
        let (m, k, n) = (33, 17, 65);
        let (a, b, bias) = (inputs(1, m * k), inputs(2, k * n), inputs(3, n));
        let at = Tensor::from_slice(&d, &a, &[m, k]).unwrap();
        let bt = Tensor::from_slice(&d, &b, &[k, n]).unwrap();
        let ct = Tensor::from_slice(&d, &bias, &[n]).unwrap();
        let got = at
            .matmul(&bt)
            .unwrap()
            .add(&ct)
            .unwrap()
            .to_vec::<f32>()
            .await
            .unwrap();
        let want: Vec<f64> = (0..m * n)
            .map(|i| {
                (0..k)
                    .map(|p| f64::from(a[i / n * k + p]) * f64::from(b[p * n + i % n]))
                    .sum::<f64>()
                    + f64::from(bias[i % n])
            })
            .collect();
        assert_close(
            &got,
            &want,
            1e-5,
            &format!("matmul + bias on {}", d.backend()),
        );
        let soft = at.softmax().unwrap().to_vec::<f32>().await.unwrap();
        for (r, row) in soft.chunks(k).enumerate() {
            let xs = &a[r * k..(r + 1) * k];
            let max = xs
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
            let total: f64 = xs.iter().map(|&v| (f64::from(v) - max).exp()).sum();
            let want: Vec<f64> = xs
                .iter()
                .map(|&v| (f64::from(v) - max).exp() / total)
                .collect();
            assert_close(
                row,
                &want,
                1e-5,
                &format!("softmax row {r} on {}", d.backend()),
            );
        }
        let log_soft = at.log_softmax().unwrap().to_vec::<f32>().await.unwrap();
        for (r, row) in log_soft.chunks(k).enumerate() {
            let want = unicompute::ops::log_softmax::reference_row(
                &a[r * k..(r + 1) * k]
                    .iter()
                    .map(|&v| f64::from(v))
                    .collect::<Vec<_>>(),
            );
            assert_close(
                row,
                &want,
                1e-5,
                &format!("log_softmax row {r} on {}", d.backend()),
            );
        }
        let sum = at.sum(None).unwrap().to_vec::<f32>().await.unwrap();
        assert_close(
            &sum,
            &[a.iter().map(|&v| f64::from(v)).sum()],
            1e-5,
            &format!("sum on {}", d.backend()),
        );
    }
}

#[wasm_bindgen_test]
async fn norms_attention_and_16_bit_storage_match_the_reference() {
    use unicompute::ops::{AttentionParams, NormParams};
    for d in devices().await {
        let (rows, cols) = (5, 33);
        let x = inputs(4, rows * cols);
        let t = Tensor::from_slice(&d, &x, &[rows, cols]).unwrap();
        let got = t
            .layer_norm(NormParams::default())
            .unwrap()
            .to_vec::<f32>()
            .await
            .unwrap();
        for (r, row) in x.chunks(cols).enumerate() {
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / cols as f64;
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / cols as f64;
            let want: Vec<f64> = row
                .iter()
                .map(|&v| (f64::from(v) - mean) / (var + 1e-5).sqrt())
                .collect();
            assert_close(
                &got[r * cols..(r + 1) * cols],
                &want,
                1e-4,
                &format!("layer norm row {r} on {}", d.backend()),
            );
        }
        // Causal attention over one head of 7 positions.
        let (l, hd) = (7, 8);
        let q = inputs(5, l * hd);
        let qt = Tensor::from_slice(&d, &q, &[1, 1, l, hd]).unwrap();
        let got = qt
            .attention(
                &qt,
                &qt,
                AttentionParams {
                    causal: true,
                    ..Default::default()
                },
            )
            .unwrap()
            .to_vec::<f32>()
            .await
            .unwrap();
        for i in 0..l {
            let scores: Vec<f64> = (0..=i)
                .map(|j| {
                    (0..hd)
                        .map(|t| f64::from(q[i * hd + t]) * f64::from(q[j * hd + t]))
                        .sum::<f64>()
                        / (hd as f64).sqrt()
                })
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = scores.iter().map(|s| (s - max).exp()).sum();
            let want: Vec<f64> = (0..hd)
                .map(|c| {
                    (0..=i)
                        .map(|j| (scores[j] - max).exp() / total * f64::from(q[j * hd + c]))
                        .sum()
                })
                .collect();
            assert_close(
                &got[i * hd..(i + 1) * hd],
                &want,
                1e-4,
                &format!("attention row {i} on {}", d.backend()),
            );
        }
        // f16 storage: exp of f16 values rounds once, like the `half` crate.
        let h = t.cast(unicompute::DType::F16).unwrap();
        let got = h
            .unary(unicompute::UnaryOp::Exp)
            .unwrap()
            .cast(unicompute::DType::F32)
            .unwrap()
            .to_vec::<f32>()
            .await
            .unwrap();
        let want: Vec<f64> = x
            .iter()
            .map(|&v| {
                f64::from(
                    unicompute::f16::from_f32(unicompute::f16::from_f32(v).to_f32().exp()).to_f32(),
                )
            })
            .collect();
        assert_close(&got, &want, 1e-3, &format!("f16 exp on {}", d.backend()));
        // erf near zero (where 1 - erfc would lose every digit) and far out.
        let e: Vec<f32> = x
            .iter()
            .map(|&v| v * 1e-3)
            .chain(x.iter().map(|&v| v * 3.0))
            .collect();
        let got = Tensor::from_slice(&d, &e, &[e.len()])
            .unwrap()
            .unary(unicompute::UnaryOp::Erf)
            .unwrap()
            .to_vec::<f32>()
            .await
            .unwrap();
        for (i, (&g, &v)) in got.iter().zip(&e).enumerate() {
            let w = libm::erf(f64::from(v));
            assert!(
                (f64::from(g) - w).abs() <= 1e-6 * w.abs(),
                "erf({v}) = {g}, expected {w} (element {i} on {})",
                d.backend()
            );
        }
        // sin and cos far from zero, within 2 ulp of the f64 reference.
        let far: Vec<f32> = x
            .iter()
            .map(|&v| v * 2500.0)
            .chain([355.0, 9999.999, -1e4])
            .collect();
        let ft = Tensor::from_slice(&d, &far, &[far.len()]).unwrap();
        for (op, f) in [
            (unicompute::UnaryOp::Sin, f64::sin as fn(f64) -> f64),
            (unicompute::UnaryOp::Cos, f64::cos),
        ] {
            let got = ft.unary(op).unwrap().to_vec::<f32>().await.unwrap();
            for (&g, &v) in got.iter().zip(&far) {
                let w = f(f64::from(v));
                let ulp =
                    f64::from(f32::from_bits((w as f32).abs().to_bits() + 1) - (w as f32).abs());
                assert!(
                    (f64::from(g) - w).abs() <= 2.0 * ulp,
                    "{}({v}) = {g}, expected {w} on {}",
                    op.name(),
                    d.backend()
                );
            }
        }
    }
}

/// The JS-facing API: `init`, typed arrays in and out, and errors with a `code`.
#[wasm_bindgen_test]
async fn the_js_api_runs_ops_and_reports_bad_input() {
    let device: JsDevice = init(None, None).await.unwrap();
    assert!(
        device.backend() == "webgpu" || device.fallback_reason().is_some(),
        "auto picks WebGPU or says why not"
    );
    let x = device
        .tensor(
            &js_sys::Float32Array::from(&[1.0f32, -2.0, 3.0, -4.0][..]).into(),
            Some(vec![2.0, 2.0]),
            None,
        )
        .unwrap();
    let y = x.relu().unwrap().matmul(&x).unwrap();
    let out = y
        .read()
        .await
        .unwrap()
        .dyn_into::<js_sys::Float32Array>()
        .unwrap()
        .to_vec();
    assert_eq!(out, vec![1.0, -2.0, 3.0, -6.0]);
    let code = |e: JsValue| {
        js_sys::Reflect::get(&e, &"code".into())
            .unwrap()
            .as_string()
            .unwrap()
    };
    let bad = device
        .tensor(
            &js_sys::Float64Array::new_with_length(4).into(),
            Some(vec![2.0, 2.0]),
            None,
        )
        .err()
        .unwrap();
    assert_eq!(code(bad), "INVALID");
    let mismatch = device
        .tensor(
            &js_sys::Float32Array::new_with_length(3).into(),
            Some(vec![2.0, 2.0]),
            None,
        )
        .err()
        .unwrap();
    assert_eq!(code(mismatch), "SHAPE");
    // Sizes JS would wrap on the way in (2^32 to 0, -1 to 2^32 - 1) are refused instead.
    for shape in [
        vec![4294967296.0],
        vec![-1.0],
        vec![1.5, 0.0],
        vec![65536.0, 65536.0, 0.0],
    ] {
        let e = device
            .tensor(
                &js_sys::Float32Array::new_with_length(0).into(),
                Some(shape.clone()),
                None,
            )
            .err()
            .unwrap();
        assert!(matches!(code(e).as_str(), "INVALID" | "SHAPE"), "{shape:?}");
    }
    let wide = device
        .tensor(
            &js_sys::Float32Array::new_with_length(6).into(),
            Some(vec![2.0, 3.0]),
            None,
        )
        .unwrap();
    let err = x.add(&wide, None).err().unwrap();
    assert_eq!(code(err.clone()), "SHAPE");
    assert!(err
        .dyn_into::<js_sys::Error>()
        .unwrap()
        .message()
        .as_string()
        .unwrap()
        .contains("[2, 3]"));
    assert_eq!(code(x.unary("nope").err().unwrap()), "INVALID");
    assert_eq!(
        code(init(Some("quantum".into()), None).await.err().unwrap()),
        "INVALID"
    );
}

/// Milliseconds since an arbitrary origin (the page's clock).
fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Median milliseconds to run the catalogue's heavy ops (a 256^3 matmul and a 3x3 conv2d
/// over [1, 32, 32, 32]) on `d` to completion, after one warm-up.
async fn heavy_ops_ms(d: &Device) -> f64 {
    let a = Tensor::from_slice(d, &inputs(5, 256 * 256), &[256, 256]).unwrap();
    let x = Tensor::from_slice(d, &inputs(6, 32 * 32 * 32), &[1, 32, 32, 32]).unwrap();
    let w = Tensor::from_slice(d, &inputs(7, 32 * 32 * 9), &[32, 32, 3, 3]).unwrap();
    let params = unicompute::ops::Conv2dParams {
        padding: [1, 1],
        ..Default::default()
    };
    let mut times = Vec::new();
    for rep in 0..4 {
        let start = now_ms();
        let y = a.matmul(&a).unwrap();
        let z = x.conv2d(&w, params).unwrap();
        y.to_vec::<f32>().await.unwrap();
        z.to_vec::<f32>().await.unwrap();
        if rep > 0 {
            times.push(now_ms() - start);
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// With only a software WebGPU adapter (SwiftShader), `auto` times WebGPU against the CPU
/// backend inside the wasm, opens the faster and says why; timed again here, independently,
/// the one it opened is the faster.
#[wasm_bindgen_test]
async fn auto_picks_the_faster_of_webgpu_and_the_wasm_cpu() {
    let device: JsDevice = init(None, None).await.unwrap();
    let reason = device.selection_reason();
    web_sys_log(&format!("auto opened {}: {reason}", device.backend()));
    let Ok(gpu) = Device::open_async(BackendChoice::Backend(BackendKind::WebGpu)).await else {
        assert_eq!(device.backend(), "cpu");
        assert!(device.fallback_reason().is_some());
        return;
    };
    if gpu.info().device_type != unicompute::DeviceType::SoftwareGpu {
        assert_eq!(
            device.backend(),
            "webgpu",
            "a hardware adapter is taken: {reason}"
        );
        return;
    }
    assert!(
        reason.contains("no hardware GPU") && reason.contains("webgpu") && reason.contains("cpu"),
        "{reason}"
    );
    let cpu = Device::open_async(BackendChoice::Backend(BackendKind::Cpu))
        .await
        .unwrap();
    let (gpu_ms, cpu_ms) = (heavy_ops_ms(&gpu).await, heavy_ops_ms(&cpu).await);
    web_sys_log(&format!(
        "heavy ops: webgpu {gpu_ms:.1} ms, wasm cpu {cpu_ms:.1} ms"
    ));
    let faster = if cpu_ms < gpu_ms { "cpu" } else { "webgpu" };
    // A near tie could go either way; a clear difference must not.
    if (cpu_ms - gpu_ms).abs() > 0.25 * cpu_ms.max(gpu_ms) {
        assert_eq!(
            device.backend(),
            faster,
            "webgpu {gpu_ms} ms vs cpu {cpu_ms} ms; auto said: {reason}"
        );
    }
    if device.backend() == "cpu" {
        assert!(device
            .fallback_reason()
            .is_some_and(|r| r.contains("no hardware GPU")));
    }
}

/// The profiler in the browser: launches with device times (timestamp queries on WebGPU,
/// the page's clock on the CPU backend), a summary and a Chrome trace.
#[wasm_bindgen_test]
async fn the_profiler_records_launches_in_the_browser() {
    for d in devices().await {
        d.profiler().enable();
        let (m, k, n) = (19, 37, 23);
        let a = Tensor::from_slice(&d, &inputs(8, m * k), &[m, k]).unwrap();
        let b = Tensor::from_slice(&d, &inputs(9, k * n), &[k, n]).unwrap();
        let s = a.matmul(&b).unwrap().softmax().unwrap();
        s.to_vec::<f32>().await.unwrap();
        let profile = d.take_profile().await;
        let ops: Vec<&str> = profile.launches.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(ops, ["matmul", "softmax"], "{}", d.backend());
        assert_eq!(profile.launches[0].flops, (2 * m * n * k) as u64);
        if d.backend() == BackendKind::Cpu || d.info().features.timestamps {
            assert!(
                profile
                    .launches
                    .iter()
                    .all(|l| l.device_us.is_some_and(|t| t >= 0.0)),
                "{:?}",
                profile.launches
            );
            let trace: serde_json::Value = serde_json::from_str(&profile.chrome_trace()).unwrap();
            let events = trace["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["ph"] == "X")
                .count();
            assert_eq!(events, 2);
        }
        assert!(profile.table().contains("softmax"));
    }
}

/// Capture and replay on the browser's WebGPU: a chain captured once, replayed on new inputs
/// written into the memory the capture read; the CPU backend in the wasm says it cannot.
#[wasm_bindgen_test]
async fn a_captured_chain_replays_on_new_inputs_in_the_browser() {
    for d in devices().await {
        let n = 1031;
        let input = unicompute::Buffer::<f32>::zeros(&d, n).unwrap();
        let x = Tensor::from_buffer(&input, &[n]).unwrap();
        let captured = d.queue().capture(|_| x.relu()?.mul(&x)?.add(&x));
        if d.backend() == BackendKind::Cpu {
            assert_eq!(captured.unwrap_err().code(), "UNSUPPORTED");
            continue;
        }
        let (graph, y) = captured.unwrap();
        assert_eq!(graph.launches(), 3);
        for seed in [21, 22] {
            let data = inputs(seed, n);
            input.write(&data).unwrap();
            graph.replay().unwrap();
            let want: Vec<f64> = data
                .iter()
                .map(|&v| f64::from(v.max(0.0) * v + v))
                .collect();
            assert_close(
                &y.to_vec::<f32>().await.unwrap(),
                &want,
                1e-6,
                &format!("replay {seed}"),
            );
        }
    }
}

/// Policies and tuning through the JS API: a policy object opens the device it names, a bad
/// one is an `INVALID` error naming the key, `tune` reports every candidate.
#[wasm_bindgen_test]
async fn policies_and_tuning_through_the_js_api() {
    let code = |e: JsValue| {
        js_sys::Reflect::get(&e, &"code".into())
            .unwrap()
            .as_string()
            .unwrap()
    };
    let policy =
        js_sys::JSON::parse(r#"{"backends": ["cpu"], "variants": {"matmul": "auto"}}"#).unwrap();
    let device = init(None, Some(policy)).await.unwrap();
    assert_eq!(device.backend(), "cpu");
    assert!(
        device.selection_reason().contains("only device"),
        "{}",
        device.selection_reason()
    );
    let bad = init(None, Some(r#"{"backends": ["cpu"], "colour": 1}"#.into()))
        .await
        .err()
        .unwrap();
    assert_eq!(code(bad.clone()), "INVALID");
    assert!(bad
        .dyn_into::<js_sys::Error>()
        .unwrap()
        .message()
        .as_string()
        .unwrap()
        .contains("colour"));
    assert_eq!(
        code(
            init(Some("cpu".into()), Some(r#"{}"#.into()))
                .await
                .err()
                .unwrap()
        ),
        "INVALID"
    );
    device.enable_profiler();
    let x = device
        .tensor(
            &js_sys::Float32Array::from(&inputs(10, 12)[..]).into(),
            Some(vec![3.0, 4.0]),
            None,
        )
        .unwrap();
    let y = x.matmul(&x.transpose().unwrap()).unwrap();
    y.read().await.unwrap();
    let profile = device.take_profile().await;
    let launches = profile.launches();
    let first = js_sys::Array::from(&launches).get(0);
    let variant = js_sys::Reflect::get(&first, &"variant".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(variant, "sgemm");
    let result = device
        .tune("matmul".into(), vec![16.0, 16.0, 16.0])
        .await
        .unwrap();
    let times = js_sys::Reflect::get(&result, &"times_us".into()).unwrap();
    assert_eq!(js_sys::Object::keys(&times.into()).length(), 1);
    assert!(device
        .tune_cache()
        .contains("matmul f32 batch1 m16 n16 k16"));
    assert_eq!(
        code(device.tune("conv".into(), vec![1.0]).await.err().unwrap()),
        "INVALID"
    );
    if let Ok(gpu) = init(Some("webgpu".into()), None).await {
        let result = gpu
            .tune("matmul".into(), vec![64.0, 64.0, 64.0])
            .await
            .unwrap();
        let times = js_sys::Reflect::get(&result, &"times_us".into()).unwrap();
        let timed: Vec<String> = js_sys::Object::keys(&times.into())
            .iter()
            .filter_map(|k| k.as_string())
            .collect();
        assert_eq!(
            timed.len(),
            4,
            "every webgpu matmul variant timed: {timed:?}"
        );
        assert!(
            ["tile64", "tile32", "tile128x64", "direct"]
                .iter()
                .all(|v| timed.iter().any(|t| t == v)),
            "{timed:?}"
        );
    }
}

/// Reads give every element with one copy from where they lie (the mapped GPU buffer's
/// `ArrayBuffer`, or the CPU backend's memory) into the result: odd sizes, views starting
/// inside a block (for f16, inside a 4-byte word), through the JS API's typed arrays too;
/// the profiler records each read's wait and copy.
#[wasm_bindgen_test]
async fn reads_copy_once_from_where_the_bytes_lie() {
    use unicompute::wasm::JsTensor;
    for d in devices().await {
        let data = inputs(21, 1031);
        let t = Tensor::from_slice(&d, &data, &[1031]).unwrap();
        let view = t.slice(0, 3..1030).unwrap();
        d.profiler().enable();
        assert_eq!(
            view.to_vec::<f32>().await.unwrap(),
            data[3..1030],
            "{}",
            d.backend()
        );
        let js = JsTensor::from(view.clone())
            .read()
            .await
            .unwrap()
            .dyn_into::<js_sys::Float32Array>()
            .unwrap();
        assert_eq!(js.length(), 1027);
        assert_eq!(js.to_vec(), data[3..1030], "{} through JS", d.backend());
        // readInto: the caller's array, at an offset into its buffer, filled in place.
        let backing = js_sys::Float32Array::new_with_length(1030);
        let dst = backing.subarray(3, 1030);
        let back = JsTensor::from(view.clone())
            .read_into(dst.clone().into())
            .await
            .unwrap();
        assert!(
            back == JsValue::from(dst.clone()),
            "readInto resolves to its argument"
        );
        assert_eq!(dst.to_vec(), data[3..1030], "{} readInto", d.backend());
        assert_eq!(backing.get_index(0), 0.0, "nothing written before the view");
        let profile = d.take_profile().await;
        assert_eq!(profile.reads.len(), 3, "{:?}", profile.reads);
        assert!(
            profile
                .reads
                .iter()
                .all(|r| r.bytes == 1027 * 4 && r.wait_us >= 0.0 && r.copy_us >= 0.0),
            "{:?}",
            profile.reads
        );
        d.profiler().disable();
        if d.info().features.f16 || d.backend() == BackendKind::Cpu {
            let half = t
                .cast(unicompute::DType::F16)
                .unwrap()
                .slice(0, 1..1030)
                .unwrap();
            let want: Vec<f32> = data[1..1030]
                .iter()
                .map(|&v| half::f16::from_f32(v).to_f32())
                .collect();
            let got: Vec<f32> = half
                .to_vec::<half::f16>()
                .await
                .unwrap()
                .iter()
                .map(|v| v.to_f32())
                .collect();
            assert_eq!(got, want, "{} f16 from an odd offset", d.backend());
            let js = JsTensor::from(half)
                .read()
                .await
                .unwrap()
                .dyn_into::<js_sys::Float32Array>()
                .unwrap();
            assert_eq!(js.to_vec(), want, "{} f16 through JS", d.backend());
        }
        let ints = JsTensor::from(Tensor::from_slice(&d, &[7i32, -8, 9], &[3]).unwrap());
        let js = ints
            .read()
            .await
            .unwrap()
            .dyn_into::<js_sys::Int32Array>()
            .unwrap();
        assert_eq!(js.to_vec(), [7, -8, 9]);
        // readInto refuses an array of another type or length, and writes nothing.
        let code = |e: JsValue| {
            js_sys::Reflect::get(&e, &"code".into())
                .unwrap()
                .as_string()
                .unwrap()
        };
        for wrong in [
            js_sys::Float32Array::new_with_length(3).into(),
            js_sys::Int32Array::new_with_length(4).into(),
            JsValue::NULL,
        ] {
            assert_eq!(code(ints.read_into(wrong).await.err().unwrap()), "INVALID");
        }
        let fine = js_sys::Int32Array::new_with_length(3);
        ints.read_into(fine.clone().into()).await.unwrap();
        assert_eq!(fine.to_vec(), [7, -8, 9]);
    }
}

/// A WGSL kernel with workgroup memory and a barrier: each workgroup of 8 reverses its block.
const REVERSE: &str = r#"
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
var<workgroup> block: array<f32, 8>;

@compute @workgroup_size(8)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) w: vec3<u32>) {
    block[li] = x[w.x * 8u + li] * 2.0;
    workgroupBarrier();
    y[w.x * 8u + li] = block[7u - li];
}
"#;

/// A user kernel runs on every device of the page, the CPU backend inside the wasm too (its
/// WGSL executor: what a browser without WebGPU falls back to).
#[wasm_bindgen_test]
async fn a_wgsl_kernel_runs_on_every_device_in_the_page() {
    use unicompute::{Binding, Buffer, Kernel};
    let x = inputs(7, 24);
    let want: Vec<f32> = x
        .chunks(8)
        .flat_map(|c| c.iter().rev().map(|v| v * 2.0).collect::<Vec<_>>())
        .collect();
    for d in devices().await {
        let k = Kernel::from_wgsl(&d, REVERSE, "main").expect("compiles");
        let (bx, by) = (
            Buffer::from_slice(&d, &x).unwrap(),
            Buffer::from_slice(&d, &[-7.0f32; 24]).unwrap(),
        );
        d.queue()
            .launch(&k, &[Binding::from(&bx), Binding::from(&by)], [3, 1, 1])
            .unwrap();
        assert_eq!(by.read().await.unwrap(), want, "on {}", d.info().name);
    }
}

include!("suite/corpus/references.rs");

/// Launch `source`'s `main` on `d`, panicking with the device and the error.
fn launch_corpus(d: &Device, source: &str, bindings: &[unicompute::Binding<'_>], groups: [u32; 3]) {
    let what = source.lines().next().unwrap_or("");
    let k = unicompute::Kernel::from_wgsl(d, source, "main")
        .unwrap_or_else(|e| panic!("{what} on {}: {e}", d.info().name));
    d.queue()
        .launch(&k, bindings, groups)
        .unwrap_or_else(|e| panic!("{what} on {}: {e}", d.info().name));
}

/// Kernels of the native suite's corpus (`tests/suite/corpus/`) on every device of the page,
/// the CPU backend inside the wasm too, against the same references.
#[wasm_bindgen_test]
async fn the_corpus_kernels_run_on_every_device_in_the_page() {
    use unicompute::{Binding, Buffer};
    for d in devices().await {
        let on = d.info().name.clone();
        let cells: Vec<f32> = corpus_words(3, 29, 5000)
            .iter()
            .map(|&w| w as f32)
            .collect();
        let b = Buffer::from_slice(&d, bytemuck::cast_slice::<f32, u32>(&cells)).unwrap();
        launch_corpus(
            &d,
            include_str!("suite/corpus/cas_float_add.wgsl"),
            &[Binding::from(&b)],
            [5, 1, 1],
        );
        let got = b.read().await.unwrap();
        let want = cas_float_add_reference(&cells, 20);
        assert_eq!(
            bytemuck::cast_slice::<u32, f32>(&got),
            &want[..],
            "cas_float_add on {on}"
        );

        let keys = corpus_words(4, 16 * 70, 1000);
        let bk = Buffer::from_slice(&d, &keys).unwrap();
        let (seen, counts) = (
            Buffer::from_slice(&d, &[7u32; 64 * 70]).unwrap(),
            Buffer::from_slice(&d, &[7u32; 16 * 70]).unwrap(),
        );
        let bindings = [
            Binding::from(&bk),
            Binding::from(&seen),
            Binding::from(&counts),
        ];
        launch_corpus(
            &d,
            include_str!("suite/corpus/zeroed_workgroup_struct.wgsl"),
            &bindings,
            [70, 1, 1],
        );
        let (want_seen, want_counts) = zeroed_workgroup_struct_reference(&keys);
        assert_eq!(
            seen.read().await.unwrap(),
            want_seen,
            "zeroed_workgroup_struct on {on}"
        );
        assert_eq!(
            counts.read().await.unwrap(),
            want_counts,
            "zeroed_workgroup_struct on {on}"
        );

        let rows = corpus_words(5, 48 * 13, u32::MAX);
        let br = Buffer::from_slice(&d, &rows).unwrap();
        for (stride, groups) in chunk_rows_passes(13) {
            let p = Buffer::from_slice(&d, &[stride, 13]).unwrap();
            launch_corpus(
                &d,
                include_str!("suite/corpus/chunk_rows.wgsl"),
                &[Binding::from(&br), Binding::from(&p)],
                [groups, 1, 1],
            );
        }
        assert_eq!(
            br.read().await.unwrap()[..48],
            chunk_rows_reference(&rows)[..],
            "chunk_rows on {on}"
        );

        let x = inputs(6, 37);
        let (bx, by) = (
            Buffer::from_slice(&d, &x).unwrap(),
            Buffer::from_slice(&d, &[-7.0f32; 37]).unwrap(),
        );
        launch_corpus(
            &d,
            include_str!("suite/corpus/override_tile.wgsl"),
            &[Binding::from(&bx), Binding::from(&by)],
            [3, 1, 1],
        );
        assert_close(
            &by.read().await.unwrap(),
            &override_tile_reference(&x),
            1e-6,
            &format!("override_tile on {on}"),
        );
    }
}

/// Matrices, `modf` and override constants in a user kernel, on every device of the page (the
/// CPU backend's executor inside the wasm too): `transpose(m) * v * scale` and the fraction
/// of `determinant(m)`, over a workgroup size set at creation.
const MATRICES: &str = r#"
override wg: u32 = 64u;
override scale: f32 = 1.0;
@group(0) @binding(0) var<storage, read> m: array<mat3x3<f32>>;
@group(0) @binding(1) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(wg)
fn main(@builtin(global_invocation_id) g: vec3u) {
    let i = g.x;
    if (i >= arrayLength(&out)) { return; }
    let r = transpose(m[i]) * v[i].xyz * scale;
    out[i] = vec4(r, modf(determinant(m[i])).fract);
}
"#;

/// `enable f16;`: halves read, computed and written, where the device has f16.
const HALVES: &str = r#"
enable f16;
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
    if (g.x < arrayLength(&y)) { y[g.x] = x[g.x] * 2.0h + 1.0h; }
}
"#;

/// The f64 reference of [`MATRICES`] for the matrices `m` (12 words each: three columns
/// padded to 4) and vectors `v` (4 words each).
fn matrices_reference(m: &[f32], v: &[f32], scale: f64) -> Vec<f64> {
    let mut out = Vec::new();
    for (c, x) in m.chunks(12).zip(v.chunks(4)) {
        let col = |j: usize| [0, 1, 2].map(|r| f64::from(c[4 * j + r]));
        let (c0, c1, c2) = (col(0), col(1), col(2));
        let dot = |a: [f64; 3]| (0..3).map(|r| a[r] * f64::from(x[r])).sum::<f64>() * scale;
        let cross = [
            c1[1] * c2[2] - c1[2] * c2[1],
            c1[2] * c2[0] - c1[0] * c2[2],
            c1[0] * c2[1] - c1[1] * c2[0],
        ];
        let det: f64 = (0..3).map(|r| c0[r] * cross[r]).sum();
        out.extend([dot(c0), dot(c1), dot(c2), det - det.trunc()]);
    }
    out
}

#[wasm_bindgen_test]
async fn matrices_f16_and_constants_in_user_kernels_in_the_page() {
    use unicompute::{Binding, Buffer, Kernel};
    let n = 101;
    // Multiples of 1/2 up to 2: the determinants are exact in f32, so their fractions are too.
    let m: Vec<f32> = (0..12 * n)
        .map(|i| ((i * 7919) % 9) as f32 * 0.5 - 2.0)
        .collect();
    let v = inputs(22, 4 * n);
    let want = matrices_reference(&m, &v, 0.5);
    let halves: Vec<half::f16> = (0..74)
        .map(|i| half::f16::from_f32(i as f32 * 0.5 - 9.0))
        .collect();
    let words: Vec<u32> = bytemuck::cast_slice(&halves).to_vec();
    for d in devices().await {
        let on = d.info().name.clone();
        let k =
            Kernel::from_wgsl_with(&d, MATRICES, "main", &[("wg", 32.0), ("scale", 0.5)]).unwrap();
        assert_eq!(k.info().workgroup_size, [32, 1, 1], "on {on}");
        let (bm, bv) = (
            Buffer::from_slice(&d, &m).unwrap(),
            Buffer::from_slice(&d, &v).unwrap(),
        );
        let out = Buffer::from_slice(&d, &vec![f32::NAN; 4 * n]).unwrap();
        d.queue()
            .launch(
                &k,
                &[Binding::from(&bm), Binding::from(&bv), Binding::from(&out)],
                [4, 1, 1],
            )
            .unwrap();
        assert_close(
            &out.read().await.unwrap(),
            &want,
            1e-4,
            &format!("matrices on {on}"),
        );
        match (Kernel::from_wgsl(&d, HALVES, "main"), d.info().features.f16) {
            (Ok(k), true) => {
                let x = Buffer::from_slice(&d, &words).unwrap();
                let y = Buffer::from_slice(&d, &vec![0x7fa5_a5a5u32; words.len()]).unwrap();
                d.queue()
                    .launch(&k, &[Binding::from(&x), Binding::from(&y)], [2, 1, 1])
                    .unwrap();
                let got = y.read().await.unwrap();
                let got: &[half::f16] = bytemuck::cast_slice(&got);
                let want: Vec<f32> = halves.iter().map(|h| h.to_f32() * 2.0 + 1.0).collect();
                assert_eq!(
                    got.iter().map(|h| h.to_f32()).collect::<Vec<_>>(),
                    want,
                    "f16 on {on}"
                );
            }
            (Err(e), false) => assert!(e.to_string().contains("f16"), "{on}: {e}"),
            (got, f16) => panic!("{on} (f16 {f16}): {:?}", got.map(|_| ())),
        }
    }
}

/// An ONNX model steered by values computed on the device (Silero VAD's `If` on its sample
/// rate): `If` conditions, one inside a branch, and a `Loop`'s trip count and condition, each
/// read back from the device where the run awaits it, which the page cannot wait for.
#[wasm_bindgen_test]
async fn onnx_control_flow_awaits_device_conditions_in_the_page() {
    use flow_model::N;
    use unicompute::onnx::{Session, SessionOptions};
    let x: Vec<f32> = inputs(61, N).iter().map(|v| v.abs() + 0.1).collect();
    let w = inputs(67, N);
    for d in devices().await {
        let s = Session::from_bytes(&d, flow_model::model(&w), SessionOptions::default()).unwrap();
        let xt = Tensor::from_slice(&d, &x, &[N]).unwrap();
        for k in [3i64, 7, -2, 3, 7] {
            let kt = Tensor::from_slice(&d, &[k], &[]).unwrap();
            let what = format!("k = {k} on {}", d.backend());
            let out = (s.run_async(&[("x", &xt), ("k", &kt)]).await)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let y = out[0].1.to_vec::<f32>().await.unwrap();
            assert_close(&y, &flow_model::reference(&x, &w, k).0, 1e-5, &what);
        }
    }
}
