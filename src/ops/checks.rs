//! Every op kernel of the registered ops, checked without running it: each WGSL source
//! with each prelude it is compiled with validates in naga, and each CUDA specialisation
//! compiles with NVRTC for sm_80 and sm_90 (no GPU needed).

#[cfg(feature = "webgpu")]
#[test]
fn every_builtin_shader_validates() {
    // Override constants are not part of the module: each (file, prelude, generated code)
    // once.
    let mut seen = std::collections::HashSet::new();
    let specialisations = super::wgsl_specialisations();
    assert!(
        specialisations.len() >= 11,
        "every op with WGSL kernels is registered"
    );
    for b in specialisations
        .into_iter()
        .filter(|b| seen.insert((b.source.name, b.prelude.clone(), b.generated.clone())))
    {
        let source = b.full_source();
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("{}: {}", b.source.name, e.emit_to_string(&source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{}: {}", b.source.name, e.emit_to_string(&source)));
    }
}

#[cfg(cuda_backend)]
#[test]
fn every_kernel_compiles_for_sm80_and_sm90() {
    use crate::hal::cuda::compile::{compile, nvrtc_or_skip};
    if !nvrtc_or_skip() {
        return;
    }
    let mut failures = Vec::new();
    for arch in ["sm_80", "sm_90"] {
        for k in super::cuda_specialisations() {
            match compile(&k.source(), k.name(), &k.options(arch)) {
                Ok(cubin) => assert!(cubin.len() > 100, "{k:?}: empty cubin"),
                Err(e) => failures.push(format!("{arch} {k:?}: {e:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every WGSL op kernel's entry points, translated to CUDA C and compiled with NVRTC:
/// the translation meets the library's own shaders, larger than any test's. Sources outside
/// the translated subset (f16 storage, subgroup operations, i64) are listed, not failed.
#[cfg(all(feature = "webgpu", cuda_backend))]
#[test]
fn every_builtin_shader_translates_to_cuda() {
    use crate::hal::cuda::compile::nvrtc_or_skip;
    if !nvrtc_or_skip() {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let (mut failures, mut outside, mut compiled) = (Vec::new(), Vec::new(), 0);
    for b in super::wgsl_specialisations()
        .into_iter()
        .filter(|b| seen.insert((b.source.name, b.prelude.clone(), b.generated.clone())))
    {
        let source = b.full_source();
        let module = naga::front::wgsl::parse_str(&source).expect("validated above");
        for ep in &module.entry_points {
            match crate::hal::cuda::wgsl::check(&source, &ep.name, &[]) {
                Ok(_) => compiled += 1,
                Err(crate::Error::Shader { message, .. }) => {
                    outside.push(format!("{} {}: {message}", b.source.name, ep.name))
                }
                Err(e) => failures.push(format!("{} {}: {e}", b.source.name, ep.name)),
            }
        }
    }
    eprintln!(
        "{compiled} built-in entry points translated and compiled; outside the subset:\n{}",
        outside.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every built-in WGSL entry point is within what the CPU executor runs (it compiles there),
/// except the f16-storage and i64 variants (the executor runs neither 16-bit nor 64-bit values).
#[cfg(feature = "webgpu")]
#[test]
fn every_builtin_shader_compiles_for_the_cpu_executor() {
    let mut seen = std::collections::HashSet::new();
    let (mut failures, mut compiled) = (Vec::new(), 0);
    for b in super::wgsl_specialisations()
        .into_iter()
        .filter(|b| seen.insert((b.source.name, b.prelude.clone(), b.generated.clone())))
    {
        let source = b.full_source();
        let module = naga::front::wgsl::parse_str(&source).expect("validated above");
        for ep in &module.entry_points {
            match crate::hal::cpu::wgsl::compile(&source, &ep.name, &[]) {
                Ok(_) => compiled += 1,
                Err(e) if is_16_or_64_bit(&e.to_string()) => {}
                Err(e) => failures.push(format!("{} {}: {e}", b.source.name, ep.name)),
            }
        }
    }
    assert!(compiled >= 50, "{compiled} entry points compiled");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether a refusal is of 16- or 64-bit values, in WGSL's words (`f16 values`, `i64
/// values`, the literal `0li`, `conversions to 64-bit values`).
#[cfg(feature = "webgpu")]
fn is_16_or_64_bit(message: &str) -> bool {
    let words = ["f16 ", "i64 ", "u64 ", "f64 ", "16-bit", "64-bit"];
    let literal = message
        .split("the literal ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next());
    let wide = |l: &str| l.ends_with('h') || l.ends_with("li") || l.ends_with("lu");
    words.iter().any(|w| message.contains(w)) || literal.is_some_and(wide)
}
