//! Reductions over one axis or over every element.

backend_modules!();
#[cfg(any(feature = "webgpu", cuda_backend))]
mod passes;

use super::cost::OpCost;
use super::elementwise::check_f32;
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::choice::{self, pattern_tensor, Problem, Trial, Tunable, TunableOp};
use crate::hal::BackendDevice;
use crate::{DType, Device, DeviceOptions, Error, Queue, Result, Tensor};

/// The reductions, one row each: the variant and its code, its name (also its JS method;
/// argmax's method takes `ArgOptions` of its own in `npm/api.js`). The enum, the kernels'
/// code constants (`OP_Sum`, ... in WGSL and CUDA, prepended to the sources) and the
/// TypeScript union are generated from these rows, so each code is written once.
macro_rules! reduce_ops {
    ($($(#[doc = $doc:literal])* $v:ident = $code:literal, $name:literal;)*) => {
        /// Reduction kinds. The numeric code is what kernels switch on (by the names
        /// `OP_<variant>` that the generated constants give it).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ReduceOp {
            $($(#[doc = $doc])* $v = $code,)*
        }

        impl ReduceOp {
            /// Every reduction.
            pub const ALL: [ReduceOp; [$($code),*].len()] = [$(ReduceOp::$v),*];

            /// Lower-case name, also the op's method in JavaScript.
            pub fn name(self) -> &'static str {
                match self {
                    $(ReduceOp::$v => $name,)*
                }
            }
        }

        /// The WGSL constants naming each reduction's code.
        #[cfg(feature = "webgpu")]
        const REDUCE_WGSL: &str =
            concat!($("const OP_", stringify!($v), ": u32 = ", $code, "u;\n",)*);
        /// The CUDA definitions naming each reduction's code.
        #[cfg(cuda_backend)]
        const REDUCE_CUDA: &str = concat!($("#define OP_", stringify!($v), " ", $code, "\n",)*);
        /// The TypeScript union of the reductions' names.
        #[cfg(target_arch = "wasm32")]
        // Read by wasm-bindgen's `typescript_custom_section` (src/wasm/ops.rs), a use rustc
        // does not see.
        #[allow(dead_code)]
        pub(crate) const REDUCE_TS: &str = concat!(
            "/** A reduction's name. */\n",
            "export type ReduceName =", $(" | '", $name, "'",)* ";\n"
        );
    };
}

reduce_ops! {
    /// Sum of the elements.
    Sum = 0, "sum";
    /// Arithmetic mean.
    Mean = 1, "mean";
    /// Largest element (NaN if any is NaN).
    Max = 2, "max";
    /// Smallest element (NaN if any is NaN).
    Min = 3, "min";
    /// Index (u32) of the first largest element; a NaN counts as largest.
    Argmax = 4, "argmax";
    /// Product of the elements (1 for none; integers wrap, as the sum does).
    Prod = 5, "prod";
}

impl ReduceOp {
    /// Look an op up by [`name`](ReduceOp::name).
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Code that kernels switch on.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Dtype of the result on `input`: argmax's u32 indices; the mean of integers (and
    /// bools) in f32; else the input's (u8, i8 and bool sums wrap into it, as numpy's with
    /// its `dtype`).
    pub fn out_dtype(self, input: DType) -> DType {
        match (self, input) {
            (ReduceOp::Argmax, _) => DType::U32,
            (ReduceOp::Mean, d) if !d.is_float() => DType::F32,
            (_, d) => d,
        }
    }

    /// Reference result over `values` in f64: `(value, index)`; the index is meaningful for
    /// `Argmax` only.
    pub fn reference(self, values: impl Iterator<Item = f64>) -> (f64, usize) {
        let mut count = 0usize;
        let mut acc = match self {
            ReduceOp::Sum | ReduceOp::Mean => 0.0,
            ReduceOp::Prod => 1.0,
            ReduceOp::Max | ReduceOp::Argmax => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        };
        let mut best = 0usize;
        for (i, v) in values.enumerate() {
            count += 1;
            match self {
                ReduceOp::Sum | ReduceOp::Mean => acc += v,
                ReduceOp::Prod => acc *= v,
                ReduceOp::Max | ReduceOp::Min if acc.is_nan() => {}
                ReduceOp::Max | ReduceOp::Min if v.is_nan() => acc = v,
                ReduceOp::Max => acc = acc.max(v),
                ReduceOp::Min => acc = acc.min(v),
                ReduceOp::Argmax => {
                    if !acc.is_nan() && (v.is_nan() || v > acc || i == 0) {
                        acc = v;
                        best = i;
                    }
                }
            }
        }
        if self == ReduceOp::Mean {
            acc /= count as f64;
        }
        (acc, best)
    }
}

/// Reduce `x` over `axis`, or over every element when `axis` is `None` (giving a rank-0
/// tensor). The reduced axis is removed from the shape. `Argmax` gives u32 indices.
///
/// On i32, u32 and i64 the sum, product, max and min are of that dtype, and a sum or product
/// wraps as numpy's int32, uint32 and int64 ones do; the mean is f32 (each integer rounded to
/// f32 first, then averaged as f32 tensors are), as numpy's mean of integers is a float.
pub fn reduce(queue: &Queue, op: ReduceOp, x: &Tensor, axis: Option<usize>) -> Result<Tensor> {
    reduce_any(queue, op, x, axis, None)
}

/// [`reduce`] of any dtype with a requested variant: 16-bit floats lifted to f32, integers
/// reduced as they are (their mean in f32), bool, u8 and i8 widened to u32 / i32 and the
/// result brought back.
fn reduce_any(
    queue: &Queue,
    op: ReduceOp,
    x: &Tensor,
    axis: Option<usize>,
    requested: Option<&str>,
) -> Result<Tensor> {
    match x.dtype() {
        d if d.size() == 1 => {
            let wide = reduce_any(queue, op, &super::widen(queue, x)?, axis, requested)?;
            match op.out_dtype(d) {
                out if out == d => super::cast::cast(queue, &wide, d),
                _ => Ok(wide),
            }
        }
        d if d.is_integer() && op == ReduceOp::Mean => {
            reduce_values(queue, op, &x.cast(DType::F32)?, axis, requested)
        }
        d if d.is_integer() => reduce_values(queue, op, x, axis, requested),
        _ => {
            let lift = Lift::of(op.name(), &[x])?;
            lift.down(
                queue,
                reduce_values(queue, op, &lift.up(queue, x)?, axis, requested)?,
            )
        }
    }
}

/// Which extreme [`arg_reduce`] looks for, and which of equal elements it names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArgOptions {
    /// The smallest element (argmin) instead of the largest.
    pub min: bool,
    /// Among equal elements the last (ONNX's `select_last_index`) instead of the first.
    pub last: bool,
}

/// The index (u32) along `axis` of the largest (with `min`, the smallest) element; among equal
/// ones the first, or with `last` the last. A NaN counts as the extreme, as for argmax. Runs as
/// the argmax of `-x` (for `min`; of integers `!x`) over `x` flipped along the axis (for
/// `last`), the index then mapped back: exact, on every backend.
pub fn arg_reduce(queue: &Queue, x: &Tensor, axis: usize, options: ArgOptions) -> Result<Tensor> {
    use super::gather::{flip, gather};
    let n = *x.shape().get(axis).ok_or_else(|| {
        Error::OutOfRange(format!(
            "argmax axis {axis} of a rank-{} tensor: expected an axis below {}",
            x.rank(),
            x.rank()
        ))
    })?;
    // Bool, u8 and i8 compare widened to u32 / i32 (exactly).
    let x = &match x.dtype().size() {
        1 => super::widen(queue, x)?,
        _ => x.clone(),
    };
    let v = match (options.min, x.dtype()) {
        (false, _) => x.clone(),
        (true, d) if d.is_integer() => {
            // `!x` (all ones minus x, never overflowing) orders integers in reverse.
            let ones = Tensor::from_slice(queue.device(), &[-1i32], &[1])?.cast(d)?;
            super::elementwise::binary(queue, super::BinaryOp::Sub, &ones, x)?
        }
        (true, _) => super::elementwise::unary(queue, super::UnaryOp::Neg, x)?,
    };
    let v = if options.last {
        flip(queue, &v, axis)?
    } else {
        v
    };
    let index = reduce(queue, ReduceOp::Argmax, &v, Some(axis))?;
    if !options.last {
        return Ok(index);
    }
    // Position i of the flipped axis is n - 1 - i of the original: a lookup.
    let back: Vec<u32> = (0..n as u32).rev().collect();
    let shape = index.shape().to_vec();
    let flat = index.reshape(&[index.numel()])?;
    gather(
        queue,
        &Tensor::from_slice(queue.device(), &back, &[n])?,
        0,
        &flat,
    )?
    .reshape(&shape)
}

/// `op` over the axes `axes` of `x` together (any order, no repeats; none: every axis), as
/// numpy's `axis=(..)` and ONNX's `axes`: one launch over the axes flattened (after a copy that
/// brings them together when they are not adjacent). With `keep_dims` the reduced axes stay
/// as extents of 1. Argmax takes one axis.
pub fn reduce_axes(
    queue: &Queue,
    op: ReduceOp,
    x: &Tensor,
    axes: &[usize],
    keep_dims: bool,
) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    let mut reduced: Vec<usize> = if axes.is_empty() {
        (0..shape.len()).collect()
    } else {
        axes.to_vec()
    };
    reduced.sort_unstable();
    if let Some(&a) = reduced.iter().find(|&&a| a >= shape.len()) {
        return Err(Error::OutOfRange(format!(
            "{}: axis {a} of a rank-{} tensor {shape:?}: expected axes below {}",
            op.name(),
            shape.len(),
            shape.len()
        )));
    }
    if reduced.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::Invalid(format!(
            "{}: axes {axes:?} name an axis twice: expected each at most once",
            op.name()
        )));
    }
    if op == ReduceOp::Argmax && reduced.len() > 1 {
        return Err(Error::Invalid(format!(
            "argmax over axes {reduced:?}: expected one axis (the \
            index of the largest element along it)"
        )));
    }
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !reduced.contains(a)).collect();
    let out = if reduced.is_empty() {
        reduce(queue, op, x, None)?
    } else {
        // Bring the reduced axes together at the end (a view, copied only if they were apart),
        // flatten them into one, and reduce that.
        let order: Vec<usize> = kept.iter().chain(&reduced).copied().collect();
        let together = x.permute(&order)?.contiguous_on(queue)?;
        let len: usize = reduced.iter().map(|&a| shape[a]).product();
        let flat: Vec<usize> = kept.iter().map(|&a| shape[a]).chain([len]).collect();
        reduce(queue, op, &together.reshape(&flat)?, Some(kept.len()))?
    };
    if !keep_dims {
        return Ok(out);
    }
    let kept_shape: Vec<usize> = (0..shape.len())
        .map(|a| if reduced.contains(&a) { 1 } else { shape[a] })
        .collect();
    out.reshape(&kept_shape)
}

