//! Chains of elementwise ops in one kernel (`ops::chain`): seeded random chains of unary and
//! binary ops, scalars and casts over broadcast and strided inputs of f32, f16 and bf16, on
//! every device against the f64 reference of the same chain and against the same ops run one
//! by one; every op of the tables in a chain; a launch past 65,535 workgroups; and the
//! refusals of malformed chains.

use crate::common::{assert_close, devices, name, per_backend, random, read, tensor};
use unicompute::ops::chain::{self, Chain, Step, Value, MAX_INPUTS};
use unicompute::{BinaryOp, DType, Device, Error, Tensor, UnaryOp};

/// Unary ops whose slope is at most about 1.5: errors stay the size of the values through
/// any chain of them.
const TAME_UNARY: [UnaryOp; 13] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Relu,
    UnaryOp::GeluErf,
    UnaryOp::GeluTanh,
    UnaryOp::Silu,
    UnaryOp::Erf,
    UnaryOp::Softplus,
    UnaryOp::Hardswish,
];

/// Binary ops without poles.
const TAME_BINARY: [BinaryOp; 5] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Min,
    BinaryOp::Max,
];

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// Input shapes broadcast together (the output's shape first): 1, primes, more than 65,536
/// elements, rank 3 with broadcasts on every axis.
const CASES: &[&[&[usize]]] = &[
    &[&[1]],
    &[&[7], &[1]],
    &[&[257], &[257], &[1]],
    &[&[65_539], &[65_539]],
    &[&[3, 5, 11], &[5, 1], &[3, 1, 11]],
    &[&[2, 1, 131], &[7, 1], &[1]],
];

/// A chain being built, with the dtype of every value (inputs, then steps).
struct Builder {
    chain: Chain,
    dtypes: Vec<DType>,
    inputs: usize,
}

impl Builder {
    fn dtype(&self, v: Value) -> DType {
        match v {
            Value::Input(i) => self.dtypes[i],
            Value::Step(i) => self.dtypes[self.inputs + i],
        }
    }

    fn push(&mut self, step: Step, dtype: DType) -> Value {
        self.dtypes.push(dtype);
        self.chain.push(step)
    }

    /// `v` in `dtype`: itself, or a cast.
    fn as_dtype(&mut self, v: Value, dtype: DType) -> Value {
        match self.dtype(v) == dtype {
            true => v,
            false => self.push(Step::Cast(v, dtype), dtype),
        }
    }
}

/// A random chain over inputs of `dtypes`: 1 to 8 steps on a running value, each a unary op,
/// a binary op with an input (either side) or with a scalar, or a cast; then the inputs not
/// yet read added in (cast to the running value's dtype), so that every input leads to the
/// output.
fn random_chain(rng: &mut fastrand::Rng, dtypes: &[DType]) -> Chain {
    let mut b = Builder {
        chain: Chain::new(),
        dtypes: dtypes.to_vec(),
        inputs: dtypes.len(),
    };
    let mut current = Value::Input(0);
    let mut read = vec![false; dtypes.len()];
    read[0] = true;
    for _ in 0..rng.usize(1..=8) {
        let d = b.dtype(current);
        let op = TAME_BINARY[rng.usize(..TAME_BINARY.len())];
        current = match rng.u8(0..4) {
            0 => b.push(
                Step::Unary(TAME_UNARY[rng.usize(..TAME_UNARY.len())], current),
                d,
            ),
            1 => {
                let k = rng.usize(..dtypes.len());
                read[k] = true;
                let other = b.as_dtype(Value::Input(k), d);
                match rng.bool() {
                    true => b.push(Step::Binary(op, current, other), d),
                    false => b.push(Step::Binary(op, other, current), d),
                }
            }
            2 => {
                let s = b.push(Step::Scalar(f64::from(rng.f32()) * 4.0 - 2.0, d), d);
                b.push(Step::Binary(op, s, current), d)
            }
            _ => {
                let to = FLOATS[rng.usize(..3)];
                b.push(Step::Cast(current, to), to)
            }
        };
    }
    for k in (0..dtypes.len()).filter(|&k| !read[k]) {
        let d = b.dtype(current);
        let other = b.as_dtype(Value::Input(k), d);
        current = b.push(Step::Binary(BinaryOp::Add, current, other), d);
    }
    b.chain
}

/// `v` rounded to `dtype` (16-bit floats to nearest even).
fn round(v: f32, dtype: DType) -> f32 {
    match dtype {
        DType::F16 => unicompute::f16::from_f32(v).to_f32(),
        DType::BF16 => unicompute::bf16::from_f32(v).to_f32(),
        _ => v,
    }
}

