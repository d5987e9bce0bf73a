//! Capture and replay (`Queue::capture`, `Graph::replay`) on every device that records work
//! before running it: replays recompute a chain of ops from new inputs against f64
//! references, run in order with each other and with other queues, replay captured writes
//! and user kernels, and a capture that cannot hold an operation says so and leaves the queue
//! usable.

use crate::common::{
    self, assert_close, expect_err, name, random, read, still_works, tensor, COUNT_LOOP,
};
use unicompute::{BackendKind, BinaryOp, Binding, Buffer, Device, Kernel, Tensor, POISON_WORD};

/// The devices that capture (all but the cpu backend).
fn capturing_devices() -> Vec<&'static Device> {
    common::devices()
        .iter()
        .filter(|d| d.backend() != BackendKind::Cpu)
        .collect()
}

const SAXPY: &str = r#"
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: vec2<u32>;

@compute @workgroup_size(64)
fn saxpy(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.y) {
        y[gid.x] = bitcast<f32>(p.x) * x[gid.x] + y[gid.x];
    }
}
"#;

/// `softmax(relu(x + bias)) @ w`, then its row sums, in f64.
fn chain_reference(
    x: &[f32],
    bias: &[f32],
    w: &[f32],
    rows: usize,
    cols: usize,
    n: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut m = vec![0.0; rows * n];
    for r in 0..rows {
        let h: Vec<f64> = (0..cols)
            .map(|c| (f64::from(x[r * cols + c]) + f64::from(bias[c])).max(0.0))
            .collect();
        let max = h.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = h.iter().map(|v| (v - max).exp()).sum();
        for j in 0..n {
            m[r * n + j] = (0..cols)
                .map(|c| (h[c] - max).exp() / sum * f64::from(w[c * n + j]))
                .sum();
        }
    }
    let sums = (0..rows)
        .map(|r| m[r * n..(r + 1) * n].iter().sum())
        .collect();
    (m, sums)
}

#[test]
fn replays_recompute_a_chain_of_ops_from_new_inputs() {
    let (rows, cols, n) = (7, 131, 29);
    for d in capturing_devices() {
        let input = Buffer::<f32>::zeros(d, rows * cols).unwrap();
        let x = Tensor::from_buffer(&input, &[rows, cols]).unwrap();
        let bias_data = random(2, cols, -1.0, 1.0);
        let w_data = random(3, cols * n, -1.0, 1.0);
        let (bias, w) = (
            tensor(d, &bias_data, &[cols]),
            tensor(d, &w_data, &[cols, n]),
        );
        let (graph, (m, sums)) = d
            .queue()
            .capture(|_| {
                let m = x.add(&bias)?.relu()?.softmax()?.matmul(&w)?;
                let sums = m.sum(Some(1))?;
                Ok((m, sums))
            })
            .unwrap();
        assert!(graph.launches() >= 4, "{}: {graph:?}", name(d));
        // Nothing ran yet: the outputs still hold the poison of fresh memory.
        assert!(
            read(&m).iter().all(|v| v.to_bits() == POISON_WORD),
            "{}: the capture ran its work",
            name(d)
        );
        for round in 0..3u64 {
            let x_data = random(10 + round, rows * cols, -3.0, 3.0);
            input.write(&x_data).unwrap();
            graph.replay().unwrap();
            let (want_m, want_sums) = chain_reference(&x_data, &bias_data, &w_data, rows, cols, n);
            let what = format!("{} round {round}", name(d));
            assert_close(&read(&m), &want_m, 1e-4, 1e-5, &format!("{what}: matmul"));
            assert_close(
                &read(&sums),
                &want_sums,
                1e-4,
                1e-5,
                &format!("{what}: row sums"),
            );
        }
    }
}

