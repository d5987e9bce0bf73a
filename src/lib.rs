// The README is the crate documentation; its example (a doctest) uses the blocking native
// API, so it is documentation natively only.
#![cfg_attr(not(target_arch = "wasm32"), doc = include_str!("../README.md"))]
//!
//! Layers, from the bottom up (ARCHITECTURE.md in the repository describes them; each names
//! only the ones below it, which `tests/layers.rs` checks): the shared vocabulary (`base/`:
//! dtypes, layouts, errors, device descriptions, policies); the hardware layer (`hal/`, the
//! only code that knows a GPU API); the runtime (`runtime/`: [`Device`], [`Queue`], [`Fence`],
//! [`Buffer`], [`Tensor`], the pool and the profiler); the variant chooser ([`dispatch`]); the
//! op catalogue ([`ops`], one folder per op family with its kernels and its `Tensor`
//! methods); and the API parts that need the ops (`api/`: opening devices, tuning, user
//! [`Kernel`]s).

// Without `webgpu`, what only its kernels use (view access codes, launch arguments, signals,
// pending timers) is unused; the hal's stand-in keeps the rest in use.
#![cfg_attr(not(feature = "webgpu"), allow(dead_code, unused_imports))]
#![warn(missing_docs)]

mod api;
mod base;
pub mod dispatch;
mod hal;
pub mod onnx;
pub mod ops;
mod runtime;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use api::kernel;
pub use runtime::profile;

pub use base::dtype::{DType, Element};
pub use base::error::{Error, Result};
pub use base::info::{
    BackendChoice, BackendKind, DeviceInfo, DeviceOptions, DeviceType, Features, Limits,
    MatmulPrecision, BACKEND_ENV, POISON_WORD,
};
pub use base::policy::{Policy, PoolPolicy, Selection, TUNABLE_OPS};
pub use base::{layout, text};
/// The 16-bit float types buffers and tensors hold (`DType::F16`, `DType::BF16`).
pub use half::{bf16, f16};
pub use kernel::{Binding, BindingInfo, BindingKind, Kernel, KernelInfo, KernelLanguage, Scalar};
pub use ops::{BinaryOp, ReduceOp, UnaryOp};
pub use profile::{Decision, Profile, Profiler, ReadRecord};
pub use runtime::buffer::Buffer;
#[cfg(not(target_arch = "wasm32"))]
pub use runtime::device::devices;
pub use runtime::device::{devices_async, unavailable_reason, Device};
pub use runtime::fence::Fence;
pub use runtime::graph::Graph;
pub use runtime::pool::MemoryStats;
pub use runtime::queue::Queue;
pub use runtime::tensor::Tensor;
