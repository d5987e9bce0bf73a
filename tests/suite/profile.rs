//! The profiler on every device: one record per launch with op, shapes, bytes, FLOPs and a
//! device time from the backend's clock; the summary; the Chrome trace; nothing while disabled.

use crate::common::{self, random, tensor};
use serde_json::Value;
use unicompute::profile::Clock;
use unicompute::{BackendKind, Device};

/// Run a small, fixed mix of ops on `d` (odd shapes) and wait for them.
fn run_mix(d: &Device) {
    let (m, k, n) = (33, 65, 17);
    let a = tensor(d, &random(1, m * k, -1.0, 1.0), &[m, k]);
    let b = tensor(d, &random(2, k * n, -1.0, 1.0), &[k, n]);
    let p = a.matmul(&b).unwrap(); // matmul
    let q = p.add(&p).unwrap(); // add
    let s = q.sum(Some(1)).unwrap(); // sum
    s.to_vec_blocking::<f32>().unwrap();
}

fn fresh_devices() -> Vec<Device> {
    common::open_devices()
}

#[test]
fn log_softmax_is_one_launch() {
    for d in fresh_devices() {
        d.profiler().enable();
        let x = tensor(&d, &random(3, 5 * 301, -4.0, 4.0), &[5, 301]);
        x.log_softmax().unwrap().to_vec_blocking::<f32>().unwrap();
        let profile = d.take_profile_blocking();
        let ops: Vec<&str> = profile.launches.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(ops, ["log_softmax"], "{}", common::name(&d));
        assert_eq!(profile.launches[0].shapes, vec![vec![5, 301], vec![5, 301]]);
    }
}

#[test]
fn row_ops_of_a_strided_view_or_another_axis_read_in_place() {
    for d in fresh_devices() {
        let x = tensor(&d, &random(4, 6 * 7 * 5, -4.0, 4.0), &[6, 7, 5]);
        let transposed = x.permute(&[2, 1, 0]).unwrap();
        d.profiler().enable();
        x.softmax_axis(0).unwrap().to_vec_blocking::<f32>().unwrap();
        transposed
            .softmax()
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        x.log_softmax_axis(1)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        let profile = d.take_profile_blocking();
        let ops: Vec<&str> = profile.launches.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(
            ops,
            ["softmax", "softmax", "log_softmax"],
            "no copy first, on {}",
            common::name(&d)
        );
        d.profiler().enable();
        transposed
            .layer_norm(Default::default())
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        let profile = d.take_profile_blocking();
        let ops: Vec<&str> = profile.launches.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(
            ops,
            ["layer_norm"],
            "no copy first, on {}",
            common::name(&d)
        );
    }
}

#[test]
fn a_disabled_profiler_records_nothing() {
    for d in fresh_devices() {
        assert!(!d.profiler().is_enabled());
        run_mix(&d);
        assert!(
            d.take_profile_blocking().launches.is_empty(),
            "{}",
            common::name(&d)
        );
    }
}

