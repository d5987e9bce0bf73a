//! Where a session's memory goes (`src/onnx/memory.rs`): the plan of a small graph against
//! numbers worked out by hand, runs after the first that take no new blocks from the backend,
//! and weights held in f16 (`SessionOptions::f16_weights`): half their bytes, and outputs
//! those of the weights rounded to f16.

use half::f16;
use unicompute::onnx::{MemoryPlan, Passes, Session, SessionOptions};
use unicompute::Device;

use crate::common::{self, assert_close, name, per_backend, random};
use crate::onnx_passes::{node, weights, Case};
use crate::onnx_recur::int_attr;

/// `y = concat(c, c) @ w` with `c = relu(x) + sigmoid(relu(x))`, `x` of [1, 1000] and `w` of
/// [2000, 2] f32 (seeded, in [-1, 1)): five intermediates of 4000, 4000, 4000, 8000 and 8
/// bytes.
fn chain() -> Case {
    Case {
        nodes: vec![
            node("Relu", &["x"], &["a"], vec![]),
            node("Sigmoid", &["a"], &["b"], vec![]),
            node("Add", &["a", "b"], &["c"], vec![]),
            node("Concat", &["c", "c"], &["d"], vec![int_attr("axis", 1)]),
            node("MatMul", &["d", "w"], &["y"], vec![]),
        ],
        weights: vec![weights("w", &[2000, 2], 5, [-1.0, 1.0])],
        inputs: vec![("x", vec![1, 1000])],
        outputs: vec!["y"],
    }
}

/// `chain`'s output on its seeded input (`Case::run`'s), in f64, its weights rounded to f16
/// first where `f16_weights` says; and the sum of its terms' magnitudes.
fn chain_reference(f16_weights: bool) -> (Vec<f64>, f64) {
    let x = random(90, 1000, -2.0, 2.0);
    let w = random(5, 4000, -1.0, 1.0);
    let c: Vec<f64> = (x.iter())
        .map(|&v| {
            let a = f64::from(v.max(0.0));
            a + 1.0 / (1.0 + (-a).exp())
        })
        .collect();
    let weight = |v: f32| match f16_weights {
        true => f64::from(f16::from_f32(v).to_f32()),
        false => f64::from(v),
    };
    let term = |i: usize, j: usize| c[i % 1000] * weight(w[i * 2 + j]);
    let y = (0..2)
        .map(|j| (0..2000).map(|i| term(i, j)).sum())
        .collect();
    let size = (0..4000).map(|k| term(k / 2, k % 2).abs()).sum();
    (y, size)
}

/// Passes off (the chain would be one kernel), weights as `f16_weights` says.
fn options(f16_weights: bool) -> SessionOptions {
    SessionOptions {
        passes: Passes::none(),
        f16_weights,
        ..SessionOptions::default()
    }
}

/// Steps: a (relu) 0, b (sigmoid) 1, c (add) 2, d (concat) 3, y (matmul) 4. a and b live to
/// step 2, c to 3, d to 4, and y, the output, to the end: 12000 bytes at most at once (a, b
/// and c; c and d), 20008 without reuse. Placed largest first: d at 0, a at 0 (it dies before
/// d), b after a, c after d and b, y after d: one arena of three aligned 4000-byte blocks.
/// With f16 weights only `w` changes: 4000 elements of 2 bytes, and the rounding it brings.
fn the_plan_of_a_small_graph_is_worked_out_by_hand(d: &Device) {
    let case = chain();
    for f16_weights in [false, true] {
        let session = Session::from_bytes(d, case.bytes(), options(f16_weights)).unwrap();
        assert_eq!(session.memory_plan(), None, "before a run on {}", name(d));
        let got = case.run(d, &session);
        let what = format!("f16 weights {f16_weights} on {}", name(d));
        let (want, size) = chain_reference(f16_weights);
        assert_close(&got[0], &want, 0.0, 1e-5 * size, &what);
        let align = u64::from(d.info().limits.storage_offset_alignment);
        let want = MemoryPlan {
            weights_bytes: if f16_weights { 8000 } else { 16000 },
            intermediates: 5,
            unshared_bytes: 20008,
            live_bytes: 12000,
            arenas: vec![3 * 4000u64.next_multiple_of(align)],
        };
        assert_eq!(session.memory_plan(), Some(want.clone()), "{what}");
        assert_eq!(want.peak_bytes(), want.arenas[0]);
        case.run(d, &session);
        assert_eq!(session.memory_plan(), Some(want), "a later run, {what}");
    }
}
per_backend!(the_plan_of_a_small_graph_is_worked_out_by_hand);

/// Once the first runs (the eager one, and where devices capture, the capture) are done,
/// further runs with new feeds take every block from the pool or the captured run, and the
/// device's measured peak holds at least the weights and the plan's most live at once.
#[test]
fn runs_after_the_first_take_no_new_blocks_from_the_backend() {
    // Devices of this test's own, so that no other test's allocations are counted.
    for d in common::open_devices() {
        let case = chain();
        let session = Session::from_bytes(&d, case.bytes(), options(false)).unwrap();
        for _ in 0..3 {
            case.run(&d, &session);
        }
        let before = d.memory_stats();
        for _ in 0..5 {
            case.run(&d, &session);
        }
        let after = d.memory_stats();
        assert_eq!(after.allocations, before.allocations, "on {}", name(&d));
        let plan = session.memory_plan().unwrap();
        assert!(
            after.peak_bytes_live >= plan.weights_bytes + plan.live_bytes,
            "peak {} below the plan's {plan:?} on {}",
            after.peak_bytes_live,
            name(&d)
        );
    }
}

/// A convolution (17x7x3x3 weights, 1071 elements) and a matrix product (9x129, 1161) keep
/// their weights in f16, the bias (17) in f32: the weights' bytes go from 8996 to 4532, and
/// the outputs stay within f16's rounding of the weights of the f32 session's.
fn f16_weights_halve_the_weights_and_keep_the_outputs(d: &Device) {
    let case = Case {
        nodes: vec![
            node("Conv", &["x", "cw", "cb"], &["c"], vec![]),
            node("Relu", &["c"], &["r"], vec![]),
            node("MatMul", &["r", "mw"], &["y"], vec![]),
        ],
        weights: vec![
            weights("cw", &[17, 7, 3, 3], 11, [-0.5, 0.5]),
            weights("cb", &[17], 12, [-0.5, 0.5]),
            weights("mw", &[9, 129], 13, [-0.5, 0.5]),
        ],
        inputs: vec![("x", vec![1, 7, 9, 11])],
        outputs: vec!["y"],
    };
    let ran = |f16_weights| {
        let options = SessionOptions {
            f16_weights,
            ..SessionOptions::default()
        };
        let session = Session::from_bytes(d, case.bytes(), options).unwrap();
        let y = case.run(d, &session).remove(0);
        (y, session.memory_plan().unwrap().weights_bytes)
    };
    let (full, full_bytes) = ran(false);
    let (half, half_bytes) = ran(true);
    assert_eq!((full_bytes, half_bytes), (8996, 4532), "on {}", name(d));
    assert_eq!(full.len(), 17 * 7 * 129);
    let want: Vec<f64> = full.iter().map(|&v| f64::from(v)).collect();
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let what = format!("f16 weights against f32 on {}", name(d));
    assert_close(&half, &want, 2e-3, 2e-3 * scale, &what);
    assert!(half != full, "{what}: the weights were not rounded");
}
per_backend!(f16_weights_halve_the_weights_and_keep_the_outputs);