#[test]
fn replays_run_in_order_and_repeat_captured_writes_and_user_kernels() {
    let len = 1031; // prime, past several workgroups of 64
    for d in capturing_devices() {
        let kernel = Kernel::from_wgsl(d, SAXPY, "saxpy").unwrap();
        let inc_data = random(5, len, -2.0, 2.0);
        let inc = Buffer::from_slice(d, &inc_data).unwrap();
        let acc = Buffer::<f32>::zeros(d, len).unwrap();
        let params = Buffer::from_slice(d, &[1.0f32.to_bits(), len as u32]).unwrap();
        let scale = Buffer::<f32>::zeros(d, len).unwrap();
        let (graph, scaled) = d
            .queue()
            .capture(|q| {
                // A captured write: each replay sets `scale` to 3 again.
                q.write(&scale, &vec![3.0f32; len])?;
                q.launch(
                    &kernel,
                    &[
                        Binding::from(&inc),
                        Binding::from(&acc),
                        Binding::from(&params),
                    ],
                    [(len as u32).div_ceil(64), 1, 1],
                )?;
                let (a, s) = (
                    Tensor::from_buffer(&acc, &[len])?,
                    Tensor::from_buffer(&scale, &[len])?,
                );
                a.mul(&s)
            })
            .unwrap();
        let replays = 5;
        for _ in 0..replays {
            scale.write(&vec![-1.0; len]).unwrap();
            graph.replay().unwrap();
        }
        let want_acc: Vec<f64> = inc_data
            .iter()
            .map(|&v| replays as f64 * f64::from(v))
            .collect();
        assert_close(
            &acc.read_blocking().unwrap(),
            &want_acc,
            1e-6,
            1e-6,
            &format!("{}: accumulated", name(d)),
        );
        let want: Vec<f64> = want_acc.iter().map(|v| 3.0 * v).collect();
        assert_close(
            &read(&scaled),
            &want,
            1e-6,
            1e-6,
            &format!("{}: scaled by the captured write", name(d)),
        );
    }
}

#[test]
fn a_replay_on_one_queue_is_seen_by_work_on_another() {
    for d in capturing_devices() {
        let q = d.new_queue();
        let data = random(7, 257, -1.0, 1.0);
        let x = tensor(d, &data, &[257]);
        let (graph, y) = q
            .capture(|q| unicompute::ops::elementwise::binary(q, BinaryOp::Add, &x, &x))
            .unwrap_or_else(|e| panic!("{}: {e}", name(d)));
        graph.replay().unwrap();
        // Read on the default queue: it orders itself after the other queue's replay.
        let want: Vec<f64> = data.iter().map(|&v| 2.0 * f64::from(v)).collect();
        assert_close(&read(&y), &want, 0.0, 0.0, &name(d));
    }
}

#[test]
fn a_replay_is_one_profiled_launch() {
    // Devices of this test's own, so that no other test's launches land in their profiles.
    for d in common::open_devices()
        .iter()
        .filter(|d| d.backend() != BackendKind::Cpu)
    {
        let x = tensor(d, &random(8, 300, -1.0, 1.0), &[3, 100]);
        let (graph, _y) = d.queue().capture(|_| x.softmax()?.relu()).unwrap();
        d.profiler().enable();
        graph.replay().unwrap();
        let profile = d.take_profile_blocking();
        d.profiler().disable();
        let ops: Vec<&str> = profile.launches.iter().map(|l| l.op.as_str()).collect();
        assert_eq!(ops, ["graph"], "{}", name(d));
        let launch = &profile.launches[0];
        assert_eq!(
            launch.variant.as_deref(),
            Some(format!("{} launches", graph.launches()).as_str()),
            "{}",
            name(d)
        );
        assert!(launch.bytes >= 2 * 300 * 4, "{}: {launch:?}", name(d));
    }
}