#[test]
fn every_launch_is_recorded_with_its_device_time() {
    for d in fresh_devices() {
        let what = common::name(&d);
        d.profiler().enable();
        run_mix(&d);
        d.profiler().disable();
        run_mix(&d); // not recorded
        let profile = d.take_profile_blocking();
        let ops: Vec<&str> = profile.launches.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(ops, ["matmul", "add", "sum"], "{what}");
        let [matmul, add, sum] = &profile.launches[..] else {
            unreachable!()
        };
        assert_eq!(
            matmul.shapes,
            vec![vec![33, 65], vec![65, 17], vec![33, 17]],
            "{what}"
        );
        assert_eq!(matmul.flops, 2 * 33 * 65 * 17, "{what}");
        assert_eq!(matmul.bytes, 4 * (33 * 65 + 65 * 17 + 33 * 17), "{what}");
        assert_eq!(add.bytes, 4 * 3 * 33 * 17, "{what}");
        assert_eq!(sum.shapes, vec![vec![33, 17], vec![33]], "{what}");
        assert!(
            matmul.variant.is_some() && matmul.reason.is_some(),
            "the chooser's choice is kept: {matmul:?}"
        );
        let expected_clock = match d.backend() {
            BackendKind::Cpu => Clock::Host,
            BackendKind::Cuda => Clock::CudaEvent,
            BackendKind::WebGpu if d.info().features.timestamps => Clock::TimestampQuery,
            BackendKind::WebGpu => Clock::HostSerialised,
        };
        for l in &profile.launches {
            assert_eq!(l.clock, expected_clock, "{what}: {l:?}");
            assert!(
                l.device_us.is_some_and(|t| t > 0.0 && t < 10e6),
                "{what}: {l:?}"
            );
            assert!(l.device_start_us.is_some(), "{what}: {l:?}");
        }
        // Launches of one queue run in order on the device's clock.
        let starts: Vec<f64> = profile
            .launches
            .iter()
            .map(|l| l.device_start_us.unwrap())
            .collect();
        assert!(
            starts.windows(2).all(|w| w[0] <= w[1]),
            "{what}: {starts:?}"
        );

        let summary = profile.summary();
        assert_eq!(summary.len(), 3);
        let mm = summary.iter().find(|s| s.op == "matmul").unwrap();
        assert_eq!((mm.count, mm.timed, mm.unit), (1, 1, "GFLOP/s"));
        assert!((mm.rate - mm.flops as f64 / mm.total_s / 1e9).abs() < 1e-9 * mm.rate.max(1.0));
        assert_eq!(summary.iter().find(|s| s.op == "add").unwrap().unit, "GB/s");
        let table = profile.table();
        assert!(
            table.contains("matmul") && table.contains("3 launches"),
            "{table}"
        );

        let trace: Value =
            serde_json::from_str(&profile.chrome_trace()).expect("the trace is JSON");
        let events: Vec<&Value> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(events.len(), 3, "one complete event per launch");
        let total_us: f64 = events.iter().map(|e| e["dur"].as_f64().unwrap()).sum();
        assert!((total_us / 1e6 - profile.device_seconds()).abs() < 1e-9);
        for e in &events {
            assert!(
                e["ts"].as_f64().unwrap() >= 0.0 && e["pid"].is_number() && e["tid"].is_number(),
                "{e}"
            );
            assert!(
                e["args"]["shapes"].is_array() && e["args"]["bytes"].is_u64(),
                "{e}"
            );
        }
        assert_eq!(trace["otherData"]["launches"], 3);
        assert_eq!(trace["otherData"]["decisions"][0]["op"], "backend");
        assert!(
            d.take_profile_blocking().launches.is_empty(),
            "taking empties the profiler"
        );
    }
}

#[test]
fn launches_not_yet_submitted_stay_untimed() {
    let Some(gpu) = common::open_devices()
        .into_iter()
        .find(|d| d.backend() == BackendKind::WebGpu && d.info().features.timestamps)
    else {
        return;
    };
    gpu.profiler().enable();
    let x = tensor(&gpu, &random(3, 1000, -1.0, 1.0), &[1000]);
    let y = x.relu().unwrap(); // recorded, not submitted
    let profile = gpu.take_profile_blocking();
    assert_eq!(profile.launches.len(), 1);
    assert_eq!(profile.launches[0].device_us, None);
    assert!(profile.table().contains("1 untimed"), "{}", profile.table());
    assert_eq!(
        serde_json::from_str::<Value>(&profile.chrome_trace()).unwrap()["otherData"]
            ["untimed_launches"],
        1
    );
    // The queue still works.
    assert!(y
        .to_vec_blocking::<f32>()
        .unwrap()
        .iter()
        .all(|v| *v >= 0.0));
}

#[test]
fn user_kernels_are_recorded_too() {
    let Some(gpu) = common::open_devices()
        .into_iter()
        .find(|d| d.backend() == BackendKind::WebGpu)
    else {
        return;
    };
    let src = "@group(0) @binding(0) var<storage, read_write> v: array<f32>;\n@compute @workgroup_size(64) fn twice(@builtin(global_invocation_id) i: vec3<u32>) { if (i.x < arrayLength(&v)) { v[i.x] = 2.0 * v[i.x]; } }";
    let kernel = unicompute::Kernel::from_wgsl(&gpu, src, "twice").unwrap();
    let buf = unicompute::Buffer::from_slice(&gpu, &[1.0f32; 100]).unwrap();
    gpu.profiler().enable();
    gpu.queue()
        .launch(&kernel, &[(&buf).into()], [2, 1, 1])
        .unwrap();
    assert_eq!(buf.read_blocking().unwrap(), vec![2.0f32; 100]);
    let profile = gpu.take_profile_blocking();
    assert_eq!(profile.launches.len(), 1);
    assert_eq!(profile.launches[0].op, "twice");
    assert_eq!(profile.launches[0].shapes, vec![vec![100]]);
    assert!(profile.launches[0].device_us.is_some() || !gpu.info().features.timestamps);
}
