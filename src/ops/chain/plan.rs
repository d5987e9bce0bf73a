//! A [`Chain`] checked against its inputs' dtypes: every value's dtype, the output, and the
//! scratch slots of the CPU's fused loop. Values are numbered inputs first, then steps.

use super::{invalid, Chain, Step, Value, MAX_INPUTS, MAX_STEPS};
use crate::{BinaryOp, DType, Result};

/// A validated chain: what every backend's kernel is made from.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    steps: Vec<Step>,
    /// The dtype of every value: the inputs', then the steps'.
    dtypes: Vec<DType>,
    inputs: usize,
    /// The output step.
    output: usize,
    /// The CPU's scratch slot of every value (a slot is reused once its value is dead).
    slots: Vec<usize>,
}

/// Whether `d` is a dtype a chain computes on.
fn is_chain_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F16 | DType::BF16)
}

/// `v` rounded to `dtype` (f16 and bf16 to nearest even; f32 values as they are).
pub(crate) fn round_f64(v: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::BF16 => half::bf16::from_f64(v).to_f64(),
        _ => v,
    }
}

/// The f32 value of a scalar step: `value` in `dtype`.
pub(crate) fn scalar_f32(value: f64, dtype: DType) -> f32 {
    match dtype {
        DType::F16 => half::f16::from_f64(value).to_f32(),
        DType::BF16 => half::bf16::from_f64(value).to_f32(),
        _ => value as f32,
    }
}

impl Plan {
    /// `chain` over inputs of `dtypes`, or why it cannot run.
    pub(crate) fn new(chain: &Chain, dtypes: &[DType]) -> Result<Plan> {
        let steps = chain.steps().to_vec();
        if dtypes.is_empty() || dtypes.len() > MAX_INPUTS {
            let n = dtypes.len();
            return Err(invalid(format!(
                "{n} inputs: expected 1 to {MAX_INPUTS} (a kernel binds its inputs, its \
                output and its parameters within WebGPU's 8 storage buffers)"
            )));
        }
        if steps.is_empty() || steps.len() > MAX_STEPS {
            let n = steps.len();
            return Err(invalid(format!("{n} steps: expected 1 to {MAX_STEPS}")));
        }
        let mut all = Vec::with_capacity(dtypes.len() + steps.len());
        for (i, &d) in dtypes.iter().enumerate() {
            if !is_chain_float(d) {
                return Err(invalid(format!(
                    "input {i} is {d}: expected f32, f16 or bf16"
                )));
            }
            all.push(d);
        }
        for (i, step) in steps.iter().enumerate() {
            let d = step_dtype(i, step, &all)?;
            all.push(d);
        }
        let output = match chain.output() {
            Some(Value::Step(i)) if i < steps.len() => i,
            other => {
                return Err(invalid(format!(
                    "the output is {other:?}: expected a step of the chain (0 to {})",
                    steps.len() - 1
                )))
            }
        };
        let mut plan = Plan {
            steps,
            dtypes: all,
            inputs: dtypes.len(),
            output,
            slots: Vec::new(),
        };
        plan.check_all_used()?;
        plan.square_pows();
        plan.slots = plan.assign_slots();
        Ok(plan)
    }

    /// Each `Pow` by the constant 2 as its base times itself: the square rounded once, where
    /// `powf` may be an ulp off and costs more, and on GPUs without the exp2 and log2 that
    /// their `pow` goes through (Silero VAD squares its spectrum).
    fn square_pows(&mut self) {
        for i in 0..self.steps.len() {
            let Step::Binary(BinaryOp::Pow, a, Value::Step(j)) = self.steps[i] else {
                continue;
            };
            if matches!(self.steps.get(j), Some(&Step::Scalar(v, _)) if v == 2.0) {
                self.steps[i] = Step::Binary(BinaryOp::Mul, a, a);
            }
        }
    }

    /// Error unless every input and step leads to the output (so that the output's shape is
    /// the broadcast of every input's, as when the steps run one by one).
    fn check_all_used(&self) -> Result<()> {
        let mut used = vec![false; self.dtypes.len()];
        used[self.inputs + self.output] = true;
        for (i, step) in self.steps.iter().enumerate().rev() {
            if used[self.inputs + i] {
                for v in operands(step) {
                    used[self.index(v)] = true;
                }
            }
        }
        match used.iter().position(|&u| !u) {
            None => Ok(()),
            Some(i) if i < self.inputs => Err(invalid(format!(
                "input {i} does not lead to the output: expected every input to be used"
            ))),
            Some(i) => Err(invalid(format!(
                "step {} does not lead to the output (step {}): expected every step to be used",
                i - self.inputs,
                self.output
            ))),
        }
    }