#[test]
fn what_a_capture_cannot_hold_is_refused_and_the_queue_stays_usable() {
    for d in capturing_devices() {
        let x = tensor(d, &[1.0, 2.0, 3.0], &[3]);
        let q = d.queue();
        expect_err(
            q.capture(|_| x.add(&x)?.to_vec_blocking::<f32>()),
            "INVALID",
            &["reading", "captures work"],
            d,
        );
        expect_err(
            q.capture(|q| q.submit().map(drop)),
            "INVALID",
            &["submitting", "captures work"],
            d,
        );
        let fence = q.submit().unwrap();
        expect_err(
            q.capture(|q| q.wait_for(&fence)),
            "INVALID",
            &["waiting for a fence"],
            d,
        );
        expect_err(
            q.capture(|q| q.capture(|_| Ok(()))),
            "INVALID",
            &["capture inside a capture"],
            d,
        );
        // Tensor methods record on the default queue: capturing another queue, they would run
        // at once, outside the graph.
        let other = d.new_queue();
        expect_err(
            other.capture(|_| x.relu()),
            "INVALID",
            &["while this thread captures queue", "default queue"],
            d,
        );
        expect_err(
            other.capture(|_| x.to_vec_blocking::<f32>()),
            "INVALID",
            &["while this thread captures queue"],
            d,
        );
        // An error of the closure's own ends the capture and drops what it recorded.
        let y = tensor(d, &[1.0, 2.0], &[2]);
        expect_err(q.capture(|_| x.add(&y)), "SHAPE", &[], d);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            q.capture(|_| -> unicompute::Result<()> { panic!("in the closure") })
        }));
        assert!(panicked.is_err());
        still_works(d);
        // And a capture after all that works.
        let (graph, y) = q.capture(|_| x.add(&x)).unwrap();
        graph.replay().unwrap();
        assert_eq!(read(&y), vec![2.0, 4.0, 6.0], "{}", name(d));
    }
}

#[test]
fn the_cpu_backend_says_it_cannot_capture() {
    let cpu = &common::devices()[0];
    assert_eq!(cpu.backend(), BackendKind::Cpu);
    let x = tensor(cpu, &[1.0, 2.0], &[2]);
    expect_err(
        cpu.queue().capture(|_| x.relu()),
        "UNSUPPORTED",
        &["cpu", "runs each op as it is called"],
        cpu,
    );
}

/// The cpu refuses a capture at once, also while another thread's kernel runs: waiting for
/// that kernel first deadlocked when the kernel's thread waited on the pool threads that
/// asked (sessions run on the cpu's thread pool and try to capture).
#[test]
fn the_cpu_refuses_a_capture_without_waiting_for_other_threads() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let cpu = &common::devices()[0];
    let k = Kernel::from_wgsl(cpu, COUNT_LOOP, "count").unwrap();
    let steps = 3_000_000u32;
    let (p, y) = (
        Buffer::from_slice(cpu, &[steps]).unwrap(),
        Buffer::from_slice(cpu, &[POISON_WORD]).unwrap(),
    );
    let (started, wait) = std::sync::mpsc::channel();
    let ran = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = started.send(());
            let bindings = [Binding::from(&p), Binding::from(&y)];
            cpu.queue().launch(&k, &bindings, [1, 1, 1]).unwrap();
            ran.store(true, Ordering::Release);
        });
        let _ = wait.recv();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let x = tensor(cpu, &[1.0, 2.0], &[2]);
        expect_err(
            cpu.queue().capture(|_| x.relu()),
            "UNSUPPORTED",
            &["cpu"],
            cpu,
        );
        assert!(
            !ran.load(Ordering::Acquire),
            "the refusal waited for the other thread's kernel"
        );
    });
    assert_eq!(y.read_blocking().unwrap(), [steps], "the kernel's count");
}

#[test]
fn a_dropped_graph_releases_its_memory_after_its_replays() {
    for d in capturing_devices() {
        let data = random(9, 4099, -1.0, 1.0);
        let x = tensor(d, &data, &[4099]);
        let (graph, y) = d.queue().capture(|_| x.relu()).unwrap();
        graph.replay().unwrap();
        drop(graph);
        let want: Vec<f64> = data.iter().map(|&v| f64::from(v.max(0.0))).collect();
        assert_close(&read(&y), &want, 0.0, 0.0, &name(d));
    }
}

