//! Build-time configuration: `cuda_backend` is set when the `cuda` feature is on and the
//! target can load shared libraries (not wasm32), so the CUDA code is compiled exactly where
//! it can run and the feature can stay on by default for every target.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cuda_backend)");
    let wasm = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "wasm32");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_some() && !wasm {
        println!("cargo::rustc-cfg=cuda_backend");
    }
}
