//! Shared helpers of the integration tests: the devices under test, seeded inputs, and
//! comparison against f64 references.
#![allow(dead_code)]

pub mod crash;
pub mod kernels;

use std::sync::OnceLock;

use unicompute::{BackendChoice, BackendKind, Device, DeviceOptions, DeviceType, Tensor};

/// Set to 1 (CI does) to make a missing wgpu adapter a test failure instead of a skip.
pub const REQUIRE_WEBGPU_ENV: &str = "UNICOMPUTE_REQUIRE_WEBGPU";
/// Set to 1 on GPU machines to make a missing CUDA device a test failure instead of a skip.
pub const REQUIRE_CUDA_ENV: &str = "UNICOMPUTE_REQUIRE_CUDA";

/// Whether `env` is set to 1.
pub fn required(env: &str) -> bool {
    std::env::var(env).as_deref() == Ok("1")
}

/// Every backend available here, opened with output poisoning on, shared by the tests of one
/// binary. CPU first.
pub fn devices() -> &'static [Device] {
    static DEVICES: OnceLock<Vec<Device>> = OnceLock::new();
    DEVICES.get_or_init(open_devices)
}

/// Newly opened devices of every backend, for tests that read pool statistics undisturbed.
pub fn open_devices() -> Vec<Device> {
    {
        let options = DeviceOptions {
            poison_uninitialized: true,
            ..DeviceOptions::default()
        };
        let mut out = vec![
            Device::open_with(BackendChoice::Backend(BackendKind::Cpu), options)
                .expect("the cpu backend always opens"),
        ];
        for (kind, env) in [
            (BackendKind::WebGpu, REQUIRE_WEBGPU_ENV),
            (BackendKind::Cuda, REQUIRE_CUDA_ENV),
        ] {
            match Device::open_with(BackendChoice::Backend(kind), options) {
                Ok(d) => out.push(d),
                Err(e) if required(env) => panic!("{env}=1 but no {kind} device opened: {e}"),
                Err(e) => eprintln!("SKIPPING {kind}: {e}"),
            }
        }
        out
    }
}

/// The webgpu device, if there is one.
pub fn webgpu() -> Option<&'static Device> {
    devices()
        .iter()
        .find(|d| d.backend() == BackendKind::WebGpu)
}

/// [`devices`], plus the webgpu device opened again with the GPU kernels only (no subgroup
/// operations, and not the software adapters' variants), so that every kernel path runs
/// where the adapter has subgroups or is a software adapter.
pub fn devices_and_variants() -> Vec<Device> {
    let mut all = devices().to_vec();
    if webgpu().is_some_and(|d| {
        d.info().features.subgroups || d.info().device_type == DeviceType::SoftwareGpu
    }) {
        let options = DeviceOptions {
            poison_uninitialized: true,
            use_subgroups: false,
            software_kernels: false,
            ..DeviceOptions::default()
        };
        all.extend(Device::open_with(BackendChoice::Backend(BackendKind::WebGpu), options).ok());
    }
    all
}

/// The webgpu device opened as if its adapter lacked `shader-int64` (as browsers' do), with
/// output poisoning; none without a webgpu device.
pub fn webgpu_without_int64() -> Option<Device> {
    let options = DeviceOptions {
        poison_uninitialized: true,
        use_int64: false,
        ..DeviceOptions::default()
    };
    match Device::open_with(BackendChoice::Backend(BackendKind::WebGpu), options) {
        Ok(d) => {
            assert!(!d.info().features.int64, "use_int64 off leaves int64 on");
            Some(d)
        }
        Err(e) if required(REQUIRE_WEBGPU_ENV) => panic!("no webgpu device opened: {e}"),
        Err(e) => {
            eprintln!("SKIPPING webgpu: {e}");
            None
        }
    }
}

/// The cuda device, if there is one.
pub fn cuda() -> Option<&'static Device> {
    devices().iter().find(|d| d.backend() == BackendKind::Cuda)
}

/// `n` seeded values uniform in `[lo, hi)`, never exactly zero.
pub fn random(seed: u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| loop {
            let v = lo + (hi - lo) * rng.f32();
            if v != 0.0 {
                break v;
            }
        })
        .collect()
}

/// Upload `data` with `shape` to `device`.
pub fn tensor(device: &Device, data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(device, data, shape).expect("upload")
}

/// Read a tensor back as f32.
pub fn read(t: &Tensor) -> Vec<f32> {
    t.to_vec_blocking::<f32>().expect("read back")
}

