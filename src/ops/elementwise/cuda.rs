//! Unary and binary ops on CUDA: elementwise.cu, a grid-stride loop over the elements (integer
//! arithmetic in its own entry point).

use super::{Binary, Unary};
#[cfg(test)]
use super::{BinaryOp, UnaryOp};
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, extent, index_type, operand, padded, specialise, typed_operand, val, BLOCK,
};
use crate::{DType, Error, Result};

static SOURCE: CudaSource = CudaSource {
    name: "elementwise.cu",
    text: include_str!("elementwise.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        crate::ops::common::cuda::ACTIVATION,
        ElementwiseParams::DECL,
        crate::ops::common::cuda::BINARY,
    ],
};

cuda_params! {
    /// elementwise.cu's parameters: the output's shape, the operands' strides and the
    /// periods of repeated operands.
    struct ElementwiseParams {
        n: u64,
        rank: u32,
        pad: u32,
        shape: [u64; 8],
        a_strides: [u64; 8],
        b_strides: [u64; 8],
        a_period: u64,
        b_period: u64,
    }
}

/// Error unless the operands are stored as f32 (CUDA has no native f16 path).
fn check_f32(dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 => Ok(()),
        other => Err(Error::Internal(format!(
            "the cuda kernels compute on f32 storage, not {other}"
        ))),
    }
}

/// 1 when every operand is contiguous and its address 16-byte aligned, so that
/// elementwise.cu moves four f32 at a time (`VEC4`); else 0.
fn vec4(pointers: &[u64], contiguous: bool) -> usize {
    usize::from(contiguous && pointers.iter().all(|p| p % 16 == 0))
}

/// Blocks for `n` elements: with `vec4` 1, sixteen a thread (elementwise.cu's float4s,
/// `VEC4_UNROLL` of them).
fn elementwise_blocks(dev: &CudaDevice, n: usize, vec4: usize) -> u32 {
    blocks(dev, if vec4 == 1 { n / 16 } else { n }, BLOCK as usize)
}

/// `out = op(x)` over any view (`unary_main`).
pub(super) fn unary(
    op: &Unary<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    check_f32(op.dtype)?;
    let (x, out) = (op.x, op.out);
    let access = x.layout.access();
    let n = out.layout.numel();
    let pointers = [operand(&x)?, operand(&out)?];
    let v4 = vec4(&pointers, access.code() == 1);
    let defines = vec![
        ("OP", op.op.code().to_string()),
        ("A_MODE", access.code().to_string()),
        ("VEC4", v4.to_string()),
        index_type(n.max(extent(x.layout))),
    ];
    let f = dev.program(specialise(&SOURCE, "unary_main", defines))?;
    let p = ElementwiseParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        a_strides: padded(&x.layout.strides, 0),
        a_period: access.period() as u64,
        ..Default::default()
    };
    let grid = (elementwise_blocks(dev, n, v4), 1, 1);
    q.launch(
        dev,
        &f,
        grid,
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &[x.buf, out.buf],
    )
}

/// `out = act(op(a, b))` with broadcasting (`binary_main`).
pub(super) fn binary(
    op: &Binary<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (entry, val) = match op.dtype {
        DType::I32 | DType::U32 | DType::I64 => ("int_binary_main", Some(val(op.dtype)?)),
        other => (check_f32(other).map(|()| "binary_main")?, None),
    };
    let (a, b, out) = (op.a, op.b, op.out);
    let (a_access, b_access) = (a.layout.access(), b.layout.access());
    let n = out.layout.numel();
    let pointers = [
        typed_operand(&a, op.dtype)?,
        typed_operand(&b, op.dtype)?,
        typed_operand(&out, op.dtype)?,
    ];
    let both = a_access.code() == 1 && b_access.code() == 1;
    let v4 = if val.is_some() {
        0
    } else {
        vec4(&pointers, both)
    };
    let defines = vec![
        ("OP", op.op.code().to_string()),
        ("ACT", op.act.map_or(0, |f| f.code()).to_string()),
        ("A_MODE", a_access.code().to_string()),
        ("B_MODE", b_access.code().to_string()),
        ("VEC4", v4.to_string()),
        index_type(n.max(extent(a.layout)).max(extent(b.layout))),
    ];
    let defines = defines.into_iter().chain(val).collect();
    let f = dev.program(specialise(&SOURCE, entry, defines))?;
    let p = ElementwiseParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        a_strides: padded(&a.layout.strides, 0),
        b_strides: padded(&b.layout.strides, 0),
        a_period: a_access.period() as u64,
        b_period: b_access.period() as u64,
        ..Default::default()
    };
    let grid = (elementwise_blocks(dev, n, v4), 1, 1);
    q.launch(
        dev,
        &f,
        grid,
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &[a.buf, b.buf, out.buf],
    )
}

/// Every specialisation: each op in each operand access mode, and fused activations.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for op in UnaryOp::ALL {
            for (mode, v4) in [(0, 0), (1, 0), (1, 1), (2, 0)] {
                let defines = vec![
                    ("OP", op.code().to_string()),
                    ("A_MODE", mode.to_string()),
                    ("VEC4", v4.to_string()),
                    idx.clone(),
                ];
                all.push(specialise(&SOURCE, "unary_main", defines));
            }
        }
        for op in BinaryOp::ALL {
            for (act, a_mode, b_mode, v4) in [
                ("0", "1", "1", "0"),
                ("13", "1", "1", "1"),
                ("14", "0", "2", "0"),
                ("11", "2", "0", "0"),
            ] {
                let defines = vec![
                    ("OP", op.code().to_string()),
                    ("ACT", act.into()),
                    ("A_MODE", a_mode.into()),
                    ("B_MODE", b_mode.into()),
                    ("VEC4", v4.into()),
                    idx.clone(),
                ];
                all.push(specialise(&SOURCE, "binary_main", defines));
            }
            for val in ["int", "unsigned", "i64"] {
                let defines = vec![
                    ("OP", op.code().to_string()),
                    ("A_MODE", "1".into()),
                    ("B_MODE", "2".into()),
                    ("VAL", val.into()),
                    idx.clone(),
                ];
                all.push(specialise(&SOURCE, "int_binary_main", defines));
            }
        }
    }
    all
}