/// [`reduce_axes`] with an empty reduction as ONNX's ReduceMax and ReduceMin define it: the
/// maximum of nothing is −inf and the minimum +inf, each the identity of its operation (numpy,
/// and `reduce_axes`, refuse them). Sum (0), product (1) and mean (NaN) are as `reduce_axes` gives
/// them;
/// argmax of nothing stays an error.
pub fn reduce_axes_with_identity(
    queue: &Queue,
    op: ReduceOp,
    x: &Tensor,
    axes: &[usize],
    keep_dims: bool,
) -> Result<Tensor> {
    let identity = match op {
        ReduceOp::Max => f32::NEG_INFINITY,
        ReduceOp::Min => f32::INFINITY,
        _ => return reduce_axes(queue, op, x, axes, keep_dims),
    };
    if x.numel() > 0 {
        return reduce_axes(queue, op, x, axes, keep_dims);
    }
    // The shape (and the axes' checks) of the same reduction summed, filled with the identity.
    let shape = reduce_axes(queue, ReduceOp::Sum, x, axes, keep_dims)?
        .shape()
        .to_vec();
    let n: usize = shape.iter().product();
    let out = Tensor::from_slice(queue.device(), &vec![identity; n], &shape)?;
    if x.dtype() == DType::F32 {
        Ok(out)
    } else {
        out.cast(x.dtype())
    }
}

