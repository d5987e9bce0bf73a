//! Build-time configuration and sources:
//! - `cuda_backend` is set when the `cuda` feature is on and the target can load shared
//!   libraries (not wasm32), so the CUDA code is compiled exactly where it can run and the
//!   feature can stay on by default for every target;
//! - every op WGSL file (`src/ops/**/*.wgsl`) is copied to `$OUT_DIR/wgsl/` without its
//!   comments and indentation, which is what `wgsl_file!` compiles in: the sources keep their
//!   documentation, and the npm package's wasm carries none of it. Every line stays, so line
//!   numbers in errors match the source.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(cuda_backend)");
    let wasm = env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "wasm32");
    if env::var_os("CARGO_FEATURE_CUDA").is_some() && !wasm {
        println!("cargo::rustc-cfg=cuda_backend");
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/ops");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("wgsl");
    copy_stripped(Path::new("src/ops"), &out);
}

/// Copy every `.wgsl` file below `dir` to the same place below `out`, stripped.
fn copy_stripped(dir: &Path, out: &Path) {
    for entry in fs::read_dir(dir).expect("src/ops is readable") {
        let path = entry.expect("src/ops is readable").path();
        let target = out.join(path.file_name().expect("entries have names"));
        if path.is_dir() {
            copy_stripped(&path, &target);
        } else if path.extension().is_some_and(|e| e == "wgsl") {
            let text = fs::read_to_string(&path).expect("WGSL sources are UTF-8");
            fs::create_dir_all(out).expect("OUT_DIR is writable");
            fs::write(&target, strip(&text)).expect("OUT_DIR is writable");
        }
    }
}

/// `text` without `//` comments and leading or trailing blanks, line for line.
fn strip(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or("").trim())
        .collect::<Vec<_>>()
        .join("\n")
}
