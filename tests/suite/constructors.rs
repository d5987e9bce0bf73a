//! Tensors made by rule (`full`, `ones`, `arange`, seeded `random_uniform` and
//! `random_normal`), binary ops with a number operand and the `std::ops` operators, and
//! `concat` of many tensors: every device against f64 references on odd shapes.

use half::f16;
use unicompute::ops::BinaryOp;
use unicompute::{DType, Tensor};

use crate::common::{assert_close, devices, expect_err, name, per_backend, random, read, tensor};
use unicompute::Device;

/// Every dtype, read back as f64.
fn values(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DType::I32 => t
            .to_vec_blocking::<i32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        DType::U32 => t
            .to_vec_blocking::<u32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        DType::I64 => t
            .to_vec_blocking::<i64>()
            .unwrap()
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        _ => read(&t.cast(DType::F32).unwrap())
            .into_iter()
            .map(f64::from)
            .collect(),
    }
}

const DTYPES: [DType; 6] = [
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::U32,
    DType::I64,
];

fn full_and_ones_fill_every_dtype(d: &Device) {
    for dtype in DTYPES {
        for (shape, value) in [(vec![3, 5, 7], 3.0), (vec![], 7.0), (vec![4, 0, 2], 1.0)] {
            let t = Tensor::full(d, &shape, value, dtype).unwrap();
            assert_eq!((t.shape(), t.dtype()), (&shape[..], dtype));
            let n = shape.iter().product();
            assert_eq!(values(&t), vec![value; n], "full {dtype} on {}", name(d));
        }
        let ones = Tensor::ones(d, &[2, 9], dtype).unwrap();
        assert_eq!(values(&ones), vec![1.0; 18], "ones {dtype} on {}", name(d));
    }
    let big = Tensor::full(d, &[3], -2_147_483_648.0, DType::I32).unwrap();
    assert_eq!(big.to_vec_blocking::<i32>().unwrap(), vec![i32::MIN; 3]);
    let wide = Tensor::full(d, &[5], 2f64.powi(40) + 3.0, DType::I64).unwrap();
    assert_eq!(
        wide.to_vec_blocking::<i64>().unwrap(),
        vec![(1i64 << 40) + 3; 5]
    );
    expect_err(
        Tensor::full(d, &[2], 2.5, DType::I32),
        "INVALID",
        &["2.5", "whole"],
        d,
    );
    expect_err(
        Tensor::full(d, &[2], -1.0, DType::U32),
        "OUT_OF_RANGE",
        &["-1"],
        d,
    );
}
per_backend!(full_and_ones_fill_every_dtype);

#[test]
fn arange_follows_numpy() {
    let cases: [(f64, f64, f64); 5] = [
        (0.0, 10.0, 3.0),
        (1.5, -2.0, -0.7),
        (5.0, 1.0, 1.0),
        (-3.0, 4.1, 0.37),
        (0.0, 1.0, 1.0),
    ];
    for d in devices() {
        for (start, stop, step) in cases {
            let n = ((stop - start) / step).ceil().max(0.0) as usize;
            let want: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
            let t = Tensor::arange(d, start, stop, step, DType::F32).unwrap();
            assert_eq!(t.shape(), &[n]);
            let what = format!("arange({start}, {stop}, {step}) on {}", name(d));
            assert_close(&read(&t), &want, 1e-6, 1e-6, &what);
        }
        let ints = Tensor::arange(d, -7.0, 20.0, 4.0, DType::I64).unwrap();
        assert_eq!(
            ints.to_vec_blocking::<i64>().unwrap(),
            vec![-7, -3, 1, 5, 9, 13, 17]
        );
        expect_err(
            Tensor::arange(d, 0.0, 1.0, 0.0, DType::F32),
            "INVALID",
            &["step"],
            d,
        );
        expect_err(
            Tensor::arange(d, 0.0, 2.0, 0.5, DType::I32),
            "INVALID",
            &["0.5", "whole"],
            d,
        );
    }
}

/// SplitMix64's `i`-th word of `seed`, written out independently of the library.
fn splitmix(seed: u64, i: u64) -> u64 {
    let mut state = seed;
    let mut z = 0;
    for _ in 0..=i {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
    }
    z
}

