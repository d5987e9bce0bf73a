//! Chains of elementwise ops in one kernel: a [`Chain`] of unary ops, binary ops (numpy
//! broadcasting across every input), scalar constants and float casts, evaluated per output
//! element without intermediate tensors. One description makes the WGSL and the CUDA C
//! (`codegen.rs`: straight-line code calling the op tables' `unary_op` / `binary_op` with
//! constant codes) and the CPU's fused loop over blocks of the output (`cpu.rs`).

backend_modules!();
#[cfg(any(feature = "webgpu", cuda_backend))]
mod codegen;
mod plan;

use super::cost::OpCost;
use super::{backends, launch, BinaryOp, OpRequest, Operand, UnaryOp};
use crate::base::layout::{broadcast_shapes, check_rank};
use crate::{DType, Error, Queue, Result, Tensor};

pub(crate) use plan::Plan;

/// Most inputs of one chain: a WebGPU stage binds at least eight storage buffers, and a
/// chain's kernel binds its parameters and its output beside its inputs.
pub const MAX_INPUTS: usize = 6;

/// Most steps of one chain (the generated kernels are straight-line code).
pub const MAX_STEPS: usize = 256;

/// A value a step reads: one of the chain's inputs or an earlier step's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Value {
    /// Input `i` of the call (a tensor broadcast onto the output's shape).
    Input(usize),
    /// The result of step `i`.
    Step(usize),
}

/// One step of a [`Chain`]. Values are f32, f16 or bf16 and compute in f32; a step on 16-bit
/// values rounds its result to their dtype, as the op run alone would.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// `op(x)`, in `x`'s dtype.
    Unary(UnaryOp, Value),
    /// `op(a, b)`: `a` and `b` of one dtype (the result's). Comparisons and logical ops,
    /// whose results are bool, are refused.
    Binary(BinaryOp, Value, Value),
    /// A constant, rounded to `dtype` (f32, f16 or bf16), broadcast to every element.
    Scalar(f64, DType),
    /// `x` converted to `dtype` (f32, f16 or bf16), rounded to nearest even.
    Cast(Value, DType),
}

/// A chain of elementwise ops, evaluated as one kernel by [`chain`]: steps in order, each
/// reading the call's inputs or earlier steps, and the output (the last step unless
/// [`Chain::set_output`] names another). Build one with the step methods, which return the
/// new step's [`Value`]:
///
/// ```
/// # use unicompute::ops::chain::{Chain, Value};
/// # use unicompute::{BinaryOp, UnaryOp};
/// let mut c = Chain::new();
/// let sum = c.binary(BinaryOp::Add, Value::Input(0), Value::Input(1));
/// let half = c.scalar(0.5, unicompute::DType::F32);
/// let scaled = c.binary(BinaryOp::Mul, sum, half);
/// c.unary(UnaryOp::GeluErf, scaled); // the output: gelu((x + y) * 0.5)
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chain {
    steps: Vec<Step>,
    output: Option<Value>,
}

impl Chain {
    /// An empty chain.
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Append `step`; its result's [`Value`].
    pub fn push(&mut self, step: Step) -> Value {
        self.steps.push(step);
        Value::Step(self.steps.len() - 1)
    }

    /// Append `op(x)`.
    pub fn unary(&mut self, op: UnaryOp, x: Value) -> Value {
        self.push(Step::Unary(op, x))
    }

    /// Append `op(a, b)`.
    pub fn binary(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        self.push(Step::Binary(op, a, b))
    }

    /// Append the constant `value` in `dtype`.
    pub fn scalar(&mut self, value: f64, dtype: DType) -> Value {
        self.push(Step::Scalar(value, dtype))
    }

    /// Append `x` converted to `dtype`.
    pub fn cast(&mut self, x: Value, dtype: DType) -> Value {
        self.push(Step::Cast(x, dtype))
    }

    /// Make step `value` the output instead of the last step (an input is refused when the
    /// chain is run).
    pub fn set_output(&mut self, value: Value) {
        self.output = Some(value);
    }

    /// The steps, in order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The dtype of the chain's result over inputs of `inputs` (each f32, f16 or bf16), or why
    /// the chain cannot run on them: the check [`chain`] makes, for callers that build
    /// chains ahead of their tensors (a model's graph passes).
    pub fn check(&self, inputs: &[DType]) -> Result<DType> {
        Plan::new(self, inputs).map(|plan| plan.out_dtype())
    }

    /// The output: the last step unless set (none for an empty chain).
    pub fn output(&self) -> Option<Value> {
        self.output
            .or_else(|| self.steps.len().checked_sub(1).map(Value::Step))
    }
}

/// `chain` over `inputs` (1 to [`MAX_INPUTS`] tensors of f32, f16 or bf16, any strided
/// views, broadcast together as numpy does) in one kernel, recorded on `queue`. The result
/// has the broadcast shape and the output step's dtype, and equals the steps run one by one
/// as ops (`unary`, `binary`, `cast`, a scalar as a one-element tensor).
pub fn chain(queue: &Queue, chain: &Chain, inputs: &[&Tensor]) -> Result<Tensor> {
    for t in inputs {
        queue.device().check_same(t.device(), "chain")?;
    }
    let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype()).collect();
    let plan = Plan::new(chain, &dtypes)?;
    let mut shape: Vec<usize> = Vec::new();
    for t in inputs {
        shape = broadcast_shapes("chain", &shape, t.shape())?;
    }
    check_rank("chain", &shape)?;
    let views = inputs
        .iter()
        .map(|t| t.broadcast_to(&shape))
        .collect::<Result<Vec<_>>>()?;
    let out = Tensor::uninit(queue, &shape, plan.out_dtype())?;
    let request = ChainRequest {
        plan: &plan,
        inputs: views.iter().map(|t| t.operand()).collect(),
        out: out.operand(),
    };
    launch(queue, &request, None)?;
    Ok(out)
}

