//! ONNX's 3-D `Conv`, `ConvTranspose`, `MaxPool` and `AveragePool` (run on the library's 2-D
//! ops), and `ConvTranspose`'s padding from `auto_pad` and `output_shape`, on every device
//! against f64 references computed here: groups, strides, dilations, asymmetric padding,
//! output padding, output depths no input lands on, `ceil_mode` and `count_include_pad`.

use unicompute::onnx::proto::{AttributeProto, GraphProto};
use unicompute::onnx::{Session, SessionOptions};
use unicompute::Device;

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_recur::{attr, info, int_attr, model, node, FLOAT};

/// An INTS attribute.
fn ints(name: &str, v: &[i64]) -> AttributeProto {
    attr(name, 7, |a| a.ints = v.to_vec())
}

/// Runs the one-node model of `op` with `attrs` over the named `inputs` (values, shape) and
/// gives its output's values and shape.
fn run(
    d: &Device,
    op: &str,
    attrs: Vec<AttributeProto>,
    inputs: &[(&str, &[f32], &[usize])],
) -> (Vec<f32>, Vec<usize>) {
    let names: Vec<&str> = inputs.iter().map(|i| i.0).collect();
    let mut n = node(op, "op", &names, &["y"]);
    n.attribute = attrs;
    let g = GraphProto {
        node: vec![n],
        input: names.iter().map(|&i| info(i, FLOAT)).collect(),
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    let s = Session::from_bytes(d, model(g, 17), SessionOptions::default()).unwrap();
    let tensors: Vec<_> = inputs.iter().map(|i| tensor(d, i.1, i.2)).collect();
    let feeds: Vec<(&str, _)> = names.iter().copied().zip(tensors.iter()).collect();
    let y = &s.run(&feeds).unwrap()[0].1;
    (read(y), y.shape().to_vec())
}

/// The flat index of `at` in a row-major `shape`.
fn flat(shape: &[usize], at: &[usize]) -> usize {
    shape.iter().zip(at).fold(0, |i, (&s, &a)| i * s + a)
}

/// Every index of `shape`, row-major.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &s in shape {
        all = all
            .into_iter()
            .flat_map(|p| (0..s).map(move |i| [p.clone(), vec![i]].concat()))
            .collect();
    }
    all
}

/// The geometry of a 3-D transposed convolution: strides, dilations, pads (ONNX's order),
/// output padding, groups.
struct Transposed {
    strides: [usize; 3],
    dilations: [usize; 3],
    pads: [usize; 6],
    output_padding: [usize; 3],
    groups: usize,
}

/// A 3-D transposed convolution in f64 as the scatter that defines it, plus the bias; gives
/// the output and its shape.
fn transposed_reference(
    x: (&[f32], &[usize]),
    w: (&[f32], &[usize]),
    bias: &[f32],
    t: &Transposed,
) -> (Vec<f64>, Vec<usize>) {
    let (xs, ws) = (x.1, w.1);
    let (og, cg) = (ws[1], xs[1] / t.groups);
    let mut shape = vec![xs[0], og * t.groups];
    for a in 0..3 {
        let full = (xs[a + 2] - 1) * t.strides[a] + (ws[a + 2] - 1) * t.dilations[a] + 1;
        shape.push(full + t.output_padding[a] - t.pads[a] - t.pads[a + 3]);
    }
    let mut out: Vec<f64> = (0..shape.iter().product())
        .map(|i| f64::from(bias[i / shape[2..].iter().product::<usize>() % shape[1]]))
        .collect();
    for xi in indices(xs) {
        for wi in indices(&ws[1..]) {
            let (ci, j) = (xi[1], wi[0]);
            let oc = ci / cg * og + j;
            let mut at = vec![xi[0], oc];
            for a in 0..3 {
                let o = xi[a + 2] * t.strides[a] + wi[a + 1] * t.dilations[a];
                match o.checked_sub(t.pads[a]).filter(|&o| o < shape[a + 2]) {
                    Some(o) => at.push(o),
                    None => break,
                }
            }
            if at.len() == 5 {
                let wv = w.0[flat(ws, &[&[ci][..], &wi].concat())];
                out[flat(&shape, &at)] += f64::from(x.0[flat(xs, &xi)]) * f64::from(wv);
            }
        }
    }
    (out, shape)
}