fn unit(seed: u64, i: u64) -> f64 {
    (splitmix(seed, i) >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn random_uniform_is_splitmix64_on_every_device() {
    let (shape, seed) = ([7, 3, 5], 0xDEC0_DE42);
    let n = 105;
    let want: Vec<f64> = (0..n).map(|i| -2.0 + 5.0 * unit(seed, i as u64)).collect();
    let cpu = read(
        &Tensor::random_uniform(&devices()[0], &shape, [-2.0, 3.0], seed, DType::F32).unwrap(),
    );
    for d in devices() {
        let t = Tensor::random_uniform(d, &shape, [-2.0, 3.0], seed, DType::F32).unwrap();
        let got = read(&t);
        assert_close(&got, &want, 1e-6, 0.0, &format!("uniform on {}", name(d)));
        assert_eq!(got, cpu, "the same seed gives the same bits on {}", name(d));
        let ints = Tensor::random_uniform(d, &[n], [-4.0, 9.0], seed, DType::I32).unwrap();
        let floor: Vec<f64> = (0..n)
            .map(|i| (-4.0 + 13.0 * unit(seed, i as u64)).floor())
            .collect();
        assert_eq!(values(&ints), floor, "integer uniform on {}", name(d));
        let other =
            read(&Tensor::random_uniform(d, &shape, [-2.0, 3.0], seed + 1, DType::F32).unwrap());
        assert_ne!(other, got, "another seed, other values");
        let bad = Tensor::random_uniform(d, &[2], [1.0, 1.0], 0, DType::F32);
        expect_err(bad, "INVALID", &["low 1", "high 1"], d);
    }
}

#[test]
fn random_normal_is_box_muller_over_splitmix64() {
    let (n, seed) = (20_001, 7);
    let want: Vec<f64> = (0..n as u64)
        .map(|i| {
            let pair = i & !1;
            let r = (-2.0 * (1.0 - unit(seed, pair)).ln()).sqrt();
            let a = 2.0 * std::f64::consts::PI * unit(seed, pair + 1);
            1.5 + 0.5 * r * if i % 2 == 0 { a.cos() } else { a.sin() }
        })
        .collect();
    for d in devices() {
        let got = read(&Tensor::random_normal(d, &[n], [1.5, 0.5], seed, DType::F32).unwrap());
        assert_close(&got, &want, 1e-6, 1e-6, &format!("normal on {}", name(d)));
        let mean = got.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
        let var = got
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        assert!(
            (mean - 1.5).abs() < 0.02 && (var.sqrt() - 0.5).abs() < 0.02,
            "{mean} {var}"
        );
        let half = Tensor::random_normal(d, &[9, 3], [0.0, 1.0], seed, DType::F16).unwrap();
        let rounded: Vec<f64> = want[..27]
            .iter()
            .map(|v| f64::from(f16::from_f64((v - 1.5) * 2.0)))
            .collect();
        assert_eq!(values(&half), rounded, "f16 normal on {}", name(d));
        let ints = Tensor::random_normal(d, &[2], [0.0, 1.0], 0, DType::I32);
        expect_err(ints, "DTYPE", &["random_normal", "float"], d);
    }
}

#[test]
fn numbers_as_operands_match_the_reference() {
    let shape = [3, 7, 5];
    let x = random(3100, 105, 0.5, 3.0);
    let ops = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Pow,
    ];
    for d in devices() {
        let xt = tensor(d, &x, &shape);
        for op in ops {
            let s = 1.75;
            let want: Vec<f64> = x.iter().map(|&v| op.eval(f64::from(v), s)).collect();
            let got = xt.binary_scalar(op, s).unwrap();
            assert_eq!(got.shape(), &shape);
            assert_close(
                &read(&got),
                &want,
                1e-5,
                1e-6,
                &format!("x {} {s} on {}", op.name(), name(d)),
            );
            let want: Vec<f64> = x.iter().map(|&v| op.eval(s, f64::from(v))).collect();
            let got = xt.scalar_binary(s, op).unwrap();
            assert_close(
                &read(&got),
                &want,
                1e-5,
                1e-6,
                &format!("{s} {} x on {}", op.name(), name(d)),
            );
        }
        let want: Vec<f64> = x.iter().map(|&v| f64::from(v) * 3.0 - 0.25).collect();
        assert_close(
            &read(&xt.affine(3.0, -0.25).unwrap()),
            &want,
            1e-6,
            1e-6,
            "affine",
        );
        let ints = Tensor::from_slice(d, &[-7i32, 0, 5, 9, 2_000_000_000], &[5]).unwrap();
        let got = ints
            .mul_scalar(3.0)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap();
        let want: Vec<i32> = [-7i32, 0, 5, 9, 2_000_000_000]
            .iter()
            .map(|v| v.wrapping_mul(3))
            .collect();
        assert_eq!(got, want, "i32 times 3 wraps on {}", name(d));
        expect_err(ints.add_scalar(0.5), "INVALID", &["0.5", "whole"], d);
        let halves = xt.cast(DType::F16).unwrap().add_scalar(1.0).unwrap();
        assert_eq!(halves.dtype(), DType::F16);
        let want: Vec<f64> = x
            .iter()
            .map(|&v| f64::from(f16::from_f32(v).to_f32()) + 1.0)
            .collect();
        assert_close(
            &read(&halves.cast(DType::F32).unwrap()),
            &want,
            1e-3,
            0.0,
            "f16 + 1",
        );
    }
}

#[test]
fn operators_on_tensors_and_numbers() {
    let (a, b) = (random(3200, 35, -2.0, 2.0), random(3201, 7, 0.5, 2.0));
    for d in devices() {
        let (at, bt) = (tensor(d, &a, &[5, 7]), tensor(d, &b, &[7]));
        let r = |t: unicompute::Result<Tensor>| read(&t.unwrap());
        let ab = |f: fn(f64, f64) -> f64| -> Vec<f64> {
            (0..35)
                .map(|i| f(f64::from(a[i]), f64::from(b[i % 7])))
                .collect()
        };
        assert_close(&r(&at + &bt), &ab(|x, y| x + y), 1e-6, 1e-6, "a + b");
        assert_close(&r(&at - bt.clone()), &ab(|x, y| x - y), 1e-6, 1e-6, "a - b");
        assert_close(&r(at.clone() * &bt), &ab(|x, y| x * y), 1e-6, 1e-6, "a * b");
        assert_close(
            &r(at.clone() / bt.clone()),
            &ab(|x, y| x / y),
            1e-6,
            1e-6,
            "a / b",
        );
        assert_close(&r(&at * 2.0), &ab(|x, _| x * 2.0), 1e-6, 1e-6, "a * 2");
        assert_close(&r(&at + 0.5f32), &ab(|x, _| x + 0.5), 1e-6, 1e-6, "a + 0.5");
        assert_close(&r(1.0 - &at), &ab(|x, _| 1.0 - x), 1e-6, 1e-6, "1 - a");
        assert_close(
            &r(3.0f32 / &bt),
            &b.iter().map(|&y| 3.0 / f64::from(y)).collect::<Vec<_>>(),
            1e-6,
            1e-6,
            "3 / b",
        );
        assert_close(&r(-&at), &ab(|x, _| -x), 0.0, 0.0, "-a");
        let ints = Tensor::from_slice(d, &[4i64, -9, 0], &[3]).unwrap();
        assert_eq!(
            (-&ints).unwrap().to_vec_blocking::<i64>().unwrap(),
            vec![-4, 9, 0]
        );
        let mismatch = &at + &Tensor::from_slice(d, &[1i32; 7], &[7]).unwrap();
        expect_err(mismatch, "DTYPE", &["add"], d);
    }
}

fn concat_joins_many_tensors_with_one_copy_each(d: &Device) {
    let shapes = [[2, 3, 5], [2, 1, 5], [2, 0, 5], [2, 4, 5]];
    let data: Vec<Vec<f32>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| random(3300 + i as u64, s.iter().product(), -1.0, 1.0))
        .collect();
    let ts: Vec<Tensor> = shapes
        .iter()
        .zip(&data)
        .map(|(s, v)| tensor(d, v, s))
        .collect();
    for dtype in [DType::F32, DType::F16, DType::I64] {
        let cast: Vec<Tensor> = ts.iter().map(|t| t.cast(dtype).unwrap()).collect();
        let got = Tensor::concat(&cast.iter().collect::<Vec<_>>(), 1).unwrap();
        assert_eq!(got.shape(), &[2, 8, 5]);
        let mut want = Vec::new();
        for n in 0..2 {
            for (s, t) in shapes.iter().zip(&cast) {
                let v = values(t);
                want.extend_from_slice(&v[n * s[1] * 5..(n + 1) * s[1] * 5]);
            }
        }
        assert_eq!(values(&got), want, "concat of {dtype} on {}", name(d));
    }
    let view = ts[0].permute(&[2, 1, 0]).unwrap();
    let other = tensor(d, &data[3], &[5, 4, 2]);
    let got = Tensor::concat(&[&view, &other, &view], 1).unwrap();
    assert_eq!(got.shape(), &[5, 10, 2]);
    let v = values(&got);
    assert_eq!(
        v[10 * 2 + 2 * 2 + 1],
        f64::from(data[0][15 + 2 * 5 + 1]),
        "a strided input"
    );
    let ints = Tensor::from_slice(d, &[1i32; 10], &[2, 1, 5]).unwrap();
    expect_err(
        Tensor::concat(&[&ts[0], &ts[1], &ints], 1),
        "DTYPE",
        &["input 2"],
        d,
    );
    expect_err(
        Tensor::concat(&[&ts[0], &ts[3], &other], 1),
        "SHAPE",
        &["input 2"],
        d,
    );
}
per_backend!(concat_joins_many_tensors_with_one_copy_each);
