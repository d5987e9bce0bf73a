//! A session's startup (`src/onnx/load.rs`): its load reports each phase's time; where the
//! inputs' extents are fixed it compiles at load exactly the op kernels a run uses, so that
//! its first run compiles nothing and gives the outputs of a session that compiles at its first
//! run; a second session on the device compiles nothing; an open extent leaves the kernels to
//! the first run, saying why.

use std::time::Instant;

use crate::common::{self, name, per_backend};
use crate::onnx_passes::{node, weights, Case};
use crate::onnx_recur::int64s;
use crate::onnx_run::relu_of_batches;
use unicompute::onnx::{Session, SessionOptions, PHASES};
use unicompute::{BackendKind, Device};

/// A layer, `softmax(relu(x · w + b))`, on `x` of `[7, 13]` (extents that no workgroup size
/// divides) and a row sum beside it: kernels of several op families.
fn layer() -> Case {
    Case {
        nodes: vec![
            node("MatMul", &["x", "w"], &["xw"], vec![]),
            node("Add", &["xw", "b"], &["h"], vec![]),
            node("Relu", &["h"], &["r"], vec![]),
            node("Softmax", &["r"], &["y"], vec![]),
            node("ReduceSum", &["x", "axes"], &["s"], vec![]),
        ],
        weights: vec![
            weights("w", &[13, 11], 7, [-1.0, 1.0]),
            weights("b", &[11], 8, [-0.5, 0.5]),
            int64s("axes", &[1], &[1]),
        ],
        inputs: vec![("x", vec![7, 13])],
        outputs: vec!["y", "s"],
    }
}

/// `layer()` on `d`, compiling at load unless `lazily`.
fn load(d: &Device, lazily: bool) -> Session {
    let options = SessionOptions {
        compile_lazily: lazily,
        ..SessionOptions::default()
    };
    Session::from_bytes(d, layer().bytes(), options).unwrap_or_else(|e| panic!("{}: {e}", name(d)))
}

/// The phases are [`PHASES`] in order, each a time of its own, and together they are the
/// load's time, measured outside.
fn the_load_reports_its_phases(d: &Device) {
    let bytes = layer().bytes();
    let start = Instant::now();
    let session = Session::from_bytes(d, bytes, SessionOptions::default()).unwrap();
    let wall = start.elapsed().as_secs_f64() * 1e3;
    let report = session.load_report();
    let names: Vec<&str> = report.phases.iter().map(|p| p.0).collect();
    assert_eq!(names, PHASES, "on {}", name(d));
    assert!(
        report.phases.iter().all(|p| p.1.is_finite() && p.1 >= 0.0),
        "{report:?} on {}",
        name(d)
    );
    let total = report.total_ms();
    assert!(
        total <= wall + 1e-6 && total >= 0.9 * wall - 0.1,
        "the phases add up to {total} ms of a {wall} ms load: {report:?} on {}",
        name(d)
    );
    assert_eq!(report.phase("compile"), Some(report.phases[3].1));
    assert_eq!(report.deferred, None, "on {}", name(d));
    let cpu = d.backend() == BackendKind::Cpu;
    assert_eq!(report.compiled.is_none(), cpu, "{report:?} on {}", name(d));
}
per_backend!(the_load_reports_its_phases);

/// On fresh devices (whose counts no other test moves): the session that compiles at load
/// compiles kernels there and none at its first run, nor does a second session on the device,
/// load or run; a session that compiles lazily, on another fresh device, compiles the same
/// kernels in its first runs (node by node, then captured and replayed), and every session
/// gives the same outputs.
#[test]
fn kernels_compile_at_load_once_per_device() {
    let (eager, lazy) = (common::open_devices(), common::open_devices());
    for (d, other) in eager.iter().zip(&lazy) {
        let cpu = d.backend() == BackendKind::Cpu;
        let first = load(d, false);
        let at_load = first.load_report().compiled;
        assert!(cpu || at_load > Some(0), "{at_load:?} on {}", name(d));
        let count = d.kernels_compiled();
        let want = layer().run(d, &first);
        assert_eq!(
            d.kernels_compiled(),
            count,
            "the first run compiled on {}",
            name(d)
        );
        let second = load(d, false);
        assert_eq!(second.load_report().compiled, at_load.map(|_| 0));
        assert_eq!(
            layer().run(d, &second),
            want,
            "a second session on {}",
            name(d)
        );
        assert_eq!(
            d.kernels_compiled(),
            count,
            "the second session compiled on {}",
            name(d)
        );

        let lazily = load(other, true);
        let report = lazily.load_report();
        assert_eq!(report.compiled, at_load.map(|_| 0), "on {}", name(other));
        let why = report.deferred.as_deref();
        assert!(
            cpu || why.is_some_and(|w| w.contains("compile_lazily")),
            "{why:?}"
        );
        let before = other.kernels_compiled();
        for run in 0..3 {
            let got = layer().run(other, &lazily);
            assert_eq!(got, want, "run {run} of a lazy session on {}", name(other));
        }
        let at_runs = other.kernels_compiled().zip(before).map(|(a, b)| a - b);
        assert_eq!(at_runs, at_load, "compiled in the runs on {}", name(other));
    }
}

/// An input whose extent is open leaves the kernels to the first run, which says so.
fn an_open_extent_leaves_the_kernels_to_the_first_run(d: &Device) {
    let session = Session::from_bytes(d, relu_of_batches(), SessionOptions::default()).unwrap();
    let report = session.load_report();
    if d.backend() == BackendKind::Cpu {
        assert_eq!((report.compiled, report.deferred.as_deref()), (None, None));
        return;
    }
    assert_eq!(report.compiled, Some(0), "on {}", name(d));
    let why = report.deferred.as_deref().unwrap_or_default();
    assert!(
        why.contains("input 'x' has the open extent 'batch'"),
        "{why}"
    );
}
per_backend!(an_open_extent_leaves_the_kernels_to_the_first_run);