fn conv_transpose_3d_matches_the_reference(d: &Device) {
    // Depth stride 3 over 2 taps leaves output depths 2 and 5 to the bias alone.
    let t = Transposed {
        strides: [3, 2, 1],
        dilations: [1, 1, 2],
        pads: [0, 1, 0, 1, 0, 2],
        output_padding: [1, 1, 0],
        groups: 2,
    };
    let (xs, ws) = ([2usize, 4, 3, 4, 5], [4usize, 3, 2, 3, 2]);
    let x = random(2100, xs.iter().product(), -1.0, 1.0);
    let w = random(2101, ws.iter().product(), -1.0, 1.0);
    let bias = random(2102, 6, -1.0, 1.0);
    let to_i64 = |v: &[usize]| v.iter().map(|&e| e as i64).collect::<Vec<_>>();
    let attrs = vec![
        ints("strides", &to_i64(&t.strides)),
        ints("dilations", &to_i64(&t.dilations)),
        ints("pads", &to_i64(&t.pads)),
        ints("output_padding", &to_i64(&t.output_padding)),
        int_attr("group", 2),
    ];
    let inputs = [
        ("x", &x[..], &xs[..]),
        ("w", &w[..], &ws[..]),
        ("b", &bias[..], &[6][..]),
    ];
    let (got, shape) = run(d, "ConvTranspose", attrs, &inputs);
    let (want, want_shape) = transposed_reference((&x, &xs), (&w, &ws), &bias, &t);
    let what = format!("3-D ConvTranspose on {}", name(d));
    assert_eq!(shape, want_shape, "{what}");
    assert_close(&got, &want, 1e-4, 1e-5, &what);
}
per_backend!(conv_transpose_3d_matches_the_reference);

/// 3-D pooling in f64 with ONNX's rules: windows of `k` every `s` over the input padded by
/// `pads`, rounded up (a window starting past the input and its leading padding dropped);
/// max, or the mean over the taps within the input (or, with `include_pad`, within the
/// padded input).
fn pool_reference(
    (x, xs): (&[f32], &[usize]),
    (k, s, pads): ([usize; 3], [usize; 3], [usize; 6]),
    max: bool,
    include_pad: bool,
) -> (Vec<f64>, Vec<usize>) {
    let mut shape = xs[..2].to_vec();
    for a in 0..3 {
        let (n, b) = (xs[a + 2], pads[a]);
        let extent = (n + b + pads[a + 3] - k[a]).div_ceil(s[a]) + 1;
        shape.push(if (extent - 1) * s[a] >= n + b {
            extent - 1
        } else {
            extent
        });
    }
    let out = indices(&shape).into_iter().map(|oi| {
        let (mut taps, mut padded) = (Vec::new(), 1);
        let ranges: Vec<_> = (0..3)
            .map(|a| {
                let start = (oi[a + 2] * s[a]) as isize - pads[a] as isize;
                let end = start + k[a] as isize;
                let limit = (xs[a + 2] + pads[a + 3]) as isize;
                padded *= (end.min(limit) - start) as usize;
                start.max(0) as usize..end.min(xs[a + 2] as isize) as usize
            })
            .collect();
        for i in indices(&[ranges[0].len(), ranges[1].len(), ranges[2].len()]) {
            let at = [oi[0], oi[1], ranges[0].start + i[0], ranges[1].start + i[1]];
            let at = [&at[..], &[ranges[2].start + i[2]]].concat();
            taps.push(f64::from(x[flat(xs, &at)]));
        }
        match (max, include_pad) {
            (true, _) => taps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            (false, true) => taps.iter().sum::<f64>() / padded as f64,
            (false, false) => taps.iter().sum::<f64>() / taps.len() as f64,
        }
    });
    (out.collect(), shape)
}