/// `chain` of `inputs` in f64: the reference of the tests. Each input is given as its values
/// in row-major order with its shape; the result is the broadcast shape's values, each step
/// computed in f64 and rounded to its dtype where that is 16-bit.
pub fn reference(chain: &Chain, inputs: &[(&[f64], &[usize], DType)]) -> Result<Vec<f64>> {
    let dtypes: Vec<DType> = inputs.iter().map(|i| i.2).collect();
    let plan = Plan::new(chain, &dtypes)?;
    let mut shape: Vec<usize> = Vec::new();
    for (_, s, _) in inputs {
        shape = broadcast_shapes("chain", &shape, s)?;
    }
    let n: usize = shape.iter().product();
    let at = |(data, s, _): &(&[f64], &[usize], DType), i: usize| {
        let (mut rem, mut off, mut stride) = (i, 0, 1);
        for d in (0..shape.len()).rev() {
            let pos = rem % shape[d];
            rem /= shape[d];
            let k = (d + s.len()).checked_sub(shape.len());
            if let Some(&len) = k.and_then(|k| s.get(k)) {
                off += if len == 1 { 0 } else { pos * stride };
                stride *= len;
            }
        }
        data[off]
    };
    Ok((0..n)
        .map(|i| {
            let values: Vec<f64> = inputs.iter().map(|x| at(x, i)).collect();
            plan.eval_f64(&values)
        })
        .collect())
}

/// The validated work of one [`chain`] call: its plan, the inputs broadcast to the output's
/// shape, and the output (contiguous, fresh).
pub(crate) struct ChainRequest<'a> {
    pub plan: &'a Plan,
    pub inputs: Vec<Operand<'a>>,
    pub out: Operand<'a>,
}

impl OpRequest for ChainRequest<'_> {
    fn cost(&self) -> OpCost {
        let n = self.out.layout.numel() as u64;
        let mut shapes: Vec<Vec<usize>> =
            self.inputs.iter().map(|o| o.layout.shape.clone()).collect();
        shapes.push(self.out.layout.shape.clone());
        let read: u64 = self
            .inputs
            .iter()
            .zip(self.plan.input_dtypes())
            .map(|(o, d)| super::cost::distinct(o) * d.size() as u64)
            .sum();
        OpCost {
            name: format!("chain_{}", self.plan.arithmetic_steps()),
            shapes,
            dtype: self.plan.out_dtype(),
            bytes: read + n * self.plan.out_dtype().size() as u64,
            flops: n * self.plan.arithmetic_steps() as u64,
            variant: None,
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        self.inputs.iter().chain([&self.out]).collect()
    }

    backends!(chain);
}

/// Plans whose kernels between them apply every unary and binary op, read and write every
/// dtype, address inputs in every mode, take the most inputs and every kind of step: the
/// chains of the compile checks.
#[cfg(all(test, any(feature = "webgpu", cuda_backend)))]
fn sample_plans() -> Vec<(Plan, Vec<crate::base::layout::Access>)> {
    use crate::base::layout::Access;
    let (c, r, s) = (
        Access::Contiguous,
        Access::Repeated { period: 4 },
        Access::Strided,
    );
    let mut unary = Chain::new();
    let mut v = Value::Input(0);
    for op in UnaryOp::ALL {
        v = unary.unary(op, v);
    }
    let mut binary = Chain::new();
    let mut v = Value::Input(0);
    let arithmetic = BinaryOp::ALL.into_iter().filter(|op| !op.is_logic());
    for (k, op) in arithmetic.enumerate() {
        v = binary.binary(op, v, Value::Input(k % 5 + 1));
    }
    let mut mixed = Chain::new();
    let x = mixed.cast(Value::Input(0), DType::F32);
    let y = mixed.cast(Value::Input(1), DType::F32);
    let inf = mixed.scalar(f64::INFINITY, DType::F32);
    let nan = mixed.scalar(f64::NAN, DType::F32);
    let x = mixed.binary(BinaryOp::Min, x, inf);
    let y = mixed.binary(BinaryOp::Max, y, nan);
    let sum = mixed.binary(BinaryOp::Add, x, y);
    let h = mixed.cast(sum, DType::F16);
    let third = mixed.scalar(1.0 / 3.0, DType::F16);
    mixed.binary(BinaryOp::Mul, h, third);
    let mut to_bf16 = mixed.clone();
    let last = Value::Step(to_bf16.steps().len() - 1);
    to_bf16.cast(last, DType::BF16);
    let plan = |chain: &Chain, dtypes: &[DType]| Plan::new(chain, dtypes).unwrap();
    vec![
        (plan(&unary, &[DType::F32]), vec![c]),
        (plan(&binary, &[DType::F32; 6]), vec![c, r, s, c, r, s]),
        (plan(&mixed, &[DType::F16, DType::BF16]), vec![c, s]),
        (plan(&to_bf16, &[DType::F16, DType::BF16]), vec![r, c]),
    ]
}

/// Error for a chain that is not well formed.
fn invalid(what: String) -> Error {
    Error::Invalid(format!("chain: {what}"))
}

/// Chains as a method, recorded on the device's default queue.
impl Tensor {
    /// `chain` over this tensor (input 0) and `others` (inputs 1, 2, ...) in one kernel (see
    /// [`super::chain::chain`]).
    pub fn apply_chain(&self, chain: &Chain, others: &[&Tensor]) -> Result<Tensor> {
        let inputs: Vec<&Tensor> = std::iter::once(self)
            .chain(others.iter().copied())
            .collect();
        self::chain(&self.device().queue(), chain, &inputs)
    }
}
