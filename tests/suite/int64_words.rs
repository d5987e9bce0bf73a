//! i64 casts and comparisons on a webgpu device opened without `shader-int64`
//! (`DeviceOptions::use_int64` off), where they run as pairs of 32-bit words: seeded values
//! with the edge cases, odd lengths, outputs poisoned, against references computed here with
//! Rust's `as` and comparisons.

use crate::common::{devices, name, webgpu_without_int64 as without_int64};
use crate::onnx_load::{graph, relu_model};
use crate::onnx_recur::{info, int_attr};
use half::{bf16, f16};
use unicompute::onnx::proto::{NodeProto, TensorProto};
use unicompute::onnx::{Session, SessionOptions};
use unicompute::{BinaryOp, DType, Device, Tensor};

/// Odd lengths: one element, a prime, past one workgroup and past 256 workgroups.
const LENGTHS: [usize; 4] = [1, 7, 257, 65_537];

/// The edge cases, and i64 -> f32 roundings: ties to even (down and up), just past a tie,
/// and carries into the exponent.
const EDGES: [i64; 20] = [
    i64::MIN,
    i64::MAX,
    -1,
    0,
    1,
    1 << 31,
    1 << 32,
    (1 << 32) + 1,
    (1 << 32) - 1,
    -(1 << 31),
    -(1 << 32) - 1,
    (1 << 53) + 1,
    (1 << 24) + 1,
    (1 << 24) + 3,
    -(1 << 24) - 3,
    (1 << 40) + (1 << 16),
    (1 << 40) + (3 << 16),
    (1 << 40) + (1 << 16) + 1,
    -(1 << 40) - (1 << 16) - 1,
    (1 << 33) - 1,
];

/// `n` seeded i64 values: the edge cases, then values of random magnitude (2^0 to 2^63).
fn values(seed: u64, n: usize) -> Vec<i64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let random = std::iter::repeat_with(move || rng.i64(..) >> rng.u32(0..64));
    EDGES.iter().copied().chain(random).take(n).collect()
}

fn check<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: element {i}");
    }
}

/// `x` cast to T's dtype read back, against `want` applied to each source element.
fn cast_to<S: Copy, T: unicompute::Element + PartialEq + std::fmt::Debug>(
    x: &Tensor,
    src: &[S],
    dtype: DType,
    want: impl Fn(S) -> T,
    what: &str,
) {
    let got = x.cast(dtype).unwrap().to_vec_blocking::<T>().unwrap();
    let want: Vec<T> = src.iter().map(|&v| want(v)).collect();
    check(&got, &want, &format!("{what} -> {dtype}"));
}

#[test]
fn i64_casts_without_shader_int64() {
    let Some(d) = without_int64() else { return };
    for (k, n) in LENGTHS.into_iter().enumerate() {
        let v = values(k as u64 + 1, n);
        let x = Tensor::from_slice(&d, &v, &[n]).unwrap();
        let what = format!("i64[{n}] on {}", name(&d));
        cast_to(&x, &v, DType::F32, |v| v as f32, &what);
        cast_to(&x, &v, DType::F16, |v| f16::from_f32(v as f32), &what);
        cast_to(&x, &v, DType::BF16, |v| bf16::from_f32(v as f32), &what);
        cast_to(&x, &v, DType::I32, |v| v as i32, &what);
        cast_to(&x, &v, DType::U32, |v| v as u32, &what);
        cast_to(&x, &v, DType::U8, |v| v as u8, &what);
        cast_to(&x, &v, DType::I8, |v| v as i8, &what);
        let got = x.cast(DType::Bool).unwrap().to_bools_blocking().unwrap();
        let want: Vec<bool> = v.iter().map(|&v| v != 0).collect();
        check(&got, &want, &format!("{what} -> bool"));
        // Every value back from the low word's types, and whole through i64 -> i64.
        cast_to(&x, &v, DType::I64, |v| v, &what);
        casts_to_i64(&d, &v, &what);
    }
}

