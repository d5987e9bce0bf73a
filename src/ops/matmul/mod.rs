//! Matrix multiplication: 2-D and batched, with numpy broadcasting of the batch dimensions;
//! and the fused linear layer (matmul + bias + activation in the kernel's epilogue).

backend_modules!();
#[cfg(feature = "webgpu")]
mod pieces;
#[cfg(feature = "webgpu")]
pub(crate) use webgpu::with_row_bias;

use super::cost::OpCost;
use super::elementwise::check_f32;
use super::{backends, launch, native_f16, Lift, OpRequest, Operand, UnaryOp};
use crate::base::layout::{broadcast_shapes, check_rank};
use crate::choice::{self, pattern_tensor, Problem, Trial, Tunable, TunableOp};
use crate::hal::BackendDevice;
use crate::{BackendKind, DType, Device, DeviceOptions, Error, Queue, Result, Tensor};

/// `a @ b` for `a: [.., m, k]` and `b: [.., k, n]`; leading (batch) dimensions broadcast.
/// Either operand may be a strided view (e.g. a transpose) without a copy.
pub fn matmul(queue: &Queue, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // numpy's rules for vectors: a 1-D `a` is the row [1, k], a 1-D `b` the column [k, 1], and
    // the axis that added is dropped from the result (vector @ vector is a scalar).
    let as_matrix = |t: &Tensor, shape: [usize; 2]| -> Result<Tensor> {
        t.contiguous_on(queue)?.reshape(&shape)
    };
    let (row, column) = (a.rank() == 1, b.rank() == 1);
    let a = if row {
        as_matrix(a, [1, a.shape()[0]])?
    } else {
        a.clone()
    };
    let b = if column {
        as_matrix(b, [b.shape()[0], 1])?
    } else {
        b.clone()
    };
    let out = matmul_epilogue(queue, "matmul", &a, &b, None, None, None)?;
    if !row && !column {
        return Ok(out);
    }
    let mut shape = out.shape().to_vec();
    let r = shape.len();
    if column {
        shape.remove(r - 1);
    }
    if row {
        shape.remove(r - 2);
    }
    out.reshape(&shape)
}

/// The 16-bit dtype `a @ b` multiplies in as stored (f32 accumulation), where the backend can:
/// both f16 or both bf16, no epilogue, and no variant but cuBLAS asked for.
fn native_16bit(
    queue: &Queue,
    a: &Tensor,
    b: &Tensor,
    epilogue: bool,
    variant: Option<&str>,
) -> Option<DType> {
    let dtype = a.dtype();
    let wanted = matches!(dtype, DType::F16 | DType::BF16) && b.dtype() == dtype;
    let variant_ok = matches!(variant, None | Some("cublas"));
    (wanted && !epilogue && variant_ok && queue.device().shared.backend.native_16bit_matmul())
        .then_some(dtype)
}

/// The named matmul kernel variants of `device`'s backend: `webgpu` tile configurations
/// (`direct`, `tile64`, `tile32`, `tile128x64`), `cuda` `cublas` or `kernel`, `cpu` `sgemm`.
pub fn variants(device: &Device) -> Vec<&'static str> {
    device.variants("matmul")
}

/// [`matmul`] with the kernel variant named `variant` (one of [`variants`]), or `"auto"`: the
/// fastest for this device and shape class (autotuned once, then cached).
pub fn matmul_variant(queue: &Queue, a: &Tensor, b: &Tensor, variant: &str) -> Result<Tensor> {
    matmul_epilogue(queue, "matmul", a, b, None, None, Some(variant))
}

/// A linear layer: `act(x @ weight + bias)` with the bias add and the activation applied
/// to each output tile before it is stored (one pass over the output). `x` is
/// `[.., m, k]`, `weight` is `[k, n]` (pass `w.t()` for a PyTorch-style `[n, k]` weight: the
/// transposed view needs no copy), `bias` is `[n]`.
pub fn linear(
    queue: &Queue,
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    act: Option<UnaryOp>,
) -> Result<Tensor> {
    if weight.rank() != 2 {
        return Err(Error::shape(
            "linear",
            format!("weight has shape {:?}: expected [k, n]", weight.shape()),
        ));
    }
    matmul_epilogue(queue, "linear", x, weight, bias, act, None)
}

fn matmul_epilogue(
    queue: &Queue,
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    act: Option<UnaryOp>,
    variant: Option<&str>,
) -> Result<Tensor> {
    let inputs: Vec<&Tensor> = [Some(a), Some(b), bias].into_iter().flatten().collect();
    if native_f16(queue, &inputs) {
        return matmul_in(queue, op, a, b, bias, act, variant, DType::F16);
    }
    if let Some(dtype) = native_16bit(queue, a, b, bias.is_some() || act.is_some(), variant) {
        match matmul_in(queue, op, a, b, None, None, variant, dtype) {
            // cuBLAS cannot take this layout: widened to f32 below.
            Err(Error::Unsupported { .. }) => {}
            done => return done,
        }
    }
    let lift = Lift::of(op, &inputs)?;
    let bias = bias.map(|t| lift.up(queue, t)).transpose()?;
    lift.down(
        queue,
        matmul_in(
            queue,
            op,
            &lift.up(queue, a)?,
            &lift.up(queue, b)?,
            bias.as_ref(),
            act,
            variant,
            DType::F32,
        )?,
    )
}

