//! Chains on CUDA: chain.cu after the definitions generated from the chain's plan (its
//! inputs, output type and statements), a grid-stride loop over the elements, compiled once
//! per generated text by the module caches.

use std::sync::Arc;

use super::codegen::{statements, Dialect};
use super::{ChainRequest, Plan};
use crate::base::layout::Access;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource, Specialisation};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, extent, index_type, padded, specialise, typed_operand, BLOCK,
};
use crate::{DType, Result};

cuda_params! {
    /// chain.cu's parameters: the output's shape, each input's strides and the period of
    /// each input read as a repeated block.
    struct ChainParams {
        n: u64,
        rank: u32,
        pad: u32,
        shape: [u64; 8],
        strides: [[u64; 8]; 6],
        periods: [u64; 6],
    }
}

// The parameters hold the strides of every input.
const _: () = assert!(super::MAX_INPUTS == 6);

static SOURCE: CudaSource = CudaSource {
    name: "chain.cu",
    text: include_str!("chain.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        crate::ops::common::cuda::ACTIVATION,
        crate::ops::common::cuda::BINARY,
        ChainParams::DECL,
    ],
};

/// CUDA C's spelling of a chain's code.
const CUDA: Dialect = Dialect {
    decl: |n, expr| format!("const float v{n} = {expr};"),
    unary: |op, x| format!("unary_op<{}>({x})", op.code()),
    binary: |op, a, b| format!("binary_op<{}>({a}, {b})", op.code()),
    literal: |v| format!("__uint_as_float({:#010x}u)", v.to_bits()),
    load: |k, dtype, access| {
        let at = match access {
            Access::Contiguous => "i".to_string(),
            Access::Repeated { .. } => format!("repeated_at(p, {k}, i)"),
            Access::Strided => format!("strided_at(p, {k}, i)"),
        };
        match dtype {
            DType::F16 => format!("f16_to_f32(in{k}[{at}])"),
            DType::BF16 => format!("bf16_to_f32(in{k}[{at}])"),
            _ => format!("in{k}[{at}]"),
        }
    },
};

/// The C type of a chain's elements of `dtype` (16-bit ones as their bits).
fn c_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 | DType::BF16 => "unsigned short",
        _ => "float",
    }
}

/// The definitions generated for `plan` over inputs addressed as `access` says.
fn generated(plan: &Plan, access: &[Access]) -> String {
    let inputs: Vec<String> = (0..access.len())
        .map(|k| format!("const {}* __restrict__ in{k}", c_type(plan.dtype(k))))
        .collect();
    let body = statements(plan, access, &CUDA).join(" ");
    format!(
        "#define CHAIN_INPUTS {}\n#define CHAIN_OUT {}\n#define CHAIN_OUT_DTYPE {}\n\
        #define CHAIN_BODY {body}\n#define CHAIN_RESULT v{}\n",
        inputs.join(", "),
        c_type(plan.out_dtype()),
        plan.out_dtype().code(),
        plan.output()
    )
}

/// The specialisation of `plan` over inputs addressed as `access` says, with indices of
/// `idx`.
fn specialisation(plan: &Plan, access: &[Access], idx: (&'static str, String)) -> Specialisation {
    Specialisation {
        generated: Some(Arc::from(generated(plan, access))),
        ..specialise(&SOURCE, "chain_main", vec![idx])
    }
}

/// `out = chain(inputs)`: chain_main over every element.
pub(super) fn chain(
    op: &ChainRequest<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let out = &op.out;
    let n = out.layout.numel();
    let access: Vec<Access> = op.inputs.iter().map(|x| x.layout.access()).collect();
    let largest = op
        .inputs
        .iter()
        .map(|x| extent(x.layout))
        .fold(n, usize::max);
    let f = dev.program(specialisation(op.plan, &access, index_type(largest)))?;
    let mut p = ChainParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        ..Default::default()
    };
    let mut pointers = Vec::with_capacity(op.inputs.len() + 1);
    for (k, x) in op.inputs.iter().enumerate() {
        p.strides[k] = padded(&x.layout.strides, 0);
        p.periods[k] = access[k].period() as u64;
        pointers.push(typed_operand(x, op.plan.dtype(k))?);
    }
    pointers.push(typed_operand(out, op.plan.out_dtype())?);
    let held: Vec<_> = op.inputs.iter().chain([out]).map(|o| o.buf).collect();
    let grid = (blocks(dev, n, BLOCK as usize), 1, 1);
    q.launch(dev, &f, grid, (BLOCK, 1, 1), &pointers, &p, &held)
}

/// The chains of [`super::sample_plans`], with 32- and 64-bit indices.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for (plan, access) in super::sample_plans() {
            all.push(specialisation(&plan, &access, idx.clone()));
        }
    }
    all
}