/// Casts of `v` (made into each dtype here) to i64 on `d`.
fn casts_to_i64(d: &Device, v: &[i64], what: &str) {
    let n = v.len();
    let i32s: Vec<i32> = v.iter().map(|&v| v as i32).collect();
    let t = Tensor::from_slice(d, &i32s, &[n]).unwrap();
    cast_to(&t, &i32s, DType::I64, i64::from, &format!("{what} as i32"));
    let u32s: Vec<u32> = v.iter().map(|&v| v as u32).collect();
    let t = Tensor::from_slice(d, &u32s, &[n]).unwrap();
    cast_to(&t, &u32s, DType::I64, i64::from, &format!("{what} as u32"));
    let u8s: Vec<u8> = v.iter().map(|&v| v as u8).collect();
    let t = Tensor::from_slice(d, &u8s, &[n]).unwrap();
    cast_to(&t, &u8s, DType::I64, i64::from, &format!("{what} as u8"));
    let i8s: Vec<i8> = v.iter().map(|&v| v as i8).collect();
    let t = Tensor::from_slice(d, &i8s, &[n]).unwrap();
    cast_to(&t, &i8s, DType::I64, i64::from, &format!("{what} as i8"));
    let bools: Vec<bool> = v.iter().map(|&v| v % 3 == 0).collect();
    let t = Tensor::from_bools(d, &bools, &[n]).unwrap();
    cast_to(
        &t,
        &bools,
        DType::I64,
        i64::from,
        &format!("{what} as bool"),
    );
    // Floats: the values scaled over the whole range and past it, NaN and infinities.
    let mut f32s: Vec<f32> = v.iter().map(|&v| v as f32 * 1.5).collect();
    for (i, s) in [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.7,
        2.5e9,
        -9.3e18,
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(slot) = f32s.get_mut(i * 2 + 1) {
            *slot = s;
        }
    }
    let t = Tensor::from_slice(d, &f32s, &[n]).unwrap();
    cast_to(
        &t,
        &f32s,
        DType::I64,
        |f| f as i64,
        &format!("{what} as f32"),
    );
    let f16s: Vec<f16> = f32s.iter().map(|&f| f16::from_f32(f / 1e15)).collect();
    let t = Tensor::from_slice(d, &f16s, &[n]).unwrap();
    cast_to(
        &t,
        &f16s,
        DType::I64,
        |f| f.to_f32() as i64,
        &format!("{what} as f16"),
    );
    let bf16s: Vec<bf16> = f32s.iter().map(|&f| bf16::from_f32(f)).collect();
    let t = Tensor::from_slice(d, &bf16s, &[n]).unwrap();
    cast_to(
        &t,
        &bf16s,
        DType::I64,
        |f| f.to_f32() as i64,
        &format!("{what} as bf16"),
    );
}

/// The comparisons, logical ops, minimum and maximum of i64 and their references.
fn reference(op: BinaryOp, a: i64, b: i64) -> i64 {
    let t = |c: bool| i64::from(c);
    match op {
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Equal => t(a == b),
        BinaryOp::Less => t(a < b),
        BinaryOp::LessEqual => t(a <= b),
        BinaryOp::Greater => t(a > b),
        BinaryOp::GreaterEqual => t(a >= b),
        BinaryOp::And => t(a != 0 && b != 0),
        BinaryOp::Or => t(a != 0 || b != 0),
        BinaryOp::Xor => t((a != 0) != (b != 0)),
        other => unreachable!("{} is not compared as words", other.name()),
    }
}

const WORD_OPS: [BinaryOp; 10] = [
    BinaryOp::Min,
    BinaryOp::Max,
    BinaryOp::Equal,
    BinaryOp::Less,
    BinaryOp::LessEqual,
    BinaryOp::Greater,
    BinaryOp::GreaterEqual,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::Xor,
];

