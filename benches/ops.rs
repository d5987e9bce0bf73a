//! Per-op throughput with roofline percentages on every available backend (cpu, webgpu,
//! cuda): the same measurements as `unicompute bench`, printed as one table per device.
//!
//! Run with `cargo bench --bench ops`.

// The bench harness lives with the CLI (`unicompute bench`); this target compiles it too.
#[allow(unused)]
#[path = "../cli/src/bench.rs"]
mod bench;

use bench::BenchConfig;
use unicompute::{BackendChoice, BackendKind, Device};

fn main() {
    let listed = unicompute::devices();
    let config = BenchConfig::default();
    let mut failed = false;
    for kind in [BackendKind::Cpu, BackendKind::WebGpu, BackendKind::Cuda] {
        if !listed.iter().any(|d| d.backend == kind) {
            println!("== {kind}: skipped (no device listed)\n");
            continue;
        }
        if let Err(e) = bench_backend(kind, &config) {
            eprintln!("== {kind}: error: {e}\n");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
}

/// Open the best device of `kind`, measure it and print the results.
fn bench_backend(kind: BackendKind, config: &BenchConfig) -> unicompute::Result<()> {
    let device = Device::open(BackendChoice::Backend(kind))?;
    println!("== {kind}: {}", device.info().name);
    let report = bench::run(&device, config, &mut |line| eprintln!("[{kind}] {line}"))?;
    println!("{}\n\n{}\n", report.ceilings, report.table());
    Ok(())
}
