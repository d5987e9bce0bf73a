//! CUDA-specific behaviour: what happens without a driver, user CUDA C kernels, and the
//! opt-in tensor-core matmul precisions (device time between fences: `fences`). The op
//! catalogue runs on cuda through the shared conformance suite. Tests that need a GPU skip
//! with a printed reason unless UNICOMPUTE_REQUIRE_CUDA=1.

use crate::common::{cuda, devices, random, required, tensor, REQUIRE_CUDA_ENV};
use unicompute::{
    BackendChoice, BackendKind, Binding, Buffer, Device, DeviceOptions, Error, Kernel,
    MatmulPrecision,
};

const SAXPY: &str = r#"
// y = a x + y
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn cuda_or_skip(test: &str) -> Option<&'static Device> {
    let d = cuda();
    if d.is_none() {
        eprintln!(
            "SKIPPING {test}: no cuda device ({})",
            Device::open(BackendChoice::Backend(BackendKind::Cuda))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        );
    }
    d
}

#[test]
fn a_missing_cuda_is_reported_not_fatal() {
    let listed = unicompute::devices()
        .iter()
        .filter(|d| d.backend == BackendKind::Cuda)
        .count();
    match Device::open(BackendChoice::Backend(BackendKind::Cuda)) {
        Ok(d) => {
            assert!(listed > 0);
            let info = d.info();
            assert!(
                info.compute_capability.is_some() && info.memory_total.is_some(),
                "{info:?}"
            );
            assert!(d
                .memory_free()
                .is_some_and(|free| free > 0 && Some(free) <= info.memory_total));
        }
        Err(e) => {
            assert!(!required(REQUIRE_CUDA_ENV), "{REQUIRE_CUDA_ENV}=1 but: {e}");
            assert_eq!(listed, 0);
            assert_eq!(e.code(), "NO_DEVICE");
            let text = e.to_string();
            assert!(
                text.contains("CUDA") || text.contains("cuda"),
                "the error says what is missing: {text}"
            );
            // The other backends are unaffected.
            assert!(devices()[0].backend() == BackendKind::Cpu);
        }
    }
}

#[test]
fn cuda_kernels_on_other_devices_are_a_clear_error() {
    for d in devices()
        .iter()
        .filter(|d| d.backend() != BackendKind::Cuda)
    {
        let err = Kernel::from_cuda(d, SAXPY, "saxpy", [128, 1, 1]).unwrap_err();
        assert_eq!(err.code(), "UNSUPPORTED", "{err}");
        assert!(err.to_string().contains("cuda devices only"), "{err}");
    }
    // Signature problems are found before any device work.
    let err = Kernel::from_cuda(
        &devices()[0],
        "__global__ void k(float* x) {}",
        "k",
        [1, 1, 1],
    )
    .unwrap_err();
    assert!(err.to_string().contains("extern \"C\""), "{err}");
}