/// `t`, copied to contiguous memory if its matrices repeat elements (a stride of 0 along a
/// row or column of extent > 1): GEMM kernels read such operands in another order than
/// packed ones, and the sum must not depend on how an operand was made.
fn dense_matrices(queue: &Queue, t: Tensor) -> Result<Tensor> {
    let r = t.rank();
    let repeats = (r - 2..r).any(|d| t.strides()[d] == 0 && t.shape()[d] > 1);
    if repeats {
        t.contiguous_on(queue)
    } else {
        Ok(t)
    }
}

/// `(m, k, n)` of `a` @ `b`; an error unless both are of rank 2 or more with equal inner
/// dimensions.
fn matmul_dims(op: &'static str, a: &Tensor, b: &Tensor) -> Result<(usize, usize, usize)> {
    let (ra, rb) = (a.rank(), b.rank());
    if ra < 2 || rb < 2 {
        return Err(Error::shape(
            op,
            format!(
                "got shapes {:?} and {:?}: expected vectors or matrices ([.., m, k] @ [.., k, \
                n]; a 1-D operand is a row or a column)",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
    if k != k2 {
        return Err(Error::shape(
            op,
            format!(
                "inner dimensions differ: {:?} @ {:?} has k = {k} vs {k2}, expected equal",
                a.shape(),
                b.shape()
            ),
        ));
    }
    Ok((m, k, n))
}

/// The product with every operand and the result stored as `dtype` (f32, or native f16); the
/// chooser picks the variant (`requested` is what the call named).
#[allow(clippy::too_many_arguments)]
fn matmul_in(
    queue: &Queue,
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    act: Option<UnaryOp>,
    requested: Option<&str>,
    dtype: DType,
) -> Result<Tensor> {
    for t in [Some(a), Some(b), bias].into_iter().flatten() {
        queue.device().check_same(t.device(), op)?;
    }
    if dtype == DType::F32 {
        check_f32(queue, op, a)?;
    }
    if dtype == DType::F32 {
        check_f32(queue, op, b)?;
    }
    let (m, k, n) = matmul_dims(op, a, b)?;
    let (ra, rb) = (a.rank(), b.rank());
    let bias = match bias {
        Some(t) => {
            if dtype == DType::F32 {
                check_f32(queue, op, t)?;
            }
            if t.shape() != [n] {
                return Err(Error::shape(
                    op,
                    format!(
                        "bias has shape {:?}: expected [{n}] (the output columns)",
                        t.shape()
                    ),
                ));
            }
            Some(t.contiguous_on(queue)?)
        }
        None => None,
    };
    let batch = broadcast_shapes(op, &a.shape()[..ra - 2], &b.shape()[..rb - 2])?;
    let with = |x: usize, y: usize| batch.iter().copied().chain([x, y]).collect::<Vec<_>>();
    check_rank(op, &with(m, n))?;
    let a = dense_matrices(queue, a.broadcast_to(&with(m, k))?)?;
    let b = dense_matrices(queue, b.broadcast_to(&with(k, n))?)?;
    let problem = Problem::Matmul {
        batch: batch.iter().product(),
        m,
        n,
        k,
        dtype,
    };
    let (variant, decision) = choice::choose(queue, &Variants, problem, requested)?;
    let out = Tensor::uninit(queue, &with(m, n), dtype)?;
    if out.numel() > 0 {
        let bias = bias.as_ref().map(Tensor::operand);
        let call = Matmul {
            a: a.operand(),
            b: b.operand(),
            bias,
            act,
            out: out.operand(),
            m,
            n,
            k,
            variant: Some(variant),
            dtype,
        };
        launch(queue, &call, Some(&decision))?;
    }
    Ok(out)
}

/// `out[b] = act(a[b] @ b[b] + bias)`; `a` is `[batch.., m, k]`, `b` is `[batch.., k, n]`,
/// both strided and broadcast to the output's batch shape; `bias` (optional) is contiguous
/// `[n]`; `out` is contiguous `[batch.., m, n]`. `variant` names a kernel variant of the
/// backend (see [`variants`]); `None` lets the backend choose.
pub(crate) struct Matmul<'a> {
    pub a: Operand<'a>,
    pub b: Operand<'a>,
    pub bias: Option<Operand<'a>>,
    pub act: Option<UnaryOp>,
    pub out: Operand<'a>,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub variant: Option<&'static str>,
    /// Storage dtype of every operand: f32, or f16 / bf16 where the backend multiplies them
    /// as stored.
    pub dtype: DType,
}

impl OpRequest for Matmul<'_> {
    fn operands(&self) -> Vec<&Operand<'_>> {
        let mut ops = vec![&self.a, &self.b];
        ops.extend(self.bias.as_ref());
        ops.push(&self.out);
        ops
    }

    fn cost(&self) -> OpCost {
        let ops = self.operands();
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let batch = (self.out.layout.numel() as u64 / (m * n).max(1)).max(1);
        let name = if self.bias.is_some() || self.act.is_some() {
            "linear"
        } else {
            "matmul"
        };
        OpCost {
            variant: self.variant,
            ..OpCost::typed(name, &ops, 2 * batch * m * n * k, self.dtype)
        }
    }

    backends!(matmul);
}

/// Matmul's kernel variants, for the chooser.
pub(crate) struct Variants;

impl Tunable for Variants {
    fn op(&self) -> TunableOp {
        TunableOp::Matmul
    }

    fn all_variants(&self) -> Vec<&'static str> {
        [BackendKind::Cpu, BackendKind::WebGpu, BackendKind::Cuda]
            .into_iter()
            .flat_map(backend_variants)
            .collect()
    }

    fn variants(&self, device: &Device) -> Vec<&'static str> {
        backend_variants(device.backend())
    }

    fn default_variant(&self, device: &Device, problem: Problem) -> (&'static str, String) {
        let (m, n) = match problem {
            Problem::Matmul { m, n, .. } => (m, n),
            Problem::Reduce { .. } => (0, 0),
        };
        default_variant(&device.shared.backend, &device.shared.options, m, n)
    }

    fn trial(&self, device: &Device, problem: Problem) -> Result<Trial> {
        let Problem::Matmul {
            batch,
            m,
            n,
            k,
            dtype,
        } = problem
        else {
            return Err(Error::Invalid(format!(
                "{problem:?} is not a matmul problem"
            )));
        };
        let shape = |r: usize, c: usize| {
            if batch > 1 {
                vec![batch, r, c]
            } else {
                vec![r, c]
            }
        };
        let (a, b) = (
            pattern_tensor(device, &shape(m, k))?,
            pattern_tensor(device, &shape(k, n))?,
        );
        let (a, b) = if dtype == DType::F32 {
            (a, b)
        } else {
            (a.cast(dtype)?, b.cast(dtype)?)
        };
        let describe = format!("{:?} @ {:?} {}", a.shape(), b.shape(), a.dtype());
        Ok(Trial {
            describe,
            run: Box::new(move |queue: &Queue, variant: &str| {
                matmul_variant(queue, &a, &b, variant).map(drop)
            }),
        })
    }
}

