//! A Concat's inputs written in place (`src/onnx/joins.rs`), on every device against an f64
//! reference: two convolutions and a Relu joined along the channels, one convolution's
//! output also read after the Concat and given out. Once the session has seen the Concat's
//! shapes, the convolutions write into its output (the one given out is a view at its
//! slice); the Relu's output is copied in. Two images (slices that are not contiguous) and
//! changed extents take the copies again, with the same outputs.

use prost::Message;
use unicompute::onnx::proto::{tensor_shape_proto::dimension::Value, ModelProto};
use unicompute::onnx::{Session, SessionOptions};
use unicompute::{Device, Tensor};

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_passes::{ints_attr, node, weights, Case};
use crate::onnx_recur::int_attr;

/// Output channels of the 3 x 3 convolution `a`.
const A: usize = 5;
/// Channels of the input and of its Relu.
const R: usize = 3;
/// Output channels of the 1 x 1 convolution `b`.
const B: usize = 4;

/// `y = concat(a, relu(x), b)` along the channels with `a = conv3x3(x) + ba` (padding 1)
/// and `b = conv1x1(x)`, and `z = sigmoid(a)`; outputs y, b and z. `x` is `[1, 3, 7, 5]`,
/// or with `open` of any `[n, 3, h, w]`.
fn model(open: bool) -> Vec<u8> {
    let case = Case {
        nodes: vec![
            node(
                "Conv",
                &["x", "wa", "ba"],
                &["a"],
                vec![ints_attr("pads", &[1; 4])],
            ),
            node("Relu", &["x"], &["r"], vec![]),
            node("Conv", &["x", "wb"], &["b"], vec![]),
            node(
                "Concat",
                &["a", "r", "b"],
                &["y"],
                vec![int_attr("axis", -3)],
            ),
            node("Sigmoid", &["a"], &["z"], vec![]),
        ],
        weights: vec![
            weights("wa", &[A, R, 3, 3], 1, [-0.5, 0.5]),
            weights("ba", &[A], 2, [-0.5, 0.5]),
            weights("wb", &[B, R, 1, 1], 3, [-0.5, 0.5]),
        ],
        inputs: vec![("x", vec![1, R, 7, 5])],
        outputs: vec!["y", "b", "z"],
    };
    let mut m = ModelProto::decode(case.bytes().as_slice()).expect("the model decodes");
    if open {
        let g = m.graph.as_mut().expect("a graph");
        let Some(Some(ty)) = g.input[0].r#type.as_mut().map(|t| t.value.as_mut()) else {
            panic!("the input has a type");
        };
        let unicompute::onnx::proto::type_proto::Value::TensorType(t) = ty else {
            panic!("the input is a tensor");
        };
        let dims = &mut t.shape.as_mut().expect("a shape").dim;
        for (d, name) in dims
            .iter_mut()
            .zip(["n", "c", "h", "w"])
            .filter(|(_, n)| *n != "c")
        {
            d.value = Some(Value::DimParam(name.into()));
        }
    }
    m.encode_to_vec()
}

/// The model's outputs y, b and z on `x` of `[n, 3, h, w]`, in f64.
fn reference(x: &[f32], [n, h, w]: [usize; 3]) -> [Vec<f64>; 3] {
    let (wa, ba) = (random(1, A * R * 9, -0.5, 0.5), random(2, A, -0.5, 0.5));
    let wb = random(3, B * R, -0.5, 0.5);
    let at = |i: usize, c: usize, y: isize, x0: isize| {
        let inside = (0..h as isize).contains(&y) && (0..w as isize).contains(&x0);
        let k = ((i * R + c) * h + y.max(0) as usize) * w + x0.max(0) as usize;
        if inside {
            f64::from(x[k])
        } else {
            0.0
        }
    };
    let conv_a = |i: usize, o: usize, y: usize, x0: usize| {
        let taps =
            (0..R).flat_map(|c| (0..3).flat_map(move |ky| (0..3).map(move |kx| (c, ky, kx))));
        taps.map(|(c, ky, kx)| {
            let v = at(
                i,
                c,
                y as isize + ky as isize - 1,
                x0 as isize + kx as isize - 1,
            );
            v * f64::from(wa[((o * R + c) * 3 + ky) * 3 + kx])
        })
        .sum::<f64>()
            + f64::from(ba[o])
    };
    let conv_b = |i: usize, o: usize, y: usize, x0: usize| {
        (0..R)
            .map(|c| at(i, c, y as isize, x0 as isize) * f64::from(wb[o * R + c]))
            .sum::<f64>()
    };
    let (mut y, mut b, mut z) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        for ch in 0..A + R + B {
            for (py, px) in (0..h).flat_map(|py| (0..w).map(move |px| (py, px))) {
                let v = match ch {
                    c if c < A => conv_a(i, c, py, px),
                    c if c < A + R => at(i, c - A, py as isize, px as isize).max(0.0),
                    c => conv_b(i, c - A - R, py, px),
                };
                y.push(v);
                if ch < A {
                    z.push(1.0 / (1.0 + (-v).exp()));
                } else if ch >= A + R {
                    b.push(v);
                }
            }
        }
    }
    [y, b, z]
}

