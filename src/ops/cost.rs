//! What a launch is, for the profiler: its name, operand shapes, bytes moved and
//! floating-point operations. Computed only while a profiler records.

use super::Operand;
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
        OpCost {
            name: name.into(),
            shapes: ops.iter().map(|o| o.layout.shape.clone()).collect(),
            dtype: DType::F32,
            bytes,
            flops,
            variant: None,
        }
    }

    /// The cost of a launch over `ops` whose elements are all `dtype`, without a variant.
    pub(crate) fn typed(name: &str, ops: &[&Operand<'_>], flops: u64, dtype: DType) -> OpCost {
        let elements: u64 = ops.iter().map(|o| distinct(o)).sum();
        OpCost {
            dtype,
            bytes: elements * dtype.size() as u64,
            ..OpCost::simple(name, ops, flops)
        }
    }
}

/// Distinct elements of a view: broadcast (stride 0) dimensions count once.
pub(crate) fn distinct(o: &Operand<'_>) -> u64 {
    o.layout
        .shape
        .iter()
        .zip(&o.layout.strides)
        .filter(|(_, &s)| s != 0)
        .map(|(&n, _)| n as u64)
        .product()
}
