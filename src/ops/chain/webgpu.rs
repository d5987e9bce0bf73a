//! Chains on wgpu: chain.wgsl after the WGSL generated from the chain's plan (its inputs'
//! bindings and `chain_value`), compiled once per generated text by the pipeline cache.

use std::sync::Arc;

use super::codegen::{statements, Dialect};
use super::{ChainRequest, Plan};
use crate::base::layout::Access;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Specialisation, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, grid_1d, specialise, u32_of, view_words, wgsl_params, ACTIVATION, BINARY,
    COMMON, VAL_U32,
};
use crate::ops::Operand;
use crate::{DType, Error, Result};

wgsl_params! {
    /// chain.wgsl's parameters: the output's element count, rank and shape, and each input's
    /// view and period (see the file).
    pub(super) struct ChainWords: C {
        n: u32,
        rank: u32,
        shape: [u32; 8],
        /// Up to six views: an offset and 8 strides each.
        views: [u32; 54],
        periods: [u32; 6],
    }
}

// The parameter words hold a view per input.
const _: () = assert!(super::MAX_INPUTS == 6);

static SOURCE: WgslSource = WgslSource {
    name: "chain.wgsl",
    text: crate::ops::common::wgsl_file!("chain/chain.wgsl"),
    preludes: &[COMMON, ACTIVATION, BINARY, ChainWords::DECL],
};

/// WGSL's spelling of a chain's code.
const WGSL: Dialect = Dialect {
    decl: |n, expr| format!("let v{n} = {expr};"),
    unary: |op, x| format!("unary_op({}u, {x})", op.code()),
    binary: |op, a, b| format!("binary_op({}u, {a}, {b})", op.code()),
    // Browsers refuse NaN and the infinities as constant expressions: those come from
    // `special_f32`, which reads a run-time zero.
    literal: |v| match v.is_finite() {
        true => format!("bitcast<f32>({:#010x}u)", v.to_bits()),
        false => format!("special_f32({:#010x}u)", v.to_bits()),
    },
    load: |k, dtype, access| {
        let at = match access {
            Access::Contiguous => format!("contiguous_at({k}u, i)"),
            Access::Repeated { .. } => format!("repeated_at({k}u, i)"),
            Access::Strided => format!("strided_at({k}u, i)"),
        };
        match dtype {
            DType::F16 => format!("f16_to_f32(half_at(in{k}[{at} >> 1u], {at}))"),
            DType::BF16 => format!("bf16_to_f32(half_at(in{k}[{at} >> 1u], {at}))"),
            _ => format!("bitcast<f32>(in{k}[{at}])"),
        }
    },
};

/// The WGSL generated for `plan` over inputs addressed as `access` says.
fn generated(plan: &Plan, access: &[Access]) -> String {
    let mut text = String::new();
    for k in 0..access.len() {
        let binding = k + 1;
        text += &format!("@group(0) @binding({binding}) var<storage, read> in{k}: array<u32>;\n");
    }
    text += &format!("const OUT_DTYPE: u32 = {}u;\n", plan.out_dtype().code());
    text += "fn chain_value(i: u32) -> f32 {\n";
    for line in statements(plan, access, &WGSL) {
        text += &format!("{line}\n");
    }
    text += &format!("return v{};\n}}\n", plan.output());
    text
}

/// The specialisation of `plan` over inputs addressed as `access` says.
fn specialisation(plan: &Plan, access: &[Access]) -> Specialisation {
    Specialisation {
        prelude: vec![VAL_U32],
        generated: Some(Arc::from(generated(plan, access))),
        ..specialise(&SOURCE, "chain_main", vec![])
    }
}

/// The parameter words of a launch over `inputs` into `out`.
fn words(out: &Operand<'_>, inputs: &[Operand<'_>]) -> Result<ChainWords> {
    let l = out.layout;
    let mut w = ChainWords {
        n: u32_of("element count", l.numel())?,
        rank: l.shape.len() as u32,
        shape: [1; 8],
        views: [0; 54],
        periods: [0; 6],
    };
    for (d, &n) in l.shape.iter().enumerate() {
        w.shape[d] = u32_of("tensor extent", n)?;
    }
    for (k, x) in inputs.iter().enumerate() {
        w.views[9 * k..9 * k + 9].copy_from_slice(&view_words(x.layout)?);
        w.periods[k] = u32_of("period", x.layout.access().period())?;
    }
    Ok(w)
}

