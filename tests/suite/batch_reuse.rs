//! A block freed while work recorded on it has not run goes back to the pool at once, for
//! later work of the same queue (or capture), which runs after that work
//! (`src/runtime/pool.rs`): a long chain recorded in one batch holds its live set, not every
//! block it wrote, and the reused memory holds the right values (an upload or zeros into it
//! after a launch that read it, values computed before the reuse, another queue's use of
//! it), against f64 references on seeded data, poisoned outputs, on devices of their own so
//! that the pool's counts are this test's.

use unicompute::ops::elementwise::binary;
use unicompute::ops::BinaryOp::{Add, Mul, Sub};
use unicompute::{DType, Device, Tensor};

use crate::common::{self, assert_close, name, random, read, tensor};

/// Elements of the chains' tensors: 16396 bytes, size class 20480, a multiple of no
/// workgroup size.
const N: usize = 4099;
/// The pool's size class of `N` f32s.
const CLASS: u64 = 20480;
/// Steps of the long chain.
const STEPS: usize = 41;

/// `x` as f64.
fn wide(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| f64::from(v)).collect()
}

/// `t = t + x`, then `t = t * h`, alternately, `STEPS` times from `t = x`, in one batch
/// (nothing is read before the end).
fn chain(d: &Device, x: &Tensor, h: &Tensor) -> Tensor {
    let q = d.queue();
    let mut t = x.clone();
    for step in 0..STEPS {
        let (op, other) = if step % 2 == 0 { (Add, x) } else { (Mul, h) };
        t = binary(&q, op, &t, other).unwrap();
    }
    t
}

/// [`chain`] in f64.
fn chain_reference(x: &[f32], h: &[f32]) -> Vec<f64> {
    let mut want = wide(x);
    for step in 0..STEPS {
        for (w, (&xv, &hv)) in want.iter_mut().zip(x.iter().zip(h)) {
            *w = if step % 2 == 0 {
                *w + f64::from(xv)
            } else {
                *w * f64::from(hv)
            };
        }
    }
    want
}

/// Each step's input is freed once the next step is recorded, long before it has run: the
/// chain's peak is its input, the step's operand and its result, and the blocks the steps
/// wrote come from two allocations, not one per step.
#[test]
fn a_long_chain_in_one_batch_holds_its_live_set() {
    for d in common::open_devices() {
        let (xs, hs) = (random(1, N, -1.0, 1.0), random(2, N, 0.5, 0.9));
        let (x, h) = (tensor(&d, &xs, &[N]), tensor(&d, &hs, &[N]));
        let before = d.memory_stats();
        let t = chain(&d, &x, &h);
        let after = d.memory_stats();
        let what = format!("on {}", name(&d));
        assert!(
            after.peak_bytes_live <= before.bytes_live + 2 * CLASS,
            "peak {} with {} live before the chain of {STEPS} steps of {CLASS} bytes {what}",
            after.peak_bytes_live,
            before.bytes_live
        );
        assert!(
            after.allocations <= before.allocations + 2,
            "{} allocations for the chain {what}",
            after.allocations - before.allocations
        );
        assert_close(&read(&t), &chain_reference(&xs, &hs), 1e-5, 1e-6, &what);
    }
}

/// A freed block reused in the same batch: an upload into it after the launch that read
/// it (on webgpu a write is recorded in order, not sent ahead of the batch), zeros in it
/// after another launch read it, values computed before the reuse read after it, and a block
/// reused on one queue whose first use on another queue waits for the first queue's work.
#[test]
fn reused_memory_holds_the_right_values() {
    for d in common::open_devices() {
        let what = format!("on {}", name(&d));
        let (q, other) = (d.queue(), d.new_queue());
        let (x, h, y) = (
            random(3, N, -1.0, 1.0),
            random(4, N, -1.0, 1.0),
            random(5, N, -1.0, 1.0),
        );
        let (tx, th) = (tensor(&d, &x, &[N]), tensor(&d, &h, &[N]));
        let b = binary(&q, Mul, &tx, &th).unwrap();
        drop(tx);
        let allocations = d.memory_stats().allocations;
        // Into x's block, which `b`'s launch has not read yet.
        let ty = tensor(&d, &y, &[N]);
        let c = binary(&q, Add, &b, &ty).unwrap();
        drop(ty);
        // Into y's block, which `c`'s launch has not read yet.
        let z = Tensor::zeros(&d, &[N], DType::F32).unwrap();
        let e = binary(&q, Sub, &c, &z).unwrap();
        drop(c);
        // Into c's block: written on `q`, first used on `other`.
        let v = tensor(&d, &y, &[N]);
        let u = binary(&other, Mul, &v, &th).unwrap();
        let reused = d.memory_stats().allocations - allocations;
        // New blocks for `c`, `e` and `u` at most: `ty`, `z` and `v` reuse freed ones.
        assert!(reused <= 3, "{reused} allocations {what}");
        let xh: Vec<f64> = (0..N).map(|i| f64::from(x[i]) * f64::from(h[i])).collect();
        let sum: Vec<f64> = (0..N).map(|i| xh[i] + f64::from(y[i])).collect();
        let yh: Vec<f64> = (0..N).map(|i| f64::from(y[i]) * f64::from(h[i])).collect();
        assert_close(&read(&u), &yh, 1e-6, 0.0, &format!("y * h {what}"));
        assert_close(
            &read(&e),
            &sum,
            1e-6,
            1e-7,
            &format!("x * h + y - 0 {what}"),
        );
        assert_close(&read(&b), &xh, 1e-6, 0.0, &format!("x * h {what}"));
        assert_close(&read(&z), &vec![0.0; N], 0.0, 0.0, &format!("zeros {what}"));
        assert_close(&read(&v), &wide(&y), 0.0, 0.0, &format!("y {what}"));
    }
}