#[test]
fn i64_comparisons_without_shader_int64() {
    let Some(d) = without_int64() else { return };
    for (k, n) in LENGTHS.into_iter().enumerate() {
        let a = values(k as u64 + 11, n);
        // Equal values, ones differing only in the low or the high word, and others.
        let other = values(k as u64 + 21, n);
        let b: Vec<i64> = (0..n)
            .map(|i| match i % 4 {
                0 => a[(i + 1) % n],
                1 => a[i] ^ 1,
                2 => a[i] ^ (1 << 40),
                _ => other[i],
            })
            .chain([a[0]])
            .collect();
        let ta = Tensor::from_slice(&d, &a, &[n]).unwrap();
        let tb = Tensor::from_slice(&d, &b[..n], &[n]).unwrap();
        // A scalar broadcast against every element, as ONNX models compare to constants.
        let scalar = Tensor::from_slice(&d, &b[n..], &[1]).unwrap();
        for op in WORD_OPS {
            for (t, bs) in [(&tb, &b[..n]), (&scalar, &b[n..])] {
                let what = format!(
                    "{} of i64[{n}] and [{}] on {}",
                    op.name(),
                    bs.len(),
                    name(&d)
                );
                let got = ta.binary(op, t).unwrap();
                let want: Vec<i64> = (0..n)
                    .map(|i| reference(op, a[i], bs[i % bs.len()]))
                    .collect();
                if op.is_logic() {
                    let got = got.to_bools_blocking().unwrap();
                    let want: Vec<bool> = want.iter().map(|&w| w != 0).collect();
                    check(&got, &want, &what);
                } else {
                    check(&got.to_vec_blocking::<i64>().unwrap(), &want, &what);
                }
            }
        }
    }
}

/// `y = Cast<float>(x)`, `z = Equal(x, c)` for an int64 input `x` and an int64 scalar `c`:
/// what BERT's attention mask and Silero VAD's state input meet first.
fn cast_and_equal_model(c: i64) -> Vec<u8> {
    relu_model(|m| {
        let g = graph(m);
        g.node = vec![
            NodeProto {
                input: vec!["x".into()],
                output: vec!["y".into()],
                op_type: Some("Cast".into()),
                attribute: vec![int_attr("to", 1)],
                ..Default::default()
            },
            NodeProto {
                input: vec!["x".into(), "c".into()],
                output: vec!["z".into()],
                op_type: Some("Equal".into()),
                ..Default::default()
            },
        ];
        g.initializer = vec![TensorProto {
            name: Some("c".into()),
            data_type: Some(7),
            int64_data: vec![c],
            ..Default::default()
        }];
        g.input = vec![info("x", 7)];
        g.output = vec![info("y", 1), info("z", 9)];
    })
}

/// An ONNX model casting an int64 input to float and comparing it with Equal runs on a
/// webgpu device without `shader-int64` and gives the cpu's outputs (and the exact ones).
#[test]
fn an_int64_model_runs_without_shader_int64() {
    let Some(d) = without_int64() else { return };
    let cpu = &devices()[0];
    let x = values(31, 257);
    let c = x[40];
    let model = cast_and_equal_model(c);
    let run = |d: &Device| {
        let session = Session::from_bytes(d, model.clone(), SessionOptions::default()).unwrap();
        let t = Tensor::from_slice(d, &x, &[x.len()]).unwrap();
        let out = session.run(&[("x", &t)]).unwrap();
        let named = |n: &str| &out.iter().find(|(name, _)| name == n).unwrap().1;
        let y = named("y").to_vec_blocking::<f32>().unwrap();
        (y, named("z").to_bools_blocking().unwrap())
    };
    let (got, want) = (run(&d), run(cpu));
    let exact: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    check(&want.0, &exact, "Cast on the cpu");
    check(&got.0, &want.0, &format!("Cast on {}", name(&d)));
    check(&got.1, &want.1, &format!("Equal on {}", name(&d)));
    assert!(got.1[40], "Equal finds the constant's own element");
}