fn pooling_3d_matches_the_reference(d: &Device) {
    let xs = [2usize, 3, 5, 6, 7];
    let x = random(2200, xs.iter().product(), -3.0, 3.0);
    let (k, s, pads) = ([3, 2, 3], [2, 1, 2], [1, 0, 1, 1, 1, 0]);
    for (op, include_pad) in [
        ("MaxPool", false),
        ("AveragePool", false),
        ("AveragePool", true),
    ] {
        let to_i64 = |v: &[usize]| v.iter().map(|&e| e as i64).collect::<Vec<_>>();
        let attrs = vec![
            ints("kernel_shape", &to_i64(&k)),
            ints("strides", &to_i64(&s)),
            ints("pads", &to_i64(&pads)),
            int_attr("ceil_mode", 1),
            int_attr("count_include_pad", i64::from(include_pad)),
        ];
        let (got, shape) = run(d, op, attrs, &[("x", &x[..], &xs[..])]);
        let geometry = (k, s, pads);
        let (want, want_shape) = pool_reference((&x, &xs), geometry, op == "MaxPool", include_pad);
        let what = format!("3-D {op} count_include_pad {include_pad} on {}", name(d));
        assert_eq!(shape, want_shape, "{what}");
        assert_close(&got, &want, 1e-5, 1e-6, &what);
    }
}
per_backend!(pooling_3d_matches_the_reference);

fn conv_transpose_pads_follow_auto_pad_and_output_shape(d: &Device) {
    let (xs, ws) = ([1usize, 2, 4, 5], [2usize, 3, 3, 4]);
    let x = random(2300, xs.iter().product(), -1.0, 1.0);
    let w = random(2301, ws.iter().product(), -1.0, 1.0);
    let bias = random(2302, 3, -1.0, 1.0);
    let same_lower = attr("auto_pad", 3, |a| a.s = Some(b"SAME_LOWER".to_vec().into()));
    // Full outputs 9 x 16. SAME_LOWER aims at 8 x 15 (the input times the strides), its odd
    // padding before; output_shape 7 x 13 crops 2 and 3, the odd one before too.
    let cases = [
        (same_lower, [1, 1, 0, 0]),
        (ints("output_shape", &[7, 13]), [1, 2, 1, 1]),
    ];
    for (how, [top, left, bottom, right]) in cases {
        let attrs = vec![ints("strides", &[2, 3]), how];
        let inputs = [
            ("x", &x[..], &xs[..]),
            ("w", &w[..], &ws[..]),
            ("b", &bias[..], &[3][..]),
        ];
        let (got, shape) = run(d, "ConvTranspose", attrs, &inputs);
        // The 2-D case as a 3-D one of depth 1.
        let t = Transposed {
            strides: [1, 2, 3],
            dilations: [1; 3],
            pads: [0, top, left, 0, bottom, right],
            output_padding: [0; 3],
            groups: 1,
        };
        let (x5, w5) = ([1, 2, 1, 4, 5], [2, 3, 1, 3, 4]);
        let (want, want_shape) = transposed_reference((&x, &x5), (&w, &w5), &bias, &t);
        let what = format!("ConvTranspose pads {:?} on {}", t.pads, name(d));
        let want_shape = [&want_shape[..2], &want_shape[3..]].concat();
        assert_eq!(shape, want_shape, "{what}");
        assert_close(&got, &want, 1e-4, 1e-5, &what);
    }
}
per_backend!(conv_transpose_pads_follow_auto_pad_and_output_shape);