/// Seeded inputs of `shapes` and `dtypes` on `d` (values in [-2, 2] rounded to their dtype),
/// the first one of rank 3 a permuted (strided) view, with their values in row-major order.
fn inputs(
    d: &Device,
    shapes: &[&[usize]],
    dtypes: &[DType],
    seed: u64,
) -> (Vec<Tensor>, Vec<Vec<f64>>) {
    let one = |(k, (shape, &dtype)): (usize, (&&[usize], &DType))| {
        let n = shape.iter().product();
        let values: Vec<f32> = random(seed + k as u64, n, -2.0, 2.0)
            .into_iter()
            .map(|v| round(v, dtype))
            .collect();
        let t = match (k, shape.len()) {
            (0, 3) => {
                let [a, b, c] = [shape[0], shape[1], shape[2]];
                let mut flipped = vec![0.0; n];
                for (at, &v) in values.iter().enumerate() {
                    let (i, j, l) = (at / (b * c), at / c % b, at % c);
                    flipped[(l * b + j) * a + i] = v;
                }
                let base = tensor(d, &flipped, &[c, b, a]).cast(dtype).unwrap();
                base.permute(&[2, 1, 0]).unwrap()
            }
            _ => tensor(d, &values, shape).cast(dtype).unwrap(),
        };
        (t, values.iter().map(|&v| f64::from(v)).collect())
    };
    shapes.iter().zip(dtypes).enumerate().map(one).unzip()
}

/// `chain` of `inputs` on the device, read back as f32.
fn run(d: &Device, c: &Chain, inputs: &[Tensor]) -> Vec<f32> {
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let out = chain::chain(&d.queue(), c, &refs).unwrap();
    read(&out.cast(DType::F32).unwrap())
}

/// The f64 reference of `c` over `values` of `shapes` and `dtypes`.
fn reference(c: &Chain, values: &[Vec<f64>], shapes: &[&[usize]], dtypes: &[DType]) -> Vec<f64> {
    let inputs: Vec<(&[f64], &[usize], DType)> = values
        .iter()
        .zip(shapes)
        .zip(dtypes)
        .map(|((v, &s), &d)| (&v[..], s, d))
        .collect();
    chain::reference(c, &inputs).unwrap()
}

/// The relative tolerance of a chain that has values of `dtypes` (16-bit values round at
/// each step, and a value on a rounding boundary may go either way).
fn tolerance(c: &Chain, dtypes: &[DType]) -> f64 {
    let casts = c.steps().iter().filter_map(|s| match s {
        Step::Cast(_, d) | Step::Scalar(_, d) => Some(*d),
        _ => None,
    });
    let all: Vec<DType> = dtypes.iter().copied().chain(casts).collect();
    if all.contains(&DType::BF16) {
        4e-2
    } else if all.contains(&DType::F16) {
        8e-3
    } else {
        1e-4
    }
}

/// Random dtypes for `n` inputs: every one f32 for even `trial`s.
fn dtypes(rng: &mut fastrand::Rng, n: usize, trial: usize) -> Vec<DType> {
    (0..n)
        .map(|_| match trial % 2 {
            0 => DType::F32,
            _ => FLOATS[rng.usize(..3)],
        })
        .collect()
}

fn random_chains_match_the_reference(d: &Device) {
    for (case, shapes) in CASES.iter().enumerate() {
        for trial in 0..6 {
            let seed = (31_000 + case * 100 + trial) as u64;
            let mut rng = fastrand::Rng::with_seed(seed);
            let dtypes = dtypes(&mut rng, shapes.len(), trial);
            let c = random_chain(&mut rng, &dtypes);
            let (tensors, values) = inputs(d, shapes, &dtypes, seed);
            let want = reference(&c, &values, shapes, &dtypes);
            let got = run(d, &c, &tensors);
            let tol = tolerance(&c, &dtypes);
            let scale = want.iter().fold(1f64, |m, w| m.max(w.abs()));
            let what = format!(
                "{c:?} on {shapes:?} of {dtypes:?} on {} seed {seed}",
                name(d)
            );
            assert_close(&got, &want, tol, tol * scale, &what);
        }
    }
}
per_backend!(random_chains_match_the_reference);

/// `c` run as ops one by one: `unary`, `binary`, `cast`, a scalar as a rank-0 tensor.
fn by_ops(d: &Device, c: &Chain, inputs: &[Tensor]) -> Tensor {
    let mut values: Vec<Tensor> = Vec::new();
    let at = |values: &[Tensor], v: Value| match v {
        Value::Input(i) => inputs[i].clone(),
        Value::Step(i) => values[i].clone(),
    };
    for step in c.steps() {
        let t = match *step {
            Step::Unary(op, x) => at(&values, x).unary(op),
            Step::Binary(op, a, b) => at(&values, a).binary(op, &at(&values, b)),
            Step::Scalar(v, dtype) => Tensor::full(d, &[], v, dtype),
            Step::Cast(x, dtype) => at(&values, x).cast(dtype),
        };
        values.push(t.unwrap());
    }
    values.pop().unwrap()
}