#[test]
fn user_cuda_kernels_run_and_launches_are_checked() {
    let Some(d) = cuda_or_skip("user_cuda_kernels_run_and_launches_are_checked") else {
        return;
    };
    let k = Kernel::from_cuda(d, SAXPY, "saxpy", [128, 1, 1]).unwrap();
    assert_eq!(k.info().bindings.len(), 4);
    let n = 1000u32; // not a multiple of the block
    let x = random(11, n as usize, -2.0, 2.0);
    let y = random(12, n as usize, -2.0, 2.0);
    let (bx, by) = (
        Buffer::from_slice(d, &x).unwrap(),
        Buffer::from_slice(d, &y).unwrap(),
    );
    let q = d.queue();
    q.launch(
        &k,
        &[
            Binding::from(1.5f32),
            Binding::from(&bx),
            Binding::from(&by),
            Binding::from(n),
        ],
        [n.div_ceil(128), 1, 1],
    )
    .unwrap();
    let got = by.read_blocking().unwrap();
    for i in 0..n as usize {
        let want = 1.5 * f64::from(x[i]) + f64::from(y[i]);
        assert!(
            (f64::from(got[i]) - want).abs() < 1e-5,
            "saxpy element {i}: {} vs {want}",
            got[i]
        );
    }
    // Checked like WGSL launches: count, scalar vs buffer, dtype.
    let code = |r: unicompute::Result<()>| r.unwrap_err().code();
    assert_eq!(
        code(q.launch(&k, &[Binding::from(1.5f32), Binding::from(&bx)], [1, 1, 1])),
        "LAUNCH"
    );
    assert_eq!(
        code(q.launch(
            &k,
            &[
                Binding::from(&bx),
                Binding::from(&bx),
                Binding::from(&by),
                Binding::from(n)
            ],
            [1, 1, 1]
        )),
        "LAUNCH"
    );
    assert_eq!(
        code(q.launch(
            &k,
            &[
                Binding::from(1.5f32),
                Binding::from(&bx),
                Binding::from(&by),
                Binding::from(3i32)
            ],
            [1, 1, 1]
        )),
        "LAUNCH"
    );
    let ints = Buffer::<i32>::zeros(d, 4).unwrap();
    assert_eq!(
        code(q.launch(
            &k,
            &[
                Binding::from(1.5f32),
                Binding::from(&ints),
                Binding::from(&by),
                Binding::from(n)
            ],
            [1, 1, 1]
        )),
        "LAUNCH"
    );
    // The device still works after refused launches.
    assert_eq!(by.read_blocking().unwrap(), got);
}

#[test]
fn cuda_compile_errors_carry_the_line_and_log() {
    let Some(d) = cuda_or_skip("cuda_compile_errors_carry_the_line_and_log") else {
        return;
    };
    let src = "extern \"C\" __global__ void k(float* x) {\n    x[0] = missing_name;\n}\n";
    match Kernel::from_cuda(d, src, "k", [32, 1, 1]).unwrap_err() {
        Error::Shader {
            line,
            message,
            source_line,
            ..
        } => {
            assert_eq!(line, 2, "{message}");
            assert!(message.contains("missing_name"), "{message}");
            assert!(source_line.contains("missing_name"));
        }
        other => panic!("expected a shader error, got {other}"),
    }
}

/// Tensor-core precisions stay within their rounding error; f32 stays exact to 1e-5.
#[test]
fn matmul_precisions_are_opt_in_and_bounded() {
    let (m, k, n) = (67, 129, 45);
    let a = random(21, m * k, -1.0, 1.0);
    let b = random(22, k * n, -1.0, 1.0);
    for (precision, tol) in [
        (MatmulPrecision::F32, 1e-5),
        (MatmulPrecision::Tf32, 4e-3),
        (MatmulPrecision::Bf16, 2e-2),
        (MatmulPrecision::F16, 4e-3),
    ] {
        for kind in [BackendKind::Cpu, BackendKind::Cuda] {
            let options = DeviceOptions {
                matmul_precision: precision,
                poison_uninitialized: true,
                ..DeviceOptions::default()
            };
            let Ok(d) = Device::open_with(BackendChoice::Backend(kind), options) else {
                continue;
            };
            let got = tensor(&d, &a, &[m, k])
                .matmul(&tensor(&d, &b, &[k, n]))
                .unwrap()
                .to_vec_blocking::<f32>()
                .unwrap();
            // cpu ignores the permission and stays exact.
            let tol = if kind == BackendKind::Cpu { 1e-5 } else { tol };
            for i in 0..m {
                for j in 0..n {
                    let (mut want, mut scale) = (0.0f64, 0.0f64);
                    for p in 0..k {
                        let t = f64::from(a[i * k + p]) * f64::from(b[p * n + j]);
                        want += t;
                        scale += t.abs();
                    }
                    let g = f64::from(got[i * n + j]);
                    assert!(
                        (g - want).abs() <= tol * scale,
                        "{kind} {precision:?} [{i},{j}]: {g} vs {want}"
                    );
                }
            }
        }
    }
}
