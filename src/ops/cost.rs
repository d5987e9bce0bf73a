//! What a launch of an [`OpCall`] is, for the profiler: its name, operand shapes, bytes moved
//! and floating-point operations. Computed only while a profiler records.

use super::{conv::PoolKind, OpCall, Operand};
use crate::DType;

/// Name, shapes and cost of one op launch.
pub(crate) struct OpCost {
    /// Op name as the catalogue spells it (`add`, `add_relu`, `matmul`, `linear`, ...).
    pub name: String,
    /// Shapes of the inputs, then the output.
    pub shapes: Vec<Vec<usize>>,
    /// Storage dtype of the main operands.
    pub dtype: DType,
    /// Bytes read (each distinct element once: a broadcast row counts once) plus bytes written.
    pub bytes: u64,
    /// Floating-point operations (multiply-adds count two); elementwise ops count one per element.
    pub flops: u64,
    /// Kernel variant the call names, if any.
    pub variant: Option<&'static str>,
}

impl OpCost {
    /// The cost of an f32 launch over `ops` (inputs, then the output) without a variant.
    pub(crate) fn simple(name: &str, ops: &[&Operand<'_>], flops: u64) -> OpCost {
        let bytes = ops.iter().map(|o| distinct(o) * 4).sum();
        OpCost { name: name.into(), shapes: ops.iter().map(|o| o.layout.shape.clone()).collect(), dtype: DType::F32, bytes, flops, variant: None }
    }
}

/// Distinct elements of a view: broadcast (stride 0) dimensions count once.
fn distinct(o: &Operand<'_>) -> u64 {
    o.layout.shape.iter().zip(&o.layout.strides).filter(|(_, &s)| s != 0).map(|(&n, _)| n as u64).product()
}

fn numel(o: &Operand<'_>) -> u64 {
    o.layout.numel() as u64
}

impl OpCall<'_> {
    /// Name, shapes, bytes and FLOPs of this launch.
    pub(crate) fn cost(&self) -> OpCost {
        let shapes = |ops: &[&Operand<'_>]| ops.iter().map(|o| o.layout.shape.clone()).collect::<Vec<_>>();
        let simple = |name: String, ops: &[&Operand<'_>], flops: u64| OpCost::simple(&name, ops, flops);
        match self {
            OpCall::Unary { op, x, out, dtype } => {
                let size = dtype.size() as u64;
                OpCost { name: op.name().into(), shapes: shapes(&[x, out]), dtype: *dtype, bytes: (distinct(x) + numel(out)) * size, flops: numel(out), variant: None }
            }
            OpCall::Binary { op, act, a, b, out, dtype } => {
                let name = match act {
                    Some(f) => format!("{}_{}", op.name(), f.name()),
                    None => op.name().into(),
                };
                let size = dtype.size() as u64;
                let bytes = (distinct(a) + distinct(b) + numel(out)) * size;
                OpCost { name, shapes: shapes(&[a, b, out]), dtype: *dtype, bytes, flops: numel(out), variant: None }
            }
            OpCall::Copy { x, out } => simple("copy".into(), &[x, out], 0),
            OpCall::Cast { x, from, to, out } => OpCost {
                name: format!("cast_{to}"),
                shapes: shapes(&[x, out]),
                dtype: *from,
                bytes: distinct(x) * from.size() as u64 + numel(out) * to.size() as u64,
                flops: 0,
                variant: None,
            },
            OpCall::Where { cond, a, b, out, .. } => simple("where".into(), &[cond, a, b, out], 0),
            OpCall::Gather { x, indices, out, .. } => OpCost { bytes: numel(out) * 8 + numel(indices) * 4, ..simple("gather".into(), &[x, indices, out], 0) },
            OpCall::Cumsum { x, out, .. } => simple("cumsum".into(), &[x, out], numel(x)),
            OpCall::Reduce { op, x, out, variant, .. } => OpCost { variant: *variant, ..simple(op.name().into(), &[x, out], numel(x)) },
            OpCall::Norm { kind, x, weight, bias, out, .. } => {
                let mut ops = vec![x];
                ops.extend(weight.as_ref());
                ops.extend(bias.as_ref());
                ops.push(out);
                simple(kind.name().into(), &ops, 5 * numel(x))
            }
            OpCall::Attention { q, k, v, mask, out, dims, .. } => {
                let [b, h, lq, lk, d, dv] = dims.map(|n| n as u64);
                let mut ops = vec![q, k, v];
                ops.extend(mask.as_ref());
                ops.push(out);
                simple("attention".into(), &ops, 2 * b * h * lq * lk * (d + dv))
            }
            OpCall::Conv2d { x, weight, bias, out, geometry: g, .. } => {
                let mut ops = vec![x, weight];
                ops.extend(bias.as_ref());
                ops.push(out);
                let flops = 2 * (g.n * g.o * g.oh * g.ow * (g.c / g.groups.max(1)) * g.kh * g.kw) as u64;
                simple("conv2d".into(), &ops, flops)
            }
            OpCall::Pool2d { kind, x, out, geometry: g } => {
                let name = if *kind == PoolKind::Max { "max_pool2d" } else { "avg_pool2d" };
                simple(name.into(), &[x, out], numel(out) * (g.kh * g.kw) as u64)
            }
            OpCall::Matmul { a, b, bias, act, out, m, n, k, variant, dtype } => {
                let mut ops = vec![a, b];
                ops.extend(bias.as_ref());
                ops.push(out);
                let batch = (numel(out) / (*m as u64 * *n as u64).max(1)).max(1);
                let size = dtype.size() as u64;
                let bytes = ops.iter().map(|o| distinct(o)).sum::<u64>() * size;
                let name = if bias.is_some() || act.is_some() { "linear" } else { "matmul" };
                OpCost { name: name.into(), shapes: shapes(&ops), dtype: *dtype, bytes, flops: 2 * batch * (*m * *n * *k) as u64, variant: *variant }
            }
        }
    }
}