/// [`reduce`] with the reduction variant named `variant` (one of
/// `device.variants("reduce")`: `subgroup`, `tree` or `serial` on webgpu), or `"auto"`: the fastest
/// for this device and shape class (autotuned once, then cached).
pub fn reduce_variant(
    queue: &Queue,
    op: ReduceOp,
    x: &Tensor,
    axis: Option<usize>,
    variant: &str,
) -> Result<Tensor> {
    reduce_any(queue, op, x, axis, Some(variant))
}

/// The reduction of f32, i32, u32 or i64 values.
fn reduce_values(
    queue: &Queue,
    op: ReduceOp,
    x: &Tensor,
    axis: Option<usize>,
    requested: Option<&str>,
) -> Result<Tensor> {
    let dtype = x.dtype();
    if !dtype.is_integer() {
        check_f32(queue, op.name(), x)?;
    }
    queue.device().check_same(x.device(), op.name())?;
    let shape = x.shape();
    let (outer, len, inner, out_shape) = match axis {
        None => (1, x.numel(), 1, vec![]),
        Some(a) if a >= shape.len() => {
            return Err(Error::OutOfRange(format!(
                "{}: axis {a} of a rank-{} tensor {shape:?}: expected an axis below {}",
                op.name(),
                shape.len(),
                shape.len()
            )))
        }
        Some(a) => {
            let mut out_shape = shape.to_vec();
            out_shape.remove(a);
            (
                shape[..a].iter().product(),
                shape[a],
                shape[a + 1..].iter().product(),
                out_shape,
            )
        }
    };
    if len == 0 {
        return empty_axis(queue, op, shape, &out_shape, dtype);
    }
    let x = x.contiguous_on(queue)?;
    let (variant, decision) = choice::choose(
        queue,
        &Variants,
        Problem::Reduce { outer, len, inner },
        requested,
    )?;
    let out = Tensor::uninit(queue, &out_shape, op.out_dtype(dtype))?;
    if out.numel() > 0 {
        launch(
            queue,
            &Reduce {
                op,
                dtype,
                x: x.operand(),
                outer,
                len,
                inner,
                out: out.operand(),
                variant: Some(variant),
            },
            Some(&decision),
        )?;
    }
    Ok(out)
}

