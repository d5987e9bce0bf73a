//! The op catalogue. Each op is defined once: parameters, validation, shape rule and the
//! scalar math that the CPU backend runs and the tests use (in f64) as the reference.
//! Each family lives in a folder with its kernels (see `README.md` here and ARCHITECTURE.md);
//! its launches reach a backend through `OpRequest`, a validated request with every layout
//! worked out.

#[cfg(test)]
mod checks;
pub(crate) mod common;
pub mod concat;
pub(crate) mod constructors;
mod cost;
mod launch;
mod support;
mod tunables;

use crate::{DType, Error, Queue, Result, Tensor};

pub use attention::AttentionParams;
pub use conv::{
    Conv2dGeometry, Conv2dParams, ConvTranspose2dParams, Pool2dParams, PoolKind, PoolOptions,
};
pub use elementwise::{BinaryOp, UnaryOp};
pub use norm::{NormKind, NormParams};
pub use reduce::{ArgOptions, ReduceOp};
pub use scan::CumsumOptions;
pub use scatter::ScatterReduction;

/// The backend modules of an op family (`cpu`, and `webgpu` and `cuda` where those backends
/// are built) and the hooks through which the registry finds the op kernels their
/// `specialisations()` list.
macro_rules! backend_modules {
    () => {
        mod cpu;
        #[cfg(cuda_backend)]
        mod cuda;
        #[cfg(feature = "webgpu")]
        mod webgpu;

        /// This family's WGSL specialisations (the naga check).
        #[cfg(all(test, feature = "webgpu"))]
        pub(crate) fn wgsl_specialisations() -> Vec<crate::hal::webgpu::Specialisation> {
            webgpu::specialisations()
        }

        /// This family's CUDA specialisations (the NVRTC check).
        #[cfg(all(test, cuda_backend))]
        pub(crate) fn cuda_specialisations() -> Vec<crate::hal::cuda::Specialisation> {
            cuda::specialisations()
        }
    };
}

/// The ops in folders of their own, each with its kernels beside it: one line per op. The
/// macro declares the modules and gathers their op kernels for the compile checks.
macro_rules! registry {
    ($($op:ident),* $(,)?) => {
        $(pub mod $op;)*

        /// Every built-in WGSL specialisation of the registered ops (the naga check).
        #[cfg(all(test, feature = "webgpu"))]
        pub(crate) fn wgsl_specialisations() -> Vec<crate::hal::webgpu::Specialisation> {
            [$($op::wgsl_specialisations()),*].concat()
        }

        /// Every built-in CUDA specialisation of the registered ops (the NVRTC check).
        #[cfg(all(test, cuda_backend))]
        pub(crate) fn cuda_specialisations() -> Vec<crate::hal::cuda::Specialisation> {
            [$($op::cuda_specialisations()),*].concat()
        }
    };
}

registry!(
    attention,
    cast,
    chain,
    conv,
    copy,
    elementwise,
    gather,
    matmul,
    norm,
    qmatmul,
    reduce,
    scan,
    scatter,
    select,
    softmax,
    log_softmax,
    topk
);
pub(crate) use crate::runtime::tensor::Operand;
pub(crate) use launch::{backends, launch, OpRequest};
pub use support::{support_matrix, support_rows, SupportRow};
pub use tunables::variant_names;
pub(crate) use tunables::{tunable, PROBE, TUNABLES};

/// How an op meets narrow dtypes: f16 / bf16 inputs are widened to f32 (exactly), the f32
/// kernel runs, and a float result is rounded back to the inputs' dtype. Every backend stores
/// f16 and bf16 in 16 bits and computes in f32 this way. The float inputs of one op must share
/// a dtype. Data movement and integer arithmetic lift bool, u8 and i8 the same way
/// ([`Lift::words`]: to u32, u32 and i32, the results' low bytes kept).
pub(crate) struct Lift {
    /// The narrow dtype to bring results back to, if the inputs had one.
    narrow: Option<DType>,
}

impl Lift {
    /// The lift for a float op on `inputs` (non-float inputs are ignored).
    pub(crate) fn of(op: &'static str, inputs: &[&Tensor]) -> Result<Lift> {
        Self::among(op, inputs, DType::is_float)
    }

    /// The lift for an op that moves words or computes on integers: floats as [`Lift::of`],
    /// and bool, u8 or i8 inputs, which every input must then share.
    pub(crate) fn words(op: &'static str, inputs: &[&Tensor]) -> Result<Lift> {
        let lift = Self::among(op, inputs, |d| d.is_float() || d.size() == 1)?;
        if let Some(d) = lift.narrow.filter(|d| d.size() == 1) {
            if let Some(t) = inputs.iter().find(|t| t.dtype() != d) {
                return Err(Error::DType {
                    op,
                    expected: format!("every input in one dtype ({d})"),
                    got: t.dtype().to_string(),
                });
            }
        }
        Ok(lift)
    }

    /// The narrow dtype among the inputs that `counts` picks, which must share one dtype.
    fn among(op: &'static str, inputs: &[&Tensor], counts: fn(DType) -> bool) -> Result<Lift> {
        let mut found: Option<DType> = None;
        for t in inputs.iter().filter(|t| counts(t.dtype())) {
            match found {
                Some(d) if d != t.dtype() => {
                    return Err(Error::DType {
                        op,
                        expected: format!("every {} input in one dtype ({d})", kind(d)),
                        got: t.dtype().to_string(),
                    });
                }
                _ => found = Some(t.dtype()),
            }
        }
        Ok(Lift {
            narrow: found.filter(|&d| d.wide() != d),
        })
    }

    /// `t` widened if it is of the lift's narrow dtype, else `t` itself.
    pub(crate) fn up(&self, queue: &Queue, t: &Tensor) -> Result<Tensor> {
        match self.narrow {
            Some(d) if t.dtype() == d => widen(queue, t),
            _ => Ok(t.clone()),
        }
    }

    /// A result in the wide dtype brought back to the inputs' narrow dtype (others as they
    /// are).
    pub(crate) fn down(&self, queue: &Queue, t: Tensor) -> Result<Tensor> {
        match self.narrow {
            Some(d) if t.dtype() == d.wide() => cast::cast(queue, &t, d),
            _ => Ok(t),
        }
    }
}

/// "float" or "integer", for messages about `d`'s kind.
fn kind(d: DType) -> &'static str {
    if d.is_float() {
        "float"
    } else {
        "integer"
    }
}

/// Whether an op on `inputs` can run on their 16-bit storage directly (f16 on a backend with
/// native f16 storage), skipping the [`Lift`].
pub(crate) fn native_f16(queue: &Queue, inputs: &[&Tensor]) -> bool {
    inputs.iter().all(|t| t.dtype() == DType::F16) && queue.device().shared.backend.native_f16()
}

/// `t` in its [wide](DType::wide) dtype: f16 / bf16 widened to f32, bool and u8 to u32, i8
/// to i32 (exactly); other dtypes as they are.
pub(crate) fn widen(queue: &Queue, t: &Tensor) -> Result<Tensor> {
    if t.dtype().wide() != t.dtype() {
        cast::cast(queue, t, t.dtype().wide())
    } else {
        Ok(t.clone())
    }
}