/// `out = chain(inputs)`: chain_main, one invocation per output word.
pub(super) fn chain(
    op: &ChainRequest<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let out = &op.out;
    for o in op.inputs.iter().chain([out]) {
        check_binding(dev, o)?;
    }
    if out.layout.offset != 0 {
        return Err(Error::Internal(
            "a chain's output starts inside its buffer".into(),
        ));
    }
    let access: Vec<Access> = op.inputs.iter().map(|x| x.layout.access()).collect();
    let pipeline = dev.pipeline(specialisation(op.plan, &access));
    let per = 4 / op.plan.out_dtype().size();
    let n = out.layout.numel();
    let grid = grid_1d(dev, n.div_ceil(per).div_ceil(256) as u64)?;
    let mut binds: Vec<(u32, Bind<'_>)> = (0..op.inputs.len())
        .map(|k| (k as u32 + 1, Bind::Mem(op.inputs[k].buf)))
        .collect();
    binds.push((7, Bind::Mem(out.buf)));
    let params = words(out, &op.inputs)?;
    q.launch(dev, pipeline, params.words(), &binds, grid)
}

/// Chains that between them take every unary and binary op, every input and output dtype,
/// every addressing mode, the most inputs and every kind of step.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    super::sample_plans()
        .iter()
        .map(|(plan, access)| specialisation(plan, access))
        .collect()
}

/// chain.wgsl with generated code, run by the CPU backend's WGSL executor with the parameter
/// words this file writes, gives the CPU body's results: f32 and 16-bit inputs and outputs,
/// inputs contiguous, repeated and strided.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::chain::{chain, Chain, Value};
    use crate::ops::common::webgpu::{run_words, stored_words};
    use crate::ops::{BinaryOp, UnaryOp};
    use crate::{BackendChoice, BackendKind, Device, Tensor};

    /// The values of the stored words of a contiguous tensor of `dtype` with `n` elements.
    fn values(words: &[u32], dtype: DType, n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| match dtype {
                DType::F16 => half::f16::from_bits((words[i / 2] >> (i % 2 * 16)) as u16).to_f32(),
                DType::BF16 => f32::from_bits((words[i / 2] >> (i % 2 * 16)) << 16),
                _ => f32::from_bits(words[i]),
            })
            .collect()
    }

    /// `c` over views of `bases` on the executor and in the CPU body.
    fn check(d: &Device, c: &Chain, bases: &[Tensor], views: &[Tensor], rtol: f32) {
        let refs: Vec<&Tensor> = views.iter().collect();
        let want_t = chain(&d.queue(), c, &refs).unwrap();
        let dtypes: Vec<DType> = views.iter().map(|t| t.dtype()).collect();
        let plan = Plan::new(c, &dtypes).unwrap();
        let shape = want_t.shape().to_vec();
        let broadcast: Vec<Tensor> = views
            .iter()
            .map(|t| t.broadcast_to(&shape).unwrap())
            .collect();
        let operands: Vec<Operand<'_>> = broadcast.iter().map(|t| t.operand()).collect();
        let access: Vec<Access> = operands.iter().map(|o| o.layout.access()).collect();
        let source = specialisation(&plan, &access).full_source();
        let params = words(&want_t.operand(), &operands).unwrap();
        let n = want_t.numel();
        let per = 4 / want_t.dtype().size();
        let inputs: Vec<Vec<u32>> = bases.iter().map(stored_words).collect();
        let want = stored_words(&want_t);
        let groups = (n.div_ceil(per) as u32).div_ceil(256);
        let got = run_words(
            d,
            &source,
            "chain_main",
            params.words(),
            &inputs,
            want.len(),
            groups,
        );
        let (got, want) = (
            values(&got, want_t.dtype(), n),
            values(&want, want_t.dtype(), n),
        );
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= rtol * (1.0 + w.abs());
            assert!(
                ok,
                "{c:?}: element {i} is {g} on the executor, {w} on the cpu"
            );
        }
    }

    #[test]
    fn chains_match_the_cpu_body() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let data = |n: usize, seed: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 7919 + seed * 104_729) % 1999) as f32 / 500.0 - 2.0)
                .collect()
        };
        let x = Tensor::from_slice(&d, &data(105, 1), &[7, 3, 5]).unwrap();
        let y = Tensor::from_slice(&d, &data(3, 2), &[3, 1]).unwrap();
        let z = Tensor::from_slice(&d, &data(7, 3), &[7]).unwrap();
        let xt = x.permute(&[2, 1, 0]).unwrap();
        let (a, b, s) = (Value::Input(0), Value::Input(1), Value::Input(2));
        let mut c = Chain::new();
        let product = c.binary(BinaryOp::Mul, a, b);
        let sum = c.binary(BinaryOp::Add, product, s);
        let g = c.unary(UnaryOp::GeluErf, sum);
        let half = c.scalar(0.5, DType::F32);
        let scaled = c.binary(BinaryOp::Mul, g, half);
        c.unary(UnaryOp::Tanh, scaled);
        let bases = [x.clone(), y.clone(), z.clone()];
        check(&d, &c, &bases, &[xt, y, z], 2e-6);
        let w = Tensor::from_slice(&d, &data(5, 4), &[5]).unwrap();
        let (h, bf) = (x.cast(DType::F16).unwrap(), w.cast(DType::BF16).unwrap());
        let mut c = Chain::new();
        let wide = c.cast(b, DType::F16);
        let sum = c.binary(BinaryOp::Add, a, wide);
        let sig = c.unary(UnaryOp::Sigmoid, sum);
        c.cast(sig, DType::BF16);
        check(&d, &c, &[h.clone(), bf.clone()], &[h, bf], 1e-2);
    }
}