/// Reduce the middle axis of a contiguous `[outer, len, inner]` input to `[outer, inner]`.
/// `variant` names a reduction variant of the backend (`None`: its default).
pub(crate) struct Reduce<'a> {
    pub op: ReduceOp,
    /// The dtype of the values: f32, i32, u32 or i64 (the result's too, except argmax's u32).
    pub dtype: DType,
    pub x: Operand<'a>,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub out: Operand<'a>,
    pub variant: Option<&'static str>,
}

impl OpRequest for Reduce<'_> {
    fn cost(&self) -> OpCost {
        OpCost {
            variant: self.variant,
            dtype: self.dtype,
            ..OpCost::simple(
                self.op.name(),
                &[&self.x, &self.out],
                self.x.layout.numel() as u64,
            )
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(reduce);
}

/// A reduction over an empty axis, as numpy defines it: the sum of nothing is 0 and the
/// product 1 (of `dtype`), the mean NaN; a maximum, minimum or argmax of nothing is an error.
fn empty_axis(
    queue: &Queue,
    op: ReduceOp,
    shape: &[usize],
    out_shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let value = match op {
        ReduceOp::Sum => 0.0,
        ReduceOp::Prod => return Tensor::ones(queue.device(), out_shape, dtype),
        ReduceOp::Mean => f32::NAN,
        ReduceOp::Max | ReduceOp::Min | ReduceOp::Argmax => {
            let why = format!(
                "cannot take the {} of an empty axis of {shape:?} (numpy raises \
                too): expected at least one element",
                op.name()
            );
            return Err(Error::shape(op.name(), why));
        }
    };
    if op == ReduceOp::Sum {
        return Tensor::zeros(queue.device(), out_shape, dtype);
    }
    let n: usize = out_shape.iter().product();
    Tensor::from_slice(queue.device(), &vec![value; n], out_shape)
}

/// The reductions' kernel variants, for the chooser.
pub(crate) struct Variants;

impl Tunable for Variants {
    fn op(&self) -> TunableOp {
        TunableOp::Reduce
    }

    fn all_variants(&self) -> Vec<&'static str> {
        vec!["subgroup", "tree", "serial", "cpu", "kernel"]
    }

    fn variants(&self, device: &Device) -> Vec<&'static str> {
        variants(&device.shared.backend)
    }

    fn default_variant(&self, device: &Device, _: Problem) -> (&'static str, String) {
        default_variant(&device.shared.backend, &device.shared.options)
    }

    fn trial(&self, device: &Device, problem: Problem) -> Result<Trial> {
        let Problem::Reduce { outer, len, inner } = problem else {
            return Err(Error::Invalid(format!(
                "{problem:?} is not a reduction problem"
            )));
        };
        let x = pattern_tensor(device, &[outer, len, inner])?;
        let describe = format!("sum over axis 1 of {:?}", x.shape());
        Ok(Trial {
            describe,
            run: Box::new(move |queue: &Queue, variant: &str| {
                reduce_variant(queue, ReduceOp::Sum, &x, Some(1), variant).map(drop)
            }),
        })
    }
}

