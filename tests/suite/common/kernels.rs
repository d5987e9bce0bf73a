//! Helpers of the tests that run WGSL kernels written as a user would (`wgsl_kernels`,
//! `corpus`): launching one, the check that its CUDA translation compiles, poisoned outputs
//! and a relative comparison with an f64 reference.

use std::sync::Mutex;

use unicompute::{Binding, Buffer, Device, Element, Kernel};

use super::name;

/// Set to 1 to make a missing NVRTC a test failure in [`compiles_for_cuda`].
pub const REQUIRE_NVRTC_ENV: &str = "UNICOMPUTE_REQUIRE_NVRTC";

/// Run `source`'s `main` on `d` with `bindings` over `groups` workgroups; the read-write
/// buffer at `out` afterwards. The first time a source comes by, its CUDA translation is also
/// compiled with NVRTC (where NVRTC is; required with `UNICOMPUTE_REQUIRE_NVRTC=1`), so every
/// kernel here builds for CUDA even on machines without a GPU; with one it runs there too.
pub fn run<T: Element>(
    d: &Device,
    source: &str,
    bindings: &[Binding<'_>],
    groups: [u32; 3],
    out: &Buffer<T>,
) -> Vec<T> {
    run_entry(d, source, "main", bindings, groups, out)
}

/// [`run`] of the entry point `entry`.
pub fn run_entry<T: Element>(
    d: &Device,
    source: &str,
    entry: &str,
    bindings: &[Binding<'_>],
    groups: [u32; 3],
    out: &Buffer<T>,
) -> Vec<T> {
    launch(d, source, entry, bindings, groups);
    out.read_blocking().unwrap()
}

/// Compile `source`'s `entry` on `d` and launch it (panicking with the kernel's first line,
/// the device and the error when either fails), after [`compiles_for_cuda`].
pub fn launch(d: &Device, source: &str, entry: &str, bindings: &[Binding<'_>], groups: [u32; 3]) {
    compiles_for_cuda(source, entry);
    let what = || format!("{} ({entry}) on {}", first_line(source), name(d));
    let k = Kernel::from_wgsl(d, source, entry).unwrap_or_else(|e| panic!("{}: {e}", what()));
    d.queue()
        .launch(&k, bindings, groups)
        .unwrap_or_else(|e| panic!("{}: {e}", what()));
}

/// The check of [`run`]: the translation of `source`'s `entry` to CUDA compiles, once per
/// source and entry point.
pub fn compiles_for_cuda(source: &str, entry: &str) {
    static SEEN: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.iter().any(|(s, e)| s == source && e == entry) {
        return;
    }
    seen.push((source.to_string(), entry.to_string()));
    let what = first_line(source);
    match Kernel::cuda_from_wgsl(source, entry) {
        Ok(cuda) => assert!(
            cuda.contains("wgsl_entry"),
            "{what}: no kernel in the translation"
        ),
        Err(e) if e.code() == "UNSUPPORTED" && !super::required(REQUIRE_NVRTC_ENV) => {
            eprintln!("SKIPPING the CUDA compile check: {e}")
        }
        Err(e) => panic!("{what} ({entry}): the CUDA translation: {e}"),
    }
}

/// The first non-empty line of a kernel, which names it in messages.
pub fn first_line(source: &str) -> &str {
    source.trim_start().lines().next().unwrap_or("")
}

/// A buffer of `n` words poisoned with a pattern no kernel writes by chance.
pub fn poisoned<T: Element + bytemuck::Pod>(d: &Device, n: usize) -> Buffer<T> {
    let words = vec![0x7fa5_a5a5u32; n];
    Buffer::from_slice(d, bytemuck::cast_slice::<u32, T>(&words)).unwrap()
}

/// Assert `|got - want| <= tol (1 + |want|)` elementwise.
pub fn assert_near(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (f64::from(g) - w).abs() <= tol * (1.0 + w.abs());
        assert!(ok, "{what}: element {i} is {g}, expected {w}");
    }
}