/// A 3-D convolution in f64, output by output, plus the bias; gives the output and its shape.
fn conv_reference(
    x: (&[f32], &[usize]),
    w: (&[f32], &[usize]),
    bias: &[f32],
    (strides, dilations, pads, groups): ([usize; 3], [usize; 3], [usize; 6], usize),
) -> (Vec<f64>, Vec<usize>) {
    let (xs, ws) = (x.1, w.1);
    let mut shape = vec![xs[0], ws[0]];
    for a in 0..3 {
        let span = (ws[a + 2] - 1) * dilations[a] + 1;
        shape.push((xs[a + 2] + pads[a] + pads[a + 3] - span) / strides[a] + 1);
    }
    let out = indices(&shape).into_iter().map(|oi| {
        let g = oi[1] / (ws[0] / groups);
        let mut acc = f64::from(bias[oi[1]]);
        for wi in indices(&ws[1..]) {
            let mut at = vec![oi[0], g * ws[1] + wi[0]];
            for a in 0..3 {
                let i = (oi[a + 2] * strides[a] + wi[a + 1] * dilations[a]).checked_sub(pads[a]);
                match i.filter(|&i| i < xs[a + 2]) {
                    Some(i) => at.push(i),
                    None => break,
                }
            }
            if at.len() == 5 {
                let wv = f64::from(w.0[flat(ws, &[&[oi[1]][..], &wi].concat())]);
                acc += f64::from(x.0[flat(xs, &at)]) * wv;
            }
        }
        acc
    });
    (out.collect(), shape)
}

fn conv_3d_matches_the_reference(d: &Device) {
    let (xs, ws) = ([2usize, 4, 6, 5, 7], [6usize, 2, 3, 2, 3]);
    let x = random(2400, xs.iter().product(), -1.0, 1.0);
    let w = random(2401, ws.iter().product(), -1.0, 1.0);
    let bias = random(2402, 6, -1.0, 1.0);
    let geometry = ([2, 1, 2], [2, 1, 1], [1, 0, 2, 2, 1, 0], 2);
    let to_i64 = |v: &[usize]| v.iter().map(|&e| e as i64).collect::<Vec<_>>();
    let attrs = vec![
        ints("strides", &to_i64(&geometry.0)),
        ints("dilations", &to_i64(&geometry.1)),
        ints("pads", &to_i64(&geometry.2)),
        int_attr("group", 2),
    ];
    let inputs = [
        ("x", &x[..], &xs[..]),
        ("w", &w[..], &ws[..]),
        ("b", &bias[..], &[6][..]),
    ];
    let (got, shape) = run(d, "Conv", attrs, &inputs);
    let (want, want_shape) = conv_reference((&x, &xs), (&w, &ws), &bias, geometry);
    let what = format!("3-D Conv on {}", name(d));
    assert_eq!(shape, want_shape, "{what}");
    assert_close(&got, &want, 1e-4, 1e-5, &what);
}
per_backend!(conv_3d_matches_the_reference);

/// A plain 2-D convolution of unit stride and padding 1 (x `[c, h, w]`, w `[o, c, 3, 3]`), in
/// f64: `[o, h, w]`.
fn conv3x3_reference(x: &[f32], [c, h, w]: [usize; 3], wt: &[f32], bias: &[f32]) -> Vec<f64> {
    let o = bias.len();
    let mut out = vec![0.0; o * h * w];
    for (k, plane) in out.chunks_mut(h * w).enumerate() {
        for (p, v) in plane.iter_mut().enumerate() {
            let (y, xx) = (p / w, p % w);
            let mut acc = f64::from(bias[k]);
            for ci in 0..c {
                for t in 0..9 {
                    let (iy, ix) = ((y + t / 3).checked_sub(1), (xx + t % 3).checked_sub(1));
                    if let (Some(iy), Some(ix)) = (iy.filter(|&i| i < h), ix.filter(|&i| i < w)) {
                        let xv = f64::from(x[(ci * h + iy) * w + ix]);
                        acc += f64::from(wt[(k * c + ci) * 9 + t]) * xv;
                    }
                }
            }
            *v = acc;
        }
    }
    out
}

/// A convolution long enough (about 2 ms on a 2-core VM) that the cpu runs it on its
/// thread pool from the second run on: every run gives the reference's outputs.
fn repeated_long_runs_match_the_reference(d: &Device) {
    let (x, w, bias) = long_conv_inputs();
    let want = conv3x3_reference(&x, [48, 61, 67], &w, &bias);
    long_conv_runs(d, [&x, &w, &bias], &want, "");
}
per_backend!(repeated_long_runs_match_the_reference);