fn chains_equal_their_ops_one_by_one(d: &Device) {
    for (case, shapes) in CASES.iter().enumerate().skip(3) {
        for trial in 0..4 {
            let seed = (32_000 + case * 100 + trial) as u64;
            let mut rng = fastrand::Rng::with_seed(seed);
            let dtypes = dtypes(&mut rng, shapes.len(), trial);
            let c = random_chain(&mut rng, &dtypes);
            let (tensors, _) = inputs(d, shapes, &dtypes, seed);
            let refs: Vec<&Tensor> = tensors.iter().collect();
            let fused = tensors[0].apply_chain(&c, &refs[1..]).unwrap();
            let alone = by_ops(d, &c, &tensors);
            assert_eq!(fused.dtype(), alone.dtype(), "{c:?}");
            assert_eq!(fused.shape(), alone.shape(), "{c:?}");
            let (got, want) = (
                read(&fused.cast(DType::F32).unwrap()),
                read(&alone.cast(DType::F32).unwrap()),
            );
            let what = format!("{c:?} of {dtypes:?} on {} seed {seed}", name(d));
            if d.backend() == unicompute::BackendKind::Cpu {
                // The same per-op loops: the same bits.
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{what}");
            } else {
                let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
                let tol = tolerance(&c, &dtypes) / 10.0;
                let scale = want.iter().fold(1f64, |m, w| m.max(w.abs()));
                assert_close(&got, &want, tol, tol * scale, &what);
            }
        }
    }
}
per_backend!(chains_equal_their_ops_one_by_one);

/// Every unary op and every arithmetic binary op as a one-step chain, against the f64
/// reference and the op alone (specials too): each op's code reaches the generated kernels.
fn every_op_in_a_chain(d: &Device) {
    let mut x = random(33_000, 251, -4.0, 4.0);
    x.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 2.5]);
    let shape = [x.len()];
    let t = tensor(d, &x, &shape);
    let values = [x.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()];
    for op in UnaryOp::ALL {
        let mut c = Chain::new();
        c.unary(op, Value::Input(0));
        let want = reference(&c, &values, &[&shape], &[DType::F32]);
        let got = run(d, &c, std::slice::from_ref(&t));
        let what = format!("{} in a chain on {}", op.name(), name(d));
        // The specials against the op alone only: webgpu's rsqrt gives +inf for -0.
        assert_close(&got[..251], &want[..251], 2e-5, 1e-6, &what);
        assert_close(&got, &want_of(&t.unary(op).unwrap()), 1e-6, 1e-7, &what);
    }
    let shapes: [&[usize]; 2] = [&[3, 1, 11], &[5, 1]];
    let (tensors, values) = inputs(d, &shapes, &[DType::F32; 2], 33_100);
    for op in BinaryOp::ALL.into_iter().filter(|op| !op.is_logic()) {
        let mut c = Chain::new();
        c.binary(op, Value::Input(0), Value::Input(1));
        let want = reference(&c, &values, &shapes, &[DType::F32; 2]);
        let got = run(d, &c, &tensors);
        let what = format!("{} in a chain on {}", op.name(), name(d));
        assert_close(&got, &want, 1e-4, 1e-6, &what);
        let alone = tensors[0].binary(op, &tensors[1]).unwrap();
        assert_close(&got, &want_of(&alone), 1e-6, 1e-7, &what);
    }
}
per_backend!(every_op_in_a_chain);

/// A tensor's values in f64.
fn want_of(t: &Tensor) -> Vec<f64> {
    read(t).iter().map(|&v| f64::from(v)).collect()
}

/// More than 65,535 workgroups of 256 elements: webgpu dispatches a 2-D grid.
#[test]
fn a_chain_past_65535_workgroups() {
    let n = 65_535 * 256 + 513;
    let x = random(34_000, n, -2.0, 2.0);
    let mut c = Chain::new();
    let half = c.scalar(0.5, DType::F32);
    let scaled = c.binary(BinaryOp::Mul, Value::Input(0), Value::Input(1));
    let shifted = c.binary(BinaryOp::Add, scaled, half);
    c.unary(UnaryOp::Relu, shifted);
    let values = [
        x.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        vec![-3.0],
    ];
    let want = reference(&c, &values, &[&[n], &[1]], &[DType::F32; 2]);
    for d in devices() {
        let got = run(d, &c, &[tensor(d, &x, &[n]), tensor(d, &[-3.0], &[1])]);
        assert_close(
            &got,
            &want,
            1e-6,
            1e-6,
            &format!("{n} elements on {}", name(d)),
        );
    }
}