/// The reduction variants of an opened device.
fn variants(device: &BackendDevice) -> Vec<&'static str> {
    match device {
        BackendDevice::Cpu(_) => vec!["cpu"],
        #[cfg(feature = "webgpu")]
        BackendDevice::WebGpu(d) => webgpu::variants(d),
        #[cfg(not(feature = "webgpu"))]
        BackendDevice::WebGpu(d) => match **d {},
        BackendDevice::Cuda(_) => vec!["kernel"],
    }
}

/// The reduction variant a device runs unless told otherwise, and why.
fn default_variant(device: &BackendDevice, options: &DeviceOptions) -> (&'static str, String) {
    let _ = options;
    match device {
        BackendDevice::Cpu(_) => ("cpu", "the only reduction of cpu".into()),
        #[cfg(feature = "webgpu")]
        BackendDevice::WebGpu(d) => webgpu::default_variant(d, options),
        #[cfg(not(feature = "webgpu"))]
        BackendDevice::WebGpu(d) => match **d {},
        BackendDevice::Cuda(_) => ("kernel", "the only reduction of cuda".into()),
    }
}

/// The reduce ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Reduce over several axes together (see [`reduce_axes`]).
    pub fn reduce_axes(&self, op: ReduceOp, axes: &[usize], keep_dims: bool) -> Result<Tensor> {
        reduce_axes(&self.device().queue(), op, self, axes, keep_dims)
    }
    /// Reduce over `axis` (or everything with `None`).
    pub fn reduce(&self, op: ReduceOp, axis: Option<usize>) -> Result<Tensor> {
        reduce(&self.device().queue(), op, self, axis)
    }
    /// Sum over `axis` (or everything with `None`).
    pub fn sum(&self, axis: Option<usize>) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, axis)
    }
    /// Index of the largest or smallest element along `axis` (see [`super::reduce::arg_reduce`]).
    pub fn arg_reduce(&self, axis: usize, options: ArgOptions) -> Result<Tensor> {
        arg_reduce(&self.device().queue(), self, axis, options)
    }
}
