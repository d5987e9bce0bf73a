//! Sessions run as replays (`src/onnx/replay.rs`): from the second run with the same feed
//! shapes a run is captured once and replayed on devices that capture (webgpu, cuda). Every
//! run's outputs must be those of its own feeds, of its own memory (a later run leaves them
//! alone), on new shapes too, and a replay must be one profiled launch among the copies.

use crate::common::{self, name, per_backend, random, read, tensor};
use crate::onnx_run::relu_of_batches;
use unicompute::onnx::{Session, SessionOptions};
use unicompute::{BackendKind, Device, Tensor};

/// `relu(x)` through `session`.
fn relu(session: &Session, x: &Tensor) -> Tensor {
    let mut outputs = session.run(&[("x", x)]).unwrap();
    outputs.remove(0).1
}

/// Runs of one session on feeds of two shapes, each run checked against its own feed's
/// relu, and the first outputs checked again after the later runs.
fn every_run_gives_its_own_feeds_outputs(d: &Device) {
    let session = Session::from_bytes(d, relu_of_batches(), SessionOptions::default()).unwrap();
    let mut kept = Vec::new();
    for (run, batch) in [7, 7, 7, 7, 1, 1, 1, 7].into_iter().enumerate() {
        let x = random(100 + run as u64, batch * 3, -2.0, 2.0);
        let y = relu(&session, &tensor(d, &x, &[batch, 3]));
        let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
        assert_eq!(read(&y), want, "run {run} (batch {batch}) on {}", name(d));
        kept.push((y, want));
    }
    for (run, (y, want)) in kept.iter().enumerate() {
        assert_eq!(&read(y), want, "run {run} read again on {}", name(d));
    }
}
per_backend!(every_run_gives_its_own_feeds_outputs);

/// The launches of one profiled run of `session` on `x`.
fn profiled_ops(d: &Device, session: &Session, x: &Tensor) -> Vec<String> {
    d.profiler().enable();
    relu(session, x);
    let profile = d.take_profile_blocking();
    d.profiler().disable();
    profile.launches.into_iter().map(|l| l.op).collect()
}

#[test]
fn the_third_run_is_a_replay_unless_the_session_is_eager() {
    // Devices of this test's own, so that no other test's launches land in their profiles.
    for d in common::open_devices()
        .iter()
        .filter(|d| d.backend() != BackendKind::Cpu)
    {
        let x = tensor(d, &random(5, 21, -1.0, 1.0), &[7, 3]);
        for eager in [false, true] {
            let options = SessionOptions {
                eager,
                ..SessionOptions::default()
            };
            let session = Session::from_bytes(d, relu_of_batches(), options).unwrap();
            relu(&session, &x);
            relu(&session, &x);
            let ops = profiled_ops(d, &session, &x);
            let replays = ops.iter().filter(|op| *op == "graph").count();
            assert_eq!(
                replays,
                usize::from(!eager),
                "eager {eager}: {ops:?} on {}",
                name(d)
            );
            let relus = ops.iter().filter(|op| *op == "relu").count();
            assert_eq!(
                relus,
                usize::from(eager),
                "eager {eager}: {ops:?} on {}",
                name(d)
            );
        }
    }
}

/// The launches of one profiled run of `session` (`y = Gather(data, indices)`), and its
/// output.
fn profiled_gather(d: &Device, session: &Session, feeds: &[(&str, &Tensor)]) -> Vec<String> {
    d.profiler().enable();
    let y = session.run(feeds).unwrap().remove(0).1;
    let profile = d.take_profile_blocking();
    d.profiler().disable();
    drop(y);
    profile.launches.into_iter().map(|l| l.op).collect()
}

/// A session whose graph gathers on the device in IndexMode::Error replays from its third run
/// like any other: the first run launches the gather, the third one `graph` and no gather,
/// and each run's output is its own indices' pick. An index outside the axis fed to a replay
/// fails the read of that run's output, naming the position and the axis; the next run reads.
#[test]
fn sessions_with_checked_gathers_replay() {
    for d in common::open_devices()
        .iter()
        .filter(|d| d.backend() != BackendKind::Cpu)
    {
        let model = crate::onnx_indexing::indexing_model("Gather", "axis", 1);
        let session = Session::from_bytes(d, model, SessionOptions::default()).unwrap();
        let data = random(61, 5 * 7, -3.0, 3.0);
        let x = tensor(d, &data, &[5, 7]);
        let runs: [[i64; 3]; 6] = [
            [0, 6, -7],
            [2, -1, 3],
            [4, 4, -3],
            [1, 7, 0],
            [5, -2, 6],
            [-8, 0, 1],
        ];
        for (run, idx) in runs.iter().enumerate() {
            let i = Tensor::from_slice(d, idx, &[3]).unwrap();
            let feeds = [("data", &x), ("indices", &i)];
            let what = format!("run {run} on {idx:?} on {}", name(d));
            if run == 0 || run == 2 {
                let ops = profiled_gather(d, &session, &feeds);
                let count = |op: &str| ops.iter().filter(|o| *o == op).count();
                let want = if run == 0 { [1, 0] } else { [0, 1] };
                assert_eq!([count("gather"), count("graph")], want, "{what}: {ops:?}");
            }
            let y = session.run(&feeds).unwrap().remove(0).1;
            let bad = idx.iter().position(|&j| !(-7..7).contains(&j));
            if let Some(at) = bad {
                let e = y.to_vec_blocking::<f32>().unwrap_err();
                assert_eq!(e.code(), "INVALID", "{e}: {what}");
                for needle in [format!("[{at}]"), "[-7, 7)".into(), "axis 1".into()] {
                    assert!(e.to_string().contains(&needle), "{e}: {needle:?}, {what}");
                }
            }
            let want: Vec<f32> = (0..5)
                .flat_map(|r| {
                    idx.map(|j| {
                        (-7..7)
                            .contains(&j)
                            .then(|| data[r * 7 + j.rem_euclid(7) as usize])
                    })
                })
                .map(|v| v.unwrap_or(0.0))
                .collect();
            assert_eq!(read(&y), want, "{what}");
        }
    }
}