/// Why `c` over `inputs` is refused: the message of its `INVALID` error.
fn refusal(c: &Chain, inputs: &[&Tensor]) -> String {
    let d = &devices()[0];
    match chain::chain(&d.queue(), c, inputs) {
        Err(Error::Invalid(message)) => message,
        other => panic!("{c:?}: expected INVALID, got {other:?}"),
    }
}

#[test]
fn malformed_chains_are_refused_with_reasons() {
    let d = &devices()[0];
    let x = tensor(d, &[1.0, 2.0], &[2]);
    let h = x.cast(DType::F16).unwrap();
    let i = x.cast(DType::I32).unwrap();
    let (a, b) = (Value::Input(0), Value::Input(1));
    let one = |step: Step| {
        let mut c = Chain::new();
        c.push(step);
        c
    };
    let relu = one(Step::Unary(UnaryOp::Relu, a));
    assert!(refusal(&Chain::new(), &[&x]).contains("0 steps"));
    let many = vec![&x; MAX_INPUTS + 1];
    assert!(refusal(&relu, &many).contains("7 inputs"));
    assert!(refusal(&relu, &[]).contains("0 inputs"));
    assert!(refusal(&relu, &[&i]).contains("input 0 is i32"));
    let forward = one(Step::Unary(UnaryOp::Relu, Value::Step(0)));
    assert!(refusal(&forward, &[&x]).contains("step 0 reads Step(0)"));
    let missing = one(Step::Binary(BinaryOp::Add, a, Value::Input(2)));
    assert!(refusal(&missing, &[&x, &x]).contains("reads Input(2)"));
    let mixed = one(Step::Binary(BinaryOp::Add, a, b));
    assert!(refusal(&mixed, &[&x, &h]).contains("reads f32 and f16"));
    let logic = one(Step::Binary(BinaryOp::Less, a, b));
    assert!(refusal(&logic, &[&x, &x]).contains("bool"));
    assert!(refusal(&relu, &[&x, &x]).contains("input 1 does not lead"));
    let mut dead = Chain::new();
    dead.unary(UnaryOp::Abs, a);
    dead.unary(UnaryOp::Neg, a);
    assert!(refusal(&dead, &[&x]).contains("step 0 does not lead"));
    let mut input_out = relu.clone();
    input_out.set_output(a);
    assert!(refusal(&input_out, &[&x]).contains("the output is Some(Input(0))"));
    let to_int = one(Step::Cast(a, DType::I32));
    assert!(refusal(&to_int, &[&x]).contains("makes a i32 value"));
    let odd = tensor(d, &[1.0, 2.0, 3.0], &[3]);
    assert!(chain::chain(&d.queue(), &mixed, &[&x, &odd]).is_err());
}

#[test]
fn a_chain_checks_against_dtypes_alone() {
    let mut c = Chain::new();
    let wide = c.cast(Value::Input(0), DType::F32);
    let sum = c.binary(BinaryOp::Add, wide, Value::Input(1));
    c.cast(sum, DType::BF16);
    assert_eq!(c.check(&[DType::F16, DType::F32]).unwrap(), DType::BF16);
    assert!(matches!(
        c.check(&[DType::F16, DType::F16]),
        Err(Error::Invalid(m)) if m.contains("reads f32 and f16")
    ));
}

/// A power of the constant 2 is its base times itself, to the bit, on every backend and for
/// negative bases too (`powf` may be an ulp off; GPUs' `pow` goes through exp2 and log2), in
/// f32 and f16; seeded values of an odd length, outputs poisoned before the launch.
fn squares_are_exact(d: &Device) {
    for dtype in [DType::F32, DType::F16] {
        let mut c = Chain::new();
        let two = c.scalar(2.0, dtype);
        c.binary(BinaryOp::Pow, Value::Input(0), two);
        let x: Vec<f32> = random(77, 1031, -3.0, 3.0)
            .into_iter()
            .map(|v| round(v, dtype))
            .collect();
        let t = tensor(d, &x, &[1031]).cast(dtype).unwrap();
        let got = run(d, &c, &[t]);
        let want: Vec<f32> = x.iter().map(|v| round(v * v, dtype)).collect();
        assert_eq!(got, want, "{} {dtype}", name(d));
    }
}

per_backend!(squares_are_exact);
