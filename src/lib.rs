// The README is the crate documentation; its example (a doctest) uses the blocking native
// API, so it is documentation natively only.
#![cfg_attr(not(target_arch = "wasm32"), doc = include_str!("../README.md"))]
//!
//! Layers, top down (ARCHITECTURE.md in the repository describes them): the public objects
//! ([`Device`], [`Buffer`], [`Tensor`], [`Queue`], [`Fence`], [`Kernel`]) with the caching
//! pool and the profiler; the op catalogue ([`ops`], one folder per op family with its
//! kernels); the variant chooser ([`dispatch`]); the hardware layer (`hal/`, the only code
//! that knows a GPU API); and under all of them the shared vocabulary (`base/`: dtypes,
//! layouts, errors, device descriptions, policies), which imports nothing above it.

// Without `webgpu` the seam's GPU paths compile to nothing and leave parameters unused.
#![cfg_attr(not(feature = "webgpu"), allow(unused, unreachable_code))]

mod hal;
mod base;
mod buffer;
mod device;
pub mod dispatch;
mod fence;
pub mod kernel;
pub mod ops;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
mod pool;
pub mod profile;
mod queue;
mod tensor;

pub use buffer::Buffer;
#[cfg(not(target_arch = "wasm32"))]
pub use device::devices;
pub use base::info::{BackendChoice, BackendKind, DeviceInfo, DeviceOptions, DeviceType, Features, Limits, MatmulPrecision, BACKEND_ENV, POISON_WORD};
pub use base::{layout, text};
pub use device::{devices_async, unavailable_reason, Device};
pub use base::dtype::{DType, Element};
/// The 16-bit float types buffers and tensors hold (`DType::F16`, `DType::BF16`).
pub use half::{bf16, f16};
pub use base::error::{Error, Result};
pub use fence::Fence;
pub use kernel::{Binding, BindingInfo, BindingKind, Kernel, KernelInfo, KernelLanguage, Scalar};
pub use ops::{BinaryOp, ReduceOp, UnaryOp};
pub use base::policy::{Policy, PoolPolicy, Selection, TUNABLE_OPS};
pub use pool::MemoryStats;
pub use profile::{Decision, Profile, Profiler, ReadRecord};
pub use queue::Queue;
pub use tensor::Tensor;