/// Inside a capture, a block freed goes to later captured work: the graph holds the chain's
/// live set, and every replay on new data gives the chain's values. Afterwards the queue's
/// own work gets none of the graph's memory (a replay after it would overwrite it).
#[test]
fn a_captured_chain_reuses_its_memory_and_replays_right() {
    for d in common::open_devices() {
        if d.backend() == unicompute::BackendKind::Cpu {
            continue; // The cpu backend has nothing to capture.
        }
        let what = format!("on {}", name(&d));
        let hs = random(7, N, 0.5, 0.9);
        let x = tensor(&d, &random(6, N, -1.0, 1.0), &[N]);
        let h = tensor(&d, &hs, &[N]);
        let before = d.memory_stats();
        let (graph, t) = d.queue().capture(|_| Ok(chain(&d, &x, &h))).unwrap();
        let after = d.memory_stats();
        assert!(
            after.allocations <= before.allocations + 2,
            "{} allocations for the captured chain {what}",
            after.allocations - before.allocations
        );
        for seed in [8, 9] {
            let xs = random(seed, N, -1.0, 1.0);
            x.to_buffer::<f32>().unwrap().write(&xs).unwrap();
            // Work of the queue between replays, on blocks of the chain's class.
            let noise = tensor(&d, &vec![f32::NAN; N], &[N]);
            let kept = binary(&d.queue(), Add, &noise, &noise).unwrap();
            graph.replay().unwrap();
            let want = chain_reference(&xs, &hs);
            assert_close(&read(&t), &want, 1e-5, 1e-6, &format!("seed {seed} {what}"));
            assert!(read(&kept).iter().all(|v| v.is_nan()), "{what}");
        }
    }
}

/// An ONNX chain of 24 elementwise nodes (passes off, so each is a launch): the device's
/// peak over the eager run, the capture and the replays is the weights, the feed, the output
/// and two intermediates, not every intermediate the runs wrote.
#[test]
fn an_onnx_chain_peaks_at_its_live_set() {
    use crate::onnx_passes::{node, weights, Case};
    use unicompute::onnx::{Passes, Session, SessionOptions};
    let names: Vec<String> = (0..=24).map(|i| format!("t{i}")).collect();
    let nodes = (0..24)
        .map(|i| match i % 2 {
            0 => node("Add", &[&names[i], "w"], &[&names[i + 1]], vec![]),
            _ => node("Sigmoid", &[&names[i]], &[&names[i + 1]], vec![]),
        })
        .collect();
    let case = Case {
        nodes,
        weights: vec![weights("w", &[1, N], 5, [-1.0, 1.0])],
        inputs: vec![("t0", vec![1, N])],
        outputs: vec!["t24"],
    };
    let (x, w) = (random(90, N, -2.0, 2.0), random(5, N, -1.0, 1.0));
    let mut want = wide(&x);
    for i in 0..24 {
        for (v, wv) in want.iter_mut().zip(&w) {
            *v = if i % 2 == 0 {
                *v + f64::from(*wv)
            } else {
                1.0 / (1.0 + (-*v).exp())
            };
        }
    }
    for d in common::open_devices() {
        let what = format!("on {}", name(&d));
        let options = SessionOptions {
            passes: Passes::none(),
            ..SessionOptions::default()
        };
        let session = Session::from_bytes(&d, case.bytes(), options).unwrap();
        for run in 0..4 {
            let got = case.run(&d, &session);
            assert_close(&got[0], &want, 1e-5, 1e-6, &format!("run {run} {what}"));
        }
        let plan = session.memory_plan().unwrap();
        assert!(plan.unshared_bytes >= 24 * N as u64 * 4, "{plan:?}");
        let peak = d.memory_stats().peak_bytes_live;
        // Weights, feed, output, and the two intermediates of a step.
        assert!(peak <= 5 * CLASS, "peak {peak} {what}, plan {plan:?}");
    }
}

/// Memory whose contents come from outside the captured work keeps them for every replay: a
/// tensor made before the capture and dropped inside it, and zeros made inside (zeroed once,
/// at capture), are the graph's, and the captured steps after them get other blocks.
#[test]
fn captured_work_keeps_the_memory_it_did_not_write() {
    for d in common::open_devices() {
        if d.backend() == unicompute::BackendKind::Cpu {
            continue; // The cpu backend has nothing to capture.
        }
        let what = format!("on {}", name(&d));
        let (xs, hs) = (random(10, N, -1.0, 1.0), random(11, N, 0.5, 0.9));
        let (x, h) = (tensor(&d, &xs, &[N]), tensor(&d, &hs, &[N]));
        let (graph, t) = d
            .queue()
            .capture(|q| {
                let z = Tensor::zeros(&d, &[N], DType::F32)?;
                let a = binary(q, Add, &x, &z)?;
                drop((x, z));
                let mut t = binary(q, Mul, &a, &h)?;
                drop(a);
                for _ in 0..6 {
                    t = binary(q, Add, &t, &h)?;
                }
                Ok(t)
            })
            .unwrap();
        let want: Vec<f64> = (0..N)
            .map(|i| f64::from(xs[i]) * f64::from(hs[i]) + 6.0 * f64::from(hs[i]))
            .collect();
        for replay in 0..3 {
            graph.replay().unwrap();
            let got = read(&t);
            assert_close(&got, &want, 1e-5, 1e-6, &format!("replay {replay} {what}"));
        }
    }
}
