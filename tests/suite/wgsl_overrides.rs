//! WGSL `override` constants as WebGPU resolves them: values given when the kernel is made
//! (`Kernel::from_wgsl_with`) or the defaults, in `@workgroup_size`, in the sizes of
//! workgroup arrays and in expressions, on every device; and the errors for values that do
//! not fit, names the shader does not have and sizes past the device's limits.

use crate::common::{self, devices, name};

use unicompute::{Binding, Buffer, Device, Kernel};

/// `out[i] = i + 1` over a workgroup size set by an override.
const IOTA: &str = r#"
override wg = 64;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(wg)
fn main(@builtin(global_invocation_id) id: vec3u) {
    if (id.x < arrayLength(&out)) { out[id.x] = id.x + 1u; }
}
"#;

/// A buffer of `n` words no kernel here writes by chance.
fn poisoned(d: &Device, n: usize) -> Buffer<u32> {
    Buffer::from_slice(d, &vec![0x7fa5_a5a5u32; n]).unwrap()
}

/// `source`'s CUDA translation with `constants` compiles, where NVRTC is (required with
/// `UNICOMPUTE_REQUIRE_NVRTC=1`), and declares `bounds` threads per block.
fn compiles_for_cuda(source: &str, constants: &[(&str, f64)], bounds: u32) {
    match Kernel::cuda_from_wgsl_with(source, "main", constants) {
        Ok(cuda) => {
            let want = format!("__launch_bounds__({bounds})");
            assert!(cuda.contains(&want), "{constants:?}: no {want} in\n{cuda}");
        }
        Err(e) if e.code() == "UNSUPPORTED" && !common::required("UNICOMPUTE_REQUIRE_NVRTC") => {
            eprintln!("SKIPPING the CUDA compile check: {e}")
        }
        Err(e) => panic!("{constants:?}: the CUDA translation: {e}"),
    }
}

#[test]
fn an_override_workgroup_size_runs_every_invocation() {
    // The default (64), a prime, one invocation, and past one workgroup of the CPU's batch.
    for (constants, size) in [
        (&[][..], 64u32),
        (&[("wg", 37.0)][..], 37),
        (&[("wg", 1.0)][..], 1),
    ] {
        compiles_for_cuda(IOTA, constants, size);
        for d in devices() {
            let k = Kernel::from_wgsl_with(d, IOTA, "main", constants).unwrap();
            assert_eq!(
                k.info().workgroup_size,
                [size, 1, 1],
                "{constants:?} on {}",
                name(d)
            );
            for n in [1usize, 130, 1001] {
                let out = poisoned(d, n);
                let groups = (n as u32).div_ceil(size);
                d.queue()
                    .launch(&k, &[Binding::from(&out)], [groups, 1, 1])
                    .unwrap();
                let want: Vec<u32> = (1..=n as u32).collect();
                let got = out.read_blocking().unwrap();
                assert_eq!(got, want, "wg {size}, n {n} on {}", name(d));
            }
        }
    }
}

/// A 2-D tile reversed in workgroup memory whose size and shape are overrides; `@id` keys.
const TILE: &str = r#"
@id(1) override tx: u32 = 8u;
@id(2) override ty: u32 = 8u;
override tile = tx * ty;
override scale: f32 = 1.0;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
var<workgroup> t: array<f32, tile>;

@compute @workgroup_size(tx, ty)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) w: vec3u) {
    let base = w.x * tile;
    t[li] = x[base + li] * scale;
    workgroupBarrier();
    y[base + li] = t[tile - 1u - li];
}
"#;

#[test]
fn override_sized_workgroup_arrays_and_override_expressions() {
    let cases: [&[(&str, f64)]; 3] = [
        &[],
        &[("1", 5.0), ("2", 3.0), ("scale", -2.5)],
        &[("2", 1.0)],
    ];
    for constants in cases {
        let get = |key: &str, default: f64| {
            constants
                .iter()
                .find(|c| c.0 == key)
                .map_or(default, |c| c.1)
        };
        let (tx, ty, scale) = (
            get("1", 8.0) as u32,
            get("2", 8.0) as u32,
            get("scale", 1.0) as f32,
        );
        let tile = (tx * ty) as usize;
        compiles_for_cuda(TILE, constants, tx * ty);
        for d in devices() {
            let k = Kernel::from_wgsl_with(d, TILE, "main", constants).unwrap();
            assert_eq!(
                k.info().workgroup_size,
                [tx, ty, 1],
                "{constants:?} on {}",
                name(d)
            );
            let groups = 7usize;
            let x = common::random(11, tile * groups, -3.0, 3.0);
            let bx = Buffer::from_slice(d, &x).unwrap();
            let by = Buffer::from_slice(d, &vec![f32::NAN; x.len()]).unwrap();
            d.queue()
                .launch(
                    &k,
                    &[Binding::from(&bx), Binding::from(&by)],
                    [groups as u32, 1, 1],
                )
                .unwrap();
            let want: Vec<f32> = x
                .chunks(tile)
                .flat_map(|c| c.iter().rev().map(|v| v * scale))
                .collect();
            assert_eq!(
                by.read_blocking().unwrap(),
                want,
                "{constants:?} on {}",
                name(d)
            );
        }
    }
}

/// Values that do not fit, names the shader lacks and missing values are refused with what
/// was wrong; sizes past the device's limits are `LIMIT` errors.
#[test]
fn bad_constants_are_refused_with_what_was_expected() {
    let no_default =
        "override n: u32;\n@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n\
                      @compute @workgroup_size(1)\nfn main() { o[0] = n; }\n";
    for d in devices() {
        let refused = |source: &str, constants: &[(&str, f64)]| {
            Kernel::from_wgsl_with(d, source, "main", constants)
                .map(|_| ())
                .unwrap_err()
        };
        let e = refused(IOTA, &[("wgg", 8.0)]);
        assert_eq!(e.code(), "INVALID", "{e}");
        assert!(
            e.to_string().contains("`wgg`") && e.to_string().contains("`wg`"),
            "{e}"
        );
        for bad in [f64::NAN, f64::INFINITY, 5e9] {
            let e = refused(IOTA, &[("wg", bad)]);
            assert_eq!(e.code(), "INVALID", "{e}");
            assert!(e.to_string().contains("cannot hold"), "{e}");
        }
        for not_positive in [0.0, -1.0] {
            let e = refused(IOTA, &[("wg", not_positive)]);
            assert_eq!(e.code(), "INVALID", "{e}");
            assert!(e.to_string().contains("not positive"), "{e}");
        }
        let e = refused(TILE, &[("7", 2.0)]);
        assert!(e.to_string().contains("@id(1)"), "{e}");
        let e = refused(no_default, &[]);
        assert_eq!(e.code(), "SHADER", "{e}");
        assert!(
            e.to_string().contains("override `n` has no default value"),
            "{e}"
        );
        let k = Kernel::from_wgsl_with(d, no_default, "main", &[("n", 9.0)]).unwrap();
        let out = poisoned(d, 1);
        d.queue()
            .launch(&k, &[Binding::from(&out)], [1, 1, 1])
            .unwrap();
        assert_eq!(out.read_blocking().unwrap(), [9], "on {}", name(d));
        let limit = d.info().limits.max_invocations_per_workgroup;
        let e = refused(IOTA, &[("wg", f64::from(limit) + 1.0)]);
        assert_eq!(e.code(), "LIMIT", "{e}");
        let e = refused(TILE, &[("1", 64.0), ("2", 64.0)]);
        assert_eq!(e.code(), "LIMIT", "{e}");
    }
}