    /// A scratch slot for every value: inputs first, then each step's result in a slot that
    /// holds none of its operands, slots freed after their value's last read.
    fn assign_slots(&self) -> Vec<usize> {
        let mut last = vec![0; self.dtypes.len()];
        for (i, step) in self.steps.iter().enumerate() {
            for v in operands(step) {
                last[self.index(v)] = i;
            }
        }
        let mut slots: Vec<usize> = (0..self.inputs).collect();
        let (mut free, mut count) = (Vec::new(), self.inputs);
        for (i, step) in self.steps.iter().enumerate() {
            let slot = free.pop().unwrap_or_else(|| {
                count += 1;
                count - 1
            });
            slots.push(slot);
            let mut read: Vec<usize> = operands(step).map(|v| self.index(v)).collect();
            read.dedup();
            free.extend(read.into_iter().filter(|&v| last[v] == i).map(|v| slots[v]));
        }
        slots
    }

    /// The number of a value: inputs first, then steps.
    pub(crate) fn index(&self, v: Value) -> usize {
        match v {
            Value::Input(i) => i,
            Value::Step(i) => self.inputs + i,
        }
    }

    /// The steps, in order.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The dtype of value number `v`.
    pub(crate) fn dtype(&self, v: usize) -> DType {
        self.dtypes[v]
    }

    /// The inputs' dtypes.
    pub(crate) fn input_dtypes(&self) -> &[DType] {
        &self.dtypes[..self.inputs]
    }

    /// The number of the output value.
    pub(crate) fn output(&self) -> usize {
        self.inputs + self.output
    }

    /// How many values there are: the inputs and the steps.
    pub(crate) fn index_count(&self) -> usize {
        self.inputs + self.steps.len()
    }

    /// The output's dtype.
    pub(crate) fn out_dtype(&self) -> DType {
        self.dtypes[self.output()]
    }

    /// The scratch slot of value number `v`.
    pub(crate) fn slot(&self, v: usize) -> usize {
        self.slots[v]
    }

    /// How many scratch slots the values take.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.iter().max().map_or(0, |m| m + 1)
    }

    /// The unary and binary steps (a launch's FLOPs per element).
    pub(crate) fn arithmetic_steps(&self) -> usize {
        let arithmetic = |s: &&Step| matches!(s, Step::Unary(..) | Step::Binary(..));
        self.steps.iter().filter(arithmetic).count()
    }

    /// The output for one element whose inputs are `inputs`, computed in f64 (16-bit values
    /// rounded to their dtype after each step).
    pub(crate) fn eval_f64(&self, inputs: &[f64]) -> f64 {
        let mut values: Vec<f64> = inputs
            .iter()
            .zip(&self.dtypes)
            .map(|(&v, &d)| round_f64(v, d))
            .collect();
        for (i, step) in self.steps.iter().enumerate() {
            let at = |v: Value| values[self.index(v)];
            let v = match *step {
                Step::Unary(op, x) => op.eval(at(x)),
                Step::Binary(op, a, b) => op.eval(at(a), at(b)),
                Step::Scalar(value, dtype) => f64::from(scalar_f32(value, dtype)),
                Step::Cast(x, _) => at(x),
            };
            values.push(round_f64(v, self.dtypes[self.inputs + i]));
        }
        values[self.output()]
    }
}

/// The values `step` reads.
pub(crate) fn operands(step: &Step) -> impl Iterator<Item = Value> {
    let (a, b) = match *step {
        Step::Unary(_, x) | Step::Cast(x, _) => (Some(x), None),
        Step::Binary(_, a, b) => (Some(a), Some(b)),
        Step::Scalar(..) => (None, None),
    };
    a.into_iter().chain(b)
}

/// The dtype of step `i`'s result, given the dtypes of the values before it.
fn step_dtype(i: usize, step: &Step, before: &[DType]) -> Result<DType> {
    let inputs = before.len() - i;
    let dtype = |v: Value| {
        let n = match v {
            Value::Input(k) => Some(k).filter(|&k| k < inputs),
            Value::Step(k) => Some(inputs + k).filter(|_| k < i),
        };
        n.map(|n| before[n]).ok_or_else(|| {
            invalid(format!(
                "step {i} reads {v:?}: expected an input below {inputs} or a step below {i}"
            ))
        })
    };
    match *step {
        Step::Unary(_, x) => dtype(x),
        Step::Binary(op, a, b) => {
            let (da, db) = (dtype(a)?, dtype(b)?);
            if op.is_logic() {
                return Err(invalid(format!(
                    "step {i} is {}, whose result is bool: expected an arithmetic op \
                    (comparisons and logical ops end a chain as ops of their own)",
                    op.name()
                )));
            }
            if da != db {
                return Err(invalid(format!(
                    "step {i} ({}) reads {da} and {db}: expected operands of one dtype (cast \
                    one first)",
                    op.name()
                )));
            }
            Ok(da)
        }
        Step::Scalar(_, d) | Step::Cast(_, d) if !is_chain_float(d) => Err(invalid(format!(
            "step {i} makes a {d} value: expected f32, f16 or bf16"
        ))),
        Step::Cast(x, d) => dtype(x).map(|_| d),
        Step::Scalar(_, d) => Ok(d),
    }
}