/// Sessions run from three threads at once, each run long enough for the cpu's thread pool
/// (whose other threads it keeps awake): every run gives the reference's outputs.
fn long_runs_from_several_threads_at_once(d: &Device) {
    let (x, w, bias) = long_conv_inputs();
    let want = conv3x3_reference(&x, [48, 61, 67], &w, &bias);
    std::thread::scope(|s| {
        for t in 0..3 {
            let (inputs, want) = ([&x[..], &w, &bias], &want);
            s.spawn(move || long_conv_runs(d, inputs, want, &format!(", thread {t}")));
        }
    });
}
per_backend!(long_runs_from_several_threads_at_once);

/// The input, weight and bias of [`long_conv_runs`]' convolution, seeded.
fn long_conv_inputs() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    (
        random(2410, 48 * 61 * 67, -1.0, 1.0),
        random(2411, 96 * 48 * 3 * 3, -1.0, 1.0),
        random(2412, 96, -1.0, 1.0),
    )
}

/// Three runs of a 3 x 3 Conv (48 -> 96 channels over 61 x 67, padded) of `x`, `w` and
/// `bias`, each checked against `want`.
fn long_conv_runs(d: &Device, [x, w, bias]: [&[f32]; 3], want: &[f64], tag: &str) {
    let (xs, ws) = ([1usize, 48, 61, 67], [96usize, 48, 3, 3]);
    let mut n = node("Conv", "op", &["x", "w", "b"], &["y"]);
    n.attribute = vec![ints("pads", &[1, 1, 1, 1])];
    let g = GraphProto {
        node: vec![n],
        input: ["x", "w", "b"].iter().map(|&i| info(i, FLOAT)).collect(),
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    let s = Session::from_bytes(d, model(g, 17), SessionOptions::default()).unwrap();
    let tensors = [tensor(d, x, &xs), tensor(d, w, &ws), tensor(d, bias, &[96])];
    let feeds = [("x", &tensors[0]), ("w", &tensors[1]), ("b", &tensors[2])];
    for run in 0..3 {
        let y = &s.run(&feeds).unwrap()[0].1;
        let what = format!("run {run} of a long Conv on {}{tag}", name(d));
        assert_eq!(y.shape(), &[1, 96, 61, 67], "{what}");
        assert_close(&read(y), want, 1e-4, 1e-4, &what);
    }
}

/// A stride or dilation below 1 and a negative padding, output padding or output shape are
/// refused when the model loads, naming the attribute.
#[test]
fn out_of_range_geometry_is_refused_at_load() {
    let d = &crate::common::devices()[0];
    let cases = [
        (
            "ConvTranspose",
            ints("strides", &[0, 1]),
            "strides [0, 1]: expected values ≥ 1",
        ),
        (
            "ConvTranspose",
            ints("output_padding", &[-1, 0]),
            "output_padding [-1, 0]",
        ),
        (
            "ConvTranspose",
            ints("output_shape", &[4, -2]),
            "output_shape [4, -2]",
        ),
        (
            "Conv",
            ints("pads", &[0, -1, 0, 0]),
            "pads [0, -1, 0, 0]: expected values ≥ 0",
        ),
        ("AveragePool", ints("strides", &[1, 0]), "strides [1, 0]"),
    ];
    for (op, bad, want) in cases {
        let mut n = node(op, "op", &["x", "w"], &["y"]);
        n.attribute = vec![ints("kernel_shape", &[2, 2]), bad];
        let g = GraphProto {
            node: vec![n],
            input: vec![info("x", FLOAT), info("w", FLOAT)],
            output: vec![info("y", FLOAT)],
            ..Default::default()
        };
        let e = Session::from_bytes(d, model(g, 17), SessionOptions::default()).err();
        let e = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want) && e.contains(op), "{op}: {e}");
    }
}