/// A graph replayed inside another's capture lends it its steps and the buffer of its captured
/// writes (destroyed with the last graph that binds it): the outer graph still replays them
/// after the inner one is dropped.
#[test]
fn a_graph_replayed_in_a_capture_outlives_the_inner_graph() {
    let len = 1031; // prime, past several workgroups
    for d in capturing_devices() {
        let data = random(11, len, -2.0, 2.0);
        let x = tensor(d, &data, &[len]);
        let scale = Buffer::<f32>::zeros(d, len).unwrap();
        let (inner, scaled) = d
            .queue()
            .capture(|q| {
                q.write(&scale, &vec![3.0f32; len])?;
                x.mul(&Tensor::from_buffer(&scale, &[len])?)
            })
            .unwrap();
        let (outer, y) = d
            .queue()
            .capture(|_| {
                inner.replay()?;
                scaled.relu()
            })
            .unwrap();
        drop(inner);
        for _ in 0..3 {
            scale.write(&vec![-1.0; len]).unwrap();
            outer.replay().unwrap();
        }
        let want: Vec<f64> = data
            .iter()
            .map(|&v| f64::from((3.0 * v).max(0.0)))
            .collect();
        assert_close(&read(&y), &want, 1e-6, 1e-6, &name(d));
    }
}

/// Opening a device of the same backend on another thread and computing there, while a
/// capture is under way, neither fails nor breaks the capture (on cuda, opening once
/// synchronized the shared context: `STREAM_CAPTURE_UNSUPPORTED`, then `INVALIDATED`).
#[test]
fn a_device_opened_during_a_capture_leaves_it_intact() {
    for d in capturing_devices() {
        let data = random(12, 131, -1.0, 1.0);
        let input = Buffer::<f32>::zeros(d, 131).unwrap();
        input.write(&data).unwrap();
        let x = Tensor::from_buffer(&input, &[131]).unwrap();
        let (graph, y) = d
            .queue()
            .capture(|_| {
                let y = x.relu()?;
                let opened = std::thread::scope(|s| {
                    s.spawn(|| {
                        let other = Device::open_with(
                            unicompute::BackendChoice::Backend(d.backend()),
                            unicompute::DeviceOptions::default(),
                        )?;
                        let z = tensor(&other, &data, &[131]);
                        let z = z.add(&z)?;
                        Ok::<_, unicompute::Error>(read(&z))
                    })
                    .join()
                    .expect("the opening thread does not panic")
                });
                let sums = opened.expect("a device opens and computes during a capture");
                let want: Vec<f64> = data.iter().map(|&v| f64::from(v + v)).collect();
                assert_close(&sums, &want, 0.0, 0.0, &name(d));
                Ok(y)
            })
            .unwrap_or_else(|e| panic!("{}: the capture broke: {e}", name(d)));
        input
            .write(&data.iter().map(|v| -v).collect::<Vec<_>>())
            .unwrap();
        graph.replay().unwrap();
        let want: Vec<f64> = data.iter().map(|&v| f64::from((-v).max(0.0))).collect();
        assert_close(&read(&y), &want, 0.0, 0.0, &name(d));
        still_works(d);
    }
}