/// One run of `s` on a seeded `x` of `[n, 3, h, w]`, checked against the reference; gives the
/// output `b` as the session gave it.
fn check_run(d: &Device, s: &Session, dims: [usize; 3], what: &str) -> Tensor {
    let [n, h, w] = dims;
    let x = random(40 + (n * 100 + h * 10 + w) as u64, n * R * h * w, -2.0, 2.0);
    let xt = tensor(d, &x, &[n, R, h, w]);
    let out = s
        .run(&[("x", &xt)])
        .unwrap_or_else(|e| panic!("{}, {what}: {e}", name(d)));
    let want = reference(&x, dims);
    for ((label, t), want) in out.iter().zip(&want) {
        let what = format!("{}, {what}, output {label}", name(d));
        assert_close(&read(t), want, 1e-5, 1e-5, &what);
    }
    out.into_iter().nth(1).expect("three outputs").1
}

/// Node by node (no replays, whose outputs are copies), from the session's second run on
/// (its first on devices that capture the run at load) `b` is the view of its slice of `y`;
/// with two images it is a tensor of its own, and the outputs are right throughout.
fn convolutions_write_into_the_concat_output(d: &Device) {
    let options = SessionOptions {
        eager: true,
        ..SessionOptions::default()
    };
    let s = Session::from_bytes(d, model(false), options).expect("the model loads");
    let slice = (A + R) * 7 * 5;
    for run in 0..3 {
        let b = check_run(d, &s, [1, 7, 5], &format!("run {run}"));
        let at_load = d.kernels_compiled().is_some();
        if run > 0 || at_load {
            assert_eq!(b.offset(), slice, "{}: run {run} wrote b in place", name(d));
        }
    }
    let s = Session::from_bytes(d, model(true), SessionOptions::default()).unwrap();
    for (run, dims) in [
        [1, 7, 5],
        [1, 7, 5],
        [2, 7, 5],
        [2, 7, 5],
        [1, 4, 6],
        [1, 7, 5],
    ]
    .into_iter()
    .enumerate()
    {
        let b = check_run(d, &s, dims, &format!("open extents, run {run} of {dims:?}"));
        if dims[0] == 2 {
            assert_eq!(b.offset(), 0, "{}: two images copy b", name(d));
        }
    }
}

per_backend!(convolutions_write_into_the_concat_output);

/// On devices that capture the run at load, the capture is made again once the Concat's
/// shapes are known, so the memory plan made at load holds `a` and `b` in `y`'s block:
/// three intermediates (y, r, z), where the Concat that copies has five.
fn the_plan_made_at_load_writes_in_place(d: &Device) {
    if d.kernels_compiled().is_none() {
        return;
    }
    let s = Session::from_bytes(d, model(false), SessionOptions::default()).unwrap();
    let plan = s.memory_plan().expect("a plan made at load");
    assert_eq!(plan.intermediates, 3, "{}: {plan:?}", name(d));
    check_run(d, &s, [1, 7, 5], "after load");
}

per_backend!(the_plan_made_at_load_writes_in_place);

/// `y = concat(b, b)` of one convolution `b`: the first is written in place, the second
/// copied from that slice of the same block (through a copy of its own: a webgpu dispatch
/// may not read and write one buffer), on every run.
fn a_convolution_joined_twice(d: &Device) {
    let case = Case {
        nodes: vec![
            node("Conv", &["x", "wb"], &["b"], vec![]),
            node("Concat", &["b", "b"], &["y"], vec![int_attr("axis", 1)]),
        ],
        weights: vec![weights("wb", &[B, R, 1, 1], 3, [-0.5, 0.5])],
        inputs: vec![("x", vec![1, R, 7, 5])],
        outputs: vec!["y"],
    };
    for eager in [true, false] {
        let options = SessionOptions {
            eager,
            ..SessionOptions::default()
        };
        let s = Session::from_bytes(d, case.bytes(), options).expect("the model loads");
        for run in 0..3 {
            let x = random(60 + run, R * 7 * 5, -2.0, 2.0);
            let xt = tensor(d, &x, &[1, R, 7, 5]);
            let what = format!("{}, eager {eager}, run {run}", name(d));
            let out = s
                .run(&[("x", &xt)])
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let [_, b, _] = reference(&x, [1, 7, 5]);
            let want: Vec<f64> = b.iter().chain(&b).copied().collect();
            assert_close(&read(&out[0].1), &want, 1e-5, 1e-5, &what);
        }
    }
}

per_backend!(a_convolution_joined_twice);
