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
pub use conv::{Conv2dGeometry, Conv2dParams, Pool2dParams, PoolKind, PoolOptions};
pub use elementwise::{BinaryOp, UnaryOp};
pub use norm::{NormKind, NormParams};
pub use reduce::{ArgOptions, ReduceOp};
pub use scan::CumsumOptions;

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
    conv,
    copy,
    elementwise,
    gather,
    matmul,
    norm,
    reduce,
    scan,
    select,
    softmax,
    log_softmax
);
pub(crate) use crate::runtime::tensor::Operand;
pub(crate) use launch::{backends, launch, OpRequest};
pub use support::support_matrix;
pub use tunables::variant_names;
pub(crate) use tunables::{tunable, PROBE, TUNABLES};

/// How an op meets 16-bit floats: f16 / bf16 inputs are widened to f32 (exactly), the f32
/// kernel runs, and a float result is rounded back to the inputs' dtype. Every backend stores
/// f16 and bf16 in 16 bits and computes in f32 this way. The float inputs of one op must share
/// a dtype.
pub(crate) struct Lift {
    /// The 16-bit dtype to round results to, if the inputs had one.
    narrow: Option<DType>,
}

impl Lift {
    /// The lift for an op on `inputs` (non-float inputs are ignored).
    pub(crate) fn of(op: &'static str, inputs: &[&Tensor]) -> Result<Lift> {
        let mut found: Option<DType> = None;
        for t in inputs.iter().filter(|t| t.dtype().is_float()) {
            match found {
                Some(d) if d != t.dtype() => {
                    return Err(Error::DType {
                        op,
                        expected: format!("every float input in one dtype ({d})"),
                        got: t.dtype().to_string(),
                    });
                }
                _ => found = Some(t.dtype()),
            }
        }
        Ok(Lift {
            narrow: found.filter(|&d| d != DType::F32),
        })
    }

    /// `t` widened to f32 if it is a 16-bit float, else `t` itself.
    pub(crate) fn up(&self, queue: &Queue, t: &Tensor) -> Result<Tensor> {
        widen(queue, t)
    }

    /// An f32 result rounded back to the inputs' 16-bit dtype (others as they are).
    pub(crate) fn down(&self, queue: &Queue, t: Tensor) -> Result<Tensor> {
        match self.narrow {
            Some(d) if t.dtype() == DType::F32 => cast::cast(queue, &t, d),
            _ => Ok(t),
        }
    }
}

/// Whether an op on `inputs` can run on their 16-bit storage directly (f16 on a backend with
/// native f16 storage), skipping the [`Lift`].
pub(crate) fn native_f16(queue: &Queue, inputs: &[&Tensor]) -> bool {
    inputs.iter().all(|t| t.dtype() == DType::F16) && queue.device().shared.backend.native_f16()
}

/// `t` widened to f32 if it is a 16-bit float, else `t` itself.
pub(crate) fn widen(queue: &Queue, t: &Tensor) -> Result<Tensor> {
    if matches!(t.dtype(), DType::F16 | DType::BF16) {
        cast::cast(queue, t, DType::F32)
    } else {
        Ok(t.clone())
    }
}