#[test]
fn other_threads_wait_for_a_capture_and_stay_out_of_it() {
    for d in capturing_devices() {
        let x = tensor(d, &random(11, 129, -1.0, 1.0), &[129]);
        let x = &x;
        // A channel, not a barrier: if the capture fails first, the other thread goes on.
        let (started, wait) = std::sync::mpsc::channel();
        let (graph, other) = std::thread::scope(|s| {
            let capture = s.spawn(move || {
                d.queue()
                    .capture(|_| {
                        let y = x.relu()?;
                        let _ = started.send(());
                        // The other thread records meanwhile: it must wait for this capture.
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        Ok(y)
                    })
                    .unwrap()
            });
            let other = s.spawn(move || {
                let _ = wait.recv();
                read(&x.add(x).unwrap())
            });
            (capture.join().unwrap(), other.join().unwrap())
        });
        assert_eq!(
            graph.0.launches(),
            1,
            "{}: another thread's op landed in the capture",
            name(d)
        );
        let data = read(x);
        assert_eq!(
            other,
            data.iter().map(|v| v + v).collect::<Vec<_>>(),
            "{}",
            name(d)
        );
        graph.0.replay().unwrap();
        assert_eq!(
            read(&graph.1),
            data.iter().map(|v| v.max(0.0)).collect::<Vec<_>>(),
            "{}",
            name(d)
        );
    }
}

/// What another thread may do to a CUDA device while one of its queues captures, each named.
type Stressor = (&'static str, fn(&Device, usize) -> unicompute::Result<()>);

const STRESSORS: [Stressor; 4] = [
    ("allocating fresh memory", |d, i| {
        Buffer::<f32>::zeros(d, (1 << 18) + 4099 * i).map(drop)
    }),
    ("opening the device and compiling kernels", |d, i| {
        let other = Device::open_with(
            unicompute::BackendChoice::Backend(d.backend()),
            unicompute::DeviceOptions::default(),
        )?;
        let x = Tensor::from_slice(&other, &vec![1.0f32; 1 + i], &[1 + i])?;
        x.relu()?.to_vec_blocking::<f32>().map(drop)
    }),
    ("writing through new pinned staging memory", |d, i| {
        let b = Buffer::<f32>::zeros(d, 1024 * (1 + i))?;
        b.write(&vec![2.0; 1024 * (1 + i)])
    }),
    ("multiplying on new queues (cuBLAS handles)", |d, i| {
        let q = d.new_queue();
        let a = Tensor::from_slice(d, &vec![1.0f32; 64 * (1 + i)], &[64, 1 + i])?;
        let product = unicompute::ops::matmul::matmul(&q, &a, &a.t()?)?;
        product.to_vec_blocking::<f32>().map(drop)
    }),
];

#[test]
fn cuda_captures_survive_what_other_threads_do_meanwhile() {
    let cuda = capturing_devices()
        .into_iter()
        .filter(|d| d.backend() == BackendKind::Cuda);
    for d in cuda {
        let data = random(13, 263, -1.0, 1.0);
        let x = tensor(d, &data, &[263]);
        let want: Vec<f64> = data.iter().map(|&v| 2.0 * f64::from(v)).collect();
        let mut broken = Vec::new();
        for (what, stress) in STRESSORS {
            let stop = std::sync::atomic::AtomicBool::new(false);
            let failures = std::thread::scope(|s| {
                let other = s.spawn(|| {
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        stress(d, i % 64).unwrap_or_else(|e| panic!("{what}: {e}"));
                        i += 1;
                    }
                });
                let q = d.new_queue();
                let failures: Vec<String> = (0..40)
                    .filter_map(|_| {
                        let run = q.capture(|q| {
                            unicompute::ops::elementwise::binary(q, BinaryOp::Add, &x, &x)
                        });
                        let (graph, y) = match run {
                            Ok(done) => done,
                            Err(e) => return Some(e.to_string()),
                        };
                        graph.replay().err().map(|e| e.to_string()).or_else(|| {
                            assert_close(&read(&y), &want, 0.0, 0.0, what);
                            None
                        })
                    })
                    .collect();
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                other.join().expect("the other thread does not panic");
                failures
            });
            if let Some(first) = failures.first() {
                broken.push(format!(
                    "{} of 40 captures broke while another thread was {what}: {first}",
                    failures.len()
                ));
            }
        }
        assert!(broken.is_empty(), "{}: {broken:#?}", name(d));
    }
}