/// Assert `|got - want| <= atol + rtol |want|` elementwise; NaN must meet NaN and infinities
/// must match exactly. `what` names the case (include the seed).
pub fn assert_close(got: &[f32], want: &[f64], rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let g = f64::from(g);
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() || g.is_infinite() || g.is_nan() {
            g == w
        } else {
            (g - w).abs() <= atol + rtol * w.abs()
        };
        assert!(
            ok,
            "{what}: element {i} is {g}, expected {w} (rtol {rtol}, atol {atol})"
        );
    }
}

/// One invocation counts the iterations of a loop of `p[0]` steps into `y[0]`.
pub const COUNT_LOOP: &str = r#"
@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(1)
fn count(@builtin(global_invocation_id) id: vec3<u32>) {
    var n = 0u;
    for (var i = 0u; i < p[0]; i++) { n += 1u; }
    y[id.x] = n;
}
"#;

/// Host reference of a strided view of `data`: the elements of `shape`/`strides`/`offset`.
pub fn gather(data: &[f32], shape: &[usize], strides: &[usize], offset: usize) -> Vec<f32> {
    let layout = unicompute::layout::Layout {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        offset,
    };
    layout.offsets().map(|o| data[o]).collect()
}

/// The name of a device for assertion messages.
pub fn name(d: &Device) -> String {
    format!("{} ({})", d.backend(), d.info().name)
}

/// `a [m, k] @ b [k, n]` (row-major) in f64.
pub fn matmul_reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    (0..m * n)
        .map(|i| {
            (0..k)
                .map(|t| f64::from(a[i / n * k + t]) * f64::from(b[t * n + i % n]))
                .sum()
        })
        .collect()
}

/// The device still computes correctly after an error.
pub fn still_works(d: &Device) {
    let t = tensor(d, &[1.0, 2.0, 3.0], &[3]);
    assert_eq!(
        t.add(&t).unwrap().to_vec_blocking::<f32>().unwrap(),
        vec![2.0, 4.0, 6.0],
        "device works after an error on {}",
        name(d)
    );
}

/// `r` is an error with `code` whose message mentions every needle, and the device still works.
#[track_caller]
pub fn expect_err<T: std::fmt::Debug>(
    r: unicompute::Result<T>,
    code: &str,
    needles: &[&str],
    d: &Device,
) {
    let e = r.expect_err("expected an error");
    assert_eq!(e.code(), code, "{e}");
    let msg = e.to_string();
    for n in needles {
        assert!(msg.contains(n), "error `{msg}` should mention `{n}`");
    }
    still_works(d);
}

/// Which devices a [`per_backend!`] test runs on.
#[derive(Clone, Copy)]
pub enum DeviceSet {
    /// [`devices`]: one device per backend.
    Devices,
    /// [`devices_and_variants`]: also the webgpu device with the GPU kernels only.
    Variants,
}

/// Run `test` on each device of `kind` in `set`. Without one the test is skipped with a word
/// on stderr; a backend required here (`UNICOMPUTE_REQUIRE_WEBGPU=1`, ...) has already failed
/// in [`devices`].
pub fn run_on(kind: BackendKind, set: DeviceSet, test: fn(&Device)) {
    let all = match set {
        DeviceSet::Variants if kind == BackendKind::WebGpu => devices_and_variants(),
        _ => devices().to_vec(),
    };
    let mine: Vec<&Device> = all.iter().filter(|d| d.backend() == kind).collect();
    if mine.is_empty() {
        eprintln!("SKIPPING {kind}: no device");
    }
    for d in mine {
        test(d);
    }
}

/// `per_backend!(name)` makes of `fn name(d: &Device)` the tests `name::cpu`, `name::webgpu`
/// and `name::cuda`, each on that backend's device (as candle's `test_device!`), so that one
/// backend runs alone: `cargo test --test suite -- ::cpu`. `per_backend!(name, variants)`
/// runs it on [`devices_and_variants`] instead.
macro_rules! per_backend {
    ($test:ident) => {
        $crate::common::per_backend!($test, $crate::common::DeviceSet::Devices);
    };
    ($test:ident, variants) => {
        $crate::common::per_backend!($test, $crate::common::DeviceSet::Variants);
    };
    ($test:ident, $set:expr) => {
        mod $test {
            use unicompute::BackendKind;

            #[test]
            fn cpu() {
                $crate::common::run_on(BackendKind::Cpu, $set, super::$test);
            }

            #[test]
            fn webgpu() {
                $crate::common::run_on(BackendKind::WebGpu, $set, super::$test);
            }

            #[test]
            fn cuda() {
                $crate::common::run_on(BackendKind::Cuda, $set, super::$test);
            }
        }
    };
}
pub(crate) use per_backend;