/// Names of the matmul variants of a backend (policies and autotuning pick among them).
fn backend_variants(kind: BackendKind) -> Vec<&'static str> {
    match kind {
        BackendKind::Cpu => vec!["sgemm"],
        #[cfg(feature = "webgpu")]
        BackendKind::WebGpu => webgpu::VARIANTS.iter().map(|v| v.name).collect(),
        BackendKind::Cuda => vec!["cublas", "kernel"],
        #[allow(unreachable_patterns)]
        _ => Vec::new(),
    }
}

/// The matmul variant a device runs for an `m x n` output unless told otherwise, and why.
fn default_variant(
    device: &BackendDevice,
    options: &DeviceOptions,
    m: usize,
    n: usize,
) -> (&'static str, String) {
    let _ = (options, m, n);
    match device {
        BackendDevice::Cpu(_) => ("sgemm", "the cpu matmul (the gemm crate's SGEMM)".into()),
        #[cfg(feature = "webgpu")]
        BackendDevice::WebGpu(d) => {
            let (v, why) = webgpu::default_variant(d, options, m, n);
            (v, why.into())
        }
        #[cfg(not(feature = "webgpu"))]
        BackendDevice::WebGpu(d) => match **d {},
        #[cfg(cuda_backend)]
        BackendDevice::Cuda(_) if crate::hal::cuda::blas::available() => (
            "cublas",
            "the default: cuBLAS (the kernel for layouts cuBLAS cannot take)".into(),
        ),
        BackendDevice::Cuda(_) => (
            "kernel",
            "the default without cuBLAS (libcublas was not found)".into(),
        ),
    }
}

/// The matmul ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Linear layer `act(self @ weight + bias)` in one kernel (see [`super::matmul::linear`]).
    pub fn linear(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        act: Option<UnaryOp>,
    ) -> Result<Tensor> {
        linear(&self.device().queue(), self, weight, bias, act)
    }
    /// Matrix product (batched, broadcasting).
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        matmul(&self.device().queue(), self, other)
    }
}
