//! The support matrix (README.md, `unicompute ops`) against what each device does: every op
//! family, probed with one of its ops on every dtype, runs exactly where its row says it does.

use crate::common::{devices, name, webgpu_without_int64};
use unicompute::ops::{
    support_rows, AttentionParams, BinaryOp, Conv2dParams, NormParams, ReduceOp, UnaryOp,
};
use unicompute::{DType, Device, Result, Tensor};

/// A [2, 3] tensor of `dtype` holding 1 to 6 (bool: alternating).
fn input(d: &Device, dtype: DType) -> Result<Tensor> {
    if dtype == DType::Bool {
        return Tensor::from_bools(d, &[true, false, true, false, true, false], &[2, 3]);
    }
    Tensor::from_slice(d, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?.cast(dtype)
}

/// One op of the family called `family` on `x`, a [2, 3] tensor of the dtype probed.
fn probe(family: &str, x: &Tensor) -> Result<Tensor> {
    let op = |name| BinaryOp::from_name(name).expect("the op tables name it");
    match family {
        "unary" => x.unary(UnaryOp::Exp),
        "binary" => x.binary(op("add"), x),
        "compare" => x.binary(op("less"), x),
        "reduce" => x.reduce(ReduceOp::from_name("sum").expect("a reduction"), Some(1)),
        "scan" => x.cumsum(1),
        "topk" => x.topk(2, 1, true).map(|(values, _)| values),
        "softmax" => x.softmax(),
        "norm" => x.layer_norm(NormParams::default()),
        "matmul" => x.matmul(&x.t()?),
        "attention" => {
            let q = x.reshape(&[1, 1, 2, 3])?;
            q.attention(&q, &q, AttentionParams::default())
        }
        "conv" => {
            let w = Tensor::ones(x.device(), &[1, 1, 1, 1], x.dtype())?;
            x.reshape(&[1, 1, 2, 3])?
                .conv2d(&w, Conv2dParams::default())
        }
        "constructors" => Tensor::full(x.device(), &[2, 3], 1.0, x.dtype()),
        "data movement" => x.t()?.contiguous(),
        "cast" => x.cast(DType::F32),
        "chain" => {
            use unicompute::ops::chain::{Chain, Value};
            let mut c = Chain::new();
            let sum = c.binary(op("add"), Value::Input(0), Value::Input(0));
            c.unary(UnaryOp::Relu, sum);
            x.apply_chain(&c, &[])
        }
        "scatter" => {
            let at = Tensor::from_slice(x.device(), &[1i32, 0, 2, -1, 2, 0], &[2, 3])?;
            x.scatter_elements(&at, x, 1, unicompute::ops::ScatterReduction::Add)
        }
        other => panic!("the support matrix has a family `{other}` this test cannot probe: add it"),
    }
}

/// Every family runs on every dtype its row names, on every device (webgpu also without
/// `shader-int64`), and refuses the others with an error (never a panic).
#[test]
fn each_family_takes_the_dtypes_its_row_names() {
    let mut wrong = Vec::new();
    for d in devices().iter().cloned().chain(webgpu_without_int64()) {
        let info = d.info();
        for row in support_rows() {
            for dtype in DType::ALL {
                let x = input(&d, dtype).expect("every dtype can be made");
                let ran =
                    probe(row.name, &x).and_then(|y| y.cast(DType::F32)?.to_vec_blocking::<f32>());
                let listed = row.takes(dtype, info.backend, info.features.int64);
                if ran.is_ok() != listed {
                    let why = ran.err().map_or("it ran".into(), |e| e.to_string());
                    wrong.push(format!(
                        "{} on {}: listed {listed}, {why}",
                        row.name,
                        name(&d)
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the support matrix differs from the devices for these families and dtypes:\n{}",
        wrong.join("\n")
    );
}
