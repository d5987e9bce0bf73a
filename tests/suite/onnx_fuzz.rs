//! The ONNX loader's fuzz targets: any bytes, and real models with bytes overwritten or cut,
//! go through `Session::from_bytes` on the cpu device (parse, checks, schedule, constants on
//! the device), which ends in a session or a clean error: no panic, no hang, no allocation
//! past what the file holds.
//!
//! Under `cargo test` bolero runs each for a bounded number of random inputs (CI does this);
//! `cargo bolero test --test suite onnx_fuzz::<name> --engine libfuzzer` fuzzes as long as
//! wanted.

use crate::common;
use crate::onnx_load::{light_models, node_tests, relu_model};
use unicompute::onnx::{Session, SessionOptions};
use unicompute::Device;

/// Codes a refused file may have.
const CLEAN: [&str; 6] = [
    "MODEL",
    "UNSUPPORTED",
    "LIMIT",
    "DTYPE",
    "SHAPE",
    "OUT_OF_RANGE",
];

/// Loads `bytes`; a session must describe itself, an error must be a clean one.
fn load(d: &Device, bytes: Vec<u8>) {
    match Session::from_bytes(d, bytes, SessionOptions::default()) {
        Ok(s) => {
            let _ = (s.inputs(), s.outputs());
        }
        Err(e) => assert!(CLEAN.contains(&e.code()), "{}: {e}", e.code()),
    }
}

/// Real models to mutate: a Relu built in memory, the first node tests (Conv, Gather, ...)
/// and the light zoo's smallest.
fn seeds() -> Vec<Vec<u8>> {
    let mut seeds = vec![relu_model(|_| {})];
    let nodes = node_tests();
    let picked = nodes.iter().filter(|p| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        [
            "test_conv_with_strides_padding",
            "test_gather_0",
            "test_resize_upsample_scales_linear",
        ]
        .contains(&name.as_ref())
    });
    seeds.extend(picked.map(|p| std::fs::read(p.join("model.onnx")).unwrap()));
    let zoo = light_models();
    let smallest = zoo
        .iter()
        .min_by_key(|p| std::fs::metadata(p).map_or(u64::MAX, |m| m.len()));
    seeds.extend(smallest.map(|p| std::fs::read(p).unwrap()));
    assert!(
        seeds.len() >= 4,
        "the ONNX test data is missing: run scripts/onnx-data.sh"
    );
    seeds
}

#[test]
fn any_bytes_load_or_are_refused_cleanly() {
    let d = std::panic::AssertUnwindSafe(&common::devices()[0]);
    bolero::check!()
        .with_type::<Vec<u8>>()
        .with_iterations(20_000)
        .for_each(|bytes| load(*d, bytes.clone()));
}

#[test]
fn mutated_models_load_or_are_refused_cleanly() {
    let d = std::panic::AssertUnwindSafe(&common::devices()[0]);
    let seeds = seeds();
    bolero::check!()
        .with_type::<(u8, u32, Vec<(u32, u8)>)>()
        .with_iterations(20_000)
        .for_each(|(which, cut, edits)| {
            let mut b = seeds[usize::from(*which) % seeds.len()].clone();
            for &(at, byte) in edits.iter().take(8) {
                let i = at as usize % b.len();
                b[i] = byte;
            }
            if cut % 4 == 0 {
                b.truncate(*cut as usize % (b.len() + 1));
            }
            load(*d, b);
        });
}
